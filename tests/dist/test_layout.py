"""The layout of runs (``runtime.layout.Layout``) against the obvious tables: every id listed
with its owner and place, every edge likewise, built by walking each process's runs in its
local order (no search, no cumulative sums shared with the layout)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from runtime.comm import SelfComm
from runtime.layout import Layout

from cycle_cases import random_runs


def _walk(runs, deg):
    """Per global id ``(owner, local)``, per global edge ``(owner, local)``, by walking."""
    vert, edge = {}, {}
    eid = np.concatenate([[0], np.cumsum(deg)]).astype(int)
    for q, rs in enumerate(runs):
        lv = le = 0
        for a, k in rs:
            for v in range(a, a + k):
                vert[v] = (q, lv)
                lv += 1
                for e in range(eid[v], eid[v + 1]):
                    edge[e] = (q, le)
                    le += 1
    return vert, edge


@st.composite
def layouts(draw):
    n = draw(st.integers(0, 30))
    size = draw(st.integers(1, 4))
    deg = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), np.int64)
    runs = random_runs(n, size, draw(st.integers(0, 2**16)))
    return n, size, deg, runs


def _layout(rank, runs, deg):
    ptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    return Layout.of_runs(rank, [([a for a, _ in r], [k for _, k in r],
                                  [int(ptr[a + k] - ptr[a]) for a, k in r]) for r in runs])


@settings(max_examples=150, deadline=None)
@given(layouts())
def test_property_lookups_are_the_walked_tables(case):
    n, size, deg, runs = case
    vert, edge = _walk(runs, deg)
    ids = np.arange(n, dtype=np.int64)
    for rank in range(size):
        L = _layout(rank, runs, deg)
        assert (L.n, L.m) == (n, int(deg.sum()))
        owner, local = L.locate(ids)
        assert list(zip(owner.tolist(), local.tolist())) == [vert[v] for v in range(n)]
        mine = sorted((loc, v) for v, (q, loc) in vert.items() if q == rank)
        assert L.global_ids().tolist() == [v for _, v in mine] and L.n_local == len(mine)
        mine_e = sorted((loc, e) for e, (q, loc) in edge.items() if q == rank)
        assert L.m_local == len(mine_e)
        got = L.global_edges(np.array([loc for loc, _ in mine_e], np.int64)).tolist()
        assert got == [e for _, e in mine_e]
        eo, el = L.locate_edges(np.arange(L.m, dtype=np.int64))
        assert list(zip(eo.tolist(), el.tolist())) == [edge[e] for e in range(L.m)]
        back = L.to_global(local[owner == rank]).tolist()
        assert back == ids[owner.astype(np.int64) == rank].tolist()


@settings(max_examples=150, deadline=None)
@given(layouts(), st.data())
def test_property_restriction_numbers_kept_vertices_in_id_order(case, data):
    """A kept vertex's new id is the number of kept vertices of lower id; it stays with its
    process, in that process's local order; kept edges likewise."""
    n, size, deg, runs = case
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)), bool)
    kdeg = np.array([data.draw(st.integers(0, int(d))) for d in deg], np.int64) * keep
    new_id = np.cumsum(keep) - 1
    kept_runs = []
    for r in runs:   # each run's kept vertices, as runs of the new ids (maybe several)
        out = []
        for a, k in r:
            vs = [v for v in range(a, a + k) if keep[v]]
            if vs:
                out.append((int(new_id[vs[0]]), len(vs)))
        kept_runs.append(out)
    want_vert, want_edge = _walk(kept_runs, kdeg[keep])
    for rank in range(size):
        L = _layout(rank, runs, deg)
        mine = L.global_ids()
        # Per run of this process (local order): kept vertices and edges.
        kv, ke, at = [], [], 0
        for j in L.mine:
            seg = mine[at:at + int(L.length[j])]
            at += int(L.length[j])
            kv.append(int(keep[seg].sum()))
            ke.append(int(kdeg[seg].sum()))
        R = L.restrict(SelfComm() if size == 1 else _Gather(rank, runs, deg, keep, kdeg),
                       kv, ke)
        k = int(keep.sum())
        owner, local = R.locate(np.arange(k, dtype=np.int64))
        assert list(zip(owner.tolist(), local.tolist())) == [want_vert[v] for v in range(k)]
        mine_e = sorted((loc, e) for e, (q, loc) in want_edge.items() if q == rank)
        got = R.global_edges(np.array([loc for loc, _ in mine_e], np.int64)).tolist()
        assert got == [e for _, e in mine_e] and R.m == int(kdeg.sum())


class _Gather:
    """The ``allgather`` of :meth:`Layout.restrict` as every process would call it: each
    process's kept counts per run, computed here for all of them."""

    def __init__(self, rank, runs, deg, keep, kdeg) -> None:
        self.rank, self.parts = rank, []
        for q in range(len(runs)):
            L = _layout(q, runs, deg)
            mine, kv, ke, at = L.global_ids(), [], [], 0
            for j in L.mine:
                seg = mine[at:at + int(L.length[j])]
                at += int(L.length[j])
                kv.append(int(keep[seg].sum()))
                ke.append(int(kdeg[seg].sum()))
            self.parts.append((np.array(kv, np.int64), np.array(ke, np.int64)))

    def allgather(self, value):
        assert all(np.array_equal(a, b) for a, b in zip(value, self.parts[self.rank]))
        return self.parts


def test_runs_that_overlap_or_leave_gaps_are_refused():
    import pytest
    with pytest.raises(ValueError, match="cover"):
        Layout.of_runs(0, [([0, 2], [3, 2], [0, 0])])
    with pytest.raises(ValueError, match="cover"):
        Layout.of_runs(0, [([0], [2], [0]), ([3], [1], [0])])


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 300_000), st.lists(st.integers(0, 300_000), max_size=40),
       st.integers(1, 4), st.integers(0, 2**16))
def test_property_host_bucket_table_finds_the_searched_run(n, cuts, size, seed):
    """The host's run lookup (a table per bucket of ids, then steps on) against a binary
    search of the runs' first ids, at every run's first and last id and at random ids, for
    layouts whose buckets hold several runs' starts (short runs among long ones)."""
    cuts = sorted({c for c in cuts if 0 < c < n} | {1, 2, 3} & set(range(1, n)))
    bounds = [0] + cuts + [n]
    rng = np.random.default_rng(seed)
    runs: list = [[] for _ in range(size)]
    for a, b in zip(bounds[:-1], bounds[1:]):
        runs[int(rng.integers(0, size))].append((a, b - a))
    L = _layout(0, runs, np.zeros(n, np.int64))
    ids = np.concatenate([np.array(bounds[:-1]), np.array(bounds[1:]) - 1,
                          rng.integers(0, n, size=500)]).astype(np.int64)
    want = np.searchsorted(L.start[:-1], ids, side="right") - 1
    assert L.run_of(ids).tolist() == want.tolist()
    assert L.shift > 0 or n < 128 * L.owner.shape[0]
