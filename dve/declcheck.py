"""Static checks of declarations: names declared once, sizes and initial values, the state's size.

:class:`Declarations` turns each variable and channel declaration into a
:class:`~dve.symbols.Symbol`, checks its array or buffer size and initial values, enters it in
a scope, and adds up the slots of the state vector so that a declaration taking it past
:data:`MAX_STATE_SLOTS` is refused before anything is allocated for it (see "The size of a
state" in :mod:`dve.check`).

>>> from dve.parser import parse_model
>>> from dve.exprcheck import ExprChecker
>>> from dve.symbols import SymbolTable
>>> t = SymbolTable()
>>> d = Declarations(t, ExprChecker(t))
>>> for item in parse_model("byte a[0]; int a; system async;").items:
...     d.declare(t.globals, d.var_symbol(item, t.env, None))
>>> [x.code for x in t.p.items]
['array-size-invalid', 'duplicate-name']
"""

from __future__ import annotations

from . import syntax as s
from .arith import TYPE_RANGE
from .errors import SourcePos
from .exprcheck import ExprChecker, const_value
from .symbols import ProcScope, Symbol, SymbolTable, name_span, at_line

__all__ = ["Declarations", "MAX_STATE_SLOTS"]

#: The most slots a state vector may have (see "The size of a state" in :mod:`dve.check`); the
#: compiler refuses the same models (:func:`statespace.compile_model`).
MAX_STATE_SLOTS = 1 << 20


def size_text(slots: int) -> str:
    """The unpacked size of ``slots`` 4-byte slots, in binary units.

    >>> size_text(1 << 20), size_text(2_000_000_001), size_text(3)
    ('4 MiB', '7.45 GiB', '12 bytes')
    """
    b = 4 * slots
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return f"{b / (1 << k):.3g} {unit}"
    return f"{b} bytes"



class Declarations:
    """The checks of variable and channel declarations, filling one symbol table.

    ``slots`` counts the state vector's slots declared so far and ``largest`` remembers its
    largest contributor ``(slots, what, where)``, named in the error past the limit.
    """

    def __init__(self, table: SymbolTable, exprs: ExprChecker) -> None:
        self.table = table
        self.p = table.p
        self.exprs = exprs
        self.slots = 0
        self.largest: tuple[int, str, SourcePos | None] = (0, "", None)

    def declare(self, table: dict[str, Symbol], sym: Symbol,
                also: tuple[dict, ...] = ()) -> None:
        prev = table.get(sym.name)
        if prev is None:
            for other in also:
                prev = other.get(sym.name)
                if prev is not None:
                    break
        if isinstance(prev, Symbol) and prev.owner is None and sym.owner is not None:
            # A local hiding a global: DiVinE 2 accepts it (BEEM's pgm_protocol does it).
            self.p.warning(sym.pos, "shadowed-name",
                           f"local {sym.describe()} of process '{sym.owner}' hides global "
                           f"{prev.describe()}",
                           f"inside '{sym.owner}', '{sym.name}' means the local one; rename it "
                           "if both are meant")
            table[sym.name] = sym
            return
        if prev is not None:
            where = prev.pos if isinstance(prev, Symbol) else name_span(prev.pos, sym.name)
            what = prev.describe() if isinstance(prev, Symbol) else f"state '{sym.name}'"
            self.p.error(sym.pos, "duplicate-name", f"'{sym.name}' is already declared",
                         f"{what} is declared at {at_line(where, column=True)}")
            return
        table[sym.name] = sym

    def var_symbol(self, d: s.VarDecl, env: dict[str, int],
                   scope: ProcScope | None) -> Symbol:
        kind = "input" if d.input else "constant" if d.const else "variable"
        owner = scope.process.name if scope is not None else None
        sym = Symbol(kind, d.name, d, owner, type=d.type)
        if d.size is not None:
            sym.is_array = True
            with self.p.attempt():
                self.exprs.expr(d.size, env, scope)
            size = const_value(d.size, env)
            pos = d.size.pos or name_span(d.pos, d.name)
            if size is None:
                sym.size = -1
                self.p.error(pos, "array-size-invalid",
                             f"size of array '{d.name}' must be a constant expression",
                             "use a number or an expression of constants")
            elif size <= 0:
                sym.size = -1
                self.p.error(pos, "array-size-invalid",
                             f"expected an array size above 0, found {size} for '{d.name}'")
            else:
                sym.size = size
        if kind == "variable":
            n = sym.size if sym.size and sym.size > 0 else 1
            qual = d.name if owner is None else f"{owner}.{d.name}"
            self.occupy(n, f"array '{qual}' of {n:,} cells" if sym.is_array
                        else f"variable '{qual}'", pos if sym.is_array else sym.pos)
        elif sym.size is not None and sym.size > MAX_STATE_SLOTS:
            # Not in the state, but a table of values the compiler and the guards hold.
            self.p.error(pos, "declaration-too-large",
                         f"impossible declaration: {kind} array '{d.name}' of {sym.size:,} "
                         f"cells; the explorer holds at most {MAX_STATE_SLOTS:,}",
                         "a constant array is a table held in memory, a value per cell")
        self.initializer(d, sym, env, scope)
        return sym

    def occupy(self, n: int, what: str, pos: SourcePos | None) -> None:
        """Add ``n`` slots to the state vector; the declaration that takes it past
        :data:`MAX_STATE_SLOTS` is an error (reported once)."""
        before = self.slots
        self.slots += n
        if n > self.largest[0]:
            self.largest = (n, what, pos)
        if before <= MAX_STATE_SLOTS < self.slots:
            big_n, big_what, big_pos = self.largest
            hint = (f"the largest part is {big_what} at {at_line(big_pos, column=True)}; "
                    if big_pos is not pos else "")
            self.p.error(pos, "declaration-too-large",
                         f"impossible declaration: {what} takes the state vector to "
                         f"{self.slots:,} slots (about {size_text(self.slots)} per state); "
                         f"the explorer holds at most {MAX_STATE_SLOTS:,}",
                         hint + "every state is stored whole, one slot per variable, array "
                         "cell and buffered channel field: use fewer or smaller arrays")

    def initializer(self, d: s.VarDecl, sym: Symbol, env: dict[str, int],
                    scope: ProcScope | None) -> None:
        init = d.init
        if init is None:
            return
        lo, hi = TYPE_RANGE.get(d.type, (None, None))
        if isinstance(init, s.ArrayInit):
            if not sym.is_array:
                self.p.error(init.pos or sym.pos, "initializer-kind",
                             f"expected a single value for scalar '{d.name}', found a list",
                             f"write '{d.name} = {init.items[0].value}'"
                             if len(init.items) == 1 and isinstance(init.items[0], s.IntLit)
                             else f"declare an array: '{d.type} {d.name}[{len(init.items)}]'")
            items = init.items
            if sym.is_array and sym.size is not None and sym.size > 0 and len(items) > sym.size:
                extra = items[sym.size]
                self.p.warning(extra.pos or init.pos, "initializer-too-long",
                               f"array '{d.name}' has {sym.size} cells, found {len(items)} "
                               f"initial values", "the values past the last cell are dropped")
        else:
            if sym.is_array:
                self.p.error(init.pos or sym.pos, "initializer-kind",
                             f"expected a list '{{...}}' for array '{d.name}', "
                             "found a single value",
                             f"write '{d.name}[...] = {{...}}' with one value per cell")
            items = (init,)
        out_of_range = False
        for item in items:
            with self.p.attempt():
                self.exprs.expr(item, env, scope)
            value = const_value(item, env)
            if value is not None and lo is not None and not lo <= value <= hi:
                out_of_range = True
                what = f"value {value} of {d.type} input" if d.input else \
                    f"initial value {value} of {d.type}"
                self.p.error(item.pos or sym.pos, "init-out-of-range",
                             f"{what} '{d.name}' is out of range: expected {lo}..{hi}",
                             f"set it with -D {d.name}=VALUE within {lo}..{hi}"
                             + (", or declare it 'input int'" if d.type == "byte" else "")
                             if d.input else None)
        # A constant whose value its type cannot hold is not known to the checks below: each use
        # would repeat the same complaint (a -D out of range made 45 warnings of one error).
        if (sym.kind != "variable" and not sym.is_array and not isinstance(init, s.ArrayInit)
                and not out_of_range):
            value = const_value(init, env)
            if value is not None:
                env[d.name] = value

    def channel_symbol(self, d: s.ChannelDecl, env: dict[str, int], owner: str | None) -> Symbol:
        sym = Symbol("channel", d.name, d, owner, types=d.types)
        if d.size is not None:
            size = const_value(d.size, env)
            pos = d.size.pos or sym.pos
            if size is None:
                self.p.error(pos, "channel-size-invalid",
                             f"buffer size of channel '{d.name}' must be a constant expression")
            elif size < 0:
                self.p.error(pos, "channel-size-invalid",
                             f"expected a buffer size of 0 or more, found {size} for '{d.name}'")
            elif size > 0:
                if d.types is None:
                    self.p.error(sym.pos, "buffered-untyped",
                                 f"buffered channel '{d.name}' must be typed",
                                 f"declare the item types: 'channel {{byte}} {d.name}[{size}]'")
                else:
                    sym.buffered = True
                    qual = d.name if owner is None else f"{owner}.{d.name}"
                    self.occupy(1 + size * len(d.types),
                                f"buffered channel '{qual}' of {size:,} items", pos)
        self.table.chan_syms[id(sym)] = sym
        self.table.chan_uses[id(sym)] = []
        return sym

    # -- lookups -----------------------------------------------------------------------------
