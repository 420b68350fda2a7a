"""Evaluate constant DVE expressions at load time (array sizes, initialisers, template arguments).

The operators are those of :mod:`dve.arith` (DiVinE 2's 32-bit C arithmetic, or with
``wide=True`` the checked 64-bit arithmetic of ``cost`` and ``time``); ``and``/``or``
short-circuit (an error in the operand that is not evaluated does not count) and ``imply`` is
``(not a) or b``. A literal that does not fit the width is an error, never wrapped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import arith
from . import syntax as s
from .arith import wrap32
from .errors import EvaluationError

__all__ = ["const_evaluator", "eval_const", "literal_error", "wrap32"]


def literal_error(e: s.IntLit, wide: bool = False, negated: bool = False) -> EvaluationError:
    """The error for literal ``e`` when it does not fit its expression's width, else None.

    >>> from dve.parser import parse_model
    >>> m = parse_model("byte x = 4294967296; process P { state s; init s; } system async;", "m.dve")
    >>> print(literal_error(m.items[0].init))
    m.dve:1:10: error[literal-out-of-range]: literal 4294967296 does not fit a 32-bit integer
    """
    if arith.literal_fits(e.value, wide, negated):
        return None  # type: ignore[return-value]
    lo, hi = arith.INT64 if wide else arith.INT32
    where = "a cost or time (64-bit)" if wide else "a 32-bit integer"
    hint = (f"{'costs and times' if wide else 'guards, effects and initialisers'} compute "
            f"with {lo}..{hi}" + ("" if wide else "; a cost or time may use 64 bits"))
    return EvaluationError(e.pos, "literal-out-of-range",
                           f"literal {e.value} does not fit {where}", hint)


def eval_const(expr: s.Expr, env: Mapping[str, Any],
               macros: Mapping[str, s.Macro] | None = None, *, wide: bool = False) -> int:
    """The value of a constant expression.

    Parameters
    ----------
    expr : dve.syntax.Expr
        The expression.
    env : mapping of str to int or tuple of int
        Values of the names it may use (constants, inputs, template parameters, loop variables;
        a tuple is a constant array, read with an index).
    macros : mapping of str to dve.syntax.Macro, optional
        Expression macros that calls may use (DiVinE 3 ``expression name(a) { e }``).
    wide : bool
        Use the checked 64-bit arithmetic of costs and times instead of 32-bit C arithmetic.

    Returns
    -------
    int
        A 32-bit signed value (64-bit with ``wide``).

    Raises
    ------
    EvaluationError
        ``not-constant`` (a name not in ``env``, an array element, a process state or remote
        variable), ``division-by-zero`` (``/`` or ``%`` by 0), ``index-out-of-range`` (a
        constant array read outside its cells), ``literal-out-of-range``, ``overflow`` (``wide``
        only: a result outside 64 bits), ``unknown-macro`` or ``macro-arity`` for bad macro
        calls; positioned at the offending sub-expression.

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> def ev(text, **env):
    ...     m = parse_model(f"byte x = {text}; process P {{ state s; init s; }} system async;")
    ...     return eval_const(m.items[0].init, env)
    >>> ev("-7 / 2"), ev("-7 % 2"), ev("N * 2 + 1", N=4), ev("1 or 1 / 0")
    (-3, -1, 9, 1)
    >>> ev("2147483647 + 1"), ev("-2147483648")
    (-2147483648, -2147483648)
    >>> ev("K + 1")
    Traceback (most recent call last):
    ...
    dve.errors.EvaluationError: <string>:1:10: error[not-constant]: 'K' is not a constant
    """
    return _Evaluator(env, macros or {}, wide).eval(expr)


def const_evaluator(env: Mapping[str, Any], macros: Mapping[str, s.Macro] | None = None, *,
                    wide: bool = False) -> Callable[[s.Expr], int]:
    """:func:`eval_const` with its arguments bound, for evaluating many expressions of one
    scope: ``const_evaluator(env)(e) == eval_const(e, env)``.

    >>> from dve import syntax as S
    >>> const_evaluator({"N": 3})(S.Binary("*", S.Name("N"), S.IntLit(5)))
    15
    """
    return _Evaluator(env, macros or {}, wide).eval


class _Evaluator:
    def __init__(self, env: Mapping[str, Any], macros: Mapping[str, s.Macro],
                 wide: bool = False) -> None:
        self.env = env
        self.macros = macros
        self.wide = wide
        self.depth = 0

    def fail(self, e: s.Expr, exc: ArithmeticError) -> EvaluationError:
        if isinstance(exc, arith.DivisionByZero):
            return EvaluationError(e.pos, "division-by-zero",
                                   f"'{e.op}' by zero in a constant expression")
        return EvaluationError(e.pos, "overflow",
                               f"'{e.op}' overflows 64 bits in a constant expression",
                               "costs and times must stay within -2**63..2**63-1")

    def eval(self, e: s.Expr) -> int:
        t = type(e)
        if t is s.IntLit:
            err = literal_error(e, self.wide)
            if err is not None:
                raise err
            return e.value
        if t is s.BoolLit:
            return int(e.value)
        if t is s.Name:
            try:
                v = self.env[e.name]
            except KeyError:
                raise EvaluationError(e.pos, "not-constant",
                                      f"'{e.name}' is not a constant") from None
            if isinstance(v, tuple):
                raise EvaluationError(e.pos, "not-constant",
                                      f"'{e.name}' is an array: read one cell, '{e.name}[i]'")
            return v if self.wide else wrap32(v)
        if t is s.Index and isinstance(self.env.get(e.name), tuple):
            arr = self.env[e.name]
            i = self.eval(e.index)
            if not 0 <= i < len(arr):
                raise EvaluationError(e.pos, "index-out-of-range",
                                      f"index {i} out of range for '{e.name}[{len(arr)}]'")
            return arr[i]
        if t is s.Binary:
            op = e.op
            a = self.eval(e.left)
            if op == "and":
                return int(bool(a) and bool(self.eval(e.right)))
            if op == "or":
                return int(bool(a) or bool(self.eval(e.right)))
            if op == "imply":
                return int((not a) or bool(self.eval(e.right)))
            b = self.eval(e.right)
            try:
                return arith.binop(op, a, b, self.wide)
            except ArithmeticError as exc:
                raise self.fail(e, exc) from None
        if t is s.Unary:
            if e.op == "-" and type(e.operand) is s.IntLit:
                # '-2147483648': a minus and a literal one past the maximum.
                err = literal_error(e.operand, self.wide, negated=True)
                if err is not None:
                    raise err
                return -e.operand.value
            v = self.eval(e.operand)
            try:
                return arith.unop(e.op, v, self.wide)
            except ArithmeticError as exc:
                raise self.fail(e, exc) from None
        if t is s.Call:
            return self.call(e)
        what = {s.Index: "an array element", s.StateTest: "a process state",
                s.Remote: "another process's variable"}.get(t, "this expression")
        raise EvaluationError(e.pos, "not-constant",
                              f"expected a constant expression, found {what}")

    def call(self, e: s.Call) -> int:
        m = self.macros.get(e.name)
        if m is None:
            raise EvaluationError(e.pos, "unknown-macro", f"no expression macro '{e.name}'")
        if len(m.params) != len(e.args):
            raise EvaluationError(e.pos, "macro-arity",
                                  f"macro '{e.name}' takes {len(m.params)} arguments, "
                                  f"found {len(e.args)}")
        if self.depth > 100:
            raise EvaluationError(e.pos, "macro-recursion",
                                  f"macro '{e.name}' expands into itself")
        args = {p: self.eval(a) for p, a in zip(m.params, e.args)}
        inner = _Evaluator({**self.env, **args}, self.macros, self.wide)
        inner.depth = self.depth + 1
        return inner.eval(m.body)
