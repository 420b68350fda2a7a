"""The one place the front end reads files: :func:`read_source` and :func:`load_model`.

Everything above this module works on text or syntax trees; this is where bytes from disk become
a :class:`~dve.errors.Source`, and where the full front-end pipeline (read, parse, expand, check)
is chained for callers that just want a checked model.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import get_args

from . import syntax
from .errors import ConfigurationError, DvecostError, DveSyntaxError, Source
from .parser import decode_source, parse_source

__all__ = ["MAX_DEPTH", "deep_recursion", "load_model", "read_source", "too_deep"]

#: The recursion depth the stages after parsing may use. They walk expressions recursively, and
#: a chain ``a + b + c + ...`` is a left-leaning tree as deep as it has operators (BEEM's ``plc``
#: has guards of thousands), so the interpreter's default of 1000 is far too low. On Python 3.11+
#: a call from Python to Python uses no C stack, so this limit is safe. It also bounds what the
#: state-space compiler meets later: it walks at most three frames per level under its own limit
#: of 100,000, so whatever passes here compiles there.
MAX_DEPTH = 30_000

_EXPR_TYPES = get_args(syntax.Expr)


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


def load_model(path_or_text: str | os.PathLike[str] | syntax.Model, *,
               defines: Mapping[str, int] | None = None, name: str | None = None) -> syntax.Model:
    """Read, parse, expand and check a model: the whole front end in one call.

    Parameters
    ----------
    path_or_text : str, os.PathLike or dve.syntax.Model
        A path to a ``.dve`` file, or the model text itself. A string is taken as text when it
        contains a newline, ``{`` or ``;`` (no sensible path does), else as a path. A model
        (parsed, or built in memory as the scenario DSL does) is expanded and checked the same
        way (a model this function returned comes back as it is).
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

    if isinstance(path_or_text, syntax.Model):
        model = path_or_text
        source_name = model.pos.source.name if model.pos is not None else name or "<model>"
    else:
        if isinstance(path_or_text, str) and _looks_like_text(path_or_text):
            source = Source(name or "<string>", path_or_text)
        else:
            source = read_source(path_or_text)
            if name is not None:
                source = Source(name, source.text)
        model = parse_source(source)
        source_name = source.name
    try:
        with deep_recursion():
            expanded = expand_model(model, defines)
            from .check import check_model  # helper module of the static checks (imported late)

            check_model(expanded)
    except DvecostError:
        raise
    except RecursionError:
        raise too_deep(model, source_name) from None
    return expanded


@contextmanager
def deep_recursion(limit: int | None = None) -> Iterator[None]:
    """Run the block with the interpreter's recursion limit at ``limit`` (:data:`MAX_DEPTH`).

    Examples
    --------
    >>> with deep_recursion():
    ...     sys.getrecursionlimit() >= MAX_DEPTH
    True
    """
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(MAX_DEPTH if limit is None else limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def too_deep(model: syntax.Model, name: str) -> DveSyntaxError:
    """The ``too-deep`` error for a model whose expressions outgrew :func:`deep_recursion`.

    It points at the expression that nests deepest (found without recursion) and says how deep.
    A chain of one operator counts one level per operator, as the stages walk it.

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> m = parse_model("byte x; process P { state s; init s; "
    ...                 "trans s -> s { guard -(-(-x)) > 0; }; } system async;", "m.dve")
    >>> print(too_deep(m, "m.dve"))
    m.dve:1:59: error[too-deep]: this expression nests 5 levels deep, too deep to be analysed
    """
    depth, pos = _deepest(model)
    return DveSyntaxError(pos, "too-deep",
                          f"this expression nests {depth} levels deep, too deep to be analysed"
                          if pos is not None else
                          f"{name} nests expressions too deeply to be analysed",
                          "split it over intermediate variables or several transitions")


def _deepest(model: syntax.Model) -> tuple[int, object]:
    """The greatest expression depth in ``model`` and the position of its outermost expression."""
    best, best_pos = 0, None
    stack: list = [(model, 0, None)]  # (node, its expression depth, its outermost expression)
    while stack:
        node, depth, root = stack.pop()
        if isinstance(node, tuple):
            stack.extend((x, depth, root) for x in node)
            continue
        if not isinstance(node, syntax.Node):
            continue
        if isinstance(node, _EXPR_TYPES):
            if root is None:
                root, depth = node, 0
            depth += 1
            if depth > best:
                best, best_pos = depth, root.pos
        for slot in type(node).__slots__:
            if slot != "pos":
                stack.append((getattr(node, slot), depth, root))
    return best, best_pos


def _looks_like_text(s: str) -> bool:
    return "\n" in s or "{" in s or ";" in s

