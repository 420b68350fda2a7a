"""The names of a model under check: symbols, scopes, the gathered problems, source spans.

The static checks (:mod:`dve.check`) record every declared name as a :class:`Symbol` in a
:class:`SymbolTable` (one global scope, one :class:`ProcScope` per process) and every problem
in :class:`Problems`, which keeps going after each one so that a user fixes all of them in one
pass. The expression checks (:mod:`dve.exprcheck`) and the declaration checks
(:mod:`dve.declcheck`) read and fill the same table.

>>> t = SymbolTable()
>>> t.undefined(None, "x", None, ("variable",), "variable")
>>> [(e.code, e.message) for e in t.p.items]
[('undefined-name', "unknown variable 'x'")]
"""

from __future__ import annotations

import difflib
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from . import syntax as s
from .errors import ModelError, ModelErrors, ModelSemanticError, SourcePos

__all__ = ["Symbol", "ProcScope", "ChanUse", "Problems", "SymbolTable", "name_span", "at_line",
           "did_you_mean_hint", "HINT_BUDGET"]

_WORD = re.compile(r"[A-Za-z_$#][A-Za-z0-9_$#]*")


def name_span(pos: SourcePos | None, name: str, last: bool = False) -> SourcePos | None:
    """The span of the identifier ``name`` inside ``pos`` (its first or last occurrence).

    Falls back to ``pos`` when the name is not found on the span's first line (synthetic nodes).
    """
    if pos is None or not pos.source.text:
        return pos
    line = pos.source.line(pos.line)  # cheap: Source keeps its line table
    stop = pos.end_column - 1 if pos.end_line == pos.line else len(line)
    hits = [m for m in _WORD.finditer(line, pos.column - 1, max(stop, pos.column - 1))
            if m.group() == name]
    if not hits:
        return pos
    m = hits[-1] if last else hits[0]
    return SourcePos.at(pos.source, pos.line, m.start() + 1, pos.line, m.end() + 1)



#: Candidate names "did you mean" may compare, in all, per model (about 1.5 s at worst).
HINT_BUDGET = 1_000_000


def did_you_mean_hint(name: str, candidates: object) -> str | None:
    """``"did you mean 'x'?"`` for the closest of ``candidates`` to ``name``, or None."""
    close = difflib.get_close_matches(name, list(candidates),  # type: ignore[call-overload]
                                      n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def at_line(pos: SourcePos | None, column: bool = False) -> str:
    """``'line 3'`` (or ``'line 3, column 7'``) for a hint; ``'elsewhere'`` without a position."""
    if pos is None:
        return "elsewhere"
    return f"line {pos.line}, column {pos.column}" if column else f"line {pos.line}"



@dataclass(slots=True, eq=False)
class Symbol:
    """A declared name: ``kind`` is variable, constant, input, channel or process."""
    kind: str
    name: str
    node: s.Node
    owner: str | None = None            # the process of a local, else None
    type: str | None = None             # byte/int for variables
    size: int | None = None             # array cells (-1: invalid size); None for scalars
    is_array: bool = False
    types: tuple[str, ...] | None = None  # channel item types (None: untyped)
    buffered: bool = False

    @property
    def pos(self) -> SourcePos | None:
        return name_span(self.node.pos, self.name)

    def describe(self) -> str:
        if self.kind == "variable":
            return f"{'array' if self.is_array else 'variable'} '{self.name}'"
        return f"{self.kind} '{self.name}'"


@dataclass(slots=True)
class ProcScope:
    process: s.Process
    locals: dict[str, Symbol] = field(default_factory=dict)
    states: dict[str, s.StateDecl] = field(default_factory=dict)
    env: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class ChanUse:
    op: str
    n_values: int
    process: str
    sync: s.Sync


class Problems:
    """The gathered diagnostics (miniwdl's ``multi_context``)."""

    def __init__(self) -> None:
        self.items: list[ModelError] = []
        # "Did you mean" compares a name with every candidate: a budget of comparisons per
        # model keeps thousands of unknown names among thousands of declared ones from taking
        # minutes (3,000 of each took 14 s); past it, the errors come without that hint.
        self.hint_budget = HINT_BUDGET

    def did_you_mean(self, name: str, candidates: object) -> str | None:
        """:func:`did_you_mean_hint` within the budget; None once it is spent."""
        if self.hint_budget <= 0:
            return None
        names = list(candidates)  # type: ignore[call-overload]
        self.hint_budget -= len(names) + 1
        return did_you_mean_hint(name, names)

    def error(self, pos: SourcePos | None, code: str, message: str,
              hint: str | None = None) -> None:
        self.items.append(ModelSemanticError(pos, code, message, hint))

    def warning(self, pos: SourcePos | None, code: str, message: str,
                hint: str | None = None) -> None:
        self.items.append(ModelSemanticError(pos, code, message, hint, severity="warning"))

    @contextmanager
    def attempt(self) -> Iterator[None]:
        """Run a sub-check; a :class:`ModelError` it raises is recorded, and checking goes on."""
        try:
            yield
        except ModelErrors as exc:
            self.items.extend(exc.errors)
        except ModelError as exc:
            self.items.append(exc)



class SymbolTable:
    """The declared names of the model being checked, and the problems found so far.

    ``globals`` maps a global name to its symbol (processes included); ``scopes`` a process
    name to its scope; ``env`` the values of the global constants and inputs known so far;
    ``chan_syms`` and ``chan_uses`` each channel (by ``id`` of its symbol) to its symbol and
    its uses by ``sync``.
    """

    def __init__(self) -> None:
        self.p = Problems()
        self.globals: dict[str, Symbol] = {}
        self.env: dict[str, int] = {}            # global constants and inputs with known values
        self.scopes: dict[str, ProcScope] = {}
        self.chan_uses: dict[int, list[ChanUse]] = {}
        self.chan_syms: dict[int, Symbol] = {}

    def lookup(self, name: str, scope: ProcScope | None) -> Symbol | None:
        if scope is not None:
            sym = scope.locals.get(name)
            if sym is not None:
                return sym
        return self.globals.get(name)

    def undefined(self, pos: SourcePos | None, name: str, scope: ProcScope | None,
                  kinds: tuple[str, ...], what: str) -> None:
        hint = None
        if self.p.hint_budget > 0:
            names = {n for n, sym in self.globals.items() if sym.kind in kinds}
            if scope is not None:
                names |= {n for n, sym in scope.locals.items() if sym.kind in kinds}
            hint = self.p.did_you_mean(name, sorted(names))
        if hint is None and scope is not None and name in scope.states:
            hint = (f"'{name}' is a state of '{scope.process.name}'; "
                    f"test it with '{scope.process.name}.{name}'")
        if hint is None:
            owners = [p for p, sc in self.scopes.items() if name in sc.locals]
            if owners:
                hint = (f"'{name}' is local to process '{owners[0]}'; "
                        f"read it with '{owners[0]}->{name}'")
        self.p.error(pos, "undefined-name", f"unknown {what} '{name}'", hint)

    def process_scope(self, ref: s.ProcRef, scope: ProcScope | None) -> ProcScope | None:
        sc = self.scopes.get(ref.name)
        if sc is None:
            sym = self.globals.get(ref.name)
            if sym is not None:
                self.p.error(name_span(ref.pos, ref.name), "not-a-variable",
                             f"expected a process, found {sym.describe()}")
            else:
                self.p.error(name_span(ref.pos, ref.name), "undefined-name",
                             f"unknown process '{ref.name}'",
                             self.p.did_you_mean(ref.name, self.scopes))
        return sc

    # -- expressions -------------------------------------------------------------------------
