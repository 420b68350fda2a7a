"""The one place the front end reads files: :func:`read_source` and :func:`load_model`.

Everything above this module works on text or syntax trees; this is where bytes from disk become
a :class:`~dve.errors.Source`, and where the full front-end pipeline (read, parse, expand, check)
is chained for callers that just want a checked model.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from . import syntax
from .errors import ConfigurationError, DvecostError, DveSyntaxError, Source
from .parser import decode_source, parse_source

__all__ = ["load_model", "read_source"]


def read_source(path: str | os.PathLike[str]) -> Source:
    """Read a model file into a :class:`~dve.errors.Source` named by its path.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.

    Returns
    -------
    Source
        Its ``name`` is ``path`` as given (so diagnostics show what the user typed).

    Raises
    ------
    ConfigurationError
        When the file does not exist, is a directory, or cannot be read.
    DveSyntaxError
        ``binary-input`` for binary data (a NUL byte), ``not-utf8`` for bytes that do not
        decode as UTF-8.

    Examples
    --------
    >>> import os, tempfile
    >>> fd, path = tempfile.mkstemp(suffix=".dve")
    >>> _ = os.write(fd, b"system async;"); os.close(fd)
    >>> read_source(path).text
    'system async;'
    >>> os.unlink(path)
    >>> read_source(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: cannot read model /tmp/...dve: no such file
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise ConfigurationError(f"cannot read model {name}: no such file") from None
    except IsADirectoryError:
        raise ConfigurationError(f"cannot read model {name}: it is a directory") from None
    except OSError as e:
        raise ConfigurationError(f"cannot read model {name}: {e.strerror or e}") from None
    return decode_source(data, name)


def load_model(path_or_text: str | os.PathLike[str], *, defines: Mapping[str, int] | None = None,
               name: str | None = None) -> syntax.Model:
    """Read, parse, expand and check a model: the whole front end in one call.

    Parameters
    ----------
    path_or_text : str or os.PathLike
        A path to a ``.dve`` file, or the model text itself. A string is taken as text when it
        contains a newline, ``{`` or ``;`` (no sensible path does), else as a path.
    defines : mapping of str to int, optional
        Values for ``input`` declarations (the command line's ``-D name=value``).
    name : str, optional
        The source name for diagnostics; defaults to the path, or ``<string>`` for text.

    Returns
    -------
    dve.syntax.Model
        The expanded model (only variables, channels, processes and LTL properties), which
        passed :func:`dve.check.check_model`. Warnings are not returned here: call the stages
        one by one (or ``dvecost check``) to see them.

    Raises
    ------
    ConfigurationError
        The file cannot be read.
    DveSyntaxError
        The text is not DVE (see :mod:`dve.parser` for the codes).
    ModelErrors
        Expansion or the static checks found errors (all of them, sorted by position).

    Examples
    --------
    >>> m = load_model("input int N = 2; process P(key i) { state s; init s; } "
    ...                "for (k : 1 .. N) { process P(k); } system async;", defines={"N": 3})
    >>> [p.name for p in m.processes]
    ['P_1', 'P_2', 'P_3']
    """
    from .expand import expand_model

    if isinstance(path_or_text, str) and _looks_like_text(path_or_text):
        source = Source(name or "<string>", path_or_text)
    else:
        source = read_source(path_or_text)
        if name is not None:
            source = Source(name, source.text)
    try:
        model = parse_source(source)
        model = expand_model(model, defines)
        from .check import check_model  # helper module of the static checks (imported late)

        check_model(model)
    except DvecostError:
        raise
    except RecursionError:
        raise DveSyntaxError(None, "too-deep",
                             f"{source.name} nests expressions too deeply to be analysed") from None
    return model


def _looks_like_text(s: str) -> bool:
    return "\n" in s or "{" in s or ";" in s

