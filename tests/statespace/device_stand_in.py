"""Shared by the device tests: a stand-in for CuPy that computes with NumPy, and the
comparison of two state graphs array for array."""

from __future__ import annotations

import sys
import types

import kernel_emulator
import numpy as np


def same_graph(a, b) -> None:
    """Every array and count of two state graphs equal, dtype included."""
    for name in ("indptr", "indices", "time", "action", "states", "parent", "parent_action",
                 "deadlocks"):
        x, y = getattr(a, name), getattr(b, name)
        assert isinstance(y, np.ndarray), name
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y), name
    assert a.costs.keys() == b.costs.keys()
    for r in a.costs:
        assert a.costs[r].dtype == b.costs[r].dtype and np.array_equal(a.costs[r], b.costs[r])
    # The compact form too: the same palette rows and the same row per edge.
    assert (a.charge is None) == (b.charge is None)
    if a.charge is not None:
        assert a.charge.dtype == b.charge.dtype and np.array_equal(a.charge, b.charge)
        assert np.array_equal(a.palette.time, b.palette.time)
        assert all(np.array_equal(a.palette.costs[r], b.palette.costs[r]) for r in a.costs)
    assert (a.action_codes is None) == (b.action_codes is None)
    if a.action_codes is not None:
        assert np.array_equal(a.action_codes, b.action_codes)
    for name in ("error_state", "depth", "complete", "n_expanded", "n_states", "n_edges"):
        assert getattr(a, name) == getattr(b, name), name


def stand_in(monkeypatch, kernels: bool = False):
    """A module that is not NumPy but computes with it, with CuPy's spellings where they
    differ (argsort always stable, lexsort of one 2-D array), and a ``cupyx`` with the
    scatter functions the explorer takes from it. With ``kernels``, also a ``RawModule`` that
    compiles CUDA sources with the host's C++ compiler (:mod:`kernel_emulator`), so the
    explorer uses its generated successor kernel; without, it has none and uses the array
    form."""
    fake = types.ModuleType("fake_xp")
    for k in dir(np):
        if not k.startswith("__"):
            setattr(fake, k, getattr(np, k))
    fake.argsort = lambda a: np.argsort(a, kind="stable")

    def lexsort(keys):
        assert isinstance(keys, np.ndarray) and keys.ndim == 2   # CuPy takes one 2-D array
        return np.lexsort(keys)

    fake.lexsort = lexsort

    def searchsorted(a, v, side="left", sorter=None):
        # CuPy raises NotImplementedError for values that are not an array (a Python int):
        # so does the stand-in, or the device would fail where the tests pass.
        if not isinstance(v, np.ndarray):
            raise NotImplementedError("Only int or ndarray are supported for v")
        return np.searchsorted(a, v, side=side, sorter=sorter)

    fake.searchsorted = searchsorted

    def kernel(in_params, out_params, operation, name):
        # The fused kernels of runtime.arrays, computed here from their specifications:
        # the flag of any_true, the counts of count_values, the atomic minima of scatter_min,
        # and add_slot_change's k += uint64(v - o) << s, wrapping.
        # CuPy refuses a parameter named as its own loop variables (ValueError "Can not use
        # 'i' as a parameter name"): so does the stand-in, or the device would fall back
        # where the tests pass.
        for p in (in_params + "," + out_params).split(","):
            if p.split() and p.split()[-1] in ("i", "_ind"):
                raise ValueError(f"Can not use {p.split()[-1]!r} as a parameter name")
        if name == "dvecost_any":
            assert operation == "if (x) flag[0] = true"
            return lambda a, flag: flag.__setitem__(0, flag[0] or np.asarray(a).any())
        if name == "dvecost_count":
            assert operation == "atomicAdd(&c[v], 1ULL)"
            return lambda v, c: np.add.at(c, v, np.uint64(1))
        if name == "dvecost_scatter_min":
            assert operation == "atomicMin(&out[k], v)"
            return lambda k, v, out: np.minimum.at(out, k, v)
        assert name.startswith("dvecost_slot_change")

        def run(v, o, s, k):
            d = (np.asarray(v, np.int64) - np.asarray(o).astype(np.int64)).astype(np.uint64)
            np.add(k, d << np.uint64(s), out=k)
        return run

    fake.ElementwiseKernel = kernel
    if kernels:
        fake.RawModule = kernel_emulator.RawModule
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_min = np.minimum.at
    cupyx.scatter_add = np.add.at
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    return fake
