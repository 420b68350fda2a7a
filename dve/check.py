"""Static checks on an expanded model: everything a careful user wants caught before a long run.

:func:`check_model` walks an expanded :class:`~dve.syntax.Model` once, gathers every problem it
finds (the miniwdl ``multi_context`` pattern, so a user fixes all of them in one pass), raises
one :class:`~dve.errors.ModelErrors` when any is an error, and returns the warnings otherwise.

Scopes
------
A model has one global scope (variables, constants, inputs, channels and processes share it) and
one scope per process (its local variables and channels, and its states). A local name may not
repeat a state name of its process; it may hide a global name (a warning: BEEM's
``pgm_protocol`` does it). A state name may repeat a global name (DiVinE's own test models name a
state after its process). Names in expressions resolve to the process's locals first, then to
the globals.

Codes
-----
Errors (the model is refused):

=============================  ====================================================================
``undefined-name``             a variable, channel, process or macro that is not declared
``duplicate-name``             a name declared twice in one scope, or a local repeating a state
                               name of its process
``unknown-state``              a state that its process does not declare (transitions, ``init``,
                               ``commit``, ``accept``, ``assert``, ``P.s``)
``missing-init``               a process without ``init``
``assign-to-const``            an assignment (or a receive) into a constant or an input
``assign-to-channel``          an assignment (or a receive) into a channel
``channel-as-value``           a channel read as a value
``not-a-variable``             a process used where a variable is expected
``not-a-channel``              ``sync x!...`` where ``x`` is not a channel
``not-an-array``               an index applied to a scalar
``index-out-of-range``         a constant index outside ``0..size-1`` (where it is evaluated)
``division-by-zero``           ``/`` or ``%`` by a constant zero (where it is evaluated: not in the
                               right operand of ``0 and ...``, ``1 or ...``, ``0 imply ...``)
``literal-out-of-range``       an integer literal beyond 2147483647 (32-bit guards, effects,
                               initialisers), or beyond 9223372036854775807 in a cost or time
``cost-overflow``              a constant cost or time whose value leaves 64 bits
``array-size-invalid``         an array size that is not a constant, or is not above 0
``channel-size-invalid``       a channel buffer size that is not a constant, or is below 0
``buffered-untyped``           an untyped channel declared with a buffer
``initializer-kind``           a scalar initialised with ``{...}`` or an array with a single value
``init-out-of-range``          an initial value outside its type (byte 0..255, int -32768..32767)
``sync-arity``                 a number of values that does not match the channel's item types, or
                               (untyped channels) differs between two uses of one channel
``sync-kind``                  a receive into something that is not a variable
``negative-time``              a constant ``time`` below 0
``duplicate-resource``         one resource charged twice on one transition
``duplicate-clause``           two plain ``cost`` clauses on one transition
``cost-resource-inconsistent`` plain ``cost e;`` mixed with named resources in one model
``property-not-found``         ``system ... property P`` where ``P`` is not declared
``property-not-process``       ``system ... property P`` where ``P`` is not a process
``declaration-too-large``      an impossible declaration: an array or a buffered channel that
                               takes the state vector past :data:`MAX_STATE_SLOTS` slots
=============================  ====================================================================

Warnings (reported, the model is accepted):

=============================  ====================================================================
``unpaired-sync``              a channel that is sent on but never received from (or the reverse),
                               or a rendezvous channel used by one process only: those syncs can
                               never fire
``array-without-index``        an array used without an index (BEEM's ``train-gate`` does this)
``shadowed-name``              a local variable or channel with the name of a global one (BEEM's
                               ``pgm_protocol`` does this)
``unreachable-state``          a state no transition path from ``init`` reaches (guards ignored)
``dead-transition``            a transition whose guard is constant and false
``value-out-of-range``         a constant assigned to a variable whose type cannot hold it (the
                               step would lead to the error state), or sent on a typed channel
                               whose item type cannot hold it (DiVinE 2 wraps it)
``initializer-too-long``       an array initialiser with more values than the array has cells
                               (DiVinE drops the rest)
``cost-resource-typo``         a named resource charged once whose name is close to another
                               resource
``sync-ignored``               a ``sync`` under ``system sync``, which ignores channels
``ltl-not-analysed``           a ``property ltl``: parsed, not analysed
``property-without-accept``    a property process (``system ... property P``) with no ``accept``
``property-ignored``           ``system sync property P``: the property process is left out (the
                               product is defined for ``system async`` only)
=============================  ====================================================================

The size of a state
-------------------
Every state is stored whole: one *slot* per process (its control state), per scalar variable,
per array cell, and per buffered channel (its count, and one per field of each item). The
explorer keeps a state it has yet to expand unpacked, 4 bytes a slot, beside its packed key
(a byte takes 8 bits of it, an int 16), and the graph keeps every state's slots; the compiler
builds one record per slot. At :data:`MAX_STATE_SLOTS` (2**20) slots a single state already
takes 4 MiB unpacked and 1 to 2 MiB packed, so a graph of a few thousand states fills a
machine's memory; a declaration that takes the state past it (``byte a[2000000000];``, or
``channel {byte, int} c[1000000];``) cannot describe an explorable model and is refused here,
before anything is allocated for it.

The cost rule
-------------
``cost e;`` charges the resource named ``cost`` (DESIGN.md). A model that names resources
(``cost cpu: 5, net: 2;``) and also uses the plain form almost certainly meant the plain charges
for one of its named resources, and ``--cost cpu`` would silently read them as 0. So a model uses
either the plain form only or named resources only (``cost cost: e`` counts as named). One
transition charges each resource at most once.

Examples
--------
>>> from dve.parser import parse_model
>>> check_model(parse_model("process P { state a; init a; trans a -> a {}; } system async;"))
()
>>> text = "byte x; process P { state a; init a; trans a -> a { effect y = 1; }; } system async;"
>>> try:
...     check_model(parse_model(text, "m.dve"))
... except ModelErrors as exc:
...     print(exc)
m.dve:1:60: error[undefined-name]: unknown variable 'y'
"""

from __future__ import annotations

import difflib
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

from . import syntax as s
from .arith import INT32, INT64, TYPE_RANGE
from .consteval import const_evaluator, eval_const, literal_error
from .errors import DvecostError, ModelError, ModelErrors, ModelSemanticError, SourcePos

__all__ = ["check_model", "CODES", "WARNING_CODES", "TYPE_RANGES", "MAX_STATE_SLOTS"]

#: Value range of each variable type (legacy DiVinE: byte = uint8, int = int16).
TYPE_RANGES: dict[str, tuple[int, int]] = TYPE_RANGE

#: Every code :func:`check_model` can report as an error.
CODES: tuple[str, ...] = (
    "undefined-name", "duplicate-name", "unknown-state", "missing-init", "assign-to-const",
    "assign-to-channel", "channel-as-value", "not-a-variable", "not-a-channel", "not-an-array",
    "index-out-of-range", "division-by-zero", "literal-out-of-range", "cost-overflow",
    "array-size-invalid", "channel-size-invalid",
    "buffered-untyped", "initializer-kind", "init-out-of-range", "sync-arity", "sync-kind",
    "negative-time", "duplicate-resource", "duplicate-clause", "cost-resource-inconsistent",
    "property-not-found", "property-not-process", "declaration-too-large",
)

#: The most slots a state vector may have (see "The size of a state" above); the compiler
#: refuses the same models (:func:`statespace.compile_model`).
MAX_STATE_SLOTS = 1 << 20

#: Every code :func:`check_model` can report as a warning.
WARNING_CODES: tuple[str, ...] = (
    "unpaired-sync", "array-without-index", "shadowed-name", "unreachable-state",
    "dead-transition", "value-out-of-range", "initializer-too-long", "cost-resource-typo",
    "sync-ignored", "ltl-not-analysed", "property-without-accept", "property-ignored",
)


# ---------------------------------------------------------------------------- constant folding

def _is_const_expr(expr: object, env: dict[str, int]) -> bool:
    """Whether ``expr`` mentions only literals and names bound in ``env`` (cheap pre-test)."""
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, s.Binary):
            stack.append(e.right)
            stack.append(e.left)
        elif isinstance(e, s.Unary):
            stack.append(e.operand)
        elif isinstance(e, s.Name):
            if e.name not in env:
                return False
        elif not isinstance(e, (s.IntLit, s.BoolLit)):
            return False
    return True


def _const(expr: object, env: dict[str, int], wide: bool = False) -> int | None:
    """The value of a constant expression, or ``None`` when it is not constant or fails
    (``wide``: in the checked 64-bit arithmetic of costs and times)."""
    if expr is None or not _is_const_expr(expr, env):
        return None
    if isinstance(expr, s.IntLit):  # the common case, without a call
        return expr.value if expr.value <= _LITERAL_MAX[wide] else None
    try:
        return int(eval_const(expr, env, wide=wide))  # type: ignore[arg-type]
    except (DvecostError, ArithmeticError, ValueError, RecursionError):
        return None


def _constant_nodes(root: object, env: dict[str, int]) -> dict[int, bool]:
    """``id(node) -> whether it mentions only literals and constants`` for the operator and
    leaf nodes of ``root``, in one post-order pass (a test per node would be quadratic along
    a chain ``a and b and c ...``)."""
    out: dict[int, bool] = {}
    stack: list = [(root, False)]
    while stack:
        x, done = stack.pop()
        kind = type(x)
        if kind is s.Binary:
            if done:
                out[id(x)] = out[id(x.left)] and out[id(x.right)]
            else:
                stack += ((x, True), (x.left, False), (x.right, False))
        elif kind is s.Unary:
            if done:
                out[id(x)] = out[id(x.operand)]
            else:
                stack += ((x, True), (x.operand, False))
        elif kind is s.Name:
            out[id(x)] = x.name in env
        else:
            out[id(x)] = kind is s.IntLit or kind is s.BoolLit
    return out


def _evaluated(root: object, target: object, env: dict[str, int], wide: bool) -> bool:
    """Whether evaluating ``root`` evaluates its sub-expression ``target``: ``and``, ``or``
    and ``imply`` skip their right operand when a constant left one decides the result.

    Asked only for a node that would be an error (a division by a constant zero, a constant
    index out of range), so the common path pays nothing for it.

    >>> from dve.parser import parse_model
    >>> g = parse_model("process P { state s; init s; trans s -> s { guard 0 and 1 / 0; }; }"
    ...                 " system async;").items[0].transitions[0].guard[0]
    >>> _evaluated(g, g.right, {}, False), _evaluated(g, g.left, {}, False)
    (False, True)
    """
    value_of = const_evaluator(env, wide=wide)
    constant = _constant_nodes(root, env)
    stack = [root]
    while stack:
        x = stack.pop()
        if x is target:
            return True
        kind = type(x)
        if kind is s.Binary:
            stack.append(x.left)
            if x.op in _SHORT_CIRCUIT and constant.get(id(x.left), False):
                try:
                    v = value_of(x.left)
                except (DvecostError, ArithmeticError, ValueError, RecursionError):
                    v = None   # the left operand faults: the step faults there
                if v is not None and ((v != 0) if x.op == "or" else (v == 0)):
                    continue   # the right operand never runs
            stack.append(x.right)
        elif kind is s.Unary:
            stack.append(x.operand)
        elif kind is s.Index or (kind is s.Remote and x.index is not None):
            stack.append(x.index)
        elif kind is s.Call:
            stack.extend(x.args)
    return False


# ---------------------------------------------------------------------------- positions

_WORD = re.compile(r"[A-Za-z_$#][A-Za-z0-9_$#]*")


def _name_span(pos: SourcePos | None, name: str, last: bool = False) -> SourcePos | None:
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
_HINT_BUDGET = 1_000_000


def _did_you_mean(name: str, candidates: object) -> str | None:
    close = difflib.get_close_matches(name, list(candidates),  # type: ignore[call-overload]
                                      n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def _size(slots: int) -> str:
    """The unpacked size of ``slots`` 4-byte slots, in binary units.

    >>> _size(1 << 20), _size(2_000_000_001), _size(3)
    ('4 MiB', '7.45 GiB', '12 bytes')
    """
    b = 4 * slots
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return f"{b / (1 << k):.3g} {unit}"
    return f"{b} bytes"


def _at(pos: SourcePos | None, column: bool = False) -> str:
    """``'line 3'`` (or ``'line 3, column 7'``) for a hint; ``'elsewhere'`` without a position."""
    if pos is None:
        return "elsewhere"
    return f"line {pos.line}, column {pos.column}" if column else f"line {pos.line}"


# ---------------------------------------------------------------------------- symbols

@dataclass(slots=True, eq=False)
class _Symbol:
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
        return _name_span(self.node.pos, self.name)

    def describe(self) -> str:
        if self.kind == "variable":
            return f"{'array' if self.is_array else 'variable'} '{self.name}'"
        return f"{self.kind} '{self.name}'"


@dataclass(slots=True)
class _ProcScope:
    process: s.Process
    locals: dict[str, _Symbol] = field(default_factory=dict)
    states: dict[str, s.StateDecl] = field(default_factory=dict)
    env: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _ChanUse:
    op: str
    n_values: int
    process: str
    sync: s.Sync


class _Problems:
    """The gathered diagnostics (miniwdl's ``multi_context``)."""

    def __init__(self) -> None:
        self.items: list[ModelError] = []
        # "Did you mean" compares a name with every candidate: a budget of comparisons per
        # model keeps thousands of unknown names among thousands of declared ones from taking
        # minutes (3,000 of each took 14 s); past it, the errors come without that hint.
        self.hint_budget = _HINT_BUDGET

    def did_you_mean(self, name: str, candidates: object) -> str | None:
        """:func:`_did_you_mean` within the budget; None once it is spent."""
        if self.hint_budget <= 0:
            return None
        names = list(candidates)  # type: ignore[call-overload]
        self.hint_budget -= len(names) + 1
        return _did_you_mean(name, names)

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


_DIV_OPS = ("/", "%")
_SHORT_CIRCUIT = ("and", "or", "imply")
#: The largest literal of a 32-bit (False) and of a 64-bit (True: cost, time) expression.
_LITERAL_MAX = {False: INT32[1], True: INT64[1]}
_NOT_VALUES = ("channel", "process")


# ---------------------------------------------------------------------------- the checker

class _Checker:
    def __init__(self, model: s.Model) -> None:
        self.model = model
        self.p = _Problems()
        self.globals: dict[str, _Symbol] = {}
        self.env: dict[str, int] = {}            # global constants and inputs with known values
        self.scopes: dict[str, _ProcScope] = {}
        self.chan_uses: dict[int, list[_ChanUse]] = {}
        self.chan_syms: dict[int, _Symbol] = {}
        self.costs: list[s.Cost] = []
        self.first_sync: s.Sync | None = None
        # The state vector's slots so far, and its largest contributor (slots, what, where).
        self.slots = 0
        self.largest: tuple[int, str, SourcePos | None] = (0, "", None)

    # -- declarations ------------------------------------------------------------------------

    def declare(self, table: dict[str, _Symbol], sym: _Symbol,
                also: tuple[dict, ...] = ()) -> None:
        prev = table.get(sym.name)
        if prev is None:
            for other in also:
                prev = other.get(sym.name)
                if prev is not None:
                    break
        if isinstance(prev, _Symbol) and prev.owner is None and sym.owner is not None:
            # A local hiding a global: DiVinE 2 accepts it (BEEM's pgm_protocol does it).
            self.p.warning(sym.pos, "shadowed-name",
                           f"local {sym.describe()} of process '{sym.owner}' hides global "
                           f"{prev.describe()}",
                           f"inside '{sym.owner}', '{sym.name}' means the local one; rename it "
                           "if both are meant")
            table[sym.name] = sym
            return
        if prev is not None:
            where = prev.pos if isinstance(prev, _Symbol) else _name_span(prev.pos, sym.name)
            what = prev.describe() if isinstance(prev, _Symbol) else f"state '{sym.name}'"
            self.p.error(sym.pos, "duplicate-name", f"'{sym.name}' is already declared",
                         f"{what} is declared at {_at(where, column=True)}")
            return
        table[sym.name] = sym

    def var_symbol(self, d: s.VarDecl, env: dict[str, int],
                   scope: _ProcScope | None) -> _Symbol:
        kind = "input" if d.input else "constant" if d.const else "variable"
        owner = scope.process.name if scope is not None else None
        sym = _Symbol(kind, d.name, d, owner, type=d.type)
        if d.size is not None:
            sym.is_array = True
            with self.p.attempt():
                self.expr(d.size, env, scope)
            size = _const(d.size, env)
            pos = d.size.pos or _name_span(d.pos, d.name)
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
            hint = (f"the largest part is {big_what} at {_at(big_pos, column=True)}; "
                    if big_pos is not pos else "")
            self.p.error(pos, "declaration-too-large",
                         f"impossible declaration: {what} takes the state vector to "
                         f"{self.slots:,} slots (about {_size(self.slots)} per state); "
                         f"the explorer holds at most {MAX_STATE_SLOTS:,}",
                         hint + "every state is stored whole, one slot per variable, array "
                         "cell and buffered channel field: use fewer or smaller arrays")

    def initializer(self, d: s.VarDecl, sym: _Symbol, env: dict[str, int],
                    scope: _ProcScope | None) -> None:
        init = d.init
        if init is None:
            return
        lo, hi = TYPE_RANGES.get(d.type, (None, None))
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
                self.expr(item, env, scope)
            value = _const(item, env)
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
            value = _const(init, env)
            if value is not None:
                env[d.name] = value

    def channel_symbol(self, d: s.ChannelDecl, env: dict[str, int], owner: str | None) -> _Symbol:
        sym = _Symbol("channel", d.name, d, owner, types=d.types)
        if d.size is not None:
            size = _const(d.size, env)
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
        self.chan_syms[id(sym)] = sym
        self.chan_uses[id(sym)] = []
        return sym

    # -- lookups -----------------------------------------------------------------------------

    def lookup(self, name: str, scope: _ProcScope | None) -> _Symbol | None:
        if scope is not None:
            sym = scope.locals.get(name)
            if sym is not None:
                return sym
        return self.globals.get(name)

    def undefined(self, pos: SourcePos | None, name: str, scope: _ProcScope | None,
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

    def process_scope(self, ref: s.ProcRef, scope: _ProcScope | None) -> _ProcScope | None:
        sc = self.scopes.get(ref.name)
        if sc is None:
            sym = self.globals.get(ref.name)
            if sym is not None:
                self.p.error(_name_span(ref.pos, ref.name), "not-a-variable",
                             f"expected a process, found {sym.describe()}")
            else:
                self.p.error(_name_span(ref.pos, ref.name), "undefined-name",
                             f"unknown process '{ref.name}'",
                             self.p.did_you_mean(ref.name, self.scopes))
        return sc

    # -- expressions -------------------------------------------------------------------------

    def expr(self, root: object, env: dict[str, int], scope: _ProcScope | None,
             wide: bool = False) -> None:
        """Check a value expression: names resolve to variables, indices fit, literals fit
        the width (64 bits with ``wide``, for costs and times; else 32), no constant divisor
        is 0 where the division is evaluated.

        ``and``, ``or`` and ``imply`` skip their right operand when a constant left one
        decides the result (``N != 0 and x / N > 1`` with ``N = 0``): that operand is still
        checked for names, but a division by zero or an index out of range in it is no
        error, since it never runs (:func:`_evaluated`, asked only when one is found).
        Iterative, not recursive: BEEM's ``plc`` has guards with thousands of operators.
        """
        # Exact type tests and a fast path for plain scalar names: this loop visits every
        # operand of every guard and effect (300 000 nodes in one plc model).
        stack = [root]
        pop, push = stack.pop, stack.append
        local_syms = scope.locals if scope is not None else {}
        global_syms = self.globals
        while stack:
            e = pop()
            kind = type(e)
            if kind is s.Binary:
                push(e.right)
                push(e.left)
                if e.op in _DIV_OPS and _const(e.right, env, wide) == 0 \
                        and _evaluated(root, e, env, wide):
                    self.p.error(e.right.pos or e.pos, "division-by-zero",
                                 f"expected a non-zero divisor for '{e.op}', found 0",
                                 "this step would always lead to the error state")
            elif kind is s.Name:
                sym = local_syms.get(e.name) or global_syms.get(e.name)
                if sym is None or sym.kind in _NOT_VALUES or sym.is_array:
                    self.leaf(e, env, scope, stack)
            elif kind is s.IntLit:
                if e.value > _LITERAL_MAX[wide]:
                    self.literal(e, wide)
            elif kind is s.BoolLit or e is None:
                pass
            elif kind is s.Unary:
                if e.op == "-" and type(e.operand) is s.IntLit:
                    # '-2147483648': a minus and a literal one past the maximum.
                    if e.operand.value > _LITERAL_MAX[wide] + 1:
                        self.literal(e.operand, wide, negated=True)
                else:
                    push(e.operand)
            else:
                self.leaf(e, env, scope, stack, (root, wide))

    def overflow(self, e: s.Expr, env: dict[str, int], what: str) -> None:
        """An error when the constant cost or time ``e`` overflows 64 bits (every step would
        fault); a cost that depends on the state is checked step by step at run time."""
        if not _is_const_expr(e, env):
            return
        try:
            eval_const(e, env, wide=True)
        except DvecostError as exc:
            if getattr(exc, "code", None) == "overflow":
                self.p.error(exc.pos or e.pos, "cost-overflow", f"this {what} overflows 64 bits",
                             f"every step would fault: a {what} and its intermediate values "
                             f"must lie within {INT64[0]}..{INT64[1]}")

    def literal(self, e: s.IntLit, wide: bool, negated: bool = False) -> None:
        err = literal_error(e, wide, negated)
        if err is not None:
            self.p.error(err.pos, err.code, err.message, err.hint)

    def leaf(self, e: object, env: dict[str, int], scope: _ProcScope | None,
             stack: list, within: tuple | None = None) -> None:
        """Check one name, index, state test, remote read or call; push its sub-expressions.
        ``within``: ``(root, wide)`` of the expression ``e`` is part of (a constant index out
        of range is an error only where ``root`` evaluates it)."""
        if isinstance(e, s.Name):
            sym = self.lookup(e.name, scope)
            if sym is None:
                self.undefined(e.pos, e.name, scope, ("variable", "constant", "input"), "variable")
            elif sym.kind == "channel":
                self.p.error(e.pos, "channel-as-value",
                             f"expected a variable, found channel '{e.name}'",
                             "channels are used only in 'sync c!v' and 'sync c?x'")
            elif sym.kind == "process":
                self.p.error(e.pos, "not-a-variable",
                             f"expected a variable, found process '{e.name}'",
                             f"test its state with '{e.name}.STATE'")
            elif sym.is_array:
                self.whole_array(e.pos, e.name)
        elif isinstance(e, s.Index):
            stack.append(e.index)
            sym = self.lookup(e.name, scope)
            if sym is None:
                self.undefined(_name_span(e.pos, e.name), e.name, scope,
                               ("variable", "constant", "input"), "array")
            else:
                self.indexed(sym, e.index, e.pos, env, within=within, node=e)
        elif isinstance(e, s.StateTest):
            sc = self.process_scope(e.process, scope)
            if sc is not None and e.state not in sc.states:
                self.p.error(_name_span(e.pos, e.state, last=True), "unknown-state",
                             f"unknown state '{e.state}' of process '{sc.process.name}'",
                             self.p.did_you_mean(e.state, sc.states))
        elif isinstance(e, s.Remote):
            if e.index is not None:
                stack.append(e.index)
            sc = self.process_scope(e.process, scope)
            if sc is None:
                return
            sym = sc.locals.get(e.name)
            pos = _name_span(e.pos, e.name, last=e.process.name != e.name) \
                if sym is None or sym.kind == "channel" or sym.is_array else None
            if sym is None:
                self.p.error(pos, "undefined-name",
                             f"unknown variable '{e.name}' of process '{sc.process.name}'",
                             self.p.did_you_mean(e.name, [n for n, x in sc.locals.items()
                                                         if x.kind != "channel"]))
            elif sym.kind == "channel":
                self.p.error(pos, "channel-as-value",
                             f"expected a variable, found channel '{e.name}'")
            elif e.index is None and sym.is_array:
                self.whole_array(pos, e.name, f"{e.process.name}->")
            elif e.index is not None:
                self.indexed(sym, e.index, e.pos, sc.env, last=e.process.name != e.name,
                             within=within, node=e)
        elif isinstance(e, s.Call):
            stack.extend(e.args)
            self.p.error(_name_span(e.pos, e.name), "undefined-name",
                         f"unknown macro '{e.name}'")
        else:
            raise TypeError(f"not an expression: {e!r}")

    def whole_array(self, pos: SourcePos | None, name: str, prefix: str = "") -> None:
        # A warning, not an error: BEEM's train-gate models do this, and DiVinE 2 accepts them.
        self.p.warning(pos, "array-without-index", f"array '{name}' used without an index",
                       f"write '{prefix}{name}[0]' if the first cell is meant")

    def indexed(self, sym: _Symbol, index: s.Expr, whole: SourcePos | None,
                env: dict[str, int], last: bool = False, within: tuple | None = None,
                node: object = None) -> None:
        """Check ``sym[index]``; ``whole`` is the span of the indexed expression. A constant
        index out of range is an error only where the read (``node``) is evaluated when the
        expression ``within = (root, wide)`` is."""
        if sym.is_array and sym.size is not None and sym.size > 0:
            i = _const(index, env)
            if i is not None and not 0 <= i < sym.size and (
                    within is None or _evaluated(within[0], node, env, within[1])):
                self.p.error(index.pos or whole, "index-out-of-range",
                             f"index {i} is out of range for array '{sym.name}': "
                             f"expected 0..{sym.size - 1}",
                             f"'{sym.name}' has {sym.size} cell{'s' * (sym.size != 1)}")
            return
        pos = _name_span(whole, sym.name, last=last)
        if sym.kind == "channel":
            self.p.error(pos, "channel-as-value", f"expected an array, found channel '{sym.name}'")
        elif sym.kind == "process":
            self.p.error(pos, "not-a-variable", f"expected an array, found process '{sym.name}'")
        elif not sym.is_array:
            self.p.error(pos, "not-an-array",
                         f"expected an array, found scalar '{sym.name}' with an index",
                         f"'{sym.name}' is declared at {_at(sym.pos)}")

    def lvalue(self, target: object, env: dict[str, int], scope: _ProcScope,
               verb: str = "assign to") -> _Symbol | None:
        """Check an assignment or receive target; the symbol when it is a valid variable."""
        if isinstance(target, s.Name):
            sym = self.lookup(target.name, scope)
            pos = target.pos
        elif isinstance(target, s.Index):
            self.expr(target.index, env, scope)
            sym = self.lookup(target.name, scope)
            pos = target.pos
        else:
            self.expr(target, env, scope)
            self.p.error(getattr(target, "pos", None), "sync-kind",
                         "expected a variable to receive into, found an expression",
                         "a receive 'c?x' stores into variables; compare values with a guard")
            return None
        name = target.name
        if isinstance(target, s.Index) and (sym is None or sym.kind != "variable"):
            pos = _name_span(pos, name)  # only when reporting: it reads the source line
        if sym is None:
            self.undefined(pos, name, scope, ("variable", "constant", "input"), "variable")
            return None
        if sym.kind in ("constant", "input"):
            self.p.error(pos, "assign-to-const", f"cannot {verb} {sym.kind} '{name}'",
                         f"'{name}' is declared {sym.kind if sym.kind == 'input' else 'const'} "
                         f"at {_at(sym.pos)}")
            return None
        if sym.kind == "channel":
            self.p.error(pos, "assign-to-channel", f"cannot {verb} channel '{name}'",
                         f"send on it with 'sync {name}!value'")
            return None
        if sym.kind == "process":
            self.p.error(pos, "not-a-variable", f"expected a variable, found process '{name}'")
            return None
        if isinstance(target, s.Name):
            if sym.is_array:
                self.whole_array(pos, name)
        else:
            self.indexed(sym, target.index, target.pos, env)
        return sym

    # -- processes ---------------------------------------------------------------------------

    def process_decls(self, proc: s.Process) -> _ProcScope:
        sc = _ProcScope(proc, env=dict(self.env))
        self.occupy(1, f"process '{proc.name}'", _name_span(proc.pos, proc.name))
        for st in proc.states:
            if st.name in sc.states:
                first = sc.states[st.name]
                self.p.error(_name_span(st.pos, st.name), "duplicate-name",
                             f"state '{st.name}' is already declared",
                             "first declared at "
                             + _at(_name_span(first.pos, st.name), column=True))
            else:
                sc.states[st.name] = st
        for d in proc.decls:
            if isinstance(d, s.ChannelDecl):
                sym = self.channel_symbol(d, sc.env, proc.name)
            else:
                sym = self.var_symbol(d, sc.env, sc)
            self.declare(sc.locals, sym, (self.globals, sc.states))
        return sc

    def state_ref(self, ref: s.StateRef | None, sc: _ProcScope) -> None:
        if ref is not None and ref.name not in sc.states:
            self.p.error(ref.pos, "unknown-state",
                         f"unknown state '{ref.name}' of process '{sc.process.name}'",
                         self.p.did_you_mean(ref.name, sc.states))

    def process_body(self, sc: _ProcScope) -> None:
        proc = sc.process
        if proc.init is None:
            self.p.error(_name_span(proc.pos, proc.name, last=False), "missing-init",
                         f"process '{proc.name}' has no initial state",
                         f"add 'init {proc.states[0].name};' after the state list"
                         if proc.states else "declare states and an 'init' state")
        else:
            self.state_ref(proc.init, sc)
        for ref in proc.commit:
            self.state_ref(ref, sc)
        for acc in proc.accept:
            for group in acc.sets:
                for ref in group:
                    self.state_ref(ref, sc)
        for a in proc.asserts:
            self.state_ref(a.state, sc)
            with self.p.attempt():
                self.expr(a.expr, sc.env, sc)
        for t in proc.transitions:
            with self.p.attempt():
                self.transition(t, sc)
        self.reachability(sc)

    def transition(self, t: s.Transition, sc: _ProcScope) -> None:
        env = sc.env
        if t.src is not None:
            self.state_ref(t.src, sc)
        self.state_ref(t.dst, sc)
        for g in t.guard:
            self.expr(g, env, sc)
            if _const(g, env) == 0:
                self.p.warning(g.pos or t.pos, "dead-transition",
                               "guard is always false: this transition can never fire")
        if t.sync is not None:
            self.sync(t.sync, sc)
        for a in t.effects:
            sym = self.lvalue(a.target, env, sc)
            self.expr(a.value, env, sc)
            value = _const(a.value, env)
            if sym is not None and value is not None and sym.type in TYPE_RANGES:
                lo, hi = TYPE_RANGES[sym.type]
                if not lo <= value <= hi:
                    self.p.warning(a.value.pos or a.pos, "value-out-of-range",
                                   f"value {value} does not fit {sym.type} '{sym.name}': "
                                   f"expected {lo}..{hi}",
                                   "this step would always lead to the error state")
        seen: dict[str, s.Cost] = {}
        for c in t.costs:
            self.expr(c.amount, env, sc, wide=True)
            self.overflow(c.amount, env, "cost")
            self.costs.append(c)
            prev = seen.get(c.resource)
            if prev is None:
                seen[c.resource] = c
            elif not c.named and not prev.named:
                self.p.error(c.pos, "duplicate-clause",
                             "expected one 'cost' clause per transition, found a second",
                             "add the amounts: 'cost a + b;'")
            elif c.named and prev.named:
                self.p.error(_name_span(c.pos, c.resource), "duplicate-resource",
                             f"resource '{c.resource}' is charged twice on one transition",
                             "add the amounts into one charge")
        if t.time is not None:
            self.expr(t.time, env, sc, wide=True)
            self.overflow(t.time, env, "time")
            value = _const(t.time, env, wide=True)
            if value is not None and value < 0:
                self.p.error(t.time.pos or t.pos, "negative-time",
                             f"expected a time of 0 or more, found {value}")

    def sync(self, sync: s.Sync, sc: _ProcScope) -> None:
        env = sc.env
        if self.first_sync is None:
            self.first_sync = sync
        if sync.process is not None:
            owner = self.process_scope(sync.process, sc)
            if owner is None:
                chan = None
            else:
                chan = owner.locals.get(sync.channel)
                if chan is None:
                    self.p.error(_name_span(sync.pos, sync.channel, last=True), "undefined-name",
                                 f"unknown channel '{sync.channel}' of process "
                                 f"'{owner.process.name}'",
                                 self.p.did_you_mean(sync.channel,
                                                     [n for n, x in owner.locals.items()
                                                      if x.kind == "channel"]))
        else:
            chan = self.lookup(sync.channel, sc)
            if chan is None:
                self.undefined(_name_span(sync.pos, sync.channel), sync.channel, sc,
                               ("channel",), "channel")
        if chan is not None and chan.kind != "channel":
            self.p.error(_name_span(sync.pos, sync.channel, last=sync.process is not None),
                         "not-a-channel", f"expected a channel, found {chan.describe()}")
            chan = None
        if sync.op == "!":
            for v in sync.values:
                self.expr(v, env, sc)
        else:
            for v in sync.values:
                self.lvalue(v, env, sc, verb="receive into")
        if chan is None:
            return
        n = len(sync.values)
        if chan.types is not None and n != len(chan.types):
            types = ", ".join(chan.types)
            self.p.error(self.values_pos(sync), "sync-arity",
                         f"wrong number of values for channel '{chan.name}': expected "
                         f"{len(chan.types)} ({types}), found {n}",
                         f"'{chan.name}' is declared 'channel {{{types}}}' at {_at(chan.pos)}")
        elif chan.types is not None and sync.op == "!":
            for k, (v, ty) in enumerate(zip(sync.values, chan.types)):
                value = _const(v, env)
                lo, hi = TYPE_RANGES.get(ty, (value, value))
                if value is not None and not lo <= value <= hi:
                    self.p.warning(v.pos or sync.pos, "value-out-of-range",
                                   f"value {value} does not fit item {k + 1} ({ty}) of channel "
                                   f"'{chan.name}': expected {lo}..{hi}",
                                   "DiVinE 2 wraps it silently into the item type")
        self.chan_uses[id(chan)].append(_ChanUse(sync.op, n, sc.process.name, sync))

    @staticmethod
    def values_pos(sync: s.Sync) -> SourcePos | None:
        if sync.values and sync.values[0].pos is not None and sync.values[-1].pos is not None:
            return sync.values[0].pos.to(sync.values[-1].pos)
        return sync.pos

    def reachability(self, sc: _ProcScope) -> None:
        proc = sc.process
        if proc.init is None or proc.init.name not in sc.states:
            return
        succ: dict[str, list[str]] = {}
        for t in proc.transitions:
            if t.src is not None:
                succ.setdefault(t.src.name, []).append(t.dst.name)
        seen = {proc.init.name}
        todo = [proc.init.name]
        while todo:
            for nxt in succ.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        for name, st in sc.states.items():
            if name not in seen:
                self.p.warning(_name_span(st.pos, name), "unreachable-state",
                               f"state '{name}' of process '{proc.name}' is unreachable from "
                               f"its initial state '{proc.init.name}'",
                               "add a transition into it, or remove it")

    # -- the whole model ---------------------------------------------------------------------

    def channels(self) -> None:
        for key, uses in self.chan_uses.items():
            chan = self.chan_syms[key]
            if not uses:
                continue
            if chan.types is None:
                self.untyped_arity(chan, uses)
            sends = [u for u in uses if u.op == "!"]
            recvs = [u for u in uses if u.op == "?"]
            if sends and not recvs:
                for u in sends:
                    self.p.warning(_name_span(u.sync.pos, chan.name, last=True), "unpaired-sync",
                                   f"no process receives on channel '{chan.name}': this send "
                                   "can never happen", f"add 'sync {chan.name}?...' to a partner")
            elif recvs and not sends:
                for u in recvs:
                    self.p.warning(_name_span(u.sync.pos, chan.name, last=True), "unpaired-sync",
                                   f"no process sends on channel '{chan.name}': this receive "
                                   "can never happen", f"add 'sync {chan.name}!...' to a partner")
            elif not chan.buffered:
                procs = {u.process for u in uses}
                if len(procs) == 1:
                    (only,) = procs
                    for u in uses:
                        self.p.warning(_name_span(u.sync.pos, chan.name, last=True),
                                       "unpaired-sync",
                                       f"only process '{only}' uses rendezvous channel "
                                       f"'{chan.name}': a rendezvous needs two processes")

    def untyped_arity(self, chan: _Symbol, uses: list[_ChanUse]) -> None:
        counts: dict[int, int] = {}
        for u in uses:
            counts[u.n_values] = counts.get(u.n_values, 0) + 1
        if len(counts) <= 1:
            return
        # The most frequent arity is taken as intended (ties: the first use's).
        usual = max(counts, key=lambda n: (counts[n], n == uses[0].n_values))
        first = next(u for u in uses if u.n_values == usual)
        for u in uses:
            if u.n_values != usual:
                self.p.error(self.values_pos(u.sync) if u.sync.values else
                             _name_span(u.sync.pos, chan.name, last=True), "sync-arity",
                             f"wrong number of values for channel '{chan.name}': expected "
                             f"{usual} as at {_at(first.sync.pos)}, found {u.n_values}",
                             "every use of an untyped channel must pass the same number of values")

    def cost_resources(self) -> None:
        named = sorted({c.resource for c in self.costs if c.named})
        if named:
            for c in self.costs:
                if not c.named:
                    self.p.error(c.pos, "cost-resource-inconsistent",
                                 "plain 'cost' mixed with named resources "
                                 + ", ".join(f"'{r}'" for r in named),
                                 f"name the resource here too, e.g. 'cost {named[0]}: ...'")
        uses: dict[str, list[s.Cost]] = {}
        for c in self.costs:
            if c.named:
                uses.setdefault(c.resource, []).append(c)
        for name, cs in uses.items():
            if len(cs) != 1:
                continue
            others = [r for r, o in uses.items() if r != name and len(o) > 1]
            hint = self.p.did_you_mean(name, others)
            if hint:
                self.p.warning(_name_span(cs[0].pos, name), "cost-resource-typo",
                               f"resource '{name}' is charged on one transition only", hint)

    def system(self) -> None:
        sysd = self.model.system
        if sysd.property is not None:
            pos = _name_span(sysd.pos, sysd.property, last=True)
            sym = self.globals.get(sysd.property)
            if sym is None:
                self.p.error(pos, "property-not-found",
                             f"unknown property process '{sysd.property}'",
                             self.p.did_you_mean(sysd.property, self.scopes))
            elif sym.kind != "process":
                self.p.error(pos, "property-not-process",
                             f"expected a process as property, found {sym.describe()}")
            elif sysd.kind == "sync":
                # The state space of a synchronous system leaves the property out (the
                # reference defines the product for asynchronous systems only): say so.
                self.p.warning(pos, "property-ignored",
                               f"'system sync' leaves the property process '{sym.name}' out: "
                               "the state space is that of the other processes",
                               f"write 'system async property {sym.name};' for the product "
                               "with a property automaton")
            elif not any(group for acc in self.scopes[sym.name].process.accept
                         for group in acc.sets):
                self.p.warning(pos, "property-without-accept",
                               f"property process '{sym.name}' has no accepting state: "
                               "it accepts no run",
                               f"mark its accepting states with 'accept s;' in '{sym.name}'")
        if sysd.kind == "sync" and self.first_sync is not None:
            self.p.warning(_name_span(self.first_sync.pos, self.first_sync.channel),
                           "sync-ignored", "'system sync' ignores channels: this sync and "
                           "every other one only label transitions", "use 'system async' "
                           "for rendezvous and buffered channels")

    def run(self) -> list[ModelError]:
        procs: list[s.Process] = []
        for item in self.model.items:
            if isinstance(item, s.VarDecl):
                self.declare(self.globals, self.var_symbol(item, self.env, None))
            elif isinstance(item, s.ChannelDecl):
                self.declare(self.globals, self.channel_symbol(item, self.env, None))
            elif isinstance(item, s.Process):
                sym = _Symbol("process", item.name, item)
                if item.name in self.globals:
                    self.declare(self.globals, sym)
                else:
                    self.globals[item.name] = sym
                    procs.append(item)
            elif isinstance(item, s.LtlProperty):
                self.p.warning(_name_span(item.pos, item.name), "ltl-not-analysed",
                               f"LTL property '{item.name}' is parsed but not analysed")
            else:
                raise ValueError(f"check_model needs an expanded model; found "
                                 f"{type(item).__name__} (call dve.expand_model first)")
        # Scopes of all processes first: P.s and P->v may name a process declared later.
        for proc in procs:
            self.scopes[proc.name] = self.process_decls(proc)
        for proc in procs:
            self.process_body(self.scopes[proc.name])
        self.channels()
        self.cost_resources()
        self.system()
        return self.p.items


def _dedupe(problems: list[ModelError]) -> list[ModelError]:
    """Drop repeats: each instance of a template reports the template's problems again."""
    seen: set[tuple] = set()
    out = []
    for p in problems:
        key = (p.sort_key(), p.severity, p.message)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def check_model(model: s.Model) -> tuple[ModelError, ...]:
    """Check an expanded model; raise on errors, return the warnings.

    Parameters
    ----------
    model : dve.syntax.Model
        An expanded model (:func:`dve.expand_model`): only variable, channel, process and LTL
        property items.

    Returns
    -------
    tuple of ModelError
        The warnings (``severity == 'warning'``), sorted by position; empty when there are none.

    Raises
    ------
    ModelErrors
        When any check finds an error; it holds every error and warning found, sorted by position.
    ValueError
        When ``model`` still holds templates, instances, loops, ``if`` blocks or macros.

    See Also
    --------
    dve.load_model : read, parse, expand and check in one call.

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> text = '''
    ... channel c;
    ... process P { state a; init a; trans a -> a { sync c!1; }; }
    ... system async;'''
    >>> [w.code for w in check_model(parse_model(text))]
    ['unpaired-sync']
    """
    problems = _dedupe(_Checker(model).run())
    if any(p.severity == "error" for p in problems):
        raise ModelErrors(problems)
    return tuple(sorted(problems, key=ModelError.sort_key))
