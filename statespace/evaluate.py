"""Vectorised evaluation of guards, effects, costs and times over many states at once.

Every expression of a transition is compiled once into Python source that operates on whole
arrays, then ``exec``'d; the generated functions run one array operation per operator over all
selected states, with no Python loop over states. The code is written over an array module
``xp`` (NumPy, or CuPy with the same calls). For the few rows of a huge guard the same guard is
also generated as one Python expression over one state (:meth:`Evaluator.scalar_guard`); both
forms come from one walk over the syntax (``_Emitter``), which differs only in the code each
piece is written as.

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

Semantics (``docs/dve-reference.md`` section 5 and 6): the operators of :mod:`dve.arith`, 32-bit
C arithmetic for guards and effects (wrapping, truncating ``/``, ``%`` with the dividend's
sign) and checked 64-bit arithmetic for costs and times; ``and``/``or``/``imply`` short-circuit
(a fault in an operand that is not evaluated does not count), comparisons and boolean operators
give 0/1. Faults (``err``): division or modulo by zero, an array index out of range on read or
write, a value assigned outside its type's range, a cost or time that overflows 64 bits, a
negative time. Effects run in order, each seeing the earlier assignments of the same step.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np

from dve import arith
from dve import syntax as S
from dve.consteval import literal_error

from .model import TYPE_RANGE, CompiledModel

__all__ = ["INT", "Evaluator", "Fault", "add_costs", "explain_fault"]

#: The evaluation dtype: legacy DiVinE evaluates in 32-bit signed C arithmetic.
INT = np.int32

_I32 = arith.INT32
_I64 = arith.INT64


@dataclass
class _Val:
    """A compiled expression: its code, kind ('int' or 'bool'), constant value (or None),
    error code (or None) and static bounds."""
    code: str
    kind: str
    const: int | None = None
    err: str | None = None
    lo: int = _I32[0]
    hi: int = _I32[1]


def _const(v: int) -> _Val:
    return _Val(repr(v), "int", v, None, v, v)


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


@contextmanager
def _deep_recursion(limit: int = 100_000):
    """Code generation recurses along the expression tree; BEEM ``plc`` has guards with
    thousands of operators in one left-leaning chain (Python-to-Python calls do not use the C
    stack on 3.11+, so a higher limit is safe)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _literal(e: S.Expr, wide: bool) -> int | None:
    """The value of a literal (``5``, ``-5``, ``true``), or None for any other expression.

    Raises the literal's :class:`~dve.errors.EvaluationError` when it does not fit the width.
    """
    negated = isinstance(e, S.Unary) and e.op == "-" and isinstance(e.operand, S.IntLit)
    if isinstance(e, S.IntLit) or negated:
        lit = e.operand if negated else e
        err = literal_error(lit, wide, negated=negated)
        if err is not None:
            raise err
        return -lit.value if negated else lit.value
    if isinstance(e, S.BoolLit):
        return int(e.value)
    return None


class _Emitter:
    """The one walk over an expression that both code generators share.

    It checks and folds literals, resolves names (local before global, ``P->v`` in process
    ``P``) and state tests, and recurses into operands; the target, a subclass, writes the
    code of each piece and returns a value of its own (:class:`_Val`): :class:`_Gen` writes
    array code over a batch of states, :class:`_ScalarGen` a Python expression over one state.
    """

    def __init__(self, ev: Evaluator, wide: bool = False) -> None:
        self.ev = ev
        self.cm = ev.cm
        #: Checked 64-bit arithmetic (cost and time) instead of 32-bit C arithmetic.
        self.wide = wide

    def resolve(self, proc: int | None, name: str):
        cm = self.cm
        if proc is not None:
            q = f"{cm.processes[proc].name}.{name}"
            if q in cm.variables:
                return cm.variables[q]
        if name in cm.variables:
            return cm.variables[name]
        raise KeyError(name)

    def expr(self, e: S.Expr, proc: int | None) -> _Val:
        c = _literal(e, self.wide)
        if c is not None:
            return self.const(c)
        if isinstance(e, S.Name):
            vi = self.resolve(proc, e.name)
            return self.const(vi.const_value) if vi.is_const else self.read_slot(vi.base)
        if isinstance(e, S.Index):
            return self.read_index(self.resolve(proc, e.name), e.index, proc)
        if isinstance(e, S.Remote):
            pi = self.ev.proc_index[e.process.name]
            if e.index is None:
                return self.expr(S.Name(e.name), pi)
            return self.read_index(self.resolve(pi, e.name), e.index, proc)
        if isinstance(e, S.StateTest):
            pinfo = self.cm.processes[self.ev.proc_index[e.process.name]]
            return self.state_test(pinfo.slot, pinfo.states.index(e.state))
        if isinstance(e, S.Unary):
            return self.unary(e.op, self.expr(e.operand, proc))
        if isinstance(e, S.Binary):
            return self.binary(e, proc)
        raise TypeError(f"cannot evaluate {type(e).__name__} (expand the model first)")

    # The target's part (the index of read_index is evaluated in process ``proc``).
    def const(self, v: int) -> _Val:
        raise NotImplementedError

    def read_slot(self, j: int) -> _Val:
        raise NotImplementedError

    def read_index(self, vi, idx_expr: S.Expr, proc: int | None) -> _Val:
        raise NotImplementedError

    def state_test(self, slot: int, state: int) -> _Val:
        raise NotImplementedError

    def unary(self, op: str, v: _Val) -> _Val:
        raise NotImplementedError

    def binary(self, e: S.Binary, proc: int | None) -> _Val:
        raise NotImplementedError


class _Gen(_Emitter):
    """Generates the body of one array function; tracks the state as modified by effects so
    far."""

    def __init__(self, ev: Evaluator, wide: bool = False) -> None:
        super().__init__(ev, wide)
        self.full = _I64 if wide else _I32
        self.lines: list[str] = []
        self.n = 0
        self.orig: dict[int, str] = {}      # slot -> name of its source values X[j][r]
        self.overlay: dict[int, _Val] = {}  # slot -> current value after writes
        # Slot ranges written as a whole (an array variable, by name; a buffered channel's
        # items, by '#' and its name) -> (block name, first slot, slots): an (n, K) block.
        self.blocks: dict[str, tuple[str, int, int]] = {}
        self.errs: list[str] = []
        self.need_T = False
        self.need_ar = False

    def tmp(self) -> str:
        self.n += 1
        return f"t{self.n}"

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def let(self, code: str) -> str:
        name = self.tmp()
        self.emit(f"{name} = {code}")
        return name

    # ------------------------------------------------------------------ helpers
    def true_mask(self) -> str:
        self.need_T = True
        return "_T"

    def as_int(self, v: _Val) -> str:
        if v.const is not None:
            return repr(v.const)
        if v.kind == "bool":
            return f"{v.code}.astype(I64)" if self.wide else f"_i({v.code})"
        return v.code

    def leaf(self, code: str) -> str:
        """A value read from the state (int32), widened in 64-bit mode."""
        return f"{code}.astype(I64)" if self.wide else code

    def bounded(self, lo: int, hi: int) -> tuple[int, int]:
        """Static bounds, or the whole width when they leave it (the code then checks)."""
        return (lo, hi) if self.full[0] <= lo and hi <= self.full[1] else self.full

    def fault(self) -> _Val:
        """A value whose evaluation always faults (its result is unspecified)."""
        return _Val("0", "int", 0, self.true_mask(), 0, 0)

    def fold(self, op: str, a: int, b: int | None = None) -> _Val:
        """A constant operation, or a value that always faults."""
        try:
            v = arith.unop(op, a, self.wide) if b is None else arith.binop(op, a, b, self.wide)
        except ArithmeticError:
            return self.fault()
        return _const(v)

    def checked(self, helper: str, *args: str) -> tuple[str, str]:
        """``(result, fault mask)`` of one of the checked helpers of :mod:`dve.arith`."""
        code, bad = self.tmp(), self.tmp()
        self.emit(f"{code}, {bad} = {helper}({', '.join(args)})")
        return code, bad

    def as_bool(self, v: _Val) -> str:
        if v.const is not None:
            return "True" if v.const else "False"
        return v.code if v.kind == "bool" else f"({v.code} != 0)"

    def or_err(self, *errs: str | None) -> str | None:
        es = [e for e in errs if e is not None]
        if not es:
            return None
        if len(es) == 1:
            return es[0]
        return self.let(" | ".join(es))

    def cond_err(self, cond: str, err: str | None) -> str | None:
        """``cond & err`` (the fault of an operand evaluated only where ``cond`` holds)."""
        if err is None:
            return None
        return self.let(f"({cond}) & {err}")

    # ------------------------------------------------------------------ variables
    def read_slot(self, j: int) -> _Val:
        sl = self.cm.slots[j]
        if j in self.overlay:
            return self.overlay[j]
        for blk, base, size in self.blocks.values():
            if base <= j < base + size:
                return _Val(self.let(self.leaf(f"{blk}[{j - base}].copy()")), "int",
                            lo=sl.lo, hi=sl.hi)
        if j not in self.orig:
            name = f"s{j}"
            self.orig[j] = name
        return _Val(self.orig[j], "int", lo=sl.lo, hi=sl.hi)

    def materialise(self, vi) -> str:
        return self.materialise_span(vi.name, vi.base, vi.size)

    def materialise_span(self, key: str, base: int, size: int) -> str:
        """The block of slots ``base .. base + size - 1`` (the current values, writes so far
        included), written from now on as a whole."""
        if key in self.blocks:
            return self.blocks[key][0]
        blk = self.let(f"X[{base}:{base + size}][:, r]")
        for i in range(size):
            v = self.overlay.pop(base + i, None)
            if v is not None:
                self.emit(f"{blk}[{i}] = {self.as_int(v)}")
        self.blocks[key] = (blk, base, size)
        return blk

    def index(self, e: S.Expr, size: int, proc):
        """Compile an index: (const index or None, clipped index code, error code)."""
        iv = self.expr(e, proc)
        if iv.const is not None:
            return iv.const, None, iv.err
        ic = self.as_int(iv)
        bad = None
        if iv.lo < 0 or iv.hi >= size:
            bad = self.let(f"({ic} < 0) | ({ic} >= {size})")
            ic = self.let(f"xp.clip({ic}, 0, {size - 1})")
        return None, ic, self.or_err(iv.err, bad)

    # ------------------------------------------------------------------ expressions
    def const(self, v: int) -> _Val:
        return _const(v)

    def state_test(self, slot: int, state: int) -> _Val:
        pc = self.read_slot(slot)
        return _Val(self.let(f"{pc.code} == {state}"), "bool", lo=0, hi=1)

    def unary(self, op: str, v: _Val) -> _Val:
        if v.const is not None:
            f = self.fold(op, v.const)
            return f if v.err is None else _Val(f.code, f.kind, f.const,
                                                self.or_err(v.err, f.err), f.lo, f.hi)
        if op == "not":
            return _Val(self.let(f"~{v.code}" if v.kind == "bool" else f"{v.code} == 0"),
                        "bool", None, v.err, 0, 1)
        lo, hi = (-v.hi, -v.lo) if op == "-" else (-v.hi - 1, -v.lo - 1)
        err = v.err
        if op == "-" and self.wide and v.lo <= _I64[0]:
            code, bad = self.checked("_neg64", self.as_int(v))
            err = self.or_err(err, bad)
        else:
            code = self.let(f"-{self.as_int(v)}" if op == "-" else f"~{self.as_int(v)}")
        lo, hi = self.bounded(lo, hi)
        return _Val(code, "int", None, err, lo, hi)

    def read_index(self, vi, idx_expr, proc) -> _Val:
        size = vi.size
        if size is None:
            raise TypeError(f"'{vi.name}' is not an array")
        c, ic, err = self.index(idx_expr, size, proc)
        if c is not None:
            if not 0 <= c < size:
                return _Val("0", "int", 0, self.or_err(err, self.true_mask()), 0, 0)
            if vi.is_const:
                return _Val(repr(vi.const_value[c]), "int", vi.const_value[c], err,
                            vi.const_value[c], vi.const_value[c])
            v = self.read_slot(vi.base + c)
            return _Val(v.code, v.kind, v.const, self.or_err(v.err, err), v.lo, v.hi)
        lo, hi = TYPE_RANGE[vi.type]
        if vi.is_const:
            arr = self.ev.const_array(vi)
            return _Val(self.let(self.leaf(f"{arr}[{ic}]")), "int", None, err, lo, hi)
        if vi.name in self.blocks or any(vi.base <= j < vi.base + size for j in self.overlay):
            blk = self.materialise(vi)
            self.need_ar = True
            return _Val(self.let(self.leaf(f"{blk}[{ic}, _ar]")), "int", None, err, lo, hi)
        return _Val(self.let(self.leaf(f"X[{vi.base} + {ic}, r]")), "int", None, err, lo, hi)

    def binary(self, e: S.Binary, proc) -> _Val:
        op = e.op
        a = self.expr(e.left, proc)
        if op in ("and", "or", "imply"):
            b = self.expr(e.right, proc)
            if a.const is not None:
                # A constant left operand decides whether the right one is evaluated at all.
                decided = (a.const == 0) if op in ("and", "imply") else (a.const != 0)
                if decided:
                    c = 0 if op == "and" else 1
                    return _Val(repr(c), "int", c, a.err, c, c)
                err = self.or_err(a.err, b.err)
                if b.const is not None:
                    c = int(b.const != 0)
                    return _Val(repr(c), "int", c, err, c, c)
                return _Val(self.as_bool(b), "bool", None, err, 0, 1)
            ab = self.as_bool(a)
            if b.const is not None:
                bb = b.const != 0
                if op == "and":
                    code = ab if bb else "False"
                elif op == "or":
                    code = "True" if bb else ab
                else:
                    code = "True" if bb else f"~{ab}"
                if code in ("True", "False"):
                    code = self.let(f"xp.full({ab}.shape, {code})")
                else:
                    code = self.let(code)
                err = self.or_err(a.err, self.cond_err(ab if op != "or" else f"~{ab}", b.err))
                return _Val(code, "bool", None, err, 0, 1)
            bb = self.as_bool(b)
            if op == "and":
                code, guard = f"{ab} & {bb}", ab
            elif op == "or":
                code, guard = f"{ab} | {bb}", f"~{ab}"
            else:
                code, guard = f"~{ab} | {bb}", ab
            err = self.or_err(a.err, self.cond_err(guard, b.err))
            return _Val(self.let(code), "bool", None, err, 0, 1)
        b = self.expr(e.right, proc)
        err = self.or_err(a.err, b.err)
        if a.const is not None and b.const is not None:
            f = self.fold(op, a.const, b.const)
            return _Val(f.code, f.kind, f.const, self.or_err(err, f.err), f.lo, f.hi)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if a.kind == "bool" and b.kind == "bool" and op in ("==", "!="):
                return _Val(self.let(f"{a.code} {op} {b.code}"), "bool", None, err, 0, 1)
            return _Val(self.let(f"{self.as_int(a)} {op} {self.as_int(b)}"), "bool", None, err,
                        0, 1)
        ai, bi = self.as_int(a), self.as_int(b)
        lo, hi = self.full
        if op in ("/", "%"):
            if b.const == 0:
                # Always a fault where evaluated (and no division is run at all).
                return _Val("0", "int", 0, self.or_err(err, self.true_mask()), 0, 0)
            if self.wide and b.const == -1 and op == "/":
                code, bad = self.checked("_neg64", ai)   # a / -1 is -a, which may overflow
                err = self.or_err(err, bad)
            elif self.wide and b.const is not None:
                code = self.let(f"{'_divc64' if op == '/' else '_modc64'}({ai}, {b.const})")
            elif self.wide:
                code, bad = self.checked("_div64" if op == "/" else "_mod64", ai, bi)
                err = self.or_err(err, bad)
            elif b.const is not None:
                code = self.let(f"{'_divc' if op == '/' else '_modc'}({ai}, {b.const})")
            else:
                # INT32_MIN / -1 needs its own care only where the bounds admit it.
                edge = a.lo <= _I32[0] and b.lo <= -1 <= b.hi
                helper = ("_div" if op == "/" else "_mod") + ("" if edge else "z")
                code, z = self.checked(helper, ai, bi)
                err = self.or_err(err, z)
            if op == "%" and b.const is not None and a.lo >= 0:
                lo, hi = 0, abs(b.const) - 1
            return _Val(code, "int", None, err, lo, hi)
        if op in ("+", "-", "*"):
            if op == "+":
                lo, hi = a.lo + b.lo, a.hi + b.hi
            elif op == "-":
                lo, hi = a.lo - b.hi, a.hi - b.lo
            else:
                ps = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
                lo, hi = min(ps), max(ps)
            if self.wide and (lo < _I64[0] or hi > _I64[1]):
                # The bounds admit an overflow: check it where it happens.
                helper = {"+": "_add64", "-": "_sub64", "*": "_mul64"}[op]
                code, bad = self.checked(helper, ai, bi)
                return _Val(code, "int", None, self.or_err(err, bad), *_I64)
            lo, hi = self.bounded(lo, hi)
            # A constant on the left of an operator with an array on the right still yields an
            # array of the array's dtype (NEP 50: the Python int adopts it); 32-bit results wrap.
            return _Val(self.let(f"{ai} {op} {bi}"), "int", None, err, lo, hi)
        if op in ("&", "|", "^"):
            if a.lo >= 0 and b.lo >= 0 and op == "&":
                lo, hi = 0, min(a.hi, b.hi)
            return _Val(self.let(f"{ai} {op} {bi}"), "int", None, err, lo, hi)
        if op in ("<<", ">>"):
            mask = 63 if self.wide else 31
            if self.wide and op == "<<":
                code, bad = self.checked("_shl64", ai, bi)
                return _Val(code, "int", None, self.or_err(err, bad), lo, hi)
            bs = repr(b.const & mask) if b.const is not None else self.let(f"{bi} & {mask}")
            return _Val(self.let(f"{ai} {op} {bs}"), "int", None, err, lo, hi)
        raise ValueError(f"unknown operator {op!r}")

    # ------------------------------------------------------------------ effects
    def range_check(self, v: _Val, lo: int, hi: int) -> None:
        if v.const is not None:
            if not lo <= v.const <= hi:
                self.errs.append(self.true_mask())
            return
        if v.lo >= lo and v.hi <= hi:
            return
        c = self.as_int(v)
        self.errs.append(self.let(f"({c} < {lo}) | ({c} > {hi})"))

    def store_value(self, v: _Val) -> _Val:
        """A value to keep in the overlay: an int32 array or a constant."""
        if v.const is not None:
            return _const(v.const)
        if v.kind == "bool":
            return _Val(self.let(f"_i({v.code})"), "int", None, None, 0, 1)
        return _Val(v.code, "int", None, None, v.lo, v.hi)

    def assign(self, target: S.Expr, v: _Val, proc: int | None) -> None:
        if v.err:
            self.errs.append(v.err)
        if isinstance(target, S.Name):
            vi = self.resolve(proc, target.name)
            self.range_check(v, vi.lo, vi.hi)
            self.write_slot(vi.base, v)
            return
        vi = self.resolve(proc, target.name)
        c, ic, err = self.index(target.index, vi.size, proc)
        if err:
            self.errs.append(err)
        self.range_check(v, vi.lo, vi.hi)
        if c is not None:
            if not 0 <= c < vi.size:
                self.errs.append(self.true_mask())
                return
            self.write_slot(vi.base + c, v)
            return
        blk = self.materialise(vi)
        self.need_ar = True
        self.emit(f"{blk}[{ic}, _ar] = {self.as_int(v)}")

    def write_slot(self, j: int, v: _Val) -> None:
        for blk, base, size in self.blocks.values():
            if base <= j < base + size:
                self.emit(f"{blk}[{j - base}] = {self.as_int(v)}")
                return
        self.overlay[j] = self.store_value(v)

    def cast(self, v: _Val, ty: str | None) -> _Val:
        """The legacy typed-channel cast (byte wraps mod 256, int to int16), no error."""
        if ty is None:
            return v
        lo, hi = TYPE_RANGE[ty]
        if v.const is not None:
            c = arith.cast(ty, v.const)
            return _Val(repr(c), "int", c, v.err, c, c)
        if v.lo >= lo and v.hi <= hi:
            return v
        c = self.as_int(v)
        code = f"_cast({ty!r}, {c})"
        return _Val(self.let(code), "int", None, v.err, lo, hi)

    def writes(self) -> str:
        out = "[" + ", ".join(f"({j}, {self.as_int(v)})"
                              for j, v in sorted(self.overlay.items())) + "]"
        if not self.blocks:
            return out
        # Whole arrays and queues: one (first slot, block) each, not a pair per cell (Writes).
        blocks = ", ".join(f"({base}, {blk})" for blk, base, _ in self.blocks.values())
        return f"_Writes({out}, [{blocks}])"

    def err_code(self) -> str:
        errs = [e for e in self.errs if e is not None]
        if not errs:
            return "None"
        if "_T" in errs:
            return "_T"
        return self.let(" | ".join(dict.fromkeys(errs)))

    def source(self, fname: str, ret: str) -> str:
        head = [f"def {fname}(X, r):", "    K = r.shape[0]"]
        for j, name in sorted(self.orig.items()):
            head.append(f"    {name} = {self.leaf(f'X[{j}][r]')}")
        if self.need_T:
            head.append("    _T = xp.ones(K, dtype=bool)")
        if self.need_ar:
            head.append("    _ar = xp.arange(K)")
        return "\n".join(head + ["    " + ln for ln in self.lines] + [f"    return {ret}"])


class _ScalarGen(_Emitter):
    """Generates one Python expression over one state ``x`` (a list of slot values), raising
    :class:`Fault` on a runtime fault: 32-bit C arithmetic through the checked helpers of
    :func:`_runtime_helpers`, and Python's own short-circuit for ``and``, ``or``, ``imply``.
    A value's ``kind`` is ``'bool'`` where its code is a Python truth value (any truthy value
    stands for non-zero), else ``'int'``."""

    def as_int(self, v: _Val) -> str:
        return f"(1 if ({v.code}) else 0)" if v.kind == "bool" else v.code

    def as_bool(self, v: _Val) -> str:
        return v.code if v.kind == "bool" else f"({v.code}) != 0"

    def const(self, v: int) -> _Val:
        return _Val(repr(v), "int")

    def read_slot(self, j: int) -> _Val:
        return _Val(f"x[{j}]", "int")

    def read_index(self, vi, idx_expr: S.Expr, proc: int | None) -> _Val:
        idx = self.as_int(self.expr(idx_expr, proc))
        if vi.is_const:
            return _Val(f"_sidx({vi.const_value!r}, 0, {vi.size}, {idx})", "int")
        return _Val(f"_sidx(x, {vi.base}, {vi.size}, {idx})", "int")

    def state_test(self, slot: int, state: int) -> _Val:
        return _Val(f"(1 if x[{slot}] == {state} else 0)", "int")

    def unary(self, op: str, v: _Val) -> _Val:
        if op == "not":
            return _Val(f"not ({self.as_bool(v)})", "bool")
        return _Val(f"_w({op}({self.as_int(v)}))", "int")

    def binary(self, e: S.Binary, proc: int | None) -> _Val:
        op = e.op
        if op in ("and", "or"):
            # Flatten left-leaning chains of one operator: Python's 'and'/'or' short-circuit
            # the same way, and a flat chain avoids nesting thousands of parentheses.
            items = []
            node = e
            while isinstance(node, S.Binary) and node.op == op:
                items.append(node.right)
                node = node.left
            items.append(node)
            return _Val(f" {op} ".join(f"({self.as_bool(self.expr(i, proc))})"
                                       for i in reversed(items)), "bool")
        a = self.expr(e.left, proc)
        b = self.expr(e.right, proc)
        if op == "imply":
            return _Val(f"(not ({self.as_bool(a)})) or ({self.as_bool(b)})", "bool")
        ai, bi = self.as_int(a), self.as_int(b)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return _Val(f"({ai}) {op} ({bi})", "bool")
        fn = {"+": "_sadd", "-": "_ssub", "*": "_smul", "/": "_sdiv", "%": "_smod",
              "<<": "_sshl", ">>": "_sshr"}.get(op)
        if fn is not None:
            return _Val(f"{fn}({ai}, {bi})", "int")
        return _Val(f"(({ai}) {op} ({bi}))", "int")  # & | ^ of 32-bit values stay 32-bit


class _CGen(_Emitter):
    """Generates C statements over one state, for the successor kernel of
    :mod:`statespace.kernel` (one GPU thread per state). Slots are read from the ``int`` array
    named ``arr`` (``s``, the source state, for guards and charges; ``n``, the successor being
    built, for effects, so each assignment sees the earlier ones); every operator is one
    temporary of the evaluation width (``int``, or ``i64`` for costs and times) computed by the
    C twins of :mod:`dve.arith` (:data:`dve.arith.C_HELPERS`), which or a fault into the
    ``int f``; ``and``, ``or`` and ``imply`` short-circuit through ``if`` blocks, so a fault of
    an operand that is not evaluated does not count, as in the array form."""

    def __init__(self, ev: Evaluator, prefix: str, arr: str = "s", wide: bool = False) -> None:
        super().__init__(ev, wide)
        self.prefix, self.arr = prefix, arr
        self.T = "i64" if wide else "int"
        self.lines: list[str] = []
        self.n = 0
        #: Slots the statements may assign (of the ``n`` array).
        self.written: set[int] = set()
        #: Constant arrays read at a computed index: C name -> values.
        self.tables: dict[str, tuple[int, ...]] = {}

    def let(self, code: str, ty: str | None = None) -> str:
        self.n += 1
        name = f"{self.prefix}{self.n}"
        self.lines.append(f"{ty or self.T} {name} = {code};")
        return name

    def lit(self, v: int) -> str:
        if self.wide:
            return f"({v + 1}LL - 1)" if v == _I64[0] else f"{v}LL"
        return f"({v + 1} - 1)" if v == _I32[0] else str(v)

    def const(self, v: int) -> _Val:
        return _Val(self.lit(v), "int", v, None, v, v)

    def leaf(self, code: str) -> str:
        return f"(i64){code}" if self.wide else code

    def read_slot(self, j: int) -> _Val:
        return _Val(self.leaf(f"{self.arr}[{j}]"), "int")

    def index(self, e: S.Expr, size: int, proc) -> tuple[int | None, str]:
        iv = self.expr(e, proc)
        if iv.const is not None:
            return iv.const, ""
        return None, self.let(f"dve_idx({iv.code}, {size}, f)", "int")

    def read_index(self, vi, idx_expr: S.Expr, proc: int | None) -> _Val:
        size = vi.size
        if size is None:
            raise TypeError(f"'{vi.name}' is not an array")
        c, ic = self.index(idx_expr, size, proc)
        if c is not None and not 0 <= c < size:
            self.lines.append("f = 1;")
            return self.const(0)
        if vi.is_const:
            if c is not None:
                return self.const(vi.const_value[c])
            # A constant array: one table in the device's memory for the whole kernel.
            arr = "dve_table_" + "".join(ch if ch.isalnum() else "_" for ch in vi.name)
            self.tables[arr] = tuple(int(x) for x in vi.const_value)
            return _Val(self.let(self.leaf(f"{arr}[{ic}]")), "int")
        at = vi.base + c if c is not None else f"{vi.base} + {ic}"
        return _Val(self.let(self.leaf(f"{self.arr}[{at}]")), "int")

    def state_test(self, slot: int, state: int) -> _Val:
        return _Val(self.let(f"({self.arr}[{slot}] == {state})", "int"), "int")

    def unary(self, op: str, v: _Val) -> _Val:
        if op == "not":
            return _Val(self.let(f"!({v.code})", "int"), "int")
        if op == "~":
            return _Val(self.let(f"~({v.code})"), "int")
        return _Val(self.let(f"dve_neg64({v.code}, f)" if self.wide else f"dve_neg({v.code})"),
                    "int")

    def binary(self, e: S.Binary, proc: int | None) -> _Val:
        op = e.op
        a = self.expr(e.left, proc)
        if op in ("and", "or", "imply"):
            # The right operand's statements run only where C would evaluate it.
            r = self.let("1" if op != "and" else "0", "int")
            self.lines.append(f"if ({'!' if op == 'or' else ''}({a.code})) {{")
            b = self.expr(e.right, proc)
            self.lines.append(f"{r} = ({b.code}) != 0; }}")
            return _Val(r, "int")
        b = self.expr(e.right, proc)
        x, y = a.code, b.code
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return _Val(self.let(f"({x}) {op} ({y})", "int"), "int")
        if op in ("&", "|", "^"):
            return _Val(self.let(f"({x}) {op} ({y})"), "int")
        if self.wide:
            fn = {"+": "dve_add64", "-": "dve_sub64", "*": "dve_mul64", "/": "dve_div64",
                  "%": "dve_mod64", "<<": "dve_shl64"}.get(op)
            code = f"{fn}({x}, {y}, f)" if fn else f"dve_shr64({x}, {y})"
        elif op in ("/", "%"):
            code = f"{'dve_div' if op == '/' else 'dve_mod'}({x}, {y}, f)"
        else:
            fn = {"+": "dve_add", "-": "dve_sub", "*": "dve_mul", "<<": "dve_shl",
                  ">>": "dve_shr"}.get(op)
            if fn is None:
                raise ValueError(f"unknown operator {op!r}")
            code = f"{fn}({x}, {y})"
        return _Val(self.let(code), "int")

    # ------------------------------------------------------------------ effects
    def assign(self, target: S.Expr, v: _Val, proc: int | None) -> None:
        vi = self.resolve(proc, target.name)
        if v.const is None:
            self.lines.append(f"if ({v.code} < {vi.lo} || {v.code} > {vi.hi}) f = 1;")
        elif not vi.lo <= v.const <= vi.hi:
            self.lines.append("f = 1;")
        if isinstance(target, S.Name):
            self.write(vi.base, v.code)
            return
        c, ic = self.index(target.index, vi.size, proc)
        if c is not None:
            if not 0 <= c < vi.size:
                self.lines.append("f = 1;")
                return
            self.write(vi.base + c, v.code)
            return
        self.written.update(range(vi.base, vi.base + vi.size))
        self.lines.append(f"n[{vi.base} + {ic}] = {v.code};")

    def write(self, j: int, code: str) -> None:
        self.written.add(j)
        self.lines.append(f"n[{j}] = {code};")

    def cast(self, v: _Val, ty: str | None) -> _Val:
        """The legacy typed-channel cast (see :meth:`_Gen.cast`)."""
        if ty is None:
            return v
        lo, hi = TYPE_RANGE[ty]
        if v.const is not None:
            return self.const(arith.cast(ty, v.const))
        return _Val(self.let(f"dve_cast({v.code}, {lo}, {hi - lo + 1})"), "int")


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
            with _deep_recursion():
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

    def _build(self, key: tuple, gen: _Gen, ret: str) -> Callable:
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
        with _deep_recursion():  # _literal_value recurses down chains such as x + x + ... + x
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
            g = _Gen(self)
            conds: list[_Val] = []
            for ge in t.node.guard:
                conds.append(g.expr(ge, t.process))
            if t.sync_kind in ("bsend", "brecv"):
                ch = self.cm.channels[t.channel]
                cnt = g.read_slot(ch.count_slot)
                c = f"{cnt.code} < {ch.size}" if t.sync_kind == "bsend" else f"{cnt.code} > 0"
                conds.append(_Val(g.let(c), "bool", None, None, 0, 1))
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
            g = _ScalarGen(self)
            with _deep_recursion():
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
            g = _Gen(self)
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

    def _effects(self, g: _Gen, t) -> None:
        for a in t.node.effects:
            g.assign(a.target, g.expr(a.value, t.process), t.process)

    def _push(self, g: _Gen, t) -> None:
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
        g.overlay[ch.count_slot] = _Val(g.let(f"{cnt_code} + 1"), "int", None, None, 1, ch.size)

    def _pop(self, g: _Gen, t) -> None:
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
        g.overlay[ch.count_slot] = _Val(g.let(f"{g.as_int(cnt)} - 1"), "int", None, None,
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
            g = _Gen(self, wide=True)
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
    def c_guard(self, tid: int, prefix: str) -> tuple[_CGen, str]:
        """The guard of transition ``tid`` as C statements over the source state ``s``
        (:class:`_CGen`): after them the ``int`` named by the second item is the conjunction
        of the clauses (short-circuit: a clause is evaluated only where the earlier ones
        hold) and ``f`` has the faults; the step is enabled where either is set, as with
        :meth:`guard`."""
        t = self.cm.transitions[tid]
        g = _CGen(self, prefix)
        en = g.let("1", "int")
        with _deep_recursion():
            for ge in t.node.guard:
                g.lines.append(f"if ({en}) {{")
                v = g.expr(ge, t.process)
                g.lines.append(f"{en} = ({v.code}) != 0; }}")
        if t.sync_kind in ("bsend", "brecv"):
            ch = self.cm.channels[t.channel]
            cond = f"s[{ch.count_slot}] " + (f"< {ch.size}" if t.sync_kind == "bsend" else "> 0")
            g.lines.append(f"{en} = {en} && ({cond});")
        return g, en

    def c_effect(self, tids: tuple[int, ...], prefix: str) -> _CGen:
        """The effects of one step as C statements that assign the successor ``n`` (a copy
        of the source state when they start), in the order of :meth:`effect`, faults or'ed
        into ``f``; :attr:`_CGen.written` is every slot they may change."""
        cm = self.cm
        g = _CGen(self, prefix, arr="n")
        with _deep_recursion():
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
                    g.assign(target, _Val(heads[k], "int"), t.process)
                g.lines.append(f"for (int q = {ch.items}; q < {ch.items + (size - 1) * a}; ++q)"
                               f" n[q] = n[q + {a}];")
                g.lines.append(f"for (int q = {ch.items + (size - 1) * a}; "
                               f"q < {ch.items + size * a}; ++q) n[q] = 0;")
                g.lines.append(f"{cnt} = {cnt} - 1;")
        return g

    def _c_effects(self, g: _CGen, t) -> None:
        for a in t.node.effects:
            g.assign(a.target, g.expr(a.value, t.process), t.process)

    def c_charge(self, tid: int, prefix: str) -> tuple[_CGen, list[str], str]:
        """The costs (one per resource) and the time of transition ``tid`` as C statements
        over the source state ``s`` in checked 64-bit arithmetic (see :meth:`charge`): the
        generator, the cost expressions and the time expression; a negative time faults."""
        t = self.cm.transitions[tid]
        g = _CGen(self, prefix, wide=True)
        costs = t.costs
        with _deep_recursion():
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
        with _deep_recursion():
            return ev._build(key, gen, ret)(X, r)

    for t in ts:
        for k, clause in enumerate(t.node.guard):
            g = _Gen(ev)
            v = g.expr(clause, t.process)
            if hit(run(("xguard", t.id, k), g, v.err or "None")):
                return (f"{clause.pos or t.pos}: the guard faults (a division by zero or an "
                        "index out of range)")
    # Effects, one error mask after each assignment (each sees the earlier ones).
    g = _Gen(ev)
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
            g = _Gen(ev, wide=True)
            v = g.expr(c.amount, t.process)
            err, val = run(("xcost", t.id, c.resource), g, f"{v.err or 'None'}, {g.as_int(v)}")
            if hit(err):
                return (f"{c.amount.pos or c.pos}: this cost faults (a division by zero, an "
                        "index out of range, or a value outside 64 bits)")
            total[c.resource] += int(np.asarray(val).reshape(-1)[0])
        if t.time is not None:
            g = _Gen(ev, wide=True)
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
