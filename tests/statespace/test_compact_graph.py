"""The compact state graph: per edge a palette row instead of int64 costs and times.

What the user gets is unchanged (the oracle tests compare the expanded costs and times with
an independent interpreter); here: the compact form's size, its independence of how it was
computed (constant charges or charges per edge; chunk sizes), and what reads it whole."""

from __future__ import annotations

import numpy as np
import pytest

import dve
from dvecost.examples import example_path
from statespace import build_state_graph, compile_model
from statespace.next_state import async_gen
from statespace.graph import charge_dtype
from statespace.graphfile import validate_graph

EXAMPLES = ("client_server.dve", "resources.dve", "error_state.dve", "pipeline.dve",
            "rings_sync.dve", "printer.dve")

#: Charges per edge: a property process, a sync system, costs read from variables.
PER_EDGE = """
byte x;
process P { state a, b; init a;
  trans a -> b { guard x < 5; effect x = x + 1; cost x; time 2; },
        b -> a { cost 2 * x; time x; }; }
process Q { state q; init q; trans q -> q { guard x > 2; cost 1; }; }
system async;
"""


def _cm(name):
    return compile_model(dve.load_model(str(example_path(name))))


@pytest.mark.parametrize("name", EXAMPLES)
def test_at_most_12_bytes_per_transition(name):
    g = build_state_graph(_cm(name))
    assert g.charge is not None and "costs" not in g.__dict__ and "time" not in g.__dict__
    per_edge = g.indices.itemsize + g.action.itemsize + g.charge.itemsize
    assert per_edge <= 12 and g.charge.dtype == charge_dtype(g.palette.size)
    assert g.edge_bytes() == g.n_edges * per_edge + g.palette.nbytes
    # Expanded, the costs and times are the palette's rows read per edge.
    for r in g.resources:
        assert np.array_equal(g.cost(r), g.palette.costs[r][g.charge])
    assert np.array_equal(g.time, g.palette.time[g.charge])
    validate_graph(g)


@pytest.mark.parametrize("name", EXAMPLES)
def test_constant_charges_equal_charges_per_edge(name, monkeypatch):
    # The palette of the action table against the rows met edge by edge (the path of models
    # whose charges depend on the state): the same costs and times on every edge.
    cm = _cm(name)
    ref = build_state_graph(cm)
    monkeypatch.setattr(async_gen, "charge_table", lambda cm, const: None)
    got = build_state_graph(cm, chunk_size=5)
    validate_graph(got)
    assert np.array_equal(got.time, ref.time)
    for r in ref.resources:
        assert np.array_equal(got.cost(r), ref.cost(r))
    # Rows met edge by edge: only those some edge uses.
    assert np.unique(got.charge).tolist() == list(range(got.palette.size))


def test_palette_does_not_depend_on_the_chunks():
    cm = compile_model(dve.load_model(PER_EDGE))
    graphs = [build_state_graph(cm, chunk_size=c) for c in (1, 3, 1000)]
    assert graphs[0].palette.size > 3
    for g in graphs[1:]:
        assert g.charge.dtype == graphs[0].charge.dtype
        assert np.array_equal(g.charge, graphs[0].charge)
        assert np.array_equal(g.palette.time, graphs[0].palette.time)
        assert np.array_equal(g.palette.costs["cost"], graphs[0].palette.costs["cost"])


def test_edges_into_the_error_state_charge_nothing():
    g = build_state_graph(_cm("error_state.dve"))
    assert g.error_state >= 0
    into = g.indices == g.error_state
    assert into.any()
    assert (g.time[into] == 0).all() and all((g.cost(r)[into] == 0).all()
                                             for r in g.resources)


def test_a_partial_graph_is_compact_too():
    from runtime.errors import StateLimitExceeded
    with pytest.raises(StateLimitExceeded) as exc:
        build_state_graph(_cm("client_server.dve"), max_states=20, chunk_size=4)
    g = exc.value.partial
    assert not g.complete and g.charge.shape == (g.n_edges,)
    assert np.array_equal(g.time, g.palette.time[g.charge])
