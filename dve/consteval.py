"""Evaluate constant DVE expressions at load time (array sizes, initialisers, template arguments).

Arithmetic follows the legacy DiVinE 2 evaluator: C semantics on 32-bit signed integers
(results wrap around modulo 2**32), division and modulo truncate toward zero, comparisons and
boolean operators give 0 or 1, ``and``/``or`` short-circuit (an error in the operand that is
not evaluated does not count), ``imply`` is ``(not a) or b``. Shifts take the count modulo 32,
as the x86 instruction the C code compiled to does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from . import syntax as s
from .errors import EvaluationError

__all__ = ["eval_const", "wrap32"]


def wrap32(v: int) -> int:
    """``v`` as a C ``int32_t`` (two's complement wrap-around).

    >>> wrap32(2**31), wrap32(-1), wrap32(70000)
    (-2147483648, -1, 70000)
    """
    v &= 0xFFFFFFFF
    return v - 0x100000000 if v & 0x80000000 else v


def _div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _mod(a: int, b: int) -> int:
    return a - _div(a, b) * b


_BINARY: dict[str, Callable[[int, int], int]] = {
    "|": lambda a, b: a | b,
    "&": lambda a, b: a & b,
    "^": lambda a, b: a ^ b,
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b),
    "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b),
    ">=": lambda a, b: int(a >= b),
    "<<": lambda a, b: a << (b & 31),
    ">>": lambda a, b: a >> (b & 31),
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
}


def eval_const(expr: s.Expr, env: Mapping[str, int],
               macros: Mapping[str, s.Macro] | None = None) -> int:
    """The value of a constant expression.

    Parameters
    ----------
    expr : dve.syntax.Expr
        The expression.
    env : mapping of str to int
        Values of the names it may use (constants, inputs, template parameters, loop variables).
    macros : mapping of str to dve.syntax.Macro, optional
        Expression macros that calls may use (DiVinE 3 ``expression name(a) { e }``).

    Returns
    -------
    int
        A 32-bit signed value.

    Raises
    ------
    EvaluationError
        ``not-constant`` (a name not in ``env``, an array element, a process state or remote
        variable), ``division-by-zero`` (``/`` or ``%`` by 0), ``unknown-macro`` or
        ``macro-arity`` for bad macro calls; positioned at the offending sub-expression.

    Examples
    --------
    >>> from dve.parser import parse_model
    >>> def ev(text, **env):
    ...     m = parse_model(f"byte x = {text}; process P {{ state s; init s; }} system async;")
    ...     return eval_const(m.items[0].init, env)
    >>> ev("-7 / 2"), ev("-7 % 2"), ev("N * 2 + 1", N=4), ev("1 or 1 / 0")
    (-3, -1, 9, 1)
    >>> ev("2147483647 + 1")
    -2147483648
    >>> ev("K + 1")
    Traceback (most recent call last):
    ...
    dve.errors.EvaluationError: <string>:1:10: error[not-constant]: 'K' is not a constant
    """
    return _Evaluator(env, macros or {}).eval(expr)


class _Evaluator:
    def __init__(self, env: Mapping[str, int], macros: Mapping[str, s.Macro]) -> None:
        self.env = env
        self.macros = macros
        self.depth = 0

    def eval(self, e: s.Expr) -> int:
        t = type(e)
        if t is s.IntLit:
            return wrap32(e.value)
        if t is s.BoolLit:
            return int(e.value)
        if t is s.Name:
            try:
                return wrap32(self.env[e.name])
            except KeyError:
                raise EvaluationError(e.pos, "not-constant",
                                      f"'{e.name}' is not a constant") from None
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
            if op in ("/", "%"):
                if b == 0:
                    raise EvaluationError(e.pos, "division-by-zero",
                                          f"'{op}' by zero in a constant expression")
                return wrap32(_div(a, b) if op == "/" else _mod(a, b))
            return wrap32(_BINARY[op](a, b))
        if t is s.Unary:
            v = self.eval(e.operand)
            if e.op == "-":
                return wrap32(-v)
            if e.op == "~":
                return wrap32(~v)
            return int(not v)
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
        inner = _Evaluator({**self.env, **args}, self.macros)
        inner.depth = self.depth + 1
        return inner.eval(m.body)
