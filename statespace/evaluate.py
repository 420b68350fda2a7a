"""Vectorised evaluation of guards, effects, costs and times over many states at once.

Every expression of a transition is compiled once into Python source that operates on whole
arrays, then ``exec``'d; the generated functions run one array operation per operator over all
selected states, with no Python loop over states. The code is written over an array module
``xp`` (NumPy, or CuPy with the same calls). For the few rows of a huge guard the same guard is
also generated as one Python expression over one state (:meth:`Evaluator.scalar_guard`), and
for the successor kernel as C (:meth:`Evaluator.c_guard`, ``c_effect``, ``c_charge``): every
form comes from one walk over the syntax (:class:`statespace.codegen.Emitter`), which differs
only in the code each piece is written as. This module holds the evaluator (what is generated
for a transition, compiled once per model and ``xp``) and the explanation of a step's fault
(:func:`explain_fault`); the code generators are :mod:`statespace.codegen`.

The state batch is a column-major matrix ``X`` of shape ``(n_slots, n_rows)`` and dtype
``int32``; a generated function receives ``X`` and ``r``, the (int64) indices of the rows it
works on, and returns arrays aligned with ``r``:

- ``guard(X, r) -> (enabled, err)``: ``enabled`` is a bool array (true where the guard holds or
  errs: an erroneous guard counts as true), ``err`` a bool array or ``None`` when no fault is
  possible;
- ``effect(X, r) -> (writes, err)``: ``writes`` is a list of ``(slot, values)`` giving the new
  value of every slot the step may change (values an array or a Python int);
- ``charge(X, r) -> (costs, time, err)``: one cost per resource (in
  :attr:`CompiledModel.resources` order) and the time, each an array or a Python int,
  evaluated in the source state.

Semantics (docs/language.md, "Expressions" and "Cost and time"): the operators of :mod:`dve.arith`, 32-bit
C arithmetic for guards and effects (wrapping, truncating ``/``, ``%`` with the dividend's
sign) and checked 64-bit arithmetic for costs and times; ``and``/``or``/``imply`` short-circuit
(a fault in an operand that is not evaluated does not count), comparisons and boolean operators
give 0/1. Faults (``err``): division or modulo by zero, an array index out of range on read or
write, a value assigned outside its type's range, a cost or time that overflows 64 bits, a
negative time. Effects run in order, each seeing the earlier assignments of the same step.
"""


from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from dve import arith
from dve import syntax as S

from .codegen import ArrayGen, CGen, ScalarGen, Val, deep_recursion
from .model import CompiledModel

__all__ = ["INT", "Evaluator", "Fault", "Writes", "add_costs", "explain_fault"]

#: The evaluation dtype: legacy DiVinE evaluates in 32-bit signed C arithmetic.
INT = np.int32


def _runtime_helpers(xp) -> dict[str, Any]:
    I = INT

    def _full(k, v):
        return xp.full(k, v, dtype=I)

    def _i(b):
        return b.astype(I)

    def _sidx(arr, base, size, i):
        if not 0 <= i < size:
            raise Fault
        return arr[base + i]

    def _s(op):
        def f(a, b):
            try:
                return arith.binop(op, a, b)
            except arith.DivisionByZero:
                raise Fault from None
        return f

    return {"xp": xp, "I": I, "I64": xp.int64, **arith.array_helpers(xp), "_full": _full,
            "_i": _i, "_w": arith.wrap32, "_cast": arith.cast, "_sidx": _sidx, "_sdiv": _s("/"), "_smod": _s("%"),
            "_sadd": _s("+"), "_ssub": _s("-"), "_smul": _s("*"), "_sshl": _s("<<"),
            "_sshr": _s(">>"), "Fault": Fault, "_Writes": Writes}


class Fault(Exception):
    """A runtime fault in scalar evaluation (the step goes to the error state)."""


class Writes(Sequence):
    """The slots one step writes, as ``(slot, values)`` pairs, when it writes whole arrays.

    ``scalars`` are pairs of one slot each; ``blocks`` are arrays written through a computed
    index, ``(first slot, values)`` with one row of ``values`` per cell. Iterating or indexing
    gives every cell as a pair of its own, in that order, so a caller may ignore ``blocks``;
    the explorer applies a block in one array operation (cell by cell, ``byte buf[65536]``
    written 511 times took 20 s). Effects without such writes return a plain list.

    >>> w = Writes([(0, "x")], [(5, np.array([[1, 2], [3, 4]]))])
    >>> len(w), w[0], w[2][0], [(j, v.tolist()) for j, v in w if j]
    (3, (0, 'x'), 6, [(5, [1, 2]), (6, [3, 4])])
    """

    __slots__ = ("scalars", "blocks", "_n")

    def __init__(self, scalars: list, blocks: list) -> None:
        self.scalars = scalars
        self.blocks = blocks
        self._n = len(scalars) + sum(v.shape[0] for _, v in blocks)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        if i < len(self.scalars):
            return self.scalars[i]
        i -= len(self.scalars)
        for base, vals in self.blocks:
            if i < vals.shape[0]:
                return base + i, vals[i]
            i -= vals.shape[0]
        raise IndexError(i)  # pragma: no cover - the count above says otherwise

    def __iter__(self):
        yield from self.scalars
        for base, vals in self.blocks:
            for i in range(vals.shape[0]):
                yield base + i, vals[i]


class Evaluator:
    """The generated guard, effect and charge functions of a compiled model, for one ``xp``.

    Parameters
    ----------
    cm : CompiledModel
    xp : module
        ``numpy`` or ``cupy``.

    Examples
    --------
    >>> import numpy as np
    >>> from dve.parser import parse_model
    >>> from statespace import compile_model
    >>> cm = compile_model(parse_model("byte x; process P { state a; init a; "
    ...     "trans a -> a { guard 6 / x > 1; effect x = x - 1; }; } system async;", "<doc>"))
    >>> ev = Evaluator(cm, np)
    >>> X = np.array([[0, 0, 0], [0, 2, 5]], dtype=np.int32)   # slots x rows: x = 0, 2, 5
    >>> enabled, err = ev.guard(0)(X, np.arange(3))
    >>> enabled.tolist(), err.tolist()         # 6/0 errs (counts as enabled); 6/5 == 1
    ([True, True, False], [True, False, False])
    >>> writes, err = ev.effect((0,))(X, np.arange(3))
    >>> writes[0][0], writes[0][1].tolist(), err.tolist()   # x - 1 < 0 is out of range
    (1, [-1, 1, 4], [True, False, False])
    """

    def __init__(self, cm: CompiledModel, xp=np) -> None:
        self.cm = cm
        self.xp = xp
        self.ns: dict[str, Any] = _runtime_helpers(xp)
        self.proc_index = {p.name: p.index for p in cm.processes}
        self._cache: dict[tuple, Callable] = {}
        self._n_const = 0
        #: Number of temporaries of each generated guard (a measure of its size).
        self.guard_size: dict[int, int] = {}
        self.sources: dict[tuple, str] = {}

    def prepare(self, transitions=None, guards: bool = True) -> Evaluator:
        """Generate every function exploration may call (guards, charges, effects of every
        action) now, compiled as one module, with a recursion limit high enough for very long
        expressions. ``transitions`` (ids): only those transitions' functions (and no
        rendezvous), those not generated yet (what a few steps of a run need, compiled at
        once instead of one module each); ``guards=False``: their charges and effects only
        (steps whose transitions are known to be enabled)."""
        cm = self.cm
        self._pending: list[tuple[tuple, str, str]] = []
        todo = cm.transitions if transitions is None else \
            [cm.transitions[int(i)] for i in sorted(set(transitions))]
        try:
            with deep_recursion():
                for t in todo:
                    if guards:
                        self.guard(t.id)
                    if self.constant_charge(t.id) is None:
                        self.charge(t.id)
                    if cm.system == "sync" or t.sync_kind in (None, "bsend", "brecv"):
                        self.effect((t.id,))
                for a in (cm.actions if transitions is None else ()):
                    if a.kind == "rendezvous":
                        self.effect(a.transitions)
            pending, self._pending = self._pending, None
            if pending:
                src = "\n\n".join(p[2] for p in pending)
                exec(compile(src, f"<dvecost {self.cm.name}>", "exec"), self.ns)  # noqa: S102
                for key, fname, _ in pending:
                    self._cache[key] = self.ns[fname]
        finally:
            self._pending = None
        return self

    def const_array(self, vi) -> str:
        name = f"_C_{vi.name.replace('.', '_')}"
        if name not in self.ns:
            self.ns[name] = self.xp.asarray(np.array(vi.const_value, dtype=INT))
        return name

    def _build(self, key: tuple, gen: ArrayGen, ret: str) -> Callable:
        fname = "f_" + "_".join(str(k) for k in key).replace("-", "m")
        src = gen.source(fname, ret)
        self.sources[key] = src
        if getattr(self, "_pending", None) is not None:
            # Inside prepare(): compiled later, all at once; a placeholder until then.
            self._pending.append((key, fname, src))
            return _unprepared
        code = compile(src, f"<dvecost {self.cm.name} {key[0]} {key[1:]}>", "exec")
        exec(code, self.ns)  # noqa: S102
        return self.ns[fname]

    def constant_charge(self, tid: int):
        """``(costs, time)`` as Python ints when transition ``tid`` charges constants (no
        state dependence, no fault possible), else ``None``."""
        t = self.cm.transitions[tid]
        costs = t.costs
        vals = []
        with deep_recursion():  # _literal_value recurses down chains such as x + x + ... + x
            for res in self.cm.resources:
                e = costs.get(res)
                v = 0 if e is None else _literal_value(e)
                if v is None:
                    return None
                vals.append(v)
            tm = 1 if t.time is None else _literal_value(t.time)
        if tm is None or tm < 0:
            return None  # a negative time faults: charge() says so
        return tuple(vals), tm

    # ------------------------------------------------------------------ guards
    def guard(self, tid: int) -> Callable:
        """``guard(X, r) -> (enabled, err)`` of transition ``tid`` (its guard clauses, and the
        buffer not full / not empty condition of a buffered channel operation)."""
        key = ("guard", tid)
        if key not in self._cache:
            t = self.cm.transitions[tid]
            g = ArrayGen(self)
            conds: list[Val] = []
            for ge in t.node.guard:
                conds.append(g.expr(ge, t.process))
            if t.sync_kind in ("bsend", "brecv"):
                ch = self.cm.channels[t.channel]
                cnt = g.read_slot(ch.count_slot)
                c = f"{cnt.code} < {ch.size}" if t.sync_kind == "bsend" else f"{cnt.code} > 0"
                conds.append(Val(g.let(c), "bool", None, None, 0, 1))
            # Conjunction with short-circuit: a later clause's fault counts only where every
            # earlier clause holds.
            en = None
            err = None
            for v in conds:
                if v.const is not None:
                    if v.err is not None:
                        c = en if en is not None else "_T"
                        g.need_T = True
                        err = g.or_err(err, g.cond_err(c, v.err) if en is not None else v.err)
                    if v.const == 0:
                        en = "_F"
                        break
                    continue
                b = g.as_bool(v)
                if en is None:
                    err = g.or_err(err, v.err)
                    en = g.let(b)
                else:
                    err = g.or_err(err, g.cond_err(en, v.err))
                    en = g.let(f"{en} & {b}")
            if en is None:
                g.need_T = True
                en = "_T"
            elif en == "_F":
                en = g.let("xp.zeros(K, dtype=bool)")
            if err is not None:
                en = g.let(f"{en} | {err}")
            self.guard_size[tid] = g.n
            self._cache[key] = self._build(key, g, f"{en}, {err or 'None'}")
        return self._cache[key]

    # ------------------------------------------------------------------ scalar guards
    def scalar_guard(self, tid: int) -> Callable:
        """``guard(row) -> 0 or 1`` for one state (a list of slot values), raising
        :class:`Fault` on a runtime fault: the same semantics as :meth:`guard`, for the few
        rows of a huge guard (BEEM ``plc`` has guards of thousands of operators, where one
        array operation per operator costs more than evaluating a handful of rows one by one
        with Python's own short-circuit). Buffered-channel conditions are not included (used
        only for transitions without a buffered sync)."""
        key = ("sguard", tid)
        if key not in self._cache:
            t = self.cm.transitions[tid]
            g = ScalarGen(self)
            with deep_recursion():
                parts = [g.as_bool(g.expr(e, t.process)) for e in t.node.guard]
            body = " and ".join(f"({p})" for p in parts) if parts else "True"
            src = f"def f_sguard_{tid}(x):\n    return 1 if ({body}) else 0\n"
            self.sources[key] = src
            code = compile(src, f"<dvecost {self.cm.name} sguard {tid}>", "exec")
            exec(code, self.ns)  # noqa: S102
            self._cache[key] = self.ns[f"f_sguard_{tid}"]
        return self._cache[key]

    # ------------------------------------------------------------------ effects
    def effect(self, tids: tuple[int, ...]) -> Callable:
        """``effect(X, r) -> (writes, err)`` of one step: a single transition ``(t,)``, a
        rendezvous ``(sender, receiver)`` (values pass first, then the receiver's effects, then
        the sender's), or for ``system sync`` one transition of the batch (sync values are not
        passed there). Control-state changes are not included."""
        key = ("effect",) + tuple(tids)
        if key not in self._cache:
            cm = self.cm
            g = ArrayGen(self)
            if len(tids) == 2:
                s, q = (cm.transitions[i] for i in tids)
                ch = cm.channels[s.channel]
                types = ch.types
                for k, (ve, target) in enumerate(zip(s.node.sync.values, q.node.sync.values)):
                    v = g.expr(ve, s.process)
                    v = g.cast(v, types[k] if types is not None and k < len(types) else None)
                    g.assign(target, v, q.process)
                self._effects(g, q)
                self._effects(g, s)
            else:
                t = cm.transitions[tids[0]]
                self._effects(g, t)
                if t.sync_kind == "bsend":
                    self._push(g, t)
                elif t.sync_kind == "brecv":
                    self._pop(g, t)
            err = g.err_code()
            self._cache[key] = self._build(key, g, f"{g.writes()}, {err}")
        return self._cache[key]

    def _effects(self, g: ArrayGen, t) -> None:
        for a in t.node.effects:
            g.assign(a.target, g.expr(a.value, t.process), t.process)

    def _push(self, g: ArrayGen, t) -> None:
        # Legacy order: the effects have run; the sent values are evaluated now and appended.
        # The queue is one block: its item at the count gets the values (one indexed write
        # per field, however long the queue; the guard keeps the count below the size).
        ch = self.cm.channels[t.channel]
        cnt = g.read_slot(ch.count_slot)
        cnt_code = g.as_int(cnt)
        vals = [g.cast(g.expr(e, t.process), ch.types[f]) for f, e in
                enumerate(t.node.sync.values[:ch.arity])]
        for v in vals:
            if v.err:
                g.errs.append(v.err)
        blk = g.materialise_span("#" + ch.name, ch.items, ch.size * ch.arity)
        g.need_ar = True
        at = g.let(f"xp.clip({cnt_code}, 0, {ch.size - 1}) * {ch.arity}")
        for f, v in enumerate(vals):
            g.emit(f"{blk}[{at} + {f}, _ar] = {g.as_int(v)}")
        g.overlay[ch.count_slot] = Val(g.let(f"{cnt_code} + 1"), "int", None, None, 1, ch.size)

    def _pop(self, g: ArrayGen, t) -> None:
        ch = self.cm.channels[t.channel]
        heads = [g.read_slot(ch.items + f) for f in range(ch.arity)]
        targets = t.node.sync.values
        for f, target in enumerate(targets[:ch.arity]):
            g.assign(target, heads[f], t.process)
        # The queue moves up by one item as a block (a copy: source and target overlap).
        n, a = ch.size * ch.arity, ch.arity
        blk = g.materialise_span("#" + ch.name, ch.items, n)
        if n > a:
            g.emit(f"{blk}[:{n - a}] = {blk}[{a}:].copy()")
        g.emit(f"{blk}[{n - a}:] = 0")
        cnt = g.read_slot(ch.count_slot)
        g.overlay[ch.count_slot] = Val(g.let(f"{g.as_int(cnt)} - 1"), "int", None, None,
                                        0, ch.size - 1)

    # ------------------------------------------------------------------ cost and time
    def charge(self, tid: int) -> Callable:
        """``charge(X, r) -> (costs, time, err)`` of transition ``tid`` in the source state:
        costs per resource (0 where not charged), time (1 when not given), in checked 64-bit
        arithmetic. ``err`` marks the rows where a cost or the time faults (division by zero,
        an index out of range, a result outside 64 bits) or the time is negative."""
        key = ("charge", tid)
        if key not in self._cache:
            t = self.cm.transitions[tid]
            g = ArrayGen(self, wide=True)
            costs = t.costs
            out = []
            for res in self.cm.resources:
                if res in costs:
                    v = g.expr(costs[res], t.process)
                    if v.err:
                        g.errs.append(v.err)
                    out.append(g.as_int(v))
                else:
                    out.append("0")
            if t.time is not None:
                v = g.expr(t.time, t.process)
                if v.err:
                    g.errs.append(v.err)
                tcode = g.as_int(v)
                if v.const is not None:
                    if v.const < 0:
                        g.errs.append(g.true_mask())
                elif v.lo < 0:
                    g.errs.append(g.let(f"{tcode} < 0"))
            else:
                tcode = "1"
            err = g.err_code()
            self._cache[key] = self._build(key, g, f"({', '.join(out)},), {tcode}, {err}")
        return self._cache[key]
    # ------------------------------------------------------------------ C, one state a thread
    def c_guard(self, tid: int, prefix: str) -> tuple[CGen, str]:
        """The guard of transition ``tid`` as C statements over the source state ``s``
        (:class:`CGen`): after them the ``int`` named by the second item is the conjunction
        of the clauses (short-circuit: a clause is evaluated only where the earlier ones
        hold) and ``f`` has the faults; the step is enabled where either is set, as with
        :meth:`guard`."""
        t = self.cm.transitions[tid]
        g = CGen(self, prefix)
        en = g.let("1", "int")
        with deep_recursion():
            for ge in t.node.guard:
                g.lines.append(f"if ({en}) {{")
                v = g.expr(ge, t.process)
                g.lines.append(f"{en} = ({v.code}) != 0; }}")
        if t.sync_kind in ("bsend", "brecv"):
            ch = self.cm.channels[t.channel]
            cond = f"s[{ch.count_slot}] " + (f"< {ch.size}" if t.sync_kind == "bsend" else "> 0")
            g.lines.append(f"{en} = {en} && ({cond});")
        return g, en

    def c_effect(self, tids: tuple[int, ...], prefix: str) -> CGen:
        """The effects of one step as C statements that assign the successor ``n`` (a copy
        of the source state when they start), in the order of :meth:`effect`, faults or'ed
        into ``f``; :attr:`CGen.written` is every slot they may change."""
        cm = self.cm
        g = CGen(self, prefix, arr="n")
        with deep_recursion():
            if len(tids) == 2:
                s, q = (cm.transitions[i] for i in tids)
                types = cm.channels[s.channel].types
                for k, (ve, target) in enumerate(zip(s.node.sync.values, q.node.sync.values)):
                    v = g.cast(g.expr(ve, s.process),
                               types[k] if types is not None and k < len(types) else None)
                    g.assign(target, v, q.process)
                self._c_effects(g, q)
                self._c_effects(g, s)
                return g
            t = cm.transitions[tids[0]]
            self._c_effects(g, t)
            if t.sync_kind not in ("bsend", "brecv"):
                return g
            ch = cm.channels[t.channel]
            size, a = ch.size, ch.arity
            block = range(ch.items, ch.items + size * a)
            g.written.update(block)
            g.written.add(ch.count_slot)
            cnt = f"n[{ch.count_slot}]"
            if t.sync_kind == "bsend":
                # As _push: the values, evaluated after the effects, fill the item at the
                # count (the guard keeps the count below the size).
                vals = [g.cast(g.expr(e, t.process), ch.types[k])
                        for k, e in enumerate(t.node.sync.values[:a])]
                at = g.let(f"{ch.items} + ({cnt} < 0 ? 0 : {cnt} > {size - 1} ? {size - 1} "
                           f": {cnt}) * {a}", "int")
                for k, v in enumerate(vals):
                    g.lines.append(f"n[{at} + {k}] = {v.code};")
                g.lines.append(f"{cnt} = {cnt} + 1;")
            else:
                # As _pop: the head's fields go to the targets, the queue moves up an item.
                heads = [g.let(f"n[{ch.items + k}]", "int") for k in range(a)]
                for k, target in enumerate(t.node.sync.values[:a]):
                    g.assign(target, Val(heads[k], "int"), t.process)
                g.lines.append(f"for (int q = {ch.items}; q < {ch.items + (size - 1) * a}; ++q)"
                               f" n[q] = n[q + {a}];")
                g.lines.append(f"for (int q = {ch.items + (size - 1) * a}; "
                               f"q < {ch.items + size * a}; ++q) n[q] = 0;")
                g.lines.append(f"{cnt} = {cnt} - 1;")
        return g

    def _c_effects(self, g: CGen, t) -> None:
        for a in t.node.effects:
            g.assign(a.target, g.expr(a.value, t.process), t.process)

    def c_charge(self, tid: int, prefix: str) -> tuple[CGen, list[str], str]:
        """The costs (one per resource) and the time of transition ``tid`` as C statements
        over the source state ``s`` in checked 64-bit arithmetic (see :meth:`charge`): the
        generator, the cost expressions and the time expression; a negative time faults."""
        t = self.cm.transitions[tid]
        g = CGen(self, prefix, wide=True)
        costs = t.costs
        with deep_recursion():
            out = [g.expr(costs[r], t.process).code if r in costs else "0LL"
                   for r in self.cm.resources]
            tm = "1LL"
            if t.time is not None:
                tm = g.expr(t.time, t.process).code
                g.lines.append(f"if ({tm} < 0) f = 1;")
        return g, out, tm


def _unprepared(*args):  # pragma: no cover - replaced at the end of prepare()
    raise RuntimeError("function used before Evaluator.prepare() finished")


def _literal_value(e) -> int | None:
    """The value of an expression made of literals and ``+ - * ~ -`` only, in the checked
    64-bit arithmetic of costs and times; None for anything else, or when it faults."""
    if isinstance(e, S.IntLit):
        return e.value if arith.literal_fits(e.value, wide=True) else None
    if isinstance(e, S.BoolLit):
        return int(e.value)
    if isinstance(e, S.Unary) and e.op in ("-", "~"):
        if e.op == "-" and isinstance(e.operand, S.IntLit):
            v = e.operand.value
            return -v if arith.literal_fits(v, wide=True, negated=True) else None
        v = _literal_value(e.operand)
        return None if v is None else _or_none(arith.unop, e.op, v)
    if isinstance(e, S.Binary) and e.op in ("+", "-", "*"):
        a, b = _literal_value(e.left), _literal_value(e.right)
        return None if a is None or b is None else _or_none(arith.binop, e.op, a, b)
    return None


def _or_none(f, *args) -> int | None:
    try:
        return f(*args, wide=True)
    except ArithmeticError:
        return None


def explain_fault(cm: CompiledModel, row, action: int) -> str | None:
    """Why the step ``action`` from the state ``row`` faults, with the model line:
    the first faulting clause in the order the step evaluates them, or None when none does.

    The order is the explorer's: every guard clause, then (a rendezvous) the values passed,
    the receiver's effects and the sender's, or the effects in order, then each cost and the
    time, then the sum of the step's costs, then partners assigning one global variable. It
    runs the same generated code as the explorer, one clause at a time, on the
    one state, so it says what the explorer found.

    Parameters
    ----------
    cm : CompiledModel
    row : sequence of int
        The source state, one value per slot.
    action : int
        The model's action id (:meth:`CompiledModel.action_transitions`; for a state graph's
        edge label ``a``, ``graph.model_action(a)``).

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> from statespace import compile_model
    >>> cm = compile_model(parse_model("byte x = 2; process P { state s; init s; "
    ...     "trans s -> s { effect x = x + 1; time 1 - x; }; } system async;", "m.dve"))
    >>> explain_fault(cm, (0, 2), 0)
    'm.dve:1:80: the time is -1 (a time must be 0 or more)'
    >>> explain_fault(cm, (0, 0), 0) is None
    True
    """
    tids = cm.action_transitions(action)
    if cm.system == "sync":
        seen: set[str] = set()
        conflict = False
        for t in tids:
            w = {x for x in cm.transitions[t].writes if "." not in x}
            conflict |= bool(w & seen)
            seen |= w
    else:
        conflict = cm.actions[action].error
    ev = Evaluator(cm, np)
    X = np.array(row, dtype=INT).reshape(-1, 1)
    r = np.zeros(1, np.int64)
    ts = [cm.transitions[t] for t in tids]

    def hit(err) -> bool:
        return err is not None and bool(np.asarray(err).reshape(-1)[0])

    def run(key, gen, ret):
        with deep_recursion():
            return ev._build(key, gen, ret)(X, r)

    for t in ts:
        for k, clause in enumerate(t.node.guard):
            g = ArrayGen(ev)
            v = g.expr(clause, t.process)
            if hit(run(("xguard", t.id, k), g, v.err or "None")):
                return (f"{clause.pos or t.pos}: the guard faults (a division by zero or an "
                        "index out of range)")
    # Effects, one error mask after each assignment (each sees the earlier ones).
    g = ArrayGen(ev)
    marks: list[tuple[Any, str, str]] = []
    steps = []
    if len(ts) >= 2 and cm.system == "async" and ts[0].sync_kind == "send" \
            and ts[1].sync_kind == "recv":
        s, q = ts[0], ts[1]
        types = cm.channels[s.channel].types
        for k, (ve, target) in enumerate(zip(s.node.sync.values, q.node.sync.values)):
            v = g.cast(g.expr(ve, s.process),
                       types[k] if types is not None and k < len(types) else None)
            g.assign(target, v, q.process)
            marks.append((s.node.sync.pos, g.err_code(), "the value passed does not fit the receiving variable"))
        steps = [q, s]
    elif cm.system == "async":
        steps = ts[:1]
    for t in steps:
        for a in t.node.effects:
            g.assign(a.target, g.expr(a.value, t.process), t.process)
            marks.append((a.pos, g.err_code(), "this assignment faults (a division by zero, "
                          "an index out of range, or a value its variable cannot hold)"))
    if marks:
        errs = run(("xeffect",) + tuple(tids), g, "(" + ", ".join(m[1] for m in marks) + ",)")
        for (pos, _, what), e in zip(marks, errs):
            if hit(e) or (isinstance(e, bool) and e):
                return f"{pos}: {what}"
    if cm.system == "sync":
        Y = X.copy()
        for t in ts:
            writes, err = ev.effect((t.id,))(Y, r)
            if hit(err):
                return (f"{t.node.effects[0].pos if t.node.effects else t.pos}: an effect "
                        "faults (a division by zero, an index out of range, or a value its "
                        "variable cannot hold)")
            for j, vals in writes:
                Y[j] = vals
    total = {res: 0 for res in cm.resources}
    for t in ts:
        for c in t.node.costs:
            g = ArrayGen(ev, wide=True)
            v = g.expr(c.amount, t.process)
            err, val = run(("xcost", t.id, c.resource), g, f"{v.err or 'None'}, {g.as_int(v)}")
            if hit(err):
                return (f"{c.amount.pos or c.pos}: this cost faults (a division by zero, an "
                        "index out of range, or a value outside 64 bits)")
            total[c.resource] += int(np.asarray(val).reshape(-1)[0])
        if t.time is not None:
            g = ArrayGen(ev, wide=True)
            v = g.expr(t.time, t.process)
            err, val = run(("xtime", t.id), g, f"{v.err or 'None'}, {g.as_int(v)}")
            if hit(err):
                return (f"{t.time.pos or t.pos}: the time faults (a division by zero, an index "
                        "out of range, or a value outside 64 bits)")
            val = int(np.asarray(val).reshape(-1)[0])
            if val < 0:
                return f"{t.time.pos or t.pos}: the time is {val} (a time must be 0 or more)"
    for res, v in total.items():
        if not arith.INT64[0] <= v <= arith.INT64[1]:
            return (f"{ts[0].pos}: the costs of '{res}' in this step add up to {v}, outside "
                    "64 bits")
    if conflict:
        return f"{ts[0].pos}: the partners of this step assign the same global variable"
    return None


_ADD64 = arith.array_helpers(np)["_add64"]


def add_costs(xs, ys):
    """Per-resource sums of two parts of one global step's int64 costs (rendezvous partners,
    the property process, the processes of ``system sync``), and the rows where some sum leaves
    64 bits (None when none does): that step faults, it never wraps.

    >>> s, bad = add_costs([np.array([1, 2**62])], [np.array([2, 2**62])])
    >>> s[0][0], bad.tolist()
    (np.int64(3), [False, True])
    """
    out, bad = [], None
    for x, y in zip(xs, ys):
        r, o = _ADD64(x, y)
        out.append(r)
        if o.any():
            bad = o if bad is None else bad | o
    return out, bad