"""Source positions, the exception tree of models and arguments, and compiler-style rendering.

Every syntax node and every user-facing error carries a :class:`SourcePos`, which holds a
reference to the :class:`Source` it came from, so any error can render its own snippet::

    model.dve:14:11: error[undefined-name]: unknown variable 'tokn'
       14 |     guard tokn > 0;
          |           ^^^^
      hint: did you mean 'token'?

A position is kept as character offsets; its lines and columns are 1-based, ``end_column``
exclusive (as in Lark).

The root of the tree, :class:`DvecostError`, lives with the run-time errors (limits, stops,
out of memory) in :mod:`runtime.errors`, below every package; this module holds the errors of
the language and of the arguments. The cycle engine knows no model and has errors of its own
(:mod:`ocm.errors`); terminal concerns such as colour live with the command line
(:mod:`dvecost.cli.terminal`).
"""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate
from dataclasses import dataclass, field
from typing import Iterable, Iterator

from runtime.errors import DvecostError

__all__ = [
    "Source",
    "SourcePos",
    "synthetic_pos",
    "DvecostError",
    "ModelError",
    "DveSyntaxError",
    "ModelSemanticError",
    "EvaluationError",
    "ModelErrors",
    "ConfigurationError",
]


@dataclass(frozen=True, slots=True, eq=False)
class Source:
    """A named source text (a file, ``<string>``, or ``<scenario NAME>``).

    Compared by identity: two loads of one file are two sources. Lines end at ``\\n`` (as Lark
    counts them); the table of line starts is built on the first question about lines.

    >>> src = Source("m.dve", "byte x;\\nbyte y;")
    >>> src.locate(9), src.line(2)
    ((2, 2), 'byte y;')
    """

    name: str
    text: str
    _starts: list[int] | None = field(default=None, init=False, repr=False)

    def line_starts(self) -> list[int]:
        """The offset at which each line starts: ``[0, ...]``, one entry per line."""
        starts = self._starts
        if starts is None:
            starts = list(accumulate(map(len, self.text.split("\n")), _next_line, initial=0))
            starts.pop()  # the entry past the last line
            object.__setattr__(self, "_starts", starts)  # a cache: the source stays immutable
        return starts

    def locate(self, offset: int) -> tuple[int, int]:
        """The 1-based ``(line, column)`` of the character at ``offset``."""
        starts = self.line_starts()
        line = bisect_right(starts, offset)
        return line, offset - starts[line - 1] + 1

    def offset(self, line: int, column: int) -> int:
        """The offset of 1-based ``(line, column)``; lines past the end give the end of text."""
        starts = self.line_starts()
        if line > len(starts):
            return len(self.text)
        return starts[max(line, 1) - 1] + column - 1

    def line(self, lineno: int) -> str:
        """Return line ``lineno`` (1-based) without its line end, or ``''`` past the end."""
        starts = self.line_starts()
        if not 1 <= lineno <= len(starts):
            return ""
        stop = starts[lineno] - 1 if lineno < len(starts) else len(self.text)
        return self.text[starts[lineno - 1]:stop].removesuffix("\r")


def _next_line(start: int, length: int) -> int:
    return start + length + 1


@dataclass(frozen=True, slots=True)
class SourcePos:
    """A span of a :class:`Source`, kept as character offsets: ``text[start:end]``.

    Lines and columns (1-based; ``end_column`` exclusive, as in Lark) are computed from the
    offsets when asked for, so a parser only records two integers per node.

    >>> src = Source("m.dve", "byte x;\\nbyte yy;")
    >>> p = SourcePos.at(src, 2, 6, 2, 8)
    >>> (p.start, p.end), str(p), (p.end_line, p.end_column)
    ((13, 15), 'm.dve:2:6', (2, 8))
    """

    source: Source = field(repr=False)
    start: int
    end: int

    @classmethod
    def at(cls, source: Source, line: int, column: int, end_line: int,
           end_column: int) -> "SourcePos":
        """The span from 1-based ``(line, column)`` to ``(end_line, end_column)`` (exclusive)."""
        return cls(source, source.offset(line, column), source.offset(end_line, end_column))

    # 1-based, computed from the offsets when asked for (``end_column`` exclusive).
    line = property(lambda self: self.source.locate(self.start)[0])
    column = property(lambda self: self.source.locate(self.start)[1])
    end_line = property(lambda self: self.source.locate(self.end)[0])
    end_column = property(lambda self: self.source.locate(self.end)[1])

    def __str__(self) -> str:
        line, column = self.source.locate(self.start)
        return f"{self.source.name}:{line}:{column}"

    def to(self, other: "SourcePos") -> "SourcePos":
        """The span from the start of ``self`` to the end of ``other``."""
        return SourcePos(self.source, self.start, other.end)


def synthetic_pos(name: str) -> SourcePos:
    """A position for nodes built by code (the scenario DSL), not read from a file.

    >>> str(synthetic_pos("<scenario editor>"))
    '<scenario editor>:1:1'
    """
    return SourcePos(Source(name, ""), 0, 0)


class ModelError(DvecostError):
    """A problem in a model, at a position, with a stable kebab-case ``code``.

    Parameters
    ----------
    pos : SourcePos or None
        Where the problem is. ``None`` only for problems of a whole file (empty input).
    code : str
        Stable identifier users and tests match on, e.g. ``'undefined-name'``.
    message : str
        Lower-case, no trailing period, user identifiers in single quotes.
    hint : str, optional
        A likely fix.
    severity : str
        ``'error'`` or ``'warning'``.
    """

    def __init__(self, pos: SourcePos | None, code: str, message: str, hint: str | None = None,
                 severity: str = "error") -> None:
        super().__init__(message)
        self.pos = pos
        self.code = code
        self.message = message
        self.hint = hint
        self.severity = severity

    def __str__(self) -> str:
        where = f"{self.pos}: " if self.pos is not None else ""
        return f"{where}{self.severity}[{self.code}]: {self.message}"

    def sort_key(self) -> tuple:
        if self.pos is None:
            return ("", 0, 0, self.code)
        return (self.pos.source.name, self.pos.line, self.pos.column, self.code)

    def render(self, color: bool = False) -> str:
        """The one-line form, the source line with a caret under the span, and the hint."""
        red, bold, blue, reset = ("\x1b[31m", "\x1b[1m", "\x1b[34m", "\x1b[0m") if color else ("",) * 4
        sev = red + self.severity if self.severity == "error" else "\x1b[33m" * color + self.severity
        where = f"{self.pos}: " if self.pos is not None else ""
        out = [f"{bold}{where}{reset}{sev}[{self.code}]{reset}{bold}: {self.message}{reset}"]
        if self.pos is not None and self.pos.source.text:
            raw = self.pos.source.line(self.pos.line)
            text = raw.expandtabs(4)
            # Column counts characters of the raw line; map it through tab expansion.
            start = len(raw[: self.pos.column - 1].expandtabs(4))
            if self.pos.end_line == self.pos.line:
                end = len(raw[: max(self.pos.end_column - 1, self.pos.column)].expandtabs(4))
            else:
                end = len(text)  # multi-line span: underline to the end of the first line
            if len(text) > _LONG_LINE:
                # A long line (a generated model, a 2 MB one-liner) is shown around the caret
                # only: every diagnostic on it repeating the whole line made output quadratic.
                lo = max(0, min(start - 40, len(text) - _SHOWN))
                hi = min(len(text), lo + _SHOWN)
                left = "..." if lo > 0 else ""
                text = left + text[lo:hi] + ("..." if hi < len(text) else "")
                start, end = start - lo + len(left), min(end, hi) - lo + len(left)
            width = max(end - start, 1)
            gutter = f"{self.pos.line:>5}"
            out.append(f"{blue}{gutter} |{reset} {text}")
            out.append(f"{blue}{' ' * len(gutter)} |{reset} {' ' * start}{red}{'^' * width}{reset}")
        if self.hint:
            out.append(f"  {blue}hint{reset}: {self.hint}")
        return "\n".join(out)


#: Source lines longer than this are shown as a window of ``_SHOWN`` characters around the caret.
_LONG_LINE = 160
_SHOWN = 120


class DveSyntaxError(ModelError):
    """Raised when a model cannot be lexed or parsed (also empty, binary or non-UTF-8 input)."""


class ModelSemanticError(ModelError):
    """Raised by the static checks: undefined or duplicate names, bad sync, bad cost/time, ..."""


class EvaluationError(ModelError):
    """Raised when evaluating a constant expression fails at load time, or (for reports) a
    runtime fault found during exploration. ``state`` maps names to values where known."""

    def __init__(self, pos: SourcePos | None, code: str, message: str, hint: str | None = None,
                 state: dict | None = None) -> None:
        super().__init__(pos, code, message, hint)
        self.state = state or {}


class ModelErrors(DvecostError):
    """Several :class:`ModelError`, flattened and sorted by position; raised once per check."""

    def __init__(self, errors: Iterable[ModelError]) -> None:
        flat: list[ModelError] = []
        for e in errors:
            flat.extend(e.errors if isinstance(e, ModelErrors) else [e])
        self.errors: tuple[ModelError, ...] = tuple(sorted(flat, key=ModelError.sort_key))
        super().__init__("\n".join(str(e) for e in self.errors))

    def __iter__(self) -> Iterator[ModelError]:
        return iter(self.errors)

    def __len__(self) -> int:
        return len(self.errors)

    def render(self, color: bool = False) -> str:
        return "\n".join(e.render(color) for e in self.errors)


class ConfigurationError(DvecostError, ValueError):
    """Raised for bad arguments (unknown option values, malformed ``-D`` definitions, ...)."""

