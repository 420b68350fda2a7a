"""The bounds of scenarios.bounds against exact analysis: L <= load <= U.

``U`` (upper_bound: the shape's bound and the clients' alone rates added up) and ``L``
(find_witness: the best cycle of runs simulated on the compiled model) are checked against the
load that dvecost's exact engine computes on the same system, on every rendering of a server
(one worker, a pool admitting one request per tick, desks admitting several) and on random
small systems with choices and loops. The simulated cycle is also checked against the full
state graph: each of its steps is an edge of it with the cost the run claims.
"""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction as F

import numpy as np
import pytest

from dvecost.saturation import system_load
from scenarios import Choice, Loop, Request, Scenario, Server, System, Think
from scenarios.bounds import bound_gap, find_witness, upper_bound
from scenarios.templates import TEMPLATES


def exact(system: System) -> F:
    return system_load(system, backend="cpu").exact


def alone(one: System) -> F:
    assert one.n_clients == 1
    return exact(one)


READER = Scenario("reader", [Request("open", service=2), Think(8)])
EXPORTER = Scenario("exporter", [Request("open", service=2), Think(4),
                                 Request("export", service=6), Think(6)])
ANALYST = Scenario("analyst", [Think(12), Request("report", service=8)])


def _random_system(seed: int) -> System:
    """Two small scenarios (a request, then thinking, requests, a choice or a loop) on a
    server of 1-2 workers and 1-2 admissions per tick, 1-2 clients each. Request names carry
    their service and cost, so one name has one definition."""
    rng = random.Random(seed)

    def request(letter: str) -> Request:
        svc, cost = rng.randint(1, 3), rng.randint(0, 2)
        return Request(f"{letter}{svc}c{cost}", service=svc, cost=cost)

    def step(letter: str):
        kind = rng.choice(["think", "request", "choice", "loop"])
        if kind == "think":
            return Think(rng.randint(0, 3))
        if kind == "request":
            return request(letter)
        if kind == "choice":
            return Choice(request(letter), Think(rng.randint(1, 2)),
                          weights=(1, rng.randint(1, 5)))
        return Loop([Think(1), request(letter)], times=(1, 2))

    scs = [Scenario(f"s{letter}", [request(letter)]
                    + [step(letter) for _ in range(rng.randint(1, 2))]) for letter in "ab"]
    workers = rng.randint(1, 2)
    return System({sc: rng.randint(1, 2) for sc in scs},
                  server=Server(workers=workers, admissions=rng.randint(1, workers)))


SYSTEMS = [
    *(pytest.param(TEMPLATES["paper-server"].family(n), id=f"paper-server-{n}")
      for n in (1, 2, 3, 4)),
    *(pytest.param(TEMPLATES["editor"].family(n), id=f"editor-{n}") for n in (2, 4, 5, 6)),
    pytest.param(System({ANALYST: 3}, server=Server(workers=2)), id="pool-analysts-3"),
    pytest.param(System({READER: 2, EXPORTER: 1}, server=Server(workers=2)), id="pool-2+1"),
    pytest.param(System({READER: 2, EXPORTER: 2}, server=Server(workers=2, admissions=2)),
                 id="desks-2+2"),
    pytest.param(System({READER: 3, EXPORTER: 1}, server=Server(workers=3, admissions=2)),
                 id="desks-3+1"),
    pytest.param(System({READER: 2, EXPORTER: 1}), id="no-server"),
    *(pytest.param(_random_system(seed), id=f"random-{seed}") for seed in range(8)),
]


@pytest.mark.parametrize("system", SYSTEMS)
def test_the_bounds_bracket_the_exact_load(system):
    load = exact(system)
    ub = upper_bound(system, alone)
    assert ub.gap is None and ub.value == min(ub.shape, ub.alone_sum,
                                              *([ub.rates] if ub.rates is not None else []))
    assert ub.alone_sum == sum(k * exact(system.with_counts({system.scenario(name): 1}))
                               for name, k, _ in ub.alone)
    run = find_witness(system, rows=10, max_ticks=600)
    assert run is not None
    assert run.mean <= load <= ub.value, (run.mean, load, ub.value)
    # The cycle's figures are those of its edges.
    costs = run.graph.costs[system.resource][list(run.cycle_edges)]
    assert int(costs.sum()) == run.cycle_cost and len(run.cycle_edges) == run.cycle_len
    assert run.mean == F(run.cycle_cost, run.cycle_len)


def _assert_concrete_run(system: System, run) -> None:
    """Every step of the witness ``run`` (prefix and cycle) is an edge of the explored full
    product (no symmetry reduction) with the cost and action the run gives it; its state 0
    is the initial state; its cycle is a closed walk of its graph whose figures are its
    edges'."""
    import dve
    from statespace import build_state_graph, compile_model

    g = build_state_graph(compile_model(dve.load_model(system.to_model())))
    index = {g.states[i].tobytes(): i for i in range(g.n_states)}
    w = run.graph
    res = system.resource
    for s in range(w.n_states):
        a = index[w.states[s].astype(g.states.dtype).tobytes()]
        for e in range(w.indptr[s], w.indptr[s + 1]):
            b = index[w.states[w.indices[e]].astype(g.states.dtype).tobytes()]
            out = range(g.indptr[a], g.indptr[a + 1])
            assert any(g.indices[f] == b and g.costs[res][f] == w.costs[res][e]
                       and g.model_action(g.action[f]) == w.model_action(w.action[e])
                       for f in out)
    assert w.states[0].tolist() == g.states[0].tolist()
    src = np.searchsorted(w.indptr, run.cycle_edges, side="right") - 1
    dst = w.indices[list(run.cycle_edges)]
    assert src.tolist() == np.roll(dst, 1).tolist(), "the cycle comes back to its first state"
    assert len(run.cycle_edges) == run.cycle_len
    assert int(w.costs[res][list(run.cycle_edges)].sum()) == run.cycle_cost
    assert run.mean == F(run.cycle_cost, run.cycle_len)


def test_the_simulated_steps_are_edges_of_the_full_state_graph():
    system = System({READER: 2, EXPORTER: 1}, server=Server(workers=2, admissions=2))
    _assert_concrete_run(system, find_witness(system, rows=6, max_ticks=400))


def test_a_walk_that_closes_up_to_a_renaming_of_the_clients_is_lifted(monkeypatch):
    """Four interchangeable clients served oldest first take turns: within 20 ticks no state
    comes back exactly, only up to a renaming of the clients. The witness is that walk
    repeated through the renaming until the run is back where it started: a cycle of the
    full state graph, of the walk's mean, at most the exact load."""
    from scenarios import bounds

    user = Scenario("user", [Think(5), Request("job", service=3)])
    system = System({user: 4}, server=Server())
    run = find_witness(system, rows=1, max_ticks=20, policies=("oldest",))
    assert run is not None and "renaming" in run.policy
    _assert_concrete_run(system, run)
    assert run.mean == 1 and run.mean <= exact(system)
    # Without the renamings the same budget closes no walk at all.
    monkeypatch.setattr(bounds.Lift, "of", classmethod(lambda cls, sim: None))
    assert find_witness(system, rows=1, max_ticks=20, policies=("oldest",)) is None


def test_a_renaming_is_lifted_through_the_desks_of_a_pool(monkeypatch):
    """Five clients on two workers admitted at two desks: the desks' transitions come in
    families (one per client) and the desks hold the clients' keys, all renamed along; the
    lifted run is a cycle of the full model, and only the renaming closes it in 25 ticks."""
    from scenarios import bounds

    user = Scenario("user", [Think(2), Request("job", service=3)])
    system = System({user: 5}, server=Server(workers=2, admissions=2))
    run = find_witness(system, rows=1, max_ticks=25, policies=("oldest",))
    assert run is not None and "renaming" in run.policy
    _assert_concrete_run(system, run)
    assert run.mean == 2 == exact(system)
    monkeypatch.setattr(bounds.Lift, "of", classmethod(lambda cls, sim: None))
    assert find_witness(system, rows=1, max_ticks=25, policies=("oldest",)) is None


def test_the_alone_rate_is_the_worst_case_not_the_weighted_average():
    """A client that rarely sends a big request: the weights' average would put U below the
    load (two clients can both send the big one every round), the worst case does not."""
    sc = Scenario("rare", [Think(2), Choice(Request("big", service=6), Request("small", 1),
                                            weights=(1, 20))])
    system = System({sc: 2}, server=Server())
    load = exact(system)
    # The average a weights-minded bound would use: work per round over ticks per round.
    big, small = F(6, 2 + 1 + 6 + 1), F(1, 2 + 1 + 1 + 1)
    average = (1 * 6 + 20 * 1) / F(1 * 10 + 20 * 5)
    assert 2 * average < load, "the test must tell the two bounds apart"
    ub = upper_bound(system, alone)
    assert ub.alone == (("rare", 2, big),) and big > small
    assert load <= ub.value == min(F(1), 2 * big)


def test_a_server_the_bounds_do_not_know_gets_the_shape_bound_only():
    @dataclasses.dataclass(frozen=True)
    class Odd(Server):
        priority: str = "lifo"

    system = System({READER: 3}, server=Odd(workers=2))
    assert "priority='lifo'" in bound_gap(system)
    called = []
    ub = upper_bound(system, lambda one: called.append(one) or F(0))
    assert called == [] and ub.value == ub.shape == system.load_bound()
    assert ub.alone_sum is None and ub.gap


def test_the_witness_reaches_the_capacity_where_the_system_saturates():
    """The runs that decide saturation in the documented examples: paper-server at 3, the
    editor at 6 (one worker), 22 analysts on eight workers; and one short of each stays
    below (its U)."""
    from scenarios import resolve_spec

    analysts = resolve_spec("dvecost/examples/analysts.py")[1]
    for system, cap in [(TEMPLATES["paper-server"].family(3), F(1)),
                        (TEMPLATES["editor"].family(6), F(1)), (analysts(22), F(8))]:
        run = find_witness(system, target=cap)
        assert run.mean == cap and run.cycle_cost == cap * run.cycle_len
    assert upper_bound(TEMPLATES["paper-server"].family(2), alone).value == F(2, 3)
    assert upper_bound(analysts(21), alone).value == F(84, 11)


def test_the_simulation_is_deterministic():
    system = TEMPLATES["editor"].family(5)
    a, b = (find_witness(system, rows=8, max_ticks=300) for _ in range(2))
    assert (a.mean, a.cycle_len, a.prefix_len, a.policy) == \
        (b.mean, b.cycle_len, b.prefix_len, b.policy)
    assert np.array_equal(a.graph.states, b.graph.states)


#: A client that asks for three ticks of service, then one, then thinks a tick: alone 4 ticks of
#: service in 9, so five clients (20/9) may keep two workers busy, but only if their phases
#: interlock; served oldest first (or by any of the fixed policies) they do not.
BURST = Scenario("burst", [Request("load", service=3), Request("ack", service=1), Think(1)])


def test_spreading_the_clients_over_their_round_finds_the_run_the_policies_miss():
    from scenarios.bounds import spread_aims

    system = System({BURST: 5}, server=Server(workers=2, admissions=2))
    assert exact(system) == 2
    plain = find_witness(system, target=F(2), rows=14, max_ticks=300)
    assert plain is not None and plain.mean < 2
    run = find_witness(system, target=F(2), rows=1, max_ticks=300, policies=("oldest",),
                       spread=spread_aims(system, [(5,)]))
    assert run.mean == 2 and run.policy.startswith("spread 5 ")
    _assert_concrete_run(system, run)


def test_the_spread_mixes_are_those_reaching_the_capacity_least_surplus_first():
    """Against a brute-force enumeration of every mix."""
    import itertools

    from scenarios.bounds import spread_mixes

    rng = random.Random(7)
    a, b, c = (Scenario(x, Request(x, 1)) for x in "abc")
    for _ in range(40):
        counts = {sc: rng.randint(1, 6) for sc in (a, b, c)[:rng.randint(1, 3)]}
        rates = {sc.name: F(rng.randint(1, 5), rng.randint(2, 9)) for sc in counts}
        cap = F(rng.randint(1, 8), rng.randint(1, 3))
        system = System(counts, server=Server(workers=8, admissions=2))
        most = rng.randint(1, 10)
        every = sorted(
            (sum(k * rates[sc.name] for sc, k in zip(counts, mix)) - cap, mix)
            for mix in itertools.product(*(range(k + 1) for k in counts.values())))
        want = [mix for surplus, mix in every if surplus >= 0][:most]
        got = spread_mixes(system, cap, rates, most=most)
        assert list(got) == (want or [tuple(counts.values())])


def test_a_round_counts_a_choice_by_its_longest_branch_and_a_loop_by_its_most_rounds():
    from scenarios.bounds import round_ticks

    steps = [Think(3), Choice(Request("a", 4), [Think(1), Request("b", 1)]),
             Loop([Think(2), Request("c", 1)], times=(1, 3)), Loop(Think(1), times=(0, None))]
    # 3 + max(4 + 2, 1 + 1 + 2) + 3 x (2 + 1 + 2) + 1
    assert round_ticks(steps) == 3 + 6 + 15 + 1
