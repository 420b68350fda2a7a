"""The host engine's passes over the edges go a block of rows at a time (no array per edge):
whatever the block size, the answers are those of one block, and each blocked step equals
a plain per-edge oracle written here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import ocm
from ocm import Palette
from ocm import certify as C
from ocm import primitives as P
from ocm import scc as S
from ocm.errors import NoCycleError
from ocm_graphs import random_graph


@settings(max_examples=60, deadline=None)
@given(degs=st.lists(st.integers(0, 9), min_size=1, max_size=40), size=st.integers(1, 12))
def test_row_blocks_cover_the_rows_in_order(degs, size):
    indptr = np.concatenate([[0], np.cumsum(degs)]).astype(np.int64)
    blocks = P.row_blocks(indptr, size)
    assert blocks[0][0] == 0 and blocks[-1][1] == len(degs)
    assert all(a[1] == b[0] for a, b in zip(blocks, blocks[1:]))
    for r0, r1 in blocks:
        assert r1 > r0
        # At most ``size`` edges, unless the block is one row.
        assert r1 - r0 == 1 or indptr[r1] - indptr[r0] <= size


@settings(max_examples=60, deadline=None)
@given(degs=st.lists(st.integers(1, 9), min_size=1, max_size=30), seed=st.integers(0, 99),
       size=st.integers(1, 12))
def test_packed_argmax_is_the_lowest_edge_of_the_largest_key(degs, seed, size):
    indptr = np.concatenate([[0], np.cumsum(degs)]).astype(np.int64)
    key = np.random.default_rng(seed).integers(0, 4, size=int(indptr[-1]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(P, "_BLOCK", size)
        got = P.packed_argmax(indptr, lambda lo, hi: key[lo:hi])
    want = [int(indptr[u]) + int(np.argmax(key[indptr[u]:indptr[u + 1]]))  # first maximum
            for u in range(len(degs))]
    assert got.tolist() == want


def _graph(seed, palette):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 50))
    indptr, indices, cost, time = random_graph(rng, n, int(rng.integers(n, 5 * n + 1)),
                                               sinks=0.2, time=(1, 4))
    indices = indices.astype(np.int32)
    if palette:
        label = rng.integers(0, 5, size=indices.shape[0]).astype(np.uint8)
        cv, tv = rng.integers(-9, 10, size=5), rng.integers(1, 4, size=5)
        return indptr, indices, Palette(label, cv), Palette(label, tv)
    return indptr, indices, cost, time


@pytest.mark.parametrize("size", [1, 3, 17])
@pytest.mark.parametrize("palette", [True, False])
@pytest.mark.parametrize("kind", ["mean", "ratio"])
def test_answers_do_not_depend_on_the_block_size(size, palette, kind, monkeypatch):
    for seed in range(12):
        g = _graph(seed, palette)
        t = g[3] if kind == "ratio" else None
        out = []
        for block in (1 << 20, size):
            monkeypatch.setattr(P, "_BLOCK", block)
            monkeypatch.setattr(C, "CERTIFY_BLOCK", block)
            try:
                r = ocm.optimal_cycle(g[0], g[1], g[2], t, kind=kind, mode="max")
                out.append((r.value, r.cycle, r.cycle_edges, r.certified, r.iterations,
                            r.scc_optima))
            except NoCycleError:
                out.append(None)
        assert out[0] == out[1], seed


@pytest.mark.parametrize("size", [1, 4, 1 << 20])
def test_restriction_by_blocks_equals_the_per_edge_rule(size, monkeypatch):
    """An edge is kept exactly when both ends lie in one SCC; the subgraph renumbers the
    vertices that keep an edge, in order."""
    monkeypatch.setattr(P, "_BLOCK", size)
    for seed in range(15):
        indptr, indices, _, _ = _graph(seed, False)
        n = indptr.shape[0] - 1
        _, label = S.strong_components(indptr, indices)
        row = np.repeat(np.arange(n), np.diff(indptr))
        keep = label[row] == label[indices]
        r = S.restrict_to_sccs(indptr, indices)
        edges = np.arange(indices.shape[0]) if r.edges is None else r.edges
        assert edges.tolist() == np.flatnonzero(keep).tolist()
        kept_v = np.unique(row[keep])
        assert r.vertices.tolist() == kept_v.tolist()
        newid = {v: i for i, v in enumerate(kept_v.tolist())}
        assert r.indices.tolist() == [newid[w] for w in indices[keep].tolist()]
        assert np.diff(r.indptr).tolist() == [int(keep[row == v].sum()) for v in kept_v]


def test_strong_components_equal_networkx():
    """The partition is networkx's."""
    nx = pytest.importorskip("networkx")
    for seed in range(15):
        indptr, indices, _, _ = _graph(seed, False)
        n = indptr.shape[0] - 1
        _, label = S.strong_components(indptr, indices)
        g = nx.DiGraph()
        g.add_nodes_from(range(n))
        g.add_edges_from((u, int(w)) for u in range(n)
                         for w in indices[indptr[u]:indptr[u + 1]])
        ours = sorted(sorted(np.flatnonzero(label == c).tolist()) for c in np.unique(label))
        assert ours == sorted(sorted(c) for c in nx.strongly_connected_components(g))
