"""Code generation for the evaluator: one walk over an expression, three forms of code.

:class:`Emitter` walks a guard, effect, cost or time expression of a compiled model once: it
checks and folds literals, resolves names (local before global, ``P->v`` in process ``P``)
and state tests, and recurses into operands. What it writes for each piece is its subclass's:

- :class:`ArrayGen`: Python source over a batch of states, one array operation per operator
  (the form :class:`statespace.evaluate.Evaluator` compiles and the explorer runs);
- :class:`ScalarGen`: one Python expression over one state, for the few rows of a huge guard;
- :class:`CGen`: C statements over one state, for the successor kernel (:mod:`statespace.kernel`).

Each piece is a :class:`Val`: its code, kind, constant value, fault mask and static bounds.
The semantics are those of :mod:`dve.arith` (docs/language.md, "Expressions"); the functions
the generated code calls are the evaluator's namespace
(its ``ns``, with the checked helpers of :mod:`dve.arith`).

>>> import numpy as np
>>> from dve.parser import parse_model
>>> from statespace import compile_model
>>> from statespace.evaluate import Evaluator
>>> cm = compile_model(parse_model("byte x; process P { state a; init a; "
...     "trans a -> a { guard x + 1 > 2; }; } system async;", "<doc>"))
>>> g = ScalarGen(Evaluator(cm, np))
>>> g.as_bool(g.expr(cm.transitions[0].node.guard[0], 0))
'(_sadd(x[1], 1)) > (2)'
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from dve import arith
from dve import syntax as S
from dve.consteval import literal_error

from .model import TYPE_RANGE

__all__ = ["Val", "const_val", "deep_recursion", "literal_of", "Emitter", "ArrayGen",
           "ScalarGen", "CGen"]

_I32 = arith.INT32
_I64 = arith.INT64


_I64 = arith.INT64


@dataclass
class Val:
    """A compiled expression: its code, kind ('int' or 'bool'), constant value (or None),
    error code (or None) and static bounds."""
    code: str
    kind: str
    const: int | None = None
    err: str | None = None
    lo: int = _I32[0]
    hi: int = _I32[1]


def const_val(v: int) -> Val:
    """The value of the constant ``v``."""
    return Val(repr(v), "int", v, None, v, v)


@contextmanager
def deep_recursion(limit: int = 100_000):
    """Code generation recurses along the expression tree; BEEM ``plc`` has guards with
    thousands of operators in one left-leaning chain (Python-to-Python calls do not use the C
    stack on 3.11+, so a higher limit is safe)."""
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(max(old, limit))
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def literal_of(e: S.Expr, wide: bool) -> int | None:
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


class Emitter:
    """The one walk over an expression that both code generators share.

    It checks and folds literals, resolves names (local before global, ``P->v`` in process
    ``P``) and state tests, and recurses into operands; the target, a subclass, writes the
    code of each piece and returns a value of its own (:class:`Val`): :class:`ArrayGen` writes
    array code over a batch of states, :class:`ScalarGen` a Python expression over one state.
    """

    def __init__(self, ev: Any, wide: bool = False) -> None:
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

    def expr(self, e: S.Expr, proc: int | None) -> Val:
        c = literal_of(e, self.wide)
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
    def const(self, v: int) -> Val:
        raise NotImplementedError

    def read_slot(self, j: int) -> Val:
        raise NotImplementedError

    def read_index(self, vi, idx_expr: S.Expr, proc: int | None) -> Val:
        raise NotImplementedError

    def state_test(self, slot: int, state: int) -> Val:
        raise NotImplementedError

    def unary(self, op: str, v: Val) -> Val:
        raise NotImplementedError

    def binary(self, e: S.Binary, proc: int | None) -> Val:
        raise NotImplementedError


class ArrayGen(Emitter):
    """Generates the body of one array function; tracks the state as modified by effects so
    far."""

    def __init__(self, ev: Any, wide: bool = False) -> None:
        super().__init__(ev, wide)
        self.full = _I64 if wide else _I32
        self.lines: list[str] = []
        self.n = 0
        self.orig: dict[int, str] = {}      # slot -> name of its source values X[j][r]
        self.overlay: dict[int, Val] = {}  # slot -> current value after writes
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

    def as_int(self, v: Val) -> str:
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

    def fault(self) -> Val:
        """A value whose evaluation always faults (its result is unspecified)."""
        return Val("0", "int", 0, self.true_mask(), 0, 0)

    def fold(self, op: str, a: int, b: int | None = None) -> Val:
        """A constant operation, or a value that always faults."""
        try:
            v = arith.unop(op, a, self.wide) if b is None else arith.binop(op, a, b, self.wide)
        except ArithmeticError:
            return self.fault()
        return const_val(v)

    def checked(self, helper: str, *args: str) -> tuple[str, str]:
        """``(result, fault mask)`` of one of the checked helpers of :mod:`dve.arith`."""
        code, bad = self.tmp(), self.tmp()
        self.emit(f"{code}, {bad} = {helper}({', '.join(args)})")
        return code, bad

    def as_bool(self, v: Val) -> str:
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
    def read_slot(self, j: int) -> Val:
        sl = self.cm.slots[j]
        if j in self.overlay:
            return self.overlay[j]
        for blk, base, size in self.blocks.values():
            if base <= j < base + size:
                return Val(self.let(self.leaf(f"{blk}[{j - base}].copy()")), "int",
                            lo=sl.lo, hi=sl.hi)
        if j not in self.orig:
            name = f"s{j}"
            self.orig[j] = name
        return Val(self.orig[j], "int", lo=sl.lo, hi=sl.hi)

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
    def const(self, v: int) -> Val:
        return const_val(v)

    def state_test(self, slot: int, state: int) -> Val:
        pc = self.read_slot(slot)
        return Val(self.let(f"{pc.code} == {state}"), "bool", lo=0, hi=1)

    def unary(self, op: str, v: Val) -> Val:
        if v.const is not None:
            f = self.fold(op, v.const)
            return f if v.err is None else Val(f.code, f.kind, f.const,
                                                self.or_err(v.err, f.err), f.lo, f.hi)
        if op == "not":
            return Val(self.let(f"~{v.code}" if v.kind == "bool" else f"{v.code} == 0"),
                        "bool", None, v.err, 0, 1)
        lo, hi = (-v.hi, -v.lo) if op == "-" else (-v.hi - 1, -v.lo - 1)
        err = v.err
        if op == "-" and self.wide and v.lo <= _I64[0]:
            code, bad = self.checked("_neg64", self.as_int(v))
            err = self.or_err(err, bad)
        else:
            code = self.let(f"-{self.as_int(v)}" if op == "-" else f"~{self.as_int(v)}")
        lo, hi = self.bounded(lo, hi)
        return Val(code, "int", None, err, lo, hi)

    def read_index(self, vi, idx_expr, proc) -> Val:
        size = vi.size
        if size is None:
            raise TypeError(f"'{vi.name}' is not an array")
        c, ic, err = self.index(idx_expr, size, proc)
        if c is not None:
            if not 0 <= c < size:
                return Val("0", "int", 0, self.or_err(err, self.true_mask()), 0, 0)
            if vi.is_const:
                return Val(repr(vi.const_value[c]), "int", vi.const_value[c], err,
                            vi.const_value[c], vi.const_value[c])
            v = self.read_slot(vi.base + c)
            return Val(v.code, v.kind, v.const, self.or_err(v.err, err), v.lo, v.hi)
        lo, hi = TYPE_RANGE[vi.type]
        if vi.is_const:
            arr = self.ev.const_array(vi)
            return Val(self.let(self.leaf(f"{arr}[{ic}]")), "int", None, err, lo, hi)
        if vi.name in self.blocks or any(vi.base <= j < vi.base + size for j in self.overlay):
            blk = self.materialise(vi)
            self.need_ar = True
            return Val(self.let(self.leaf(f"{blk}[{ic}, _ar]")), "int", None, err, lo, hi)
        return Val(self.let(self.leaf(f"X[{vi.base} + {ic}, r]")), "int", None, err, lo, hi)

    def binary(self, e: S.Binary, proc) -> Val:
        op = e.op
        a = self.expr(e.left, proc)
        if op in ("and", "or", "imply"):
            b = self.expr(e.right, proc)
            if a.const is not None:
                # A constant left operand decides whether the right one is evaluated at all.
                decided = (a.const == 0) if op in ("and", "imply") else (a.const != 0)
                if decided:
                    c = 0 if op == "and" else 1
                    return Val(repr(c), "int", c, a.err, c, c)
                err = self.or_err(a.err, b.err)
                if b.const is not None:
                    c = int(b.const != 0)
                    return Val(repr(c), "int", c, err, c, c)
                return Val(self.as_bool(b), "bool", None, err, 0, 1)
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
                return Val(code, "bool", None, err, 0, 1)
            bb = self.as_bool(b)
            if op == "and":
                code, guard = f"{ab} & {bb}", ab
            elif op == "or":
                code, guard = f"{ab} | {bb}", f"~{ab}"
            else:
                code, guard = f"~{ab} | {bb}", ab
            err = self.or_err(a.err, self.cond_err(guard, b.err))
            return Val(self.let(code), "bool", None, err, 0, 1)
        b = self.expr(e.right, proc)
        err = self.or_err(a.err, b.err)
        if a.const is not None and b.const is not None:
            f = self.fold(op, a.const, b.const)
            return Val(f.code, f.kind, f.const, self.or_err(err, f.err), f.lo, f.hi)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            if a.kind == "bool" and b.kind == "bool" and op in ("==", "!="):
                return Val(self.let(f"{a.code} {op} {b.code}"), "bool", None, err, 0, 1)
            return Val(self.let(f"{self.as_int(a)} {op} {self.as_int(b)}"), "bool", None, err,
                        0, 1)
        ai, bi = self.as_int(a), self.as_int(b)
        lo, hi = self.full
        if op in ("/", "%"):
            if b.const == 0:
                # Always a fault where evaluated (and no division is run at all).
                return Val("0", "int", 0, self.or_err(err, self.true_mask()), 0, 0)
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
            return Val(code, "int", None, err, lo, hi)
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
                return Val(code, "int", None, self.or_err(err, bad), *_I64)
            lo, hi = self.bounded(lo, hi)
            # A constant on the left of an operator with an array on the right still yields an
            # array of the array's dtype (NEP 50: the Python int adopts it); 32-bit results wrap.
            return Val(self.let(f"{ai} {op} {bi}"), "int", None, err, lo, hi)
        if op in ("&", "|", "^"):
            if a.lo >= 0 and b.lo >= 0 and op == "&":
                lo, hi = 0, min(a.hi, b.hi)
            return Val(self.let(f"{ai} {op} {bi}"), "int", None, err, lo, hi)
        if op in ("<<", ">>"):
            mask = 63 if self.wide else 31
            if self.wide and op == "<<":
                code, bad = self.checked("_shl64", ai, bi)
                return Val(code, "int", None, self.or_err(err, bad), lo, hi)
            bs = repr(b.const & mask) if b.const is not None else self.let(f"{bi} & {mask}")
            return Val(self.let(f"{ai} {op} {bs}"), "int", None, err, lo, hi)
        raise ValueError(f"unknown operator {op!r}")

    # ------------------------------------------------------------------ effects
    def range_check(self, v: Val, lo: int, hi: int) -> None:
        if v.const is not None:
            if not lo <= v.const <= hi:
                self.errs.append(self.true_mask())
            return
        if v.lo >= lo and v.hi <= hi:
            return
        c = self.as_int(v)
        self.errs.append(self.let(f"({c} < {lo}) | ({c} > {hi})"))

    def store_value(self, v: Val) -> Val:
        """A value to keep in the overlay: an int32 array or a constant."""
        if v.const is not None:
            return const_val(v.const)
        if v.kind == "bool":
            return Val(self.let(f"_i({v.code})"), "int", None, None, 0, 1)
        return Val(v.code, "int", None, None, v.lo, v.hi)

    def assign(self, target: S.Expr, v: Val, proc: int | None) -> None:
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

    def write_slot(self, j: int, v: Val) -> None:
        for blk, base, size in self.blocks.values():
            if base <= j < base + size:
                self.emit(f"{blk}[{j - base}] = {self.as_int(v)}")
                return
        self.overlay[j] = self.store_value(v)

    def cast(self, v: Val, ty: str | None) -> Val:
        """The legacy typed-channel cast (byte wraps mod 256, int to int16), no error."""
        if ty is None:
            return v
        lo, hi = TYPE_RANGE[ty]
        if v.const is not None:
            c = arith.cast(ty, v.const)
            return Val(repr(c), "int", c, v.err, c, c)
        if v.lo >= lo and v.hi <= hi:
            return v
        c = self.as_int(v)
        code = f"_cast({ty!r}, {c})"
        return Val(self.let(code), "int", None, v.err, lo, hi)

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


class ScalarGen(Emitter):
    """Generates one Python expression over one state ``x`` (a list of slot values), raising
    ``Fault`` on a runtime fault: 32-bit C arithmetic through the checked helpers of the
    evaluator's namespace (``Evaluator.ns``), and Python's own short-circuit for ``and``,
    ``or``, ``imply``.
    A value's ``kind`` is ``'bool'`` where its code is a Python truth value (any truthy value
    stands for non-zero), else ``'int'``."""

    def as_int(self, v: Val) -> str:
        return f"(1 if ({v.code}) else 0)" if v.kind == "bool" else v.code

    def as_bool(self, v: Val) -> str:
        return v.code if v.kind == "bool" else f"({v.code}) != 0"

    def const(self, v: int) -> Val:
        return Val(repr(v), "int")

    def read_slot(self, j: int) -> Val:
        return Val(f"x[{j}]", "int")

    def read_index(self, vi, idx_expr: S.Expr, proc: int | None) -> Val:
        idx = self.as_int(self.expr(idx_expr, proc))
        if vi.is_const:
            return Val(f"_sidx({vi.const_value!r}, 0, {vi.size}, {idx})", "int")
        return Val(f"_sidx(x, {vi.base}, {vi.size}, {idx})", "int")

    def state_test(self, slot: int, state: int) -> Val:
        return Val(f"(1 if x[{slot}] == {state} else 0)", "int")

    def unary(self, op: str, v: Val) -> Val:
        if op == "not":
            return Val(f"not ({self.as_bool(v)})", "bool")
        return Val(f"_w({op}({self.as_int(v)}))", "int")

    def binary(self, e: S.Binary, proc: int | None) -> Val:
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
            return Val(f" {op} ".join(f"({self.as_bool(self.expr(i, proc))})"
                                       for i in reversed(items)), "bool")
        a = self.expr(e.left, proc)
        b = self.expr(e.right, proc)
        if op == "imply":
            return Val(f"(not ({self.as_bool(a)})) or ({self.as_bool(b)})", "bool")
        ai, bi = self.as_int(a), self.as_int(b)
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return Val(f"({ai}) {op} ({bi})", "bool")
        fn = {"+": "_sadd", "-": "_ssub", "*": "_smul", "/": "_sdiv", "%": "_smod",
              "<<": "_sshl", ">>": "_sshr"}.get(op)
        if fn is not None:
            return Val(f"{fn}({ai}, {bi})", "int")
        return Val(f"(({ai}) {op} ({bi}))", "int")  # & | ^ of 32-bit values stay 32-bit


class CGen(Emitter):
    """Generates C statements over one state, for the successor kernel of
    :mod:`statespace.kernel` (one GPU thread per state). Slots are read from the ``int`` array
    named ``arr`` (``s``, the source state, for guards and charges; ``n``, the successor being
    built, for effects, so each assignment sees the earlier ones); every operator is one
    temporary of the evaluation width (``int``, or ``i64`` for costs and times) computed by the
    C twins of :mod:`dve.arith` (:data:`dve.arith.C_HELPERS`), which or a fault into the
    ``int f``; ``and``, ``or`` and ``imply`` short-circuit through ``if`` blocks, so a fault of
    an operand that is not evaluated does not count, as in the array form."""

    def __init__(self, ev: Any, prefix: str, arr: str = "s", wide: bool = False) -> None:
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

    def const(self, v: int) -> Val:
        return Val(self.lit(v), "int", v, None, v, v)

    def leaf(self, code: str) -> str:
        return f"(i64){code}" if self.wide else code

    def read_slot(self, j: int) -> Val:
        return Val(self.leaf(f"{self.arr}[{j}]"), "int")

    def index(self, e: S.Expr, size: int, proc) -> tuple[int | None, str]:
        iv = self.expr(e, proc)
        if iv.const is not None:
            return iv.const, ""
        return None, self.let(f"dve_idx({iv.code}, {size}, f)", "int")

    def read_index(self, vi, idx_expr: S.Expr, proc: int | None) -> Val:
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
            return Val(self.let(self.leaf(f"{arr}[{ic}]")), "int")
        at = vi.base + c if c is not None else f"{vi.base} + {ic}"
        return Val(self.let(self.leaf(f"{self.arr}[{at}]")), "int")

    def state_test(self, slot: int, state: int) -> Val:
        return Val(self.let(f"({self.arr}[{slot}] == {state})", "int"), "int")

    def unary(self, op: str, v: Val) -> Val:
        if op == "not":
            return Val(self.let(f"!({v.code})", "int"), "int")
        if op == "~":
            return Val(self.let(f"~({v.code})"), "int")
        return Val(self.let(f"dve_neg64({v.code}, f)" if self.wide else f"dve_neg({v.code})"),
                    "int")

    def binary(self, e: S.Binary, proc: int | None) -> Val:
        op = e.op
        a = self.expr(e.left, proc)
        if op in ("and", "or", "imply"):
            # The right operand's statements run only where C would evaluate it.
            r = self.let("1" if op != "and" else "0", "int")
            self.lines.append(f"if ({'!' if op == 'or' else ''}({a.code})) {{")
            b = self.expr(e.right, proc)
            self.lines.append(f"{r} = ({b.code}) != 0; }}")
            return Val(r, "int")
        b = self.expr(e.right, proc)
        x, y = a.code, b.code
        if op in ("==", "!=", "<", "<=", ">", ">="):
            return Val(self.let(f"({x}) {op} ({y})", "int"), "int")
        if op in ("&", "|", "^"):
            return Val(self.let(f"({x}) {op} ({y})"), "int")
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
        return Val(self.let(code), "int")

    # ------------------------------------------------------------------ effects
    def assign(self, target: S.Expr, v: Val, proc: int | None) -> None:
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

    def cast(self, v: Val, ty: str | None) -> Val:
        """The legacy typed-channel cast (see :meth:`ArrayGen.cast`)."""
        if ty is None:
            return v
        lo, hi = TYPE_RANGE[ty]
        if v.const is not None:
            return self.const(arith.cast(ty, v.const))
        return Val(self.let(f"dve_cast({v.code}, {lo}, {hi - lo + 1})"), "int")
