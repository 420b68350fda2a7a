"""DVE's integer arithmetic, written once: scalar rules and their array twins over ``xp``.

Two widths exist, and every evaluator of the project (constant folding in :mod:`dve.consteval`,
the static check, the compiled model and the vectorised explorer) takes its operators from here:

- **32-bit** (guards, effects, sync values, initialisers, sizes): the legacy DiVinE 2
  evaluator computes in a C ``int32_t`` without overflow detection, so ``+ - * << ~`` and unary
  ``-`` wrap modulo ``2**32``; ``/`` and ``%`` truncate toward zero (the remainder takes the
  dividend's sign); a shift takes its count modulo 32, as the x86 instruction does;
  ``INT32_MIN / -1`` wraps to ``INT32_MIN`` (and ``INT32_MIN % -1`` is 0) instead of trapping.
- **64-bit, checked** (``cost`` and ``time``, dvecost's extension): exact integers that must
  fit a signed 64-bit integer. Every intermediate result is checked; one that does not fit is an
  :class:`Overflow` (a runtime fault of the step, like a division by zero), never a wrapped
  number. Division and modulo truncate as above; a shift takes its count modulo 64 and a left
  shift that loses bits overflows.

In both widths comparisons and ``and or not imply`` give 0 or 1; ``and``, ``or`` and ``imply``
short-circuit (their evaluators implement that, since it is control flow, not arithmetic).
Integer literals must fit the width of the expression they appear in (:func:`literal_fits`).

Examples
--------
>>> binop("/", -7, 2), binop("%", -7, 2), binop("+", 2**31 - 1, 1)
(-3, -1, -2147483648)
>>> binop("*", 32767 ** 2, 32767, wide=True)
35181150961663
>>> binop("*", 2**62, 2, wide=True)
Traceback (most recent call last):
...
dve.arith.Overflow: 9223372036854775808 does not fit a 64-bit integer
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "INT32", "INT64", "TYPE_RANGE", "DivisionByZero", "Overflow", "binop", "c_div", "c_mod",
    "cast",
    "check64", "literal_fits", "unop", "wrap32", "ARRAY_HELPERS", "array_helpers", "C_HELPERS",
]

#: Inclusive range of the 32-bit evaluation width.
INT32: tuple[int, int] = (-2**31, 2**31 - 1)
#: Inclusive range of the checked 64-bit width of costs and times.
INT64: tuple[int, int] = (-2**63, 2**63 - 1)
#: Value range of each DVE variable type (legacy storage: byte = uint8, int = int16).
TYPE_RANGE: dict[str, tuple[int, int]] = {"byte": (0, 255), "int": (-32768, 32767)}

_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
            "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


class DivisionByZero(ArithmeticError):
    """``/`` or ``%`` by 0."""


class Overflow(ArithmeticError):
    """A checked (64-bit) result that does not fit."""


def wrap32(v: int) -> int:
    """``v`` as a C ``int32_t`` (two's complement wrap-around).

    >>> wrap32(2**31), wrap32(-1), wrap32(2**32 + 5)
    (-2147483648, -1, 5)
    """
    return ((v + 2**31) & 0xFFFFFFFF) - 2**31


def check64(v: int) -> int:
    """``v`` itself when it fits a signed 64-bit integer, else :class:`Overflow`.

    >>> check64(-2**63)
    -9223372036854775808
    """
    if not INT64[0] <= v <= INT64[1]:
        raise Overflow(f"{v} does not fit a 64-bit integer")
    return v


def c_div(a: int, b: int) -> int:
    """C division: the quotient truncated toward zero (exact, no wrap). ``b`` must not be 0.

    >>> c_div(-7, 2), c_div(7, -2), c_div(-2**31, -1)
    (-3, -3, 2147483648)
    """
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def c_mod(a: int, b: int) -> int:
    """C remainder (the dividend's sign). ``b`` must not be 0.

    >>> c_mod(-7, 2), c_mod(7, -2)
    (-1, 1)
    """
    return a - b * c_div(a, b)


def cast(ty: str, v: Any) -> Any:
    """``v`` reduced into the range of type ``ty`` modulo its size: DiVinE 2's cast of a value
    sent on a typed channel (a byte wraps modulo 256, an int to 16 bits), with no error. Works
    on Python ints and on integer arrays alike (floor modulo; a 32-bit intermediate that wraps
    keeps its value modulo 2**16).

    >>> cast("byte", 300), cast("byte", -1), cast("int", 40000), cast("int", -32769)
    (44, 255, -25536, 32767)
    """
    lo, hi = TYPE_RANGE[ty]
    return (v - lo) % (hi - lo + 1) + lo


def literal_fits(value: int, wide: bool = False, negated: bool = False) -> bool:
    """Whether the literal ``value`` is allowed in an expression of the given width.

    ``negated``: the literal is the operand of a unary minus, which admits the width's
    minimum (``-2147483648`` is written as a minus and a literal one past the maximum).

    >>> literal_fits(2**31 - 1), literal_fits(2**31), literal_fits(2**31, negated=True)
    (True, False, True)
    >>> literal_fits(10**15), literal_fits(10**15, wide=True)
    (False, True)
    """
    hi = (INT64 if wide else INT32)[1] + (1 if negated else 0)
    return 0 <= value <= hi


def unop(op: str, v: int, wide: bool = False) -> int:
    """Unary ``-``, ``~`` or ``not`` on a value of the given width.

    >>> unop("-", -2**31), unop("~", 5), unop("not", 3)
    (-2147483648, -6, 0)
    """
    if op == "not":
        return int(v == 0)
    r = -v if op == "-" else ~v
    return check64(r) if wide else wrap32(r)


def binop(op: str, a: int, b: int, wide: bool = False) -> int:
    """A binary operator other than ``and``/``or``/``imply`` on two values of a width.

    Raises
    ------
    DivisionByZero
        ``/`` or ``%`` by 0.
    Overflow
        (``wide`` only) a result outside the 64-bit range.

    >>> binop("<<", 1, 33), binop(">>", -8, 1), binop("<", 2, 3)
    (2, -4, 1)
    >>> binop("<<", 1, 62, wide=True), binop("/", -2**31, -1)
    (4611686018427387904, -2147483648)
    """
    cmp = _COMPARE.get(op)
    if cmp is not None:
        return int(cmp(a, b))
    if op in ("/", "%"):
        if b == 0:
            raise DivisionByZero(f"'{op}' by zero")
        r = c_div(a, b) if op == "/" else c_mod(a, b)
    elif op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    elif op == "<<":
        r = a << (b & (63 if wide else 31))
    elif op == ">>":
        r = a >> (b & (63 if wide else 31))
    elif op == "&":
        r = a & b
    elif op == "|":
        r = a | b
    elif op == "^":
        r = a ^ b
    else:
        raise ValueError(f"unknown operator {op!r}")
    return check64(r) if wide else wrap32(r)


# ---------------------------------------------------------------------------- arrays

def array_helpers(xp: Any) -> dict[str, Any]:
    """The array twins of :func:`binop` over ``xp`` (NumPy or CuPy), by name.

    32-bit (int32 arrays): ``_div(a, b)`` and ``_mod(a, b)`` return ``(result, b == 0)``
    (``_divz`` and ``_modz`` likewise, for operands that cannot be ``INT32_MIN`` and -1);
    ``_divc(a, c)`` and ``_modc(a, c)`` divide by a non-zero constant. Checked 64-bit (int64
    arrays): ``_add64``, ``_sub64``, ``_mul64``, ``_shl64`` return ``(result, overflowed)``;
    ``_neg64(a)`` likewise; ``_div64(a, b)`` and ``_mod64(a, b)`` return ``(result, faulted)``
    where a fault is a zero divisor or ``INT64_MIN / -1``; ``_divc64(a, c)`` (``c`` neither 0
    nor -1) and ``_modc64(a, c)`` (``c`` not 0) divide by a constant and cannot fault. No helper warns: where a row faults
    its result is unspecified (the step goes to the error state).

    >>> import numpy as np
    >>> h = array_helpers(np)
    >>> q, z = h["_div"](np.array([-2**31, 7, 7], np.int32), np.array([-1, 0, -2], np.int32))
    >>> q.tolist(), z.tolist()
    ([-2147483648, 7, -3], [False, True, False])
    >>> r, o = h["_mul64"](np.array([2**40, 3]), np.array([2**30, -5]))
    >>> int(r[1]), o.tolist()
    (-15, [True, False])
    """
    I32, I64 = xp.int32, xp.int64
    lo64 = INT64[0]

    def _tdiv(a, b):
        # Truncating division where b != 0 and not (a == MIN and b == -1): a - fmod(a, b) is
        # an exact multiple of b, so floor division is exact.
        return (a - xp.fmod(a, b)) // b

    def _div(a, b):
        z = b == 0
        m1 = b == -1
        # x / -1 is -x (wrapping INT32_MIN onto itself); dividing by 1 there avoids the C
        # overflow of INT32_MIN // -1 (NumPy would warn).
        bs = xp.where(z | m1, 1, b)
        q = xp.where(m1, -a, _tdiv(a, bs))
        return q.astype(I32, copy=False), z

    def _mod(a, b):
        z = b == 0
        bs = xp.where(z | (b == -1), 1, b)   # x % -1 == 0, without the INT32_MIN % -1 trap
        return xp.fmod(a, bs).astype(I32, copy=False), z

    # The same where the operands' bounds exclude INT32_MIN / -1 (the common case: variables
    # are 8 or 16 bits wide), one comparison and one select less per operation.
    def _divz(a, b):
        z = b == 0
        return _tdiv(a, xp.where(z, 1, b)).astype(I32, copy=False), z

    def _modz(a, b):
        z = b == 0
        return xp.fmod(a, xp.where(z, 1, b)).astype(I32, copy=False), z

    def _divc(a, c):
        if c == -1:
            return (-a).astype(I32, copy=False)
        return _tdiv(a, c).astype(I32, copy=False)

    def _modc(a, c):
        return xp.fmod(a, 1 if c == -1 else c).astype(I32, copy=False)

    def _add64(a, b):
        r = a + b
        return r, ((a ^ r) & (b ^ r)) < 0

    def _sub64(a, b):
        r = a - b
        return r, ((a ^ b) & (a ^ r)) < 0

    def _mul64(a, b):
        r = a * b
        # The float product is within 2**-52 of the exact one; a wrapped int64 product differs
        # from the exact one by a non-zero multiple of 2**64. So the two are far apart exactly
        # when the product overflowed.
        f = xp.asarray(a).astype(xp.float64) * xp.asarray(b).astype(xp.float64)
        return r, xp.abs(f - xp.asarray(r).astype(xp.float64)) > 2.0**62

    def _neg64(a):
        return -a, a == lo64

    def _div64(a, b):
        bad = (b == 0) | ((a == lo64) & (b == -1))
        bs = xp.where(bad, 1, b)
        return _tdiv(a, bs).astype(I64, copy=False), bad

    def _mod64(a, b):
        bad = b == 0
        bs = xp.where(bad | (b == -1), 1, b)   # x % -1 == 0, and no INT64_MIN % -1 trap
        return xp.fmod(a, bs).astype(I64, copy=False), bad

    def _divc64(a, c):   # c a constant other than 0 and -1: no fault possible
        return _tdiv(a, c)

    def _modc64(a, c):   # c a non-zero constant
        return xp.fmod(a, 1 if c == -1 else c)

    def _shl64(a, b):
        k = b & 63
        r = a << k
        return r, (r >> k) != a

    return {"_div": _div, "_mod": _mod, "_divz": _divz, "_modz": _modz, "_divc": _divc,
            "_modc": _modc, "_add64": _add64,
            "_sub64": _sub64, "_mul64": _mul64, "_neg64": _neg64, "_div64": _div64,
            "_mod64": _mod64, "_divc64": _divc64, "_modc64": _modc64, "_shl64": _shl64}


#: Names of the helpers :func:`array_helpers` provides.
ARRAY_HELPERS: tuple[str, ...] = ("_div", "_mod", "_divz", "_modz", "_divc", "_modc", "_add64",
                                  "_sub64", "_divc64", "_modc64",
                                  "_mul64", "_neg64", "_div64", "_mod64", "_shl64")


# ---------------------------------------------------------------------------- C

#: The C twins of :func:`binop` and :func:`cast`, for code generated over one state per GPU
#: thread (:mod:`statespace.kernel`); CUDA C++ that a host C++ compiler also takes. Every
#: helper that can fault sets ``f`` (a fault of the step) and returns a harmless value (the
#: step goes to the error state, so the value is never used); none has undefined behaviour:
#: 32-bit ``+ - * <<`` wrap through unsigned arithmetic, as the legacy ``int32_t`` does.
C_HELPERS = r"""
typedef long long i64;
typedef unsigned long long u64;
#define DVE_I64_MIN (-9223372036854775807LL - 1)
#define DVE_I64_MAX 9223372036854775807LL
__device__ __forceinline__ int dve_add(int a, int b) { return (int)((unsigned)a + (unsigned)b); }
__device__ __forceinline__ int dve_sub(int a, int b) { return (int)((unsigned)a - (unsigned)b); }
__device__ __forceinline__ int dve_mul(int a, int b) { return (int)((unsigned)a * (unsigned)b); }
__device__ __forceinline__ int dve_neg(int a) { return (int)(0u - (unsigned)a); }
__device__ __forceinline__ int dve_shl(int a, int b) { return (int)((unsigned)a << (b & 31)); }
__device__ __forceinline__ int dve_shr(int a, int b) { return a >> (b & 31); }
__device__ __forceinline__ int dve_div(int a, int b, int& f) {
    if (b == 0) { f = 1; return 0; }
    if (b == -1) return dve_neg(a);            /* INT32_MIN / -1 wraps onto itself */
    return a / b;
}
__device__ __forceinline__ int dve_mod(int a, int b, int& f) {
    if (b == 0) { f = 1; return 0; }
    if (b == -1) return 0;
    return a % b;
}
__device__ __forceinline__ i64 dve_add64(i64 a, i64 b, int& f) {
    i64 r = (i64)((u64)a + (u64)b);
    if (((a ^ r) & (b ^ r)) < 0) f = 1;
    return r;
}
__device__ __forceinline__ i64 dve_sub64(i64 a, i64 b, int& f) {
    i64 r = (i64)((u64)a - (u64)b);
    if (((a ^ b) & (a ^ r)) < 0) f = 1;
    return r;
}
__device__ __forceinline__ i64 dve_mul64(i64 a, i64 b, int& f) {
    i64 r = (i64)((u64)a * (u64)b);
    if (a == -1 ? b == DVE_I64_MIN : (a != 0 && r / a != b)) f = 1;   /* no MIN / -1 trap */
    return r;
}
__device__ __forceinline__ i64 dve_neg64(i64 a, int& f) {
    if (a == DVE_I64_MIN) { f = 1; return a; }
    return -a;
}
__device__ __forceinline__ i64 dve_div64(i64 a, i64 b, int& f) {
    if (b == 0 || (a == DVE_I64_MIN && b == -1)) { f = 1; return 0; }
    return a / b;
}
__device__ __forceinline__ i64 dve_mod64(i64 a, i64 b, int& f) {
    if (b == 0) { f = 1; return 0; }
    if (b == -1) return 0;
    return a % b;
}
__device__ __forceinline__ i64 dve_shl64(i64 a, i64 b, int& f) {
    int k = (int)(b & 63);
    i64 r = (i64)((u64)a << k);
    if ((r >> k) != a) f = 1;
    return r;
}
__device__ __forceinline__ i64 dve_shr64(i64 a, i64 b) { return a >> (b & 63); }
/* An index into an array of n cells: out of range faults and reads cell 0 instead. */
__device__ __forceinline__ int dve_idx(i64 i, int n, int& f) {   /* i64: a cost's index */
    if (i < 0 || i >= n) { f = 1; return 0; }
    return i;
}
/* cast(): the value reduced into [lo, lo + m - 1] modulo m (floor modulo, no fault). */
__device__ __forceinline__ int dve_cast(int v, int lo, int m) {
    i64 d = ((i64)v - lo) % m;
    return (int)((d < 0 ? d + m : d) + lo);
}
"""
