"""The engine against Karp and brute-force enumeration on thousands of small random graphs.

The oracle comparisons run on every array module of the ``xp`` fixture: NumPy, and CuPy where a
device is present (the GPU engine, checked against the same oracles)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ocm
from ocm.certify import cycle_sums
from ocm.reference import brute_force_cycle, karp_cycle_mean
from ocm.errors import NoCycleError, ZeroTimeCycleError


@st.composite
def graphs(draw, max_n=7, max_m=14, zero_times=True, cost_range=(-6, 6)):
    """Random CSR graphs: sinks, many SCCs, self-loops, parallel edges, negative costs."""
    n = draw(st.integers(1, max_n))
    m = draw(st.integers(0, max_m))
    u = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    v = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    cost = draw(st.lists(st.integers(*cost_range), min_size=m, max_size=m))
    tmin = 0 if zero_times else 1
    time = draw(st.lists(st.integers(tmin, 4), min_size=m, max_size=m))
    u = np.array(u, dtype=np.int64)
    order = np.argsort(u, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    return (indptr, np.array(v, dtype=np.int64)[order], np.array(cost, dtype=np.int64)[order],
            np.array(time, dtype=np.int64)[order])


def check_against_oracles(g, kind, mode, xp=np):
    indptr, indices, cost, time = g
    on_xp = [xp.asarray(a) for a in g]  # the engine's input; the oracles read the host arrays
    t = time if kind == "ratio" else None
    try:
        oracle = brute_force_cycle(indptr, indices, cost, t, mode)
    except ZeroDivisionError:
        oracle = "zero"
    if oracle is None:
        with pytest.raises(NoCycleError):
            ocm.optimal_cycle(*on_xp, kind=kind, mode=mode)
        return
    if oracle == "zero":
        with pytest.raises(ZeroTimeCycleError) as info:
            ocm.optimal_cycle(*on_xp, kind=kind, mode=mode)
        # The named cycle is a real zero-time cycle of the graph.
        cyc, edges = info.value.cycle, info.value.edges
        assert cycle_sums(indptr, indices, cost, time, list(cyc), list(edges))[1] == 0
        return
    value, _ = oracle
    r = ocm.optimal_cycle(*on_xp, kind=kind, mode=mode)
    assert r.value == value
    assert r.certified
    if kind == "mean":
        assert karp_cycle_mean(indptr, indices, cost, mode) == value
    # The cycle is a cycle of the graph, rotated to its smallest vertex, whose sums give the value.
    c, tt = cycle_sums(indptr, indices, cost, t, list(r.cycle), list(r.cycle_edges))
    assert Fraction(c, tt) == value
    assert r.cycle[0] == min(r.cycle)
    assert len(set(r.cycle)) == len(r.cycle)
    # Per-SCC optima (computed by default on the host only): the best of them is the optimum.
    best = max if mode == "max" else min
    assert r.scc_optima is None or best(s.value for s in r.scc_optima) == value


#: The ``xp`` fixture holds no state between examples, so sharing it across them is sound.
SETTINGS = settings(max_examples=600, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


@pytest.mark.parametrize("kind", ["mean", "ratio"])
@pytest.mark.parametrize("mode", ["max", "min"])
@SETTINGS
@given(g=graphs())
def test_agrees_with_oracles(xp, g, kind, mode):
    check_against_oracles(g, kind, mode, xp)


@pytest.mark.parametrize("kind", ["mean", "ratio"])
@pytest.mark.parametrize("mode", ["max", "min"])
@settings(SETTINGS, max_examples=200)
@given(g=graphs(max_n=9, max_m=22, zero_times=False, cost_range=(-1000, 1000)))
def test_agrees_with_oracles_denser(xp, g, kind, mode):
    check_against_oracles(g, kind, mode, xp)


@settings(max_examples=200, deadline=None)
@given(g=graphs(max_n=12, max_m=40, zero_times=False))
def test_per_scc_optima_match_restricted_oracle(g):
    """Every nontrivial SCC's optimum equals brute force on that SCC alone."""
    indptr, indices, cost, time = g
    try:
        r = ocm.max_cycle_ratio(indptr, indices, cost, time)
    except NoCycleError:
        return
    from ocm.scc import strong_components
    _, label = strong_components(indptr, indices)
    row = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    for s in r.scc_optima:
        keep = (label[row] == label[s.first]) & (label[indices] == label[s.first])
        sub_indptr = np.concatenate([[0], np.cumsum(np.bincount(row[keep],
                                                                minlength=len(indptr) - 1))])
        value, _ = brute_force_cycle(sub_indptr, indices[keep], cost[keep], time[keep])
        assert s.value == value
        assert s.size == int((label == label[s.first]).sum())


@settings(max_examples=300, deadline=None)
@given(g=graphs(max_n=10, max_m=30))
def test_deterministic(g):
    indptr, indices, cost, time = g
    time = time + 1
    try:
        a = ocm.optimal_cycle(indptr, indices, cost, time, kind="ratio")
    except NoCycleError:
        return
    b = ocm.optimal_cycle(indptr.copy(), indices.copy(), cost.copy(), time.copy(), kind="ratio")
    assert (a.value, a.cycle, a.cycle_edges, a.iterations) == \
        (b.value, b.cycle, b.cycle_edges, b.iterations)
