"""The quotient explored by counting (statespace/counting.py) against the quotient explored by
sorting every successor's members (statespace/quotient.py with ``counting=False``): the same
graph, array for array. The counted explorer is itself checked against brute-force orbit
counting by tests/statespace/test_symmetry.py, which runs it by default."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dve
import statespace
from statespace import counting
from statespace.next_state import counted
from statespace.quotient import build_quotient_graph, lift_walk
from test_symmetry import CS, DONE, MODELS, QUEUE, TWO

# (model, defines, counted): a rendezvous between members of two groups (TWO) and a server
# that names instances (the family) are left to the sorting explorer.
ASYNC = [(CS, {"N": 5}, True), (DONE, {"N": 4}, True), (QUEUE, {"N": 4}, True),
         (TWO, {"N": 3, "W": 3}, False), (MODELS["family"][0], {}, False)]


def compiled(text, **defines):
    return statespace.compile_model(dve.load_model(text, defines=defines))


def same_graph(a, b):
    assert a.n_states == b.n_states and a.n_edges == b.n_edges
    for f in ("indptr", "indices", "action", "time", "parent", "parent_action", "deadlocks"):
        assert np.array_equal(getattr(a, f), getattr(b, f)), f
    assert all(np.array_equal(a.costs[r], b.costs[r]) for r in a.costs)
    assert a.error_state == b.error_state


@pytest.mark.parametrize("i", range(len(ASYNC)))
def test_counting_builds_the_sorting_explorers_graph(i):
    text, defines, counted = ASYNC[i]
    cm = compiled(text, **defines)
    sort = build_quotient_graph(cm, counting=False)
    count = build_quotient_graph(cm)
    assert count.counted == counted
    same_graph(sort.graph, count.graph)
    assert np.array_equal(sort.graph.states, count.graph.states)
    assert np.array_equal(count.representatives([3, 1]), sort.graph.states[[3, 1]])
    assert count.full_size() == sort.full_size()


def test_sync_models_keep_no_counts():
    # Their choices are made per class (test_symmetry_sync_choices.py); classes stay states.
    q = build_quotient_graph(compiled(MODELS["sync"][0], N=3))
    assert q.reduced and not q.counted


def test_a_narrow_layout_widens(monkeypatch):
    # Two distinct local vectors counted at first: the client/server template has four.
    monkeypatch.setattr(counting, "FIRST_WIDTH", 2)
    cm = compiled(CS, N=6)
    q = build_quotient_graph(cm)
    assert q.counted and q.counts.width == 8
    same_graph(q.graph, build_quotient_graph(cm, counting=False).graph)


def test_large_graphs_keep_counts_and_give_representatives_on_demand(monkeypatch):
    monkeypatch.setattr(counted, "FULL_STATES_BYTES", 0)
    cm = compiled(CS, N=7)
    q = build_quotient_graph(cm)
    ref = build_quotient_graph(cm, counting=False)
    assert q.graph.states.shape == (ref.graph.n_states, 0)
    assert np.array_equal(q.representatives(), ref.graph.states)
    assert q.graph.n_states == math.comb(9, 2) + 4 * math.comb(8, 2)
    # The critical cycle still lifts to a closed run of the full model.
    import ocm
    g = q.graph
    r = ocm.optimal_cycle(g.indptr, g.indices, g.cost(), g.time, kind="ratio", mode="max",
                          backend="cpu")
    states, actions, _, _ = lift_walk(q, r.cycle_edges)
    assert np.array_equal(states[0], states[-1]) and len(actions) >= len(r.cycle_edges)
