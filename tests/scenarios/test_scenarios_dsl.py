"""The scenario DSL: validation, apportioning, and models that pass the checks and round-trip."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dve
from dve import syntax as s
from dve.errors import ConfigurationError
from dve.parser import parse_model
from scenarios import (TEMPLATES, Choice, Loop, Request, Scenario, Server, System, Think,
                       apportion)

U = Scenario("u", [Think(2), Request("r", service=3)])


# ---------------------------------------------------------------------------- validation

@pytest.mark.parametrize("make, words", [
    (lambda: Think(-1), "Think(ticks) must be 0..256"),
    (lambda: Think(1.5), "must be an integer"),
    (lambda: Request("r", 0), "service must be 1..255"),
    (lambda: Request("r", 1, cost=-2), "cost must be 0..255"),
    (lambda: Request("9r", 1), "must be an identifier"),
    (lambda: Request("state", 1), "reserved word"),
    (lambda: Request("Cost", 1), "reserved word"),
    (lambda: Scenario("for", Think(1)), "reserved word"),
    (lambda: Scenario("u", [Think(1), "think"]), "not a step"),
    (lambda: Choice(), "at least one branch"),
    (lambda: Choice(Think(1), Think(2), weights=(1,)), "2 branches but 1 weights"),
    (lambda: Loop(Think(1), times=(3, 1)), "Loop times hi must be 3"),
    (lambda: Loop(Think(1), times=(1, 2, 3)), "n or (lo, hi)"),
    (lambda: Server(workers=0), "Server(workers) must be 1..16"),
    (lambda: System({}), "at least one client"),
    (lambda: System({U: 0}), "at least one client"),
    (lambda: System({"u": 1}), "keyed by Scenario"),
    (lambda: System({U: 1, Scenario("u", Think(1)): 1}), "two different scenarios are named 'u'"),
    (lambda: System({U: 1, Scenario("v", Request("r", 9)): 1}), "request 'r' is defined twice"),
    (lambda: System({U: 1, Scenario("v", Request("R", 3)): 1}), "differ only in case"),
    (lambda: System({U: 1}, server=Server(), composition="async"), "must be composed with 'sync'"),
    (lambda: System({U: 1}, composition="parallel"), "unknown composition"),
    (lambda: System({U: 256}, server=Server()), "at most 255 clients"),
    (lambda: System({Scenario("t", Think(3)): 1}), "sends no request"),
])
def test_bad_input_is_a_configuration_error(make, words):
    with pytest.raises(ConfigurationError, match=words.replace("(", r"\(").replace(")", r"\)")):
        make()


def test_scenario_without_time_is_refused_when_built():
    empty = Scenario("e", [Think(0), Loop(Request("r", 1), times=0)])
    with pytest.raises(ConfigurationError, match="takes no time"):
        System({empty: 1}).to_model()


def test_values_are_frozen_and_hashable():
    assert hash(U) == hash(Scenario("u", [Think(2), Request("r", service=3)]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        U.name = "v"  # type: ignore[misc]


def test_requests_and_kinds_in_order_of_appearance():
    w = Scenario("w", [Choice(Request("b", 1), [Think(1), Request("a", 2)]),
                       Loop(Request("b", 1), times=(0, None))])
    assert [r.name for r in w.requests()] == ["b", "a"]
    assert [r.name for r in System({U: 1, w: 1}).kinds()] == ["r", "b", "a"]


# ---------------------------------------------------------------------------- apportion

def test_apportion_examples():
    a, b, c = (Scenario(x, Request("r", 1)) for x in "abc")
    counts = [apportion({a: 5, b: 3, c: 2}, n) for n in range(1, 7)]
    assert [[k.get(x, 0) for x in (a, b, c)] for k in counts] == [
        [1, 0, 0], [1, 1, 0], [2, 1, 0], [2, 1, 1], [3, 1, 1], [3, 2, 1]]
    with pytest.raises(ConfigurationError):
        apportion({a: 0}, 3)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 9), min_size=1, max_size=5).filter(any), st.integers(0, 40))
def test_apportion_is_house_monotone(weights, n):
    scs = [Scenario(f"s{i}", Request("r", 1)) for i in range(len(weights))]
    w = dict(zip(scs, weights))
    now, nxt = apportion(w, n), apportion(w, n + 1)
    assert sum(now.values()) == n and sum(nxt.values()) == n + 1
    assert all(nxt.get(sc, 0) >= k for sc, k in now.items())
    assert all(weights[scs.index(sc)] > 0 for sc in nxt)


# ---------------------------------------------------------------------------- the models

A = Scenario("a", [Choice([Think(3), Request("light", 1)], Request("heavy", 4, cost=2),
                          weights=(3, 1)),
                   Loop([Think(1), Request("edit", 2)], times=(0, 2)), Think(1)])
B = Scenario("b", [Loop(Request("poll", 1), times=(1, None)), Think(5)])

SYSTEMS = {
    "one-worker": System({U: 2, A: 1}, server=Server()),
    "two-workers": System({U: 1, A: 1, B: 1}, server=Server(2)),
    "three-workers": System({B: 2}, server=Server(3)),
    "no-server-sync": System({A: 2, B: 1}),
    "no-server-async": System({A: 1, B: 2}, composition="async"),
    **{f"{name}-{n}": t.family(n) for name, t in TEMPLATES.items() for n in (1, 2, 4)},
}


@pytest.mark.parametrize("name", SYSTEMS)
def test_model_passes_checks_without_warnings_and_round_trips(name):
    model = SYSTEMS[name].to_model()
    assert dve.check_model(model) == ()
    text = dve.format_model(model)
    assert parse_model(text, "rendered.dve") == model
    assert dve.format_model(parse_model(text, "again.dve")) == text


@pytest.mark.parametrize("name", ["one-worker", "two-workers", "editor-4"])
def test_every_node_has_the_synthetic_position(name):
    system = SYSTEMS[name]
    model = system.to_model()
    seen = 0
    stack: list[object] = [model]
    while stack:
        node = stack.pop()
        if isinstance(node, s.Node):
            seen += 1
            assert node.pos is not None and node.pos.source.name == f"<scenario {system.name}>"
            stack.extend(getattr(node, f.name) for f in dataclasses.fields(node))
        elif isinstance(node, tuple):
            stack.extend(node)
    assert seen > 50


def test_single_writer_shared_variables():
    """Each global is assigned by one process only (system sync would go to the error state)."""
    model = SYSTEMS["two-workers"].to_model()
    writers: dict[str, set[str]] = {}
    for p in model.processes:
        local = {d.name for d in p.decls}
        for t in p.transitions:
            for a in t.effects:
                if a.target.name not in local:
                    writers.setdefault(a.target.name, set()).add(p.name)
    assert writers and all(len(ws) == 1 for ws in writers.values())
    assert writers["adm"] == {"server"}   # the pool of workers: who was admitted
    assert not any(n.startswith("req") for n in writers)   # each client's req is its own


def test_names_and_shape_of_the_server_model():
    model = System({U: 2}, server=Server()).to_model()
    assert [d.name for d in model.globals] == ["R", "done"]
    assert [p.name for p in model.processes] == ["server", "u_1", "u_2"]
    server, client = model.processes[0], model.processes[1]
    # every charge of the server's cost comes with one busy worker (occupancy)
    assert {c.resource for t in server.transitions for c in t.costs} == {"server", "busy"}
    assert all({c.resource for c in t.costs} in (set(), {"server", "busy"})
               for t in server.transitions)
    assert not any(t.costs for t in client.transitions)
    assert [st.name for st in client.states] == ["think", "r", "r_wait"]
    assert model.system.kind == "sync"


def test_scenario_starting_with_a_choice_gets_a_start_state():
    c = Scenario("c", [Choice(Request("x", 1), [Think(2), Request("y", 1)])])
    p = System({c: 1}).to_model().processes[0]
    assert p.init.name == "start" and p.states[0].name == "start"


def test_state_names_do_not_clash_with_globals():
    c = Scenario("c", [Request("done", 1), Think(2)])
    model = System({c: 1}, server=Server()).to_model()
    assert dve.check_model(model) == ()
    assert "done_s" in [st.name for st in model.processes[1].states]


def test_load_bound():
    heavy = Scenario("h", Request("big", 2, cost=5))

    def on_cost(server):
        return System({U: 3, heavy: 1}, server=server, resource="server")

    assert on_cost(Server(2)).load_bound() == 10
    assert System({U: 3, heavy: 1}).load_bound() == 3 * 1 + 5
    assert System({U: 3, heavy: 1}, composition="async").load_bound() == 5
    assert isinstance(System({U: 1}).load_bound(), Fraction)
    # One admission per tick: 4 workers, but no request brings more than 2 x 5 of work.
    assert on_cost(Server(4)).load_bound() == 10
    assert "one request admitted per tick, none worth more than 10: big, 2 ticks x 5" == \
        on_cost(Server(4)).load_bound_why()
    assert on_cost(Server(2)).load_bound_why() == "workers x largest cost per tick"
    # Occupancy: no request holds a worker more than 3 ticks (U's), whatever it costs.
    assert System({U: 3, heavy: 1}, server=Server(2)).load_bound() == 2
    assert System({U: 3, heavy: 1}, server=Server(4)).load_bound() == 3
    assert System({U: 3, heavy: 1}, server=Server(4)).load_bound_why() == \
        "one request admitted per tick, none holding a worker more than 3 ticks: r"


def test_pool_names_step_aside_for_request_kinds():
    # Requests named like the pool's constants and variable keep their names; the pool's move.
    from dvecost import analyze
    a = Scenario("a", [Request("busy", 3, cost=0), Think(1), Request("adm", 1, cost=2),
                       Request("served", 4)])
    b = Scenario("b", [Loop([Think(1), Request("workers", 2)], times=(1, 2))])
    model = System({a: 2, b: 1}, server=Server(workers=2)).to_model()
    assert dve.check_model(model) == ()
    consts = {d.name: d.init.value for d in model.globals if d.const}
    assert consts["BUSY"] == 1 and consts["WORKERS"] == 4      # the request kinds
    assert (consts["WORKERS_"], consts["BUSY_"], consts["SERVED_"]) == (2, 5, 6)   # the pool
    states = [st.name for st in model.processes[1].states]
    assert "adm_s" in states and "adm" not in states    # the global variable 'adm' is taken
    on = analyze(model, cost="server", backend="cpu", witness=False)
    off = analyze(model, cost="server", backend="cpu", witness=False, symmetry="off")
    assert on.symmetry["reduced"] and on.value == off.value
