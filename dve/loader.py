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
from dataclasses import dataclass
from typing import get_args

from . import syntax
from .errors import ConfigurationError, DvecostError, DveSyntaxError, ModelError, Source
from .parser import decode_source, parse_source

__all__ = ["MAX_DEPTH", "LoadResult", "deep_recursion", "load_checked", "load_model",
           "read_source", "too_deep"]

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


@dataclass(frozen=True)
class LoadResult:
    """What :func:`load_checked` found in one model: the checked model and its warnings, or the
    error that made it fail; in both cases the names of the model's ``input`` declarations.

    Attributes
    ----------
    model : dve.syntax.Model or None
        The expanded model that passed :func:`dve.check.check_model`; None when it failed.
    warnings : tuple of ModelError
        The warnings of a correct model (empty when it failed: they are part of ``error``).
    error : DvecostError or None
        Why the model failed: a :class:`~dve.errors.ModelErrors` (all errors and warnings of
        the static checks), a :class:`~dve.errors.ModelError` (syntax, expansion), or another
        :class:`~dve.errors.DvecostError` (an unreadable file).
    inputs : frozenset of str
        The names of the model's ``input`` declarations (empty when it could not be parsed).
    """

    model: syntax.Model | None
    warnings: tuple[ModelError, ...] = ()
    error: DvecostError | None = None
    inputs: frozenset[str] = frozenset()

    @property
    def ok(self) -> bool:
        return self.error is None


def load_checked(path_or_text: str | os.PathLike[str] | Source | syntax.Model, *,
                 defines: Mapping[str, int] | None = None, name: str | None = None,
                 only_inputs: bool = False) -> LoadResult:
    """Read, parse, expand and check a model, keeping what :func:`load_model` drops.

    The same pipeline as :func:`load_model` (which is this function raising its ``error``), for
    callers that show diagnostics: the warnings of a correct model, the error of a failed one
    as a value (nothing is raised for a bad model), and the model's inputs either way.

    Parameters
    ----------
    path_or_text : str, os.PathLike, Source or dve.syntax.Model
        As for :func:`load_model`; a :class:`~dve.errors.Source` (from :func:`read_source`) is
        taken as it is, whatever its text looks like.
    defines : mapping of str to int, optional
        Values for ``input`` declarations.
    name : str, optional
        As for :func:`load_model`.
    only_inputs : bool
        Pass on only the defines that name an input of this model (a define meant for another
        of several models); else a define the model does not declare is an ``unknown-define``
        error.

    Returns
    -------
    LoadResult

    Examples
    --------
    >>> r = load_checked("input byte N = 1; process P { state s, lost; init s; } "
    ...                  "system async;", defines={"N": 2, "M": 5}, only_inputs=True)
    >>> r.ok, r.inputs, [p.name for p in r.model.processes]
    (True, frozenset({'N'}), ['P'])
    >>> [w.code for w in r.warnings]
    ['unreachable-state']
    >>> bad = load_checked("process P { state s; init t; } system async;", name="m.dve")
    >>> bad.ok, bad.model, str(bad.error)
    (False, None, "m.dve:1:27: error[unknown-state]: unknown state 't' of process 'P'")
    """
    from .check import check_model  # helper module of the static checks (imported late)
    from .expand import expand_model

    parsed = None
    try:
        if isinstance(path_or_text, syntax.Model):
            # A model built in memory (parsed, or written by the scenario DSL) passes the same
            # expansion and checks; one this function returned comes back as it is.
            parsed = path_or_text
            pos = parsed.pos
            source = pos.source if pos is not None else Source(name or "<model>", "")
        elif isinstance(path_or_text, Source):
            source = path_or_text if name is None else Source(name, path_or_text.text)
        elif isinstance(path_or_text, str) and _looks_like_text(path_or_text):
            source = Source(name or "<string>", path_or_text)
        else:
            source = read_source(path_or_text)
            if name is not None:
                source = Source(name, source.text)
        if parsed is None:
            parsed = parse_source(source)
        inputs = _inputs(parsed)
        if only_inputs and defines:
            defines = {k: v for k, v in defines.items() if k in inputs}
        with deep_recursion():
            expanded = expand_model(parsed, defines)
            warnings = check_model(expanded)
        return LoadResult(expanded, warnings, None, inputs)
    except DvecostError as exc:
        return LoadResult(None, (), exc, _inputs(parsed))
    except RecursionError:
        if parsed is None:  # the parsers report their own depth problems: not expected here
            return LoadResult(None, (), DveSyntaxError(
                None, "too-deep", f"{source.name} nests too deeply to be read"))
        return LoadResult(None, (), too_deep(parsed, source.name), _inputs(parsed))


def _inputs(parsed: syntax.Model | None) -> frozenset[str]:
    if parsed is None:
        return frozenset()
    return frozenset(i.name for i in parsed.items if isinstance(i, syntax.VarDecl) and i.input)


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
        passed :func:`dve.check.check_model`. Warnings are not returned here:
        :func:`load_checked` gives them (``dvecost check`` shows them).

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
    result = load_checked(path_or_text, defines=defines, name=name)
    if result.error is not None:
        raise result.error
    return result.model


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

