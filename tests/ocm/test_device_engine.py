"""The device engine (``ocm.on_device``) end to end, its kernels run on the CPU.

``optimal_cycle`` is called with an array module that is not NumPy (so the device path runs:
trimming, restriction, Howard's device loop, the certificate and the cycle walk as kernels)
while the kernels are the CUDA source compiled for the host (``gpu_emulator``). Its answers
must be those of the NumPy engine on the same restriction (``per_scc=False``): the same
value, critical cycle, certificate and iterations, for palettes of every label width and for
per-edge arrays; the value also that of the reference solver. And it must read the compact
graph as it is: no array of 8 bytes per edge is allocated (measured with tracemalloc, which
sees NumPy's allocations).
"""

from __future__ import annotations

import tracemalloc
import types
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import ocm
from ocm import Palette
from ocm import kernels as K
from ocm import on_device
from ocm import reference
from ocm.errors import NoCycleError, ZeroTimeCycleError

import gpu_emulator
from ocm_graphs import random_graph


@pytest.fixture(scope="module")
def emu():
    if gpu_emulator.compiler() is None:
        pytest.skip("no C++ compiler to emulate the kernels")
    return gpu_emulator.emulator()


@pytest.fixture
def dev(emu, monkeypatch):
    """An array module that is not NumPy but computes with it; its kernels: the emulator."""
    fake = types.ModuleType("fake_cupy")
    for k in dir(np):
        if not k.startswith("__"):
            setattr(fake, k, getattr(np, k))
    monkeypatch.setattr(K, "launcher_for", lambda xp: emu)
    return fake


def _palette(rng, m, k, dtype, cost=(-20, 20), time=(0, 4)):
    label = rng.integers(0, k, size=m).astype(dtype)
    return label, rng.integers(cost[0], cost[1] + 1, size=k), rng.integers(time[0], time[1] + 1,
                                                                           size=k)


def _answer(r):
    return (r.value, r.cycle, r.cycle_edges, r.certified, r.iterations)


def _both(dev, indptr, indices, cost, time, kind, mode):
    """(device result or its exception type, host result or its exception type)."""
    out = []
    for xp in (dev, np):
        try:
            out.append(ocm.optimal_cycle(indptr, indices, cost, time, kind=kind, mode=mode,
                                         xp=xp, per_scc=False))
        except (NoCycleError, ZeroTimeCycleError) as exc:
            out.append(type(exc))
    return out


# The fixture only patches a module attribute and builds a module: sharing it across inputs
# is what is wanted.
SHARED = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@settings(max_examples=50, **SHARED)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 60), k=st.integers(1, 300),
       dtype=st.sampled_from([np.uint8, np.uint16, np.int32, np.int64, None]),
       kind=st.sampled_from(["mean", "ratio"]), mode=st.sampled_from(["max", "min"]),
       sinks=st.sampled_from([0.0, 0.2]))
def test_device_engine_equals_host_engine(dev, seed, n, k, dtype, kind, mode, sinks):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(n, 5 * n + 1))
    indptr, indices, _, _ = random_graph(rng, n, m, sinks=sinks)
    indices = indices.astype(np.int32)
    ldt = np.uint8 if dtype is None else dtype
    k = min(k, np.iinfo(ldt).max + 1)
    label, cv, tv = _palette(rng, m, k, ldt, time=(0, 4) if seed % 3 else (1, 4))
    if dtype is None:   # per-edge arrays
        cost, time = cv[label], tv[label]
    else:
        cost, time = Palette(label, cv), Palette(label, tv)
    time = time if kind == "ratio" else None
    d, h = _both(dev, indptr, indices, cost, time, kind, mode)
    if isinstance(h, type):
        assert d is h
        return
    assert d.backend == "gpu" and h.backend == "cpu"
    assert _answer(d) == _answer(h)
    assert d.certified
    if kind == "mean":   # and Karp's characterisation agrees (per-edge values)
        assert d.value == reference.karp_cycle_mean(indptr, indices, cv[label], mode)


@settings(max_examples=40, **SHARED)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 7), k=st.integers(1, 5),
       kind=st.sampled_from(["mean", "ratio"]), mode=st.sampled_from(["max", "min"]))
def test_device_engine_equals_enumeration(dev, seed, n, k, kind, mode):
    """Small graphs: the value is the best over all simple cycles (enumerated), and the
    critical cycle's own sums give it."""
    rng = np.random.default_rng(seed)
    indptr, indices, _, _ = random_graph(rng, n, int(rng.integers(n, 2 * n + 1)), sinks=0.2)
    indices = indices.astype(np.int32)
    label, cv, tv = _palette(rng, indices.shape[0], k, np.uint8, time=(1, 3))
    time = Palette(label, tv) if kind == "ratio" else None
    ref = reference.brute_force_cycle(indptr, indices, cv[label],
                                      None if time is None else tv[label], mode)
    try:
        d = ocm.optimal_cycle(indptr, indices, Palette(label, cv), time, kind=kind, mode=mode,
                              xp=dev)
    except NoCycleError:
        assert ref is None
        return
    assert d.value == ref[0] and d.certified
    e = list(d.cycle_edges)
    t = len(e) if time is None else int(tv[label[e]].sum())
    assert d.value == Fraction(int(cv[label[e]].sum()), t)


def test_zero_time_cycle_and_no_cycle_as_on_the_host(dev):
    indptr = np.array([0, 1, 2, 3]); indices = np.array([1, 2, 1], np.int32)
    label = np.array([0, 0, 1], np.uint8)
    cost, time = Palette(label, np.array([3, 4])), Palette(label, np.array([0, 2]))
    assert ocm.optimal_cycle(indptr, indices, cost, time, kind="ratio", xp=dev).value == Fraction(7, 2)
    time0 = Palette(label, np.array([0, 0]))
    with pytest.raises(ZeroTimeCycleError) as d:
        ocm.optimal_cycle(indptr, indices, cost, time0, kind="ratio", xp=dev)
    with pytest.raises(ZeroTimeCycleError) as h:
        ocm.optimal_cycle(indptr, indices, cost, time0, kind="ratio", xp=np)
    assert (d.value.cycle, d.value.edges) == (h.value.cycle, h.value.edges) == ((1, 2), (1, 2))
    with pytest.raises(NoCycleError):
        ocm.optimal_cycle(np.array([0, 1, 1]), np.array([1], np.int32),
                          Palette(np.array([0], np.uint8), np.array([1])), xp=dev)


def test_unused_rows_do_not_count_on_the_device(dev):
    """A row no edge uses holds a value so large that the path-sum bound would refuse it:
    zeroed first, as on the host."""
    indptr = np.array([0, 1, 2]); indices = np.array([1, 0], np.int32)
    cost = Palette(np.array([0, 0], np.uint8), np.array([5, 2**62]))
    assert ocm.max_cycle_mean(indptr, indices, cost, xp=dev).value == 5


def test_overflowing_biases_go_to_python_ints_with_the_same_answer(dev):
    """Costs near the bound: the device loop hands over to the host's exact engine."""
    rng = np.random.default_rng(5)
    indptr, indices, _, _ = random_graph(rng, 40, 160)
    indices = indices.astype(np.int32)
    label = rng.integers(0, 4, size=160).astype(np.uint8)
    big = 2**62 // 50
    cost = Palette(label, np.array([big, -big, big // 3, 7]))
    d, h = _both(dev, indptr, indices, cost, None, "mean", "max")
    assert _answer(d) == _answer(h) and d.certified


def _peak_extra(fn) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("sinks", [0.0, 0.3])
def test_no_array_of_eight_bytes_per_edge(dev, sinks):
    """The engine's own allocations, the graph excluded, stay within its estimate
    (ocm.on_device.device_bytes) plus a little: 40 times fewer vertices than edges, so an
    int64 copy of the edges (8 bytes each) would be far above."""
    rng = np.random.default_rng(11)
    n, m = 2000, 80000
    indptr, indices, _, _ = random_graph(rng, n, m, sinks=sinks)
    indices = indices.astype(np.int32)
    m = indices.shape[0]
    label, cv, tv = _palette(rng, m, 200, np.uint8, time=(1, 4))
    cost, time = Palette(label, cv), Palette(label, tv)
    result = []
    peak = _peak_extra(lambda: result.append(
        ocm.optimal_cycle(indptr, indices, cost, time, kind="ratio", xp=dev)))
    assert result[0].certified
    # Fixed costs of a call (the emulator, Python objects): 64 KiB.
    budget = on_device.device_bytes(n, m, 1, restricted=sinks > 0) + 64 * 1024
    assert peak <= budget, (peak, budget)
    # Below one int64 per edge; without restriction, below half of one.
    assert peak < (4 if sinks == 0 else 8) * m
