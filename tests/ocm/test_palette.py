"""Costs and times given as a Palette (a table and one row per edge, as a compact state graph
holds them) give exactly what the same values given per edge give: value, critical cycle,
certificate, per-SCC optima, and the same errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ocm
from ocm import Palette
from ocm.errors import InputError, ZeroTimeCycleError
from ocm_graphs import random_graph


def _palette_of(rng, m, k, lo, hi, tlo=0, thi=4):
    """A table of ``k`` (cost, time) rows and one row per edge; rows may go unused."""
    label = rng.integers(0, k, size=m).astype(np.uint8 if k <= 256 else np.int32)
    return label, rng.integers(lo, hi + 1, size=k), rng.integers(tlo, thi + 1, size=k)


def _same(a, b):
    assert (a.value, a.cycle, a.cycle_edges, a.certified) == \
        (b.value, b.cycle, b.cycle_edges, b.certified)
    assert a.scc_optima == b.scc_optima


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), k=st.integers(1, 6),
       kind=st.sampled_from(["mean", "ratio"]), mode=st.sampled_from(["max", "min"]))
def test_palette_equals_per_edge_values(seed, n, k, kind, mode):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(n, 4 * n + 1))
    indptr, indices, _, _ = random_graph(rng, n, m, sinks=0.1)
    label, cv, tv = _palette_of(rng, m, k, -20, 20, 1, 4)
    dense = dict(cost=cv[label], time=tv[label] if kind == "ratio" else None)
    pal = dict(cost=Palette(label, cv), time=Palette(label, tv) if kind == "ratio" else None)
    try:
        ref = ocm.optimal_cycle(indptr, indices, kind=kind, mode=mode, backend="cpu", **dense)
    except ocm.NoCycleError:
        with pytest.raises(ocm.NoCycleError):
            ocm.optimal_cycle(indptr, indices, kind=kind, mode=mode, backend="cpu", **pal)
        return
    _same(ocm.optimal_cycle(indptr, indices, kind=kind, mode=mode, backend="cpu", **pal), ref)


def test_unused_rows_do_not_count():
    # A row no edge uses may hold any value: it neither enters the answer nor the engine's
    # bounds (a cost of 2**62 on a used row is refused, on an unused row ignored).
    indptr, indices = np.array([0, 1, 2]), np.array([1, 0])
    label = np.array([0, 1], np.uint8)
    r = ocm.max_cycle_mean(indptr, indices, Palette(label, np.array([3, 5, 2**62])))
    assert (r.value, r.certified) == (4, True)
    with pytest.raises(InputError, match="2\\*\\*62"):
        ocm.max_cycle_mean(indptr, indices, Palette(label, np.array([3, 2**62, 0])))


def test_bad_palettes_are_refused():
    indptr, indices = np.array([0, 1, 2]), np.array([1, 0])
    with pytest.raises(InputError, match="rows of 'cost' must lie in 0..1"):
        ocm.max_cycle_mean(indptr, indices, Palette(np.array([0, 2], np.uint8),
                                                    np.array([1, 2])))
    with pytest.raises(InputError, match="integer"):
        ocm.max_cycle_mean(indptr, indices, Palette(np.array([0.0, 1.0]), np.array([1, 2])))
    with pytest.raises(InputError, match="edge 1 has time -1"):
        ocm.max_cycle_ratio(indptr, indices, Palette(np.array([0, 1], np.uint8),
                                                     np.array([1, 2])),
                            Palette(np.array([0, 1], np.uint8), np.array([1, -1])))


def test_zero_time_cycle_is_named_as_with_dense_times():
    indptr, indices = np.array([0, 1, 2, 3]), np.array([1, 2, 1])
    label = np.array([1, 0, 0], np.uint8)
    args = (indptr, indices, Palette(label, np.array([1, 2])))
    with pytest.raises(ZeroTimeCycleError) as got:
        ocm.max_cycle_ratio(*args, Palette(label, np.array([0, 3])))
    with pytest.raises(ZeroTimeCycleError) as ref:
        ocm.max_cycle_ratio(indptr, indices, np.array([2, 1, 1]), np.array([3, 0, 0]))
    assert (got.value.cycle, got.value.edges) == (ref.value.cycle, ref.value.edges)


def test_certificate_in_blocks(monkeypatch):
    # The host's certificate checks a block of edges at a time: tiny blocks, same verdict.
    import ocm.certify as C
    rng = np.random.default_rng(7)
    indptr, indices, cost, tim = random_graph(rng, 30, 120, time=(1, 4))
    ref = ocm.max_cycle_ratio(indptr, indices, cost, tim, backend="cpu")
    monkeypatch.setattr(C, "CERTIFY_BLOCK", 7)
    got = ocm.max_cycle_ratio(indptr, indices, cost, tim, backend="cpu")
    _same(got, ref)
    # A wrong potential: as many violations counted block by block as all at once.
    n = indptr.shape[0] - 1
    args = (indptr, indices, cost, tim, np.zeros(n, np.int64), np.array([1]), np.array([1]),
            np.zeros(n, np.int64), np)
    blocked = C.check_potentials(*args)
    monkeypatch.setattr(C, "CERTIFY_BLOCK", 1 << 20)
    whole = C.check_potentials(*args)
    assert not whole.ok and blocked.n_violations == whole.n_violations > 0
