"""The few array operations that NumPy and CuPy spell differently.

The explorer (:mod:`statespace`), the visited set and the engine across processes
(:mod:`ocm.dist`) are written once over an array module ``xp``: NumPy on the host, CuPy on a
GPU. Almost every call has the same name and meaning in both; the exceptions shared by them
live here, each with one definition per module that gives identical results (the GPU tests
compare the builds bit for bit).

This module imports no CuPy: a CuPy array's module is recognised by its name, and CuPy's own
functions are reached through the module the caller passed in. What is not about spelling (the
way back to the host, the device's free memory, its out-of-memory errors, the fallback
warning) is the run's and lives in :mod:`runtime.device`.

Examples
--------
>>> import numpy as np
>>> out = np.full(2, 9, np.int64)
>>> scatter_min(np, out, np.array([0, 1, 0]), np.array([5, 7, 3]))
>>> out.tolist()
[3, 7]
>>> on_device(np), module_of(out).__name__
(False, 'numpy')
"""

from __future__ import annotations

import numpy as np

__all__ = ["on_device", "module_of", "scatter_min", "scatter_add", "any_true", "count_values",
           "add_slot_change", "stable_argsort", "lexsort"]


def on_device(xp) -> bool:
    """True when ``xp`` is not NumPy (CuPy: arrays live on the GPU)."""
    return xp is not np


def module_of(a):
    """The array module of ``a``: NumPy for NumPy arrays, else CuPy."""
    if isinstance(a, np.ndarray):
        return np
    import cupy
    return cupy


def _scatter(xp, op: str, out, idx, vals) -> None:
    """``out[idx[k]] = op(out[idx[k]], vals[k])`` for every ``k``, repeated indices included:
    ``ufunc.at`` where the module has it, else CuPy's older ``cupyx.scatter_<op>``."""
    ufunc = getattr(xp, {"min": "minimum", "add": "add"}[op])
    if xp is np:
        ufunc.at(out, idx, vals)
        return
    try:
        ufunc.at(out, idx, vals)
    except (AttributeError, TypeError, NotImplementedError):   # CuPy before ufunc.at
        import cupyx
        getattr(cupyx, f"scatter_{op}")(out, idx, vals)


def scatter_min(xp, out, idx, vals) -> None:
    """``out[idx[k]] = min(out[idx[k]], vals[k])`` for every ``k`` (repeated indices too).

    On a device one kernel of atomic minima where ``out`` and ``vals`` have one 32- or 64-bit
    integer type (CuPy's ``ufunc.at`` goes through ``cupyx.scatter_min``)."""
    if (xp is not np and out.dtype == vals.dtype and out.dtype in _ATOMIC_TYPES
            and hasattr(xp, "ElementwiseKernel")):
        try:
            _kernel(xp, "scatter_min", "I k, T v", "raw T out", "atomicMin(&out[k], v)")(
                idx, vals, out)
            return
        except (TypeError, KeyError, ValueError):   # types the kernel does not take
            pass
    _scatter(xp, "min", out, idx, vals)


#: The element types CUDA's ``atomicMin`` takes.
_ATOMIC_TYPES = tuple(np.dtype(t) for t in (np.int32, np.uint32, np.int64, np.uint64))


def any_true(xp, a) -> bool:
    """``bool(a.any())``. On a device one elementwise kernel that sets a flag: CuPy's own
    reduction compiles and loads a kernel for each new size class of ``a`` (four of them,
    5 ms each, in the chunks of a cs_10 exploration).

    >>> any_true(np, np.array([0, 2])), any_true(np, np.zeros(0, bool))
    (True, False)
    """
    if xp is not np and hasattr(xp, "ElementwiseKernel"):
        flag = xp.zeros(1, dtype=bool)
        try:
            _kernel(xp, "any", "T x", "raw bool flag", "if (x) flag[0] = true")(a, flag)
            return bool(flag[0])
        except (TypeError, KeyError, ValueError):   # types the kernel does not take
            pass
    return bool(a.any())


def count_values(xp, a, n: int):
    """``numpy.bincount(a, minlength=n)`` as int64 for values ``a`` in ``[0, n)``. On a
    device one kernel of atomic additions: CuPy's ``bincount`` first checks the values' sign
    and maximum with reductions that compile and load a kernel for each new size class (five
    look-ups, 0.065 s of a cs_10 exploration) and wait for the device twice per call.

    >>> count_values(np, np.array([2, 0, 2]), 4).tolist()
    [1, 0, 2, 0]
    """
    if xp is not np and hasattr(xp, "ElementwiseKernel"):
        out = xp.zeros(n, dtype=np.uint64)
        try:
            _kernel(xp, "count", "I v", "raw uint64 c", "atomicAdd(&c[v], 1ULL)")(a, out)
            return out.view(np.int64)
        except (TypeError, KeyError, ValueError):   # types the kernel does not take
            pass
    return xp.bincount(a, minlength=n).astype(np.int64)


def _kernel(xp, name: str, params_in: str, params_out: str, body: str):
    """The array module's ``ElementwiseKernel`` ``dvecost_<name>``, made once per module."""
    key = (id(xp), name)
    entry = _KERNELS.get(key)
    if entry is None or entry[0] is not xp:   # (an id may be reused by another module)
        entry = _KERNELS[key] = (xp, xp.ElementwiseKernel(params_in, params_out, body,
                                                          f"dvecost_{name}"))
    return entry[1]


def scatter_add(xp, out, idx, vals) -> None:
    """``out[idx[k]] += vals[k]`` for every ``k`` (repeated indices add up; modular for
    unsigned integers)."""
    _scatter(xp, "add", out, idx, vals)


def add_slot_change(xp, out, new, old, shift: int) -> None:
    """``out += uint64(int64(new) - int64(old)) << shift`` in place, wrapping modulo 2**64: the
    change of a packed key's word when one slot goes from ``old`` to ``new``. On a device one
    fused kernel (the NumPy form takes five passes and a transfer for a constant ``new``).

    >>> k = np.array([5, 5], np.uint64)
    >>> add_slot_change(np, k, 1, np.array([2, 1], np.int8), 4)
    >>> k.tolist()   # 5 - (1 << 4) wraps, 5 + 0
    [18446744073709551605, 5]
    """
    if xp is not np:
        try:
            if isinstance(new, (int, np.integer)):
                # A scalar gives its placeholder no type in CuPy: the constant's own kernel.
                _slot_change_kernel(xp, True)(np.int64(new), old, np.uint64(shift), out)
            else:
                _slot_change_kernel(xp, False)(new, old, np.uint64(shift), out)
            return
        except (TypeError, KeyError, ValueError):   # types the kernel does not take
            pass
    d = (xp.asarray(new).astype(np.int64) - old.astype(np.int64)).astype(np.uint64)
    if shift:
        d = d << np.uint64(shift)
    out += d


_KERNELS: dict = {}


def _slot_change_kernel(xp, const: bool):
    key = (xp.__name__, "slot_change", const)
    k = _KERNELS.get(key)
    if k is None:
        # O (and V): any integer array type; CuPy requires typed parameters to match exactly
        # and infers placeholders from arrays only.
        k = _KERNELS[key] = xp.ElementwiseKernel(
            ("int64 v" if const else "V v") + ", O o, uint64 s", "uint64 k",
            "k += ((unsigned long long)((long long)v - (long long)o)) << s",
            "dvecost_slot_change" + ("_const" if const else ""))
    return k


def stable_argsort(xp, a):
    """The permutation sorting ``a`` with equal values kept in their order (CuPy's sort is a
    stable radix sort whatever ``kind`` says; NumPy's needs ``kind='stable'``)."""
    if xp is np:
        return np.argsort(a, kind="stable")
    return xp.argsort(a)


def lexsort(xp, keys):
    """:func:`numpy.lexsort` of a sequence of 1-D keys (the last one primary), for both
    modules (CuPy's takes one 2-D array)."""
    if xp is np:
        return np.lexsort(keys)
    return xp.lexsort(xp.stack(list(keys)))
