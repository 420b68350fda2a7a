"""dvecost.analyze end to end on models whose optimum can be worked out by hand."""

from __future__ import annotations

import os
import pathlib
from fractions import Fraction

import pytest

from dve.errors import ConfigurationError
from dvecost import Analysis, analyze
from dvecost.examples import example_path
from ocm.errors import NoCycleError, ZeroTimeCycleError

#: ``../shared`` (``$DVECOST_SHARED``): not imported from conftest, whose name is ambiguous once
#: test folders have conftest files of their own.
SHARED = pathlib.Path(os.environ.get("DVECOST_SHARED",
                                     pathlib.Path(__file__).resolve().parents[3] / "shared"))
CS = SHARED / "models"


def check_consistent(a: Analysis) -> None:
    """The value is the critical cycle's own mean/ratio; steps chain; the prefix reaches it."""
    assert a.certified
    assert a.cycle, "an answer has a critical cycle"
    for s, t in zip(a.cycle, a.cycle[1:] + a.cycle[:1]):
        assert s.target == t.source
    num = sum(s.cost for s in a.cycle)
    den = sum(s.time for s in a.cycle) if a.kind == "ratio" else len(a.cycle)
    assert Fraction(num, den) == a.value
    run = a.prefix
    for s, t in zip(run, run[1:]):
        assert s.target == t.source
    if run:
        assert run[0].source == 0 and run[-1].target == a.cycle[0].source
    else:
        assert a.cycle[0].source == 0
    assert all(s.moves for s in a.cycle), "every step says who moved"


# ---------------------------------------------------------------------------- rings

def test_rings_interleaved_take_the_larger_mean():
    a = analyze(example_path("rings_async"), backend="cpu")
    assert (a.value, a.n_states, a.n_transitions) == (3, 6, 12)
    check_consistent(a)
    assert {s.process for s in a.cycle} == {"B"}  # ring B alone
    assert a.kind == "mean" and a.mode == "max" and a.cost == "cost" and a.system == "async"


def test_rings_interleaved_min_mean_is_the_smaller_ring():
    a = analyze(example_path("rings_async"), mode="min", backend="cpu")
    assert a.value == 2
    check_consistent(a)
    assert {s.process for s in a.cycle} == {"A"}


def test_rings_interleaved_ratio():
    a = analyze(example_path("rings_async"), ratio=True, backend="cpu")
    assert a.value == 3 and a.kind == "ratio"
    check_consistent(a)
    b = analyze(example_path("rings_async"), ratio=True, mode="min", backend="cpu")
    assert b.value == Fraction(3, 2)


def test_rings_in_lock_step_add_up():
    a = analyze(example_path("rings_sync"), backend="cpu")
    assert (a.value, a.n_states, a.n_transitions) == (5, 6, 6)
    check_consistent(a)
    assert len(a.cycle) == 6
    assert all(len(s.moves) == 2 for s in a.cycle)  # both rings move at every step
    assert a.system == "sync"


def test_rings_in_lock_step_ratio_uses_the_longer_time():
    a = analyze(example_path("rings_sync"), ratio=True, backend="cpu")
    assert a.value == Fraction(15, 4)
    check_consistent(a)
    assert sorted(s.time for s in a.cycle) == [1, 1, 1, 1, 2, 2]


# ---------------------------------------------------------------------------- costs from variables

COUNTER = """
byte x;
process P {
    state s;
    init s;
    trans
        s -> s { guard x < 3; effect x = x + 1; cost x; },
        s -> s { guard x == 3; effect x = 0; cost 10; };
}
system async;
"""


def test_cost_depends_on_a_variable():
    # Cost is evaluated in the source state: 0 + 1 + 2 + 10 over 4 steps.
    a = analyze(COUNTER, backend="cpu")
    assert (a.value, a.n_states, a.n_transitions) == (Fraction(13, 4), 4, 4)
    check_consistent(a)
    assert sorted(s.cost for s in a.cycle) == [0, 1, 2, 10]
    changes = {s.cost: s.changed for s in a.cycle}
    assert changes[2] == (("x", 2, 3),)
    assert changes[10] == (("x", 3, 0),)


# ---------------------------------------------------------------------------- rendezvous

RENDEZVOUS = """
channel c;
process S {
    state a, b;
    init a;
    trans
        a -> b { sync c!; cost 2; time 3; },
        b -> a { cost 1; time 1; };
}
process R {
    state x, y;
    init x;
    trans
        x -> y { sync c?; cost 5; time 1; },
        y -> x { cost 0; time 2; };
}
system async;
"""


def test_rendezvous_sums_costs_and_takes_the_longer_time():
    a = analyze(RENDEZVOUS, backend="cpu")
    assert (a.value, a.n_states, a.n_transitions) == (Fraction(8, 3), 4, 5)
    check_consistent(a)
    both = [s for s in a.cycle if len(s.moves) == 2]
    assert len(both) == 1
    (rv,) = both
    assert (rv.cost, rv.time) == (7, 3)
    assert [m.process for m in rv.moves] == ["S", "R"]  # the sender first
    assert [m.sync for m in rv.moves] == ["c!", "c?"]
    r = analyze(RENDEZVOUS, ratio=True, backend="cpu")
    assert r.value == Fraction(4, 3)
    check_consistent(r)


# ---------------------------------------------------------------------------- named resources

@pytest.mark.parametrize("cost, ratio, expected", [
    ("cpu", False, Fraction(5, 2)), ("net", False, Fraction(7, 3)),
    ("cpu", True, Fraction(5, 3)), ("net", True, Fraction(7, 5))])
def test_named_resources(cost, ratio, expected):
    a = analyze(example_path("resources"), cost=cost, ratio=ratio, backend="cpu")
    assert a.value == expected and a.cost == cost
    assert a.resources == ("cpu", "net")
    check_consistent(a)


def test_several_resources_and_no_choice_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="cpu, net") as info:
        analyze(example_path("resources"), backend="cpu")
    assert "--cost" in str(info.value)


def test_unknown_resource_is_a_configuration_error():
    with pytest.raises(ConfigurationError, match="no cost resource 'gpu'.*cpu, net"):
        analyze(example_path("resources"), cost="gpu", backend="cpu")


@pytest.mark.parametrize("kw", [{"mode": "median"}, {"backend": "tpu"}])
def test_bad_arguments(kw):
    with pytest.raises(ConfigurationError):
        analyze(example_path("rings_async"), **kw)


# ---------------------------------------------------------------------------- no answer

def test_no_reachable_cycle():
    text = "process P { state a, b, c; init a; trans a -> b {}, b -> c {}; } system async;"
    with pytest.raises(NoCycleError, match="no reachable cycle") as info:
        analyze(text, backend="cpu")
    trace = info.value.trace
    assert [(s.moves[0].source, s.moves[0].target) for s in trace] == [("a", "b"), ("b", "c")]


def test_zero_time_cycle_in_ratio_mode():
    with pytest.raises(ZeroTimeCycleError, match="takes no time") as info:
        analyze(example_path("zero_time"), ratio=True, backend="cpu")
    cycle = info.value.trace
    assert cycle and sum(s.time for s in cycle) == 0
    assert {m.transition for s in cycle for m in s.moves} == {"send -> retry", "retry -> send"}


def test_zero_time_cycle_is_fine_for_the_mean():
    a = analyze(example_path("zero_time"), backend="cpu")
    assert a.value == Fraction(3, 2)
    check_consistent(a)


# ---------------------------------------------------------------------------- warnings

def test_deadlock_is_a_warning_with_a_shortest_run():
    a = analyze(example_path("deadlock"), backend="cpu")
    assert (a.value, a.n_deadlocks) == (2, 1)
    check_consistent(a)
    assert len(a.deadlock_trace) == 2
    last = a.deadlock_trace[-1].state
    assert last["Phil0"] == "one" and last["Phil1"] == "one"
    assert any("deadlock" in w for w in a.warnings)


def test_error_state_is_a_warning_with_a_shortest_run():
    a = analyze(example_path("error_state"), backend="cpu")
    assert a.error_state_reached and a.value == Fraction(3, 2)
    check_consistent(a)
    assert len(a.error_trace) == 4 and a.error_trace[-1].error
    assert not any(s.error for s in a.error_trace[:-1])
    assert a.n_deadlocks == 0  # the error state is not counted as a deadlock


# ---------------------------------------------------------------------------- the API

def test_text_and_path_agree(tmp_path):
    p = tmp_path / "counter.dve"
    p.write_text(COUNTER)
    a, b = analyze(p, backend="cpu"), analyze(str(p), backend="cpu")
    c = analyze(COUNTER, backend="cpu")
    assert a.value == b.value == c.value
    assert a.model.endswith("counter.dve")


def test_defines_reach_input_constants():
    text = """
    input byte K = 2;
    byte x;
    process P { state s; init s;
        trans s -> s { guard x < K; effect x = x + 1; cost 1; },
              s -> s { guard x == K; effect x = 0; cost 0; }; }
    system async;"""
    assert analyze(text, backend="cpu").value == Fraction(2, 3)
    assert analyze(text, defines={"K": 4}, backend="cpu").value == Fraction(4, 5)


def test_timings_and_backend():
    a = analyze(example_path("rings_async"), backend="cpu")
    assert a.backend == "cpu"
    assert {"parse", "explore", "scc", "howard", "certify"} <= set(a.seconds)
    assert all(v >= 0 for v in a.seconds.values())


def test_progress_is_called_per_phase():
    phases = []
    analyze(example_path("rings_async"), backend="cpu",
            progress=lambda phase, done, total, msg: phases.append(phase))
    for p in ("parse", "explore", "howard"):
        assert p in phases


def test_max_states():
    from runtime.errors import StateLimitExceeded
    with pytest.raises(StateLimitExceeded):
        analyze(CS / "cs_2.dve", max_states=10, backend="cpu")


# ---------------------------------------------------------------------------- client/server

@pytest.mark.parametrize("n", [2, pytest.param(7), pytest.param(10, marks=pytest.mark.slow)])
def test_client_server_family(n):
    path = CS / f"cs_{n}.dve"
    if not path.is_file():
        pytest.skip(f"{path} not found (set DVECOST_SHARED)")
    mean = analyze(path, backend="cpu")
    assert mean.value == Fraction(13, 5)
    check_consistent(mean)
    ratio = analyze(path, ratio=True, backend="cpu")
    assert ratio.value == Fraction(13, 14)
    check_consistent(ratio)
    assert mean.n_states == {2: 33, 7: 22_599, 10: 846_369}[n]


# ---------------------------------------------------------------------------- the pipeline

@pytest.mark.parametrize("ratio, mode, expected", [
    (False, "max", Fraction(7, 5)), (False, "min", Fraction(1)),
    (True, "max", Fraction(5, 3)), (True, "min", Fraction(7, 5))])
def test_pipeline_item_kinds(ratio, mode, expected):
    """One item costs 5 + kind in 5 steps and 3 + kind time units (see pipeline.dve): heavy
    items give the worst mean, light ones the worst ratio."""
    a = analyze(example_path("pipeline"), ratio=ratio, mode=mode, backend="cpu")
    assert a.value == expected
    check_consistent(a)
    kinds = {s.state["Worker.item"] for s in a.cycle if any(
        m.transition == "get -> work" for m in s.moves)}
    heavy = (not ratio) == (mode == "max")
    assert kinds == ({2} if heavy else {0})


# ---------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.parametrize("name, kw", [("client_server", {}), ("client_server", {"ratio": True}),
                                      ("pipeline", {"mode": "min"}), ("rings_sync", {}),
                                      ("deadlock", {"ratio": True})])
def test_gpu_backend_gives_the_cpu_answer(name, kw):
    from runtime.device import gpu_available
    if not gpu_available():
        pytest.skip("no CuPy or no CUDA device")
    cpu = analyze(example_path(name), backend="cpu", **kw)
    gpu = analyze(example_path(name), backend="gpu", **kw)
    assert gpu.backend == "gpu" and gpu.certified
    assert gpu.value == cpu.value
    check_consistent(gpu)


def test_value_only_decodes_nothing():
    full = analyze(example_path("rings_sync"), backend="cpu")
    bare = analyze(example_path("rings_sync"), backend="cpu", witness=False)
    assert bare.value == full.value and bare.certified
    assert (bare.n_states, bare.n_transitions) == (full.n_states, full.n_transitions)
    assert bare.cycle == () and bare.prefix == () and dict(bare.initial) == {}
    assert bare.deadlock_trace is None and bare.error_trace is None
    assert not bare.witness and full.witness
    assert "critical cycle: not decoded" in str(bare)


@pytest.mark.parametrize("witness", [True, False])
def test_decoding_is_announced_only_when_a_run_is_decoded(witness):
    phases = []
    a = analyze(example_path("rings_sync.dve"), backend="cpu", witness=witness,
                progress=lambda phase, done, total, msg: phases.append((phase, msg)))
    assert [p for p, _ in phases][:2] == ["parse", "explore"]
    decoding = [p for p in phases if p == ("report", "decoding the critical cycle")]
    assert len(decoding) == (1 if witness else 0)
    assert bool(a.cycle) == witness


# ------------------------------------------------------------------ edges left on the device

@pytest.mark.parametrize("backend", ["auto", "cpu"])
def test_edges_left_on_the_device_feed_the_engine_and_are_let_go(backend, monkeypatch):
    # A graph explored on a GPU keeps its edges there (StateGraph.on_device): the engine reads
    # those (unless told to compute on the CPU), and the result keeps no reference to them.
    # Here the "device" copies are NumPy copies attached to the host explorer's graph.
    import ocm
    from statespace.search import GraphBuilder
    finish, engine = GraphBuilder.finish, ocm.optimal_cycle
    attached, seen = [], []

    def finish_on_device(self, counts, t0):
        g = finish(self, counts, t0)
        dev = (g.indptr.copy(), g.indices.copy(), g.charge.copy())
        attached.append(dev)
        object.__setattr__(g, "on_device", dev)   # (replace() would compute the costs)
        return g

    def spy(indptr, indices, cost, time=None, **kw):
        seen.append((indptr, indices, cost, time))
        return engine(indptr, indices, cost, time, **kw)

    monkeypatch.setattr(GraphBuilder, "finish", finish_on_device)
    monkeypatch.setattr(ocm, "optimal_cycle", spy)
    path = str(example_path("client_server.dve"))
    got = analyze(path, ratio=True, backend=backend, symmetry="off")
    monkeypatch.undo()
    ref = analyze(path, ratio=True, backend="cpu", symmetry="off")
    assert (got.value, got.certified, got.cycle) == (ref.value, ref.certified, ref.cycle)
    (dev,), (args,) = attached, seen
    # The compact graph's rows, read through its palette (never expanded to costs).
    used_device = [a is b for a, b in zip(args, (dev[0], dev[1], dev[2], dev[2]))]
    used_device[2:] = [a.label is dev[2] for a in args[2:]]
    assert used_device == ([True] * 4 if backend == "auto" else [False] * 4)
    assert all(isinstance(a, ocm.Palette) for a in args[2:])
    for g in (got.graph, ref.graph):   # nothing expanded the charges to per-edge arrays
        assert "costs" not in g.__dict__ and "time" not in g.__dict__
    assert got.graph.on_device is None
