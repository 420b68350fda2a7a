"""The CUDA kernels of ``ocm.kernels``, run on the CPU, against the NumPy primitives and engine.

No GPU needed: ``gpu_emulator`` compiles the kernels' CUDA source as C++ behind a prelude that
defines the CUDA built-ins (skipped where no C++ compiler is found). Since the kernels read
only buffers their launch does not write, the sequential run computes what the GPU computes;
``test_gpu.py`` runs the same comparisons on a real device.
"""

from __future__ import annotations

import numpy as np
import pytest

from ocm import howard as H
from ocm import howard_gpu as HG
from ocm import kernels as K
from ocm import primitives as P
from ocm import scc

import gpu_emulator
from ocm_graphs import model_graph, overflow_graph, random_graph, trimmed


@pytest.fixture(scope="module")
def emu():
    if gpu_emulator.compiler() is None:
        pytest.skip("no C++ compiler to emulate the kernels")
    return gpu_emulator.emulator()


# ---- primitives ---------------------------------------------------------------------------

@pytest.mark.parametrize("seed", range(20))
def test_primitives_match(emu, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    g = random_graph(rng, n, int(rng.integers(0, 4 * n)), sinks=0.2)
    indptr, indices, cost, time = g
    row = P.edge_rows(indptr, np)
    assert np.array_equal(K.edge_rows(indptr, np, launcher=emu), row)
    assert np.array_equal(K.segment_sum(cost, indptr, np, launcher=emu),
                          P.segment_sum(cost, indptr, np))
    alive = rng.random(n) < 0.9
    assert np.array_equal(K.trim_sinks(indptr, indices, alive, np, launcher=emu),
                          P.trim_sinks(indptr, indices, alive, np))
    succ = rng.integers(0, n, size=n)
    assert np.array_equal(K.cycle_reps(succ, np, launcher=emu), P.cycle_reps(succ, np))
    # A forest: parent pointers towards smaller ids, roots where parent == self.
    parent = np.array([int(rng.integers(0, v + 1)) for v in range(n)])
    ws = [rng.integers(-9, 9, size=n), rng.integers(0, 5, size=n)]
    r1, s1 = K.tree_sums(parent, ws, np, launcher=emu)
    r2, s2 = P.tree_sums(parent, ws, np)
    assert np.array_equal(r1, r2) and all(np.array_equal(a, b) for a, b in zip(s1, s2))
    ti, tx, tc, tt = trimmed(g)
    if ti.shape[0] <= 1:
        return
    trow = P.edge_rows(ti, np)
    key = rng.integers(0, 3, size=tx.shape[0])
    for k in (key, key.astype(np.float64)):
        b1, e1 = K.segment_argmax(k, ti, trow, np, launcher=emu)
        b2, e2 = P.segment_argmax(k, ti, trow, np)
        assert np.array_equal(b1, b2) and np.array_equal(e1, e2)
    k2 = ti.shape[0] - 1
    rank = rng.integers(0, 3, size=k2)
    pot = rng.integers(-20, 20, size=k2)
    rnum, rden = np.array([-3, 1, 5]), np.array([2, 1, 3])
    for t in (tt, None):
        out1 = K.best_edges(ti, tx, tc, t, trow, rank, pot, rnum, rden, np, launcher=emu)
        out2 = P.best_edges(ti, tx, tc, t, trow, rank, pot, rnum, rden, np)
        for a, b in zip(out1, out2):
            assert np.array_equal(a, b)


# ---- the whole iteration -----------------------------------------------------------------

def assert_same_state(a, b):
    assert a.iterations == b.iterations
    for name in ("policy", "succ", "root", "rank", "rank_num", "rank_den", "potential", "reps",
                 "rep_cost", "rep_time"):
        x, y = P.to_host(getattr(a, name)), P.to_host(getattr(b, name))
        assert np.array_equal(x, y), name


def compare_solve(emu, g, kind, mode):
    indptr, indices, cost, time = trimmed(g)
    if indptr.shape[0] <= 1:
        return
    c = -cost if mode == "min" else cost
    t = time if kind == "ratio" else None
    if t is not None:
        zero = scc.find_zero_time_cycle(indptr, indices, t)
        if zero is not None:
            return
    ref = H.solve(indptr, indices, c, t, xp=np)
    got = HG.howard_solve(indptr, indices, c, t, xp=np, launcher=emu)
    assert_same_state(got, ref)
    # Small numbers, no zero-time cycle: the device loop ran to the end (no host fall-back,
    # which would hide a wrong device iteration behind the host's exact answer).
    assert "host" not in got.timings


@pytest.mark.parametrize("kind", ["mean", "ratio"])
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("seed", range(40))
def test_solve_random(emu, seed, kind, mode):
    rng = np.random.default_rng(1000 + seed)
    n = int(rng.integers(1, 300))
    g = random_graph(rng, n, int(rng.integers(n // 2, 5 * n + 1)), sinks=0.1 * (seed % 3),
                     time=(1, 4) if seed % 2 else (0, 4))
    compare_solve(emu, g, kind, mode)


@pytest.mark.parametrize("kind", ["mean", "ratio"])
@pytest.mark.parametrize("seed", range(6))
def test_solve_model_like(emu, seed, kind):
    rng = np.random.default_rng(2000 + seed)
    g = model_graph(rng, 3 + seed % 2, 5 + seed % 3)
    compare_solve(emu, g, kind, "max")


def test_solve_ties_everywhere(emu):
    """All costs equal: every edge ties, so only the lowest-id rule decides."""
    rng = np.random.default_rng(7)
    indptr, indices, cost, time = random_graph(rng, 200, 1000)
    compare_solve(emu, (indptr, indices, np.zeros_like(cost), np.ones_like(time)), "mean",
                  "max")


@pytest.mark.parametrize("n", [1, 2, 3, 64, 65, 257, 1024])
def test_solve_long_cycles_and_tails(emu, n):
    """A ring through all n vertices (the longest cycle: cycle detection needs all its rounds)
    plus a path of n vertices into it and chords that tempt the policy away and back."""
    rng = np.random.default_rng(n)
    ring = (np.arange(n) + 1) % n
    tail = np.arange(n, 2 * n) + 1
    tail[-1] = 0
    u = np.concatenate([np.arange(n), np.arange(n, 2 * n), rng.integers(0, 2 * n, size=n)])
    v = np.concatenate([ring, tail, rng.integers(0, 2 * n, size=n)])
    c = np.concatenate([np.full(n, 5), rng.integers(0, 9, size=n), rng.integers(-9, 4, size=n)])
    order = np.argsort(u, kind="stable")
    indptr = np.zeros(2 * n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=2 * n), out=indptr[1:])
    t = rng.integers(1, 4, size=u.size)
    g = (indptr, v[order].astype(np.int64), c[order].astype(np.int64), t[order])
    for kind in ("mean", "ratio"):
        compare_solve(emu, g, kind, "max")


def test_start_policy_undoes_up_to_two_iterations():
    """The undo log of the improvement: iteration 3 ran ahead of iteration 2, which failed."""
    n = 6
    B = HG._Buffers(np, n, K.doubling_rounds(n), False)
    start = np.array([10, 11, 12, 13, 14, 15])
    after2 = np.array([20, 11, 22, 13, 14, 15])  # iteration 2 switched vertices 0 and 2
    after3 = np.array([30, 11, 22, 33, 14, 15])  # iteration 3 switched vertices 0 and 3
    B.stamp[:] = -1
    B.stamp[[2, 4]] = 0  # slot 0 (iteration 2): stale entries of older iterations...
    B.stamp[[0, 2]] = 2  # ... overwritten by iteration 2's switches
    B.old[[0, 2]] = [10, 12]
    B.stamp[[n + 0, n + 3, n + 5]] = [3, 3, 1]  # slot 1: iteration 3 (and a stale 1)
    B.old[[n + 0, n + 3]] = [20, 13]
    B.iter[0] = 3
    assert np.array_equal(B.start_policy(after3, 3), after2)
    assert np.array_equal(B.start_policy(after3, 2), start)


def test_solve_overflow_hands_over_to_python_ints(emu):
    """The device bound fails: the host finishes exactly, in Python ints, as NumPy does."""
    indptr, indices, cost, time = overflow_graph()
    ref = H.solve(indptr, indices, cost, time, xp=np)
    got = HG.howard_solve(indptr, indices, cost, time, xp=np, launcher=emu)
    assert ref.potential.dtype == object and "host" in got.timings
    assert_same_state(got, ref)


def test_solve_zero_time_cycle_raises_like_numpy(emu):
    from ocm.errors import ZeroTimeCycleError

    indptr, indices = np.array([0, 1, 2, 3]), np.array([1, 0, 0])
    cost, time = np.array([1, 2, 3]), np.array([0, 0, 1])
    with pytest.raises(ZeroTimeCycleError) as a:
        H.solve(indptr, indices, cost, time, xp=np)
    with pytest.raises(ZeroTimeCycleError) as b:
        HG.howard_solve(indptr, indices, cost, time, xp=np, launcher=emu)
    assert str(a.value) == str(b.value) and a.value.cycle == b.value.cycle


@pytest.mark.parametrize("seed", range(4))
def test_solve_wide_tree_records(emu, seed):
    """Times near 2**24 on 200 vertices: path time sums may pass 2**31 (32-byte records)."""
    rng = np.random.default_rng(3000 + seed)
    g = random_graph(rng, 200, 900, time=(1, 2 ** 24))
    compare_solve(emu, g, "ratio", "max" if seed % 2 else "min")
