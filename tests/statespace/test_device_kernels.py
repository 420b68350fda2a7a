"""The small fused kernels of ``runtime.arrays`` (``any_true``, ``count_values``,
``scatter_min``) against
plain Python loops: on NumPy, on the stand-in device module (their specifications), and on a
real device (marked ``gpu``), where they must also leave ``cupyx`` unloaded (its import pulls
in SciPy's sparse matrices, 0.24-0.3 s; CuPy's first elementwise call loads it anyway, see
``runtime.warmup._first_uses``, but these kernels add no other way in)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from device_stand_in import stand_in

from runtime.arrays import any_true, count_values, scatter_min

CASES = [np.zeros(0, bool), np.zeros(5, bool), np.array([0, 0, 1, 0], bool),
         np.array([False] * 99 + [True]), np.arange(-3, 0, dtype=np.int64),
         np.zeros(7, np.int32)]


def _scatter_min_oracle(out, idx, vals):
    out = [int(x) for x in out]
    for i, v in zip(idx.tolist(), vals.tolist()):
        out[i] = min(out[i], v)
    return out


def _scatter_cases():
    rng = np.random.default_rng(7)
    for n, m, dt in ((5, 40, np.int64), (1, 9, np.int64), (300, 2000, np.int32),
                     (8, 0, np.int64), (50, 50, np.uint64)):
        out = rng.integers(0, 1 << 30, n).astype(dt)
        idx = rng.integers(0, n, m)
        vals = rng.integers(0, 1 << 31, m).astype(dt)
        yield out, idx, vals


@pytest.mark.parametrize("xp_name", ["numpy", "stand-in"])
def test_any_true_and_scatter_min(xp_name, monkeypatch):
    xp = np if xp_name == "numpy" else stand_in(monkeypatch)
    for a in CASES:
        assert any_true(xp, a) is (any(x != 0 for x in a.tolist()))
    for out, idx, vals in _scatter_cases():
        want = _scatter_min_oracle(out, idx, vals)
        scatter_min(xp, out, idx, vals)
        assert out.tolist() == want
        n = out.shape[0]
        got = count_values(xp, idx, n + 2)
        assert got.dtype == np.int64
        assert got.tolist() == [idx.tolist().count(v) for v in range(n + 2)]


def test_scatter_min_on_a_device_runs_its_kernel(monkeypatch):
    """The stand-in builds kernels as CuPy does (a parameter named as CuPy's loop variable is
    refused): the atomic kernel itself must run, not the generic fallback it guards."""
    import runtime.arrays as D
    xp = stand_in(monkeypatch)

    def no_fallback(*args):
        raise AssertionError("scatter_min fell back from its kernel")
    monkeypatch.setattr(D, "_scatter", no_fallback)
    for out, idx, vals in _scatter_cases():
        want = _scatter_min_oracle(out, idx, vals)
        scatter_min(xp, out, idx, vals.astype(out.dtype))
        assert out.tolist() == want
    with pytest.raises(ValueError, match="parameter name"):
        xp.ElementwiseKernel("I i, T v", "raw T out", "out[i] = v", "dvecost_x")


@pytest.mark.gpu
def test_device_kernels_on_cupy_without_cupyx():
    from runtime.device import gpu_available
    if not gpu_available():
        pytest.skip("no CuPy or no CUDA device")
    code = """
import sys, numpy as np, cupy as cp
from runtime.arrays import any_true, count_values, scatter_min
rng = np.random.default_rng(3)
for a in ([], [0, 0, 0], [0, 1], [False] * 10**6 + [True]):
    a = np.array(a, bool)
    assert any_true(cp, cp.asarray(a)) is bool(a.any()), a.shape
    assert any_true(cp, cp.asarray(a)[::2]) is bool(a[::2].any())
for dt in (np.int64, np.int32, np.uint64):
    out = rng.integers(0, 1 << 30, 1000).astype(dt)
    idx = rng.integers(0, 1000, 100000)
    vals = rng.integers(0, 1 << 31, 100000).astype(dt)
    d = cp.asarray(out)
    scatter_min(cp, d, cp.asarray(idx), cp.asarray(vals))
    np.minimum.at(out, idx, vals)
    assert np.array_equal(d.get(), out), dt
    c = count_values(cp, cp.asarray(idx), 1003)
    assert c.dtype == np.int64 and np.array_equal(c.get(), np.bincount(idx, minlength=1003))
# CuPy puts a lazy placeholder for cupyx in sys.modules; only its submodules show it ran.
print(any(m.startswith(("cupyx.", "scipy.sparse")) for m in sys.modules))
"""
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False"]
