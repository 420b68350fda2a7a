"""The SCCs of small graphs by Tarjan over Python lists (no SciPy import) against networkx's
partition (the oracle), and the cycle engine's answer unchanged when SciPy is not used."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocm
from ocm import primitives as P
from ocm import scc as S

nx = pytest.importorskip("networkx")


def _partition(label: np.ndarray) -> list[list[int]]:
    return sorted(sorted(np.flatnonzero(label == c).tolist()) for c in np.unique(label))


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 40))
    m = draw(st.integers(0, 3 * n))
    src = np.sort(np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)),
                           dtype=np.int64))
    dst = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), np.int64)
    indptr = np.zeros(n + 1, np.int64)
    np.add.at(indptr, src + 1, 1)
    return np.cumsum(indptr), dst


@settings(max_examples=300, deadline=None)
@given(graphs())
def test_small_components_are_networkx_components(g):
    indptr, indices = g
    n = indptr.shape[0] - 1
    count, label = S.small_strong_components(indptr, indices)
    ref = nx.DiGraph()
    ref.add_nodes_from(range(n))
    ref.add_edges_from((u, int(w)) for u in range(n) for w in indices[indptr[u]:indptr[u + 1]])
    expected = sorted(sorted(c) for c in nx.strongly_connected_components(ref))
    assert count == len(expected) and label.min(initial=0) >= 0
    assert _partition(label) == expected
    # Components are completed in reverse topological order: every edge leads to its own
    # component or to one completed earlier (a lower label).
    for u in range(n):
        for w in indices[indptr[u]:indptr[u + 1]].tolist():
            assert label[w] <= label[u]


def test_a_long_chain_needs_no_recursion():
    n = 200_000   # far deeper than Python's recursion limit
    indptr = np.arange(n + 1, dtype=np.int64)
    indices = np.concatenate([np.arange(1, n), [0]]).astype(np.int64)   # one big cycle
    count, label = S.small_strong_components(indptr, indices)
    assert count == 1 and (label == 0).all()


@pytest.mark.parametrize("seed", range(6))
def test_engine_answer_independent_of_scipy(seed, monkeypatch):
    """SCCs, the policy graph's cycles and its tree sums found without SciPy (small graphs in
    a process that has not imported it) give the answer SciPy's routines give."""
    rng = np.random.default_rng(seed)
    n, m = 300, 900
    src = np.sort(rng.integers(0, n, m))
    indptr = np.searchsorted(src, np.arange(n + 1)).astype(np.int64)
    indices = rng.integers(0, n, m).astype(np.int64)
    cost = rng.integers(-5, 9, m).astype(np.int64)
    time = rng.integers(1, 4, m).astype(np.int64)
    monkeypatch.setattr(P, "scipy_pays", lambda size: False)   # the array walks alone
    small = ocm.optimal_cycle(indptr, indices, cost, time, kind="ratio", backend="cpu",
                              per_scc=True)
    monkeypatch.setattr(P, "scipy_pays", lambda size: True)    # SciPy's routines
    big = ocm.optimal_cycle(indptr, indices, cost, time, kind="ratio", backend="cpu",
                            per_scc=True)
    assert (small.value, small.cycle, small.cycle_edges, small.certified) == \
        (big.value, big.cycle, big.cycle_edges, big.certified)
    assert small.scc_optima == big.scc_optima
