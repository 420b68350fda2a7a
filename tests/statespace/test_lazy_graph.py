"""A state graph whose arrays are still on a device (statespace.graph.lazy_graph): each is
copied to the host on its first read and only then; peek, traces, decoded states and the
witness read elements, not arrays; released() brings everything over."""

from __future__ import annotations

import dataclasses

import dve
import numpy as np
import pytest
from device_stand_in import same_graph

from statespace import build_state_graph, compile_model
from statespace.graph import (DEVICE_FIELDS, StateGraph, decode_state, derived, lazy_graph,
                              shortest_trace)
from statespace.witness import Witness, decode_runs
from statespace.quotient import build_quotient_graph
from statespace.symmetry import NO_SYMMETRY
from dvecost.examples import example_path


class Copies:
    """Counts the bytes copied from the "device"."""

    def __init__(self) -> None:
        self.whole: list[int] = []   # sizes of whole-array copies
        self.bytes = 0


class Dev:
    """A device array stand-in: indexing stays on the "device"; ``get()`` copies (counted)."""

    def __init__(self, a: np.ndarray, log: Copies, whole: bool = True) -> None:
        self.a, self.log, self.whole = a, log, whole
        self.shape, self.dtype = a.shape, a.dtype

    def __getitem__(self, i):
        return Dev(np.asarray(self.a[i]), self.log, whole=False)

    def get(self) -> np.ndarray:
        self.log.bytes += self.a.nbytes
        if self.whole:
            self.log.whole.append(self.a.nbytes)
        return self.a.copy()


def on_device(g: StateGraph, log: Copies, compact: bool = False) -> StateGraph:
    """``g`` rebuilt with its DEVICE_FIELDS as stand-in device arrays (with ``compact``,
    costs and times derived from its palette, as the explorer leaves them)."""
    arrays = {k: ({r: Dev(c, log) for r, c in g.costs.items()} if k == "costs"
                  else Dev(getattr(g, k), log)) for k in DEVICE_FIELDS}
    if compact:
        arrays["costs"] = arrays["time"] = derived()
    rest = {f.name: getattr(g, f.name) for f in dataclasses.fields(StateGraph)
            if f.name not in DEVICE_FIELDS}
    return lazy_graph(arrays, **rest)


@pytest.fixture(scope="module")
def graph():
    cm = compile_model(dve.load_model(str(example_path("client_server.dve"))))
    return build_state_graph(cm)


def test_fields_are_copied_once_on_first_read(graph):
    log = Copies()
    g = on_device(graph, log)
    assert type(g) is StateGraph and g.__dict__["_pending"]
    # Counts and resources without a copy.
    assert (g.n_states, g.n_edges, g.resources) == (graph.n_states, graph.n_edges,
                                                   graph.resources)
    assert log.bytes == 0
    first = g.indices
    assert isinstance(first, np.ndarray) and np.array_equal(first, graph.indices)
    assert log.whole == [graph.indices.nbytes]
    assert g.indices is first and log.whole == [graph.indices.nbytes]   # not copied again
    same_graph(graph, g)   # reads the rest: each copied once
    assert sorted(log.whole) == sorted(
        [getattr(graph, k).nbytes for k in DEVICE_FIELDS if k != "costs"]
        + [c.nbytes for c in graph.costs.values()])


def test_peek_trace_and_decoding_copy_elements_only(graph):
    log = Copies()
    g = on_device(graph, log)
    for s in (0, 7, graph.n_states - 1):
        assert decode_state(g, s) == decode_state(graph, s)
        assert shortest_trace(g, s) == shortest_trace(graph, s)
    e = graph.n_edges // 2
    assert int(g.peek("indices", e)) == int(graph.indices[e])
    assert int(g.peek("costs", e, "cost")) == int(graph.costs["cost"][e])
    assert np.array_equal(g.peek("action", slice(3, 9)), graph.action[3:9])
    assert log.whole == [] and 0 < log.bytes < 2000


def test_witness_reads_no_array_whole(graph):
    import ocm
    q = build_quotient_graph(graph.model, symmetry=NO_SYMMETRY)
    r = ocm.optimal_cycle(q.graph.indptr, q.graph.indices, q.graph.cost(), kind="mean",
                          backend="cpu")
    ref = decode_runs(q, r.cycle_edges, "cost")
    log = Copies()
    lazy_q = dataclasses.replace(q, graph=on_device(q.graph, log))
    got = decode_runs(lazy_q, r.cycle_edges, "cost")
    assert (got.cycle, got.prefix, got.deadlock, got.error) == \
        (ref.cycle, ref.prefix, ref.deadlock, ref.error)
    assert got.cycle and log.whole == []
    with pytest.raises(Exception, match="no cost resource|unknown cost resource"):
        Witness(on_device(graph, log), "energy")


def test_released(graph):
    log = Copies()
    g = on_device(graph, log)
    g.action   # read before: kept as read
    kept = g.released(lazy=True)
    assert log.whole == [graph.action.nbytes] and kept.on_device is None
    assert kept.__dict__["_pending"] and kept.action is g.action
    full = g.released()
    assert not full.__dict__.get("_pending") and full.on_device is None
    same_graph(graph, full)
    # dataclasses.replace reads every field: an ordinary graph on the host.
    log2 = Copies()
    h = dataclasses.replace(on_device(graph, log2), name="x")
    assert h.name == "x" and len(log2.whole) == len(DEVICE_FIELDS) + len(graph.costs) - 1
    same_graph(graph, h)


def test_lazy_graph_rejects_other_fields_and_keeps_host_arrays(graph):
    rest = {f.name: getattr(graph, f.name) for f in dataclasses.fields(StateGraph)}
    with pytest.raises(ValueError, match="indptr"):
        lazy_graph({"indptr": graph.indptr}, **rest)
    arrays = {k: rest.pop(k) for k in DEVICE_FIELDS}
    g = lazy_graph(arrays, **rest)   # all NumPy: an ordinary graph
    assert not g.__dict__.get("_pending")
    same_graph(graph, g)
    del rest["indptr"]
    with pytest.raises(TypeError, match="indptr"):
        lazy_graph(arrays, **rest)


def test_compact_graph_on_device_reads_no_costs(graph):
    """A compact graph left on a device: traces and peeks read charges element by element,
    released() keeps costs and times derived, and once read they equal the full arrays."""
    log = Copies()
    g = on_device(graph, log, compact=True)
    e = graph.n_edges // 3
    assert int(g.peek("costs", e, "cost")) == int(graph.costs["cost"][e])
    assert int(g.peek("time", e)) == int(graph.time[e])
    for s in (1, graph.n_states - 1):
        assert shortest_trace(g, s) == shortest_trace(graph, s)
    assert log.whole == []
    full = g.released()
    assert full.__dict__["_pending"] == {"costs": derived(), "time": derived()}
    assert full.nbytes == graph.nbytes - graph.time.nbytes - graph.costs["cost"].nbytes
    same_graph(graph, full)   # computes costs and times: equal to the full arrays


@pytest.mark.parametrize("need", [0, 1, 10**12])
def test_make_room_moves_only_what_the_engine_does_not_read(graph, need):
    """Short of device memory for the cycle engine: the arrays it does not read come to the
    host, the largest first, until enough is free; its edges (on_device) stay."""
    log = Copies()
    g = on_device(graph, log, compact=True)
    pend = g.__dict__["_pending"]
    object.__setattr__(g, "on_device", (graph.indptr, pend["indices"], pend["charge"]))
    sizes = {k: getattr(graph, k).nbytes for k in ("action", "states", "parent",
                                                   "parent_action")}
    assert g.make_room(need, free=0) is g
    moved = sorted(log.whole, reverse=True)
    if need == 0:
        assert moved == []
    elif need == 1:   # the largest alone suffices
        assert moved == [max(sizes.values())]
    else:             # all of them, never the engine's
        assert moved == sorted(sizes.values(), reverse=True)
    assert "indices" in pend and "charge" in pend
    same_graph(graph, g)   # what was moved reads as before
