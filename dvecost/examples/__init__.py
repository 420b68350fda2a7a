"""Models written for dvecost, shipped inside the package so users, docs and tests name the same
files. Each one's expected answer is pinned in ``tests/test_examples.py``.

=====================  ==========================================================================
name                   what it shows
=====================  ==========================================================================
``client_server.dve``  three clients and one server (the benchmark family's cs_3): mean 13/5,
                       ratio 13/14
``pipeline.dve``       producer, worker and sink over a buffered queue and a rendezvous; a cost
                       that depends on a variable
``deadlock.dve``       two philosophers that can deadlock; the cycles that avoid it are analysed
``zero_time.dve``      a retry loop that takes no time: the ratio is undefined, the mean is not
``error_state.dve``    a stack that overflows into the error state
``rings_async.dve``    two independent rings interleaved: the mean is the larger ring mean
``rings_sync.dve``     the same rings under ``system sync``: the mean is the sum of both
``resources.dve``      named resources ``cpu`` and ``net`` (pick one with ``cost=``)
``printer.dve``        two office workers share a printer: the model of ``docs/tutorial.md``
=====================  ==========================================================================

>>> example_path("client_server.dve").name
'client_server.dve'
>>> "zero_time.dve" in EXAMPLES
True
"""

from __future__ import annotations

import pathlib

__all__ = ["EXAMPLES", "example_path"]

_HERE = pathlib.Path(__file__).resolve().parent

#: The bundled example files, by name.
EXAMPLES: tuple[str, ...] = (
    "client_server.dve",
    "pipeline.dve",
    "deadlock.dve",
    "zero_time.dve",
    "error_state.dve",
    "rings_async.dve",
    "rings_sync.dve",
    "resources.dve",
    "printer.dve",
)


def example_path(name: str) -> pathlib.Path:
    """The path of a bundled example model.

    Parameters
    ----------
    name : str
        A file name from :data:`EXAMPLES`; the ``.dve`` suffix may be left out.

    Returns
    -------
    pathlib.Path
        The file inside the installed package.

    Raises
    ------
    dve.errors.ConfigurationError
        When no bundled example has that name (the message lists them).

    Examples
    --------
    >>> example_path("rings_sync").read_text().count("process")
    2
    """
    from dve.errors import ConfigurationError

    if not name.endswith(".dve"):
        name += ".dve"
    if name not in EXAMPLES:
        raise ConfigurationError(
            f"no bundled example '{name}'; the examples are: {', '.join(EXAMPLES)}")
    return _HERE / name
