"""The GPU engine (CuPy) against the CPU engine (NumPy): identical answers.

Marked ``gpu``; skipped cleanly where CuPy or a CUDA device is missing. Runs on the device
machine through ``tools/device/run_gpu_suite.sh``.
"""

from __future__ import annotations

import numpy as np
import pytest

import ocm
from ocm import howard as H
from ocm import howard_gpu as HG
from ocm import kernels as K
from ocm import primitives as P
from runtime.device import gpu_available
from ocm.ops import ops

pytestmark = pytest.mark.gpu

if not gpu_available():
    pytest.skip("no CuPy or no CUDA device", allow_module_level=True)

import cupy  # noqa: E402

from ocm_graphs import model_graph, overflow_graph, random_graph, trimmed  # noqa: E402


def on_gpu(*arrays):
    return [None if a is None else cupy.asarray(a) for a in arrays]


def assert_same_result(gpu, cpu, same_cycle=True):
    assert gpu.value == cpu.value
    assert gpu.certified == cpu.certified
    assert gpu.kind == cpu.kind and gpu.mode == cpu.mode
    if same_cycle:
        assert gpu.cycle == cpu.cycle
        assert gpu.cycle_edges == cpu.cycle_edges


def compare(g, kind, mode):
    indptr, indices, cost, time = g
    t = time if kind == "ratio" else None
    try:
        cpu = ocm.optimal_cycle(indptr, indices, cost, t, kind=kind, mode=mode, backend="cpu",
                                per_scc=False)
    except Exception as exc:  # noqa: BLE001 - the GPU must raise the same
        with pytest.raises(type(exc)):
            ocm.optimal_cycle(*on_gpu(indptr, indices, cost, t), kind=kind, mode=mode)
        return
    gpu = ocm.optimal_cycle(*on_gpu(indptr, indices, cost, t), kind=kind, mode=mode)
    assert gpu.backend == "gpu"
    # Same graph (trimmed), same iteration: everything equal, the cycle and iterations too.
    assert_same_result(gpu, cpu)
    assert gpu.iterations == cpu.iterations
    # Against the default CPU engine (per-SCC): the same optimum and certificate.
    cpu_scc = ocm.optimal_cycle(indptr, indices, cost, t, kind=kind, mode=mode, backend="cpu")
    assert_same_result(gpu, cpu_scc, same_cycle=False)
    # The backend argument alone (NumPy inputs) reaches the GPU too.
    gpu2 = ocm.optimal_cycle(indptr, indices, cost, t, kind=kind, mode=mode, backend="gpu")
    assert_same_result(gpu2, gpu)


@pytest.mark.parametrize("kind", ["mean", "ratio"])
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("seed", range(12))
def test_random_graphs(seed, kind, mode):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 3000))
    g = random_graph(rng, n, int(rng.integers(n, 6 * n)), sinks=0.15 * (seed % 3),
                     time=(1, 5) if seed % 2 else (0, 5))
    compare(g, kind, mode)


@pytest.mark.parametrize("kind", ["mean", "ratio"])
@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("seed", range(4))
def test_model_like_graphs(seed, kind, mode):
    rng = np.random.default_rng(100 + seed)
    g = model_graph(rng, 4, 6 + seed, chords=1 + seed % 2)
    compare(g, kind, mode)


def test_many_sccs_and_sinks():
    """Disjoint pieces with different optima, chains into sinks, self-loops."""
    rng = np.random.default_rng(5)
    parts = [random_graph(rng, 50, 120, sinks=0.3) for _ in range(20)]
    indptr, indices, cost, time = [0], [], [], []
    off = 0
    for ip, ix, c, t in parts:
        indptr.extend((ip[1:] + indptr[-1]).tolist())
        indices.extend((ix + off).tolist())
        cost.extend(c.tolist())
        time.extend(t.tolist())
        off += ip.shape[0] - 1
    g = tuple(np.array(a, dtype=np.int64) for a in (indptr, indices, cost, time))
    for kind in ("mean", "ratio"):
        for mode in ("max", "min"):
            compare(g, kind, mode)


def test_no_cycle_and_zero_time_errors_match():
    from ocm.errors import NoCycleError, ZeroTimeCycleError

    indptr, indices, cost = np.array([0, 1, 2, 2]), np.array([1, 2]), np.array([1, 2])
    with pytest.raises(NoCycleError):
        ocm.optimal_cycle(*on_gpu(indptr, indices, cost), kind="mean")
    indptr, indices = np.array([0, 1, 2]), np.array([1, 0])
    with pytest.raises(ZeroTimeCycleError):
        ocm.optimal_cycle(*on_gpu(indptr, indices, np.array([1, 1]), np.array([0, 0])),
                          kind="ratio")


@pytest.mark.parametrize("seed", range(6))
def test_primitive_twins_on_device(seed):
    rng = np.random.default_rng(50 + seed)
    n = int(rng.integers(1, 5000))
    indptr, indices, cost, time = random_graph(rng, n, int(rng.integers(0, 5 * n)), sinks=0.2)
    d = lambda a: cupy.asarray(a)  # noqa: E731
    h = P.to_host
    G = ops(cupy)
    row = P.edge_rows(indptr, np)
    assert np.array_equal(h(G.edge_rows(d(indptr), cupy)), row)
    assert np.array_equal(h(G.segment_sum(d(cost), d(indptr), cupy)),
                          P.segment_sum(cost, indptr, np))
    alive = rng.random(n) < 0.9
    assert np.array_equal(h(G.trim_sinks(d(indptr), d(indices), d(alive), cupy)),
                          P.trim_sinks(indptr, indices, alive, np))
    succ = rng.integers(0, n, size=n)
    assert np.array_equal(h(G.cycle_reps(d(succ), cupy)), P.cycle_reps(succ, np))
    parent = np.minimum(np.arange(n), rng.integers(0, n, size=n))
    ws = [rng.integers(-9, 9, size=n), rng.integers(0, 5, size=n)]
    r1, s1 = G.tree_sums(d(parent), [d(w) for w in ws], cupy)
    r2, s2 = P.tree_sums(parent, ws, np)
    assert np.array_equal(h(r1), r2) and all(np.array_equal(h(a), b) for a, b in zip(s1, s2))


@pytest.mark.parametrize("seed", range(6))
def test_solve_states_identical(seed):
    rng = np.random.default_rng(70 + seed)
    g = random_graph(rng, 20000, 100000, sinks=0.05, time=(1, 5))
    indptr, indices, cost, time = trimmed(g)
    ref = H.solve(indptr, indices, cost, time, xp=np)
    got = HG.howard_solve(*on_gpu(indptr, indices, cost, time), xp=cupy)
    assert got.iterations == ref.iterations
    for name in ("policy", "root", "rank", "rank_num", "rank_den", "potential", "reps"):
        assert np.array_equal(P.to_host(getattr(got, name)), getattr(ref, name)), name


def test_solve_overflow_on_device():
    indptr, indices, cost, time = overflow_graph()
    ref = H.solve(indptr, indices, cost, time, xp=np)
    got = HG.howard_solve(*on_gpu(indptr, indices, cost, time), xp=cupy)
    assert "host" in got.timings
    assert got.iterations == ref.iterations
    assert np.array_equal(P.to_host(got.potential), ref.potential)


def test_iteration_runs_as_cuda_graph():
    rng = np.random.default_rng(9)
    indptr, indices, cost, time = trimmed(random_graph(rng, 1000, 5000))
    HG.howard_solve(*on_gpu(indptr, indices, cost, None), xp=cupy)
    assert K.cupy_launcher().captured


def test_out_of_memory_falls_back_to_cpu(monkeypatch):
    """An out-of-memory error on the device: a warning, and the CPU engine's answer."""
    from runtime.device import DeviceFallbackWarning

    def boom(*args, **kwargs):
        raise cupy.cuda.memory.OutOfMemoryError(1 << 40, 0)

    monkeypatch.setattr(HG, "howard_solve", boom)
    rng = np.random.default_rng(11)
    indptr, indices, cost, time = random_graph(rng, 300, 1500, time=(1, 4))
    cpu = ocm.optimal_cycle(indptr, indices, cost, time, kind="ratio", backend="cpu")
    with pytest.warns(DeviceFallbackWarning, match="out of memory"):
        r = ocm.optimal_cycle(*on_gpu(indptr, indices, cost, time), kind="ratio")
    assert r.value == cpu.value and r.certified and r.backend == "cpu"


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int32])
@pytest.mark.parametrize("kind", ["mean", "ratio"])
@pytest.mark.parametrize("mode", ["max", "min"])
def test_palette_read_in_place_on_device(dtype, kind, mode):
    """The compact graph's form on the device (int32 targets, a palette row per edge): the
    answers of the host engine on the same restriction, every label width, sinks included."""
    for seed in range(8):
        rng = np.random.default_rng(900 + seed)
        n = int(rng.integers(2, 4000))
        indptr, indices, _, _ = random_graph(rng, n, int(rng.integers(n, 6 * n)), sinks=0.1)
        indices = indices.astype(np.int32)
        k = 200 if dtype is np.uint8 else 3000
        label = rng.integers(0, k, size=indices.shape[0]).astype(dtype)
        cv, tv = rng.integers(-50, 51, size=k), rng.integers(1, 5, size=k)
        cost, time = ocm.Palette(label, cv), ocm.Palette(label, tv)
        t = time if kind == "ratio" else None
        try:
            cpu = ocm.optimal_cycle(indptr, indices, cost, t, kind=kind, mode=mode,
                                    backend="cpu", per_scc=False)
        except ocm.errors.NoCycleError:
            continue
        dl = cupy.asarray(label)
        gcost = ocm.Palette(dl, cupy.asarray(cv))
        gt = ocm.Palette(dl, cupy.asarray(tv)) if kind == "ratio" else None
        gpu = ocm.optimal_cycle(cupy.asarray(indptr), cupy.asarray(indices), gcost, gt,
                                kind=kind, mode=mode)
        assert gpu.backend == "gpu"
        assert_same_result(gpu, cpu)
        assert gpu.iterations == cpu.iterations
