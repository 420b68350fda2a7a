"""The one path of a DVE model through the program: load -> explore -> cycle -> decode.

Every command that reads a model goes through these stages, each a function of its inputs
(the answers are values; only the command line prints):

- :func:`load`: read, expand and check the model (``dve.load_model``, the front door's checks)
  and compile it for the explorer;
- :func:`array_module`: where the work runs (``backend='auto'|'cpu'|'gpu'``), asked before
  any work so that a missing GPU is refused at once;
- :func:`explore`: the reachable state graph, on the host or the device, with the limits and
  the progress callback; :func:`explore_quotient` the same with the symmetry reduction (one
  state per orbit), which ``analyze`` uses;
- :func:`check_engine_memory`: refuse to start the cycle engine where its memory would pass
  ``--max-memory``;
- :func:`engine_arrays`: the explored graph as the cycle engine reads it (the device's copy
  where it was explored there, the palette of a compact graph);

then ``ocm.optimal_cycle`` and ``statespace.witness.decode_runs``, composed by
:func:`dvecost.analysis.analyze`. ``dvecost explore`` stops after :func:`explore`, ``dvecost
cycle`` reads a saved graph and starts at :func:`check_engine_memory`.

Examples
--------
>>> from dvecost.examples import example_path
>>> syntax, compiled = load(str(example_path("printer.dve")))
>>> xp = array_module("cpu")
>>> graph = explore(compiled, xp=xp, backend="cpu")
>>> graph.n_states, graph.n_edges
(7, 9)
>>> check_engine_memory(2**40, graph.n_states, graph.n_edges)   # fits: nothing to say
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Callable, Iterator, Mapping

from runtime import device
from runtime.device import DeferredDevice, DeviceFallbackWarning
from runtime.errors import MemoryLimitExceeded

__all__ = ["load", "array_module", "explore", "explore_quotient", "quiet_absent_device",
           "check_engine_memory", "engine_arrays"]

#: ``progress(n_states, n_edges, rate, ...)``: the explorer's progress callback.
ExploreProgress = Callable[..., None]


def load(model, defines: Mapping[str, int] | None = None, *, property: bool = True):
    """``(syntax, compiled)``: the checked model and its compiled form.

    Parameters
    ----------
    model : str, os.PathLike or dve.syntax.Model
        A path, model text, or a model already loaded.
    defines : mapping, optional
        Values of ``input`` declarations (``-D NAME=VALUE``).
    property : bool
        Compile the model's property (``--no-property`` turns it off).

    Raises
    ------
    dve.errors.ModelErrors, dve.errors.ConfigurationError
        A model that does not check, an unreadable file, a bad define.
    """
    from dve import load_model
    from statespace.compiler import compile_model

    syntax = load_model(model, defines=dict(defines or {}))
    return syntax, compile_model(syntax, property=property)


def array_module(backend: str):
    """The array module of ``backend`` for an exploration (see
    :func:`runtime.device.array_module_for`): NumPy, CuPy, or ``auto``'s deferred device.

    Raises :class:`~runtime.errors.BackendUnavailableError` for ``'gpu'`` without a GPU, which
    every command asks before any work.

    >>> array_module("cpu").__name__
    'numpy'
    """
    return device.array_module_for(backend)   # read at the call: one choice to patch


def _device_full(backend: str) -> str:
    """What the explorer does when the device is full: ``--backend gpu`` stops (exit 3),
    ``auto`` goes on on the host."""
    return "stop" if backend == "gpu" else "host"


def explore(compiled, *, xp, backend: str, max_states: int | None = None,
            max_memory: int | None = None, progress: ExploreProgress | None = None,
            error_successors: bool = False):
    """The reachable state graph of ``compiled`` (``statespace.build_state_graph``), on ``xp``
    (from :func:`array_module` of the same ``backend``), the fallback warning of a device that
    never was dropped (:func:`quiet_absent_device`).

    Raises the explorer's limits and stops (:class:`~runtime.errors.ExplorationLimit`,
    :class:`~runtime.errors.RunStopped`) with the graph found so far.
    """
    from statespace import build_state_graph

    with quiet_absent_device(xp):
        return build_state_graph(compiled, max_states=max_states, max_memory=max_memory,
                                 progress=progress, error_successors=error_successors, xp=xp,
                                 on_device_full=_device_full(backend))


def explore_quotient(compiled, *, xp, backend: str, symmetry=None,
                     max_states: int | None = None, max_memory: int | None = None,
                     progress: ExploreProgress | None = None):
    """As :func:`explore`, one state per orbit of interchangeable template instances
    (``statespace.quotient.build_quotient_graph``; ``symmetry`` None: the model's own,
    ``statespace.symmetry.NO_SYMMETRY``: the full product). Returns the ``Quotient``, whose
    ``graph`` is the state graph."""
    from statespace.quotient import build_quotient_graph

    with quiet_absent_device(xp):
        return build_quotient_graph(compiled, symmetry=symmetry, max_states=max_states,
                                    max_memory=max_memory, progress=progress, xp=xp,
                                    on_device_full=_device_full(backend))


@contextlib.contextmanager
def quiet_absent_device(xp) -> Iterator[None]:
    """Around an exploration with ``xp``: drop the explorer's
    :class:`~runtime.device.DeviceFallbackWarning` when ``xp`` is ``auto``'s
    :class:`~runtime.device.DeferredDevice` and it found no device (CuPy installed, no GPU):
    the exploration stayed on the host as planned, nothing fell back. Every other warning is
    shown as it would have been (after the exploration, an exception included).

    >>> xp = DeferredDevice()
    >>> xp.resolved, xp.unavailable = True, "no CUDA device found"   # as found on first use
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     with quiet_absent_device(xp):
    ...         warnings.warn("the GPU has 0 MiB free", DeviceFallbackWarning)
    ...         warnings.warn("something else")
    >>> [str(w.message) for w in seen]
    ['something else']
    """
    if not isinstance(xp, DeferredDevice):
        yield
        return
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            # Every fallback recorded (not only the first of its text): decided below.
            warnings.simplefilter("always", DeviceFallbackWarning)
            yield
    finally:
        for w in caught:
            if not issubclass(w.category, DeviceFallbackWarning):
                warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file,
                                     w.line)   # the filters passed it already
            elif xp.unavailable is None:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def check_engine_memory(max_memory: int | None, n_vertices: int, n_edges: int) -> None:
    """Refuse to start the cycle engine when its estimated memory
    (:func:`ocm.backend.engine_memory_bytes`) would take the process past ``max_memory``
    (``--max-memory``; None: no limit).

    Raises
    ------
    MemoryLimitExceeded
        With ``held`` (the process's memory now) and ``more`` (the engine's estimate); the
        caller attaches the counts it reports.

    >>> check_engine_memory(None, 10**9, 10**10)
    >>> try:
    ...     check_engine_memory(1, 3, 4)
    ... except MemoryLimitExceeded as exc:
    ...     print(exc.more, exc.held > 0)
    640 True
    """
    if max_memory is None:
        return
    from ocm import backend   # read at the call: one estimate, wherever it is patched
    from runtime.memory import current_rss

    held, more = current_rss(), backend.engine_memory_bytes(n_vertices, n_edges)
    if held + more > max_memory:
        exc = MemoryLimitExceeded(max_memory, n_vertices)
        exc.held, exc.more = held, more
        raise exc


def engine_arrays(graph, resource: str, *, ratio: bool, backend: str) -> tuple:
    """``(indptr, indices, cost, time or None)`` of an explored graph as the cycle engine
    reads them: the copies still on the device where it was explored there (no copy back,
    unless ``backend`` is ``'cpu'``), a compact graph's palette by row (``ocm.Palette``), the
    cost of ``resource``; ``time`` only for a ratio.

    >>> from dvecost.examples import example_path
    >>> g = explore(load(str(example_path("printer.dve")))[1], xp=array_module("cpu"),
    ...             backend="cpu")
    >>> ip, ix, cost, time = engine_arrays(g, "cost", ratio=True, backend="cpu")
    >>> len(ip), len(ix), cost.shape, time.shape   # a compact graph: a palette per edge
    (8, 9, (9,), (9,))
    >>> engine_arrays(g, "cost", ratio=False, backend="cpu")[3] is None
    True
    """
    import ocm

    if graph.on_device is not None and backend != "cpu":
        # Explored on the GPU: the engine reads the edges still there (no copy back); the
        # arrays it does not read go to the host first if it would not fit beside them.
        indptr, indices, charge = graph.on_device
        graph.make_room(ocm.device_bytes(
            graph.n_states, graph.n_edges, 8 if charge is None else charge.dtype.itemsize,
            restricted=True))
    else:
        indptr, indices, charge = graph.indptr, graph.indices, graph.charge
    if charge is not None:   # a compact graph: the engine reads its palette by row
        pal = graph.palette
        cost, time = ocm.Palette(charge, pal.costs[resource]), ocm.Palette(charge, pal.time)
    else:
        cost, time = graph.cost(resource), graph.time
    return indptr, indices, cost, time if ratio else None
