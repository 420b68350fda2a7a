"""Saturation judged on occupancy (busy workers per tick), not on cost.

Every answer here is checked against exact analysis of the rendered model with symmetry
reduction off (``dvecost.analyze(..., symmetry="off")``: the full product, no code of the
capacity layer), and the properties the theory gives are tested on generated mixed-cost
systems: costs do not change occupancy, ``workers`` is monotone in every client count, the
worker count does not change the occupancy of one client, and ``saturate``'s answer ``N``
has occupancy ``W`` at ``N`` and below ``W`` at ``N - 1``.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dvecost
from dvecost.capacity import headroom, workers_needed
from dvecost.saturation import saturate
from scenarios import Choice, Request, Scenario, Server, System, Think, apportion


def occupancy(system: System, symmetry: str = "off") -> Fraction:
    """The oracle: the maximal cycle mean of ``busy`` on the full product of the rendering
    (``symmetry='auto'`` for the larger populations: the reduced product, exact too)."""
    a = dvecost.analyze(system.to_model(), cost="busy", symmetry=symmetry, backend="cpu")
    assert a.certified
    return Fraction(a.value)


def cost_load(system: System, symmetry: str = "off") -> Fraction:
    a = dvecost.analyze(system.to_model(), cost="server", symmetry=symmetry, backend="cpu")
    return Fraction(a.value)


CHEAP = Scenario("cheap", [Think(1), Request("look", service=1, cost=1)])
DEAR = Scenario("dear", [Think(1), Request("buy", service=1, cost=4)])


def pair_family(first, second):
    return lambda n: System(apportion({first: 1, second: 1}, n), server=Server(workers=1))


# ---------------------------------------------------------------------------- regressions

def test_worked_example_of_the_docs():
    """docs/algorithms.md: 4 clients saturate one worker; 2 already cost 5/4 per tick."""
    r = saturate(pair_family(CHEAP, DEAR), backend="cpu", method="exact")
    assert r.capacity == 1 and r.resource == "busy"
    assert r.saturating_clients == 4 and r.certified
    assert r.point(4).exact == 1 and r.point(3).exact == Fraction(3, 4)
    assert r.cost_load == Fraction(5, 2)
    two = System({CHEAP: 1, DEAR: 1}, server=Server(workers=1))
    assert occupancy(two) == Fraction(1, 2) and cost_load(two) == Fraction(5, 4)


def test_capacity_does_not_depend_on_the_first_system():
    """The capacity was once read off system(1): 'cheap' first gave 1, 'dear' first 4."""
    answers = []
    for first, second in ((CHEAP, DEAR), (DEAR, CHEAP)):
        r = saturate(pair_family(first, second), backend="cpu")
        answers.append((r.capacity, r.capacity_why, r.saturating_clients, r.certified))
    assert answers[0] == answers[1] == (1, "1 worker, all busy on every tick", 4, True)


SHOP_BROWSER = Scenario("browser", [Think(3), Request("page", service=1)])
SHOP_BUYER = Scenario("buyer", [Think(2), Request("page", service=1), Think(4),
                                Request("checkout", service=2, cost=3)])


def shop(n, order=(SHOP_BROWSER, SHOP_BUYER), workers=2):
    weights = {order[0]: 3 if order[0] is SHOP_BROWSER else 1,
               order[1]: 3 if order[1] is SHOP_BROWSER else 1}
    return System(apportion(weights, n), server=Server(workers=workers))


def test_shop_capacity_is_the_workers_whatever_the_order():
    for order in ((SHOP_BROWSER, SHOP_BUYER), (SHOP_BUYER, SHOP_BROWSER)):
        r = saturate(lambda n: shop(n, order), backend="cpu", max_clients=4, method="exact")
        assert r.capacity == 2 and r.capacity_why == "2 workers, all busy on every tick"


def test_workers_grows_with_the_clients_on_the_shop():
    """9 browsers need 2 workers; adding 3 buyers once answered 1."""
    base = System({SHOP_BROWSER: 1, SHOP_BUYER: 1}, server=Server(workers=1))
    alone = workers_needed(base, {"browser": 9}, backend="cpu", jobs=1)
    more = workers_needed(base, {"browser": 9, "buyer": 3}, backend="cpu", jobs=1)
    assert alone.workers == 2 and more.workers >= alone.workers
    one = System({SHOP_BROWSER: 9, SHOP_BUYER: 3}, server=Server(workers=1))
    assert occupancy(one, "auto") == 1              # 1 worker is saturated
    assert more.tried[0].saturated and more.tried[0].exact == 1
    assert more.cost_resource == "server" and more.cost_load is not None


def test_headroom_reports_occupancy_and_cost_apart():
    r = headroom(System({SHOP_BROWSER: 1, SHOP_BUYER: 1}, server=Server(workers=2)),
                 {"browser": 3, "buyer": 2}, backend="cpu")
    system = System({SHOP_BROWSER: 3, SHOP_BUYER: 2}, server=Server(workers=2))
    assert r.capacity == 2 and r.exact == occupancy(system)
    assert r.cost_load == cost_load(system) and r.cost_witness.cycle
    # each witness is a cycle of its own resource's worst mean
    for run, value in ((r.witness, r.exact), (r.cost_witness, r.cost_load)):
        assert Fraction(sum(s.cost for s in run.cycle), len(run.cycle)) == value
    from dvecost.capacity_report import headroom_text

    text = headroom_text(r)
    assert "worst busy workers per tick" in text and "worst cost load ('server'" in text


QUICK = Scenario("quick", [Think(1), Request("q", service=1, cost=1)])
BLOCKER = Scenario("blocker", [Request("blk", service=2, cost=0)])


def quick_blocker(n):
    return System(apportion({QUICK: 3, BLOCKER: 1}, n), server=Server(workers=1))


def test_a_certified_answer_has_every_smaller_n_decided():
    """On cost, 3 quick reach 3/4 and 4 (3 quick + 1 blocker) fall back to 3/5; bisection
    (1, 2, 4, 8, then 5..7) once answered 5, certified, without evaluating 3."""
    r = saturate(quick_blocker, "3/4", resource="server", max_clients=8, backend="cpu",
                 method="exact")
    assert r.saturating_clients == 3 and r.certified
    assert cost_load(quick_blocker(3).with_resource("server")) == Fraction(3, 4)
    assert all(r.point(n).reaches(Fraction(3, 4)) is False for n in (1, 2))
    assert r.point(4).exact < Fraction(3, 4) and not r.monotone
    d = r.as_dict()
    assert d["answer_certified"] is True and d["undecided_below"] == []


def test_no_answer_lists_what_was_not_decided():
    r = saturate(quick_blocker, "5", resource="server", max_clients=8, backend="cpu",
                 method="exact")
    assert r.saturating_clients is None
    if r.note is None:          # the shape's bound did not settle it
        assert r.undecided_below == tuple(n for n in range(1, 9) if r.point(n) is None
                                          or r.point(n).reaches(r.capacity) is not False)
        assert r.certified == (not r.undecided_below)


def test_a_cost_resource_needs_a_capacity():
    from dve.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="no default capacity"):
        saturate(quick_blocker, resource="server", max_clients=4, backend="cpu")
    with pytest.raises(ConfigurationError, match="no resource 'cpu'"):
        saturate(quick_blocker, 1, resource="cpu", max_clients=4, backend="cpu")


def test_a_free_scenario_first_does_not_make_the_capacity_zero():
    free = Scenario("free", [Think(1), Request("f", service=1, cost=0)])
    paid = Scenario("paid", [Think(1), Request("p", service=1, cost=2)])
    r = saturate(lambda n: System(apportion({free: 1, paid: 1}, n), server=Server(1)),
                 backend="cpu", method="exact", max_clients=16)
    assert r.capacity == 1 and r.saturating_clients == 4 and r.certified


def test_interleaved_clients_that_appear_late_are_seen():
    """No server, async: a costly scenario first appears at N=4; the shortcut that looked at
    N=1 and 2 only said no N reaches the capacity."""
    light = Scenario("light", [Think(1), Request("l", service=1, cost=1)])
    heavy = Scenario("heavy", [Request("h", service=1, cost=3)])

    def family(n):
        counts = {light: n} if n < 4 else {light: n - 1, heavy: 1}
        return System(counts, composition="async")

    r = saturate(family, 2, backend="cpu", max_clients=6)
    assert r.saturating_clients == 4 and r.certified
    four = family(4)
    a = dvecost.analyze(four.to_model(), cost="work", symmetry="off", backend="cpu")
    assert Fraction(a.value) >= 2 and r.point(1).exact < 2 and r.point(3) is None
    three = dvecost.analyze(family(3).to_model(), cost="work", symmetry="off", backend="cpu")
    assert Fraction(three.value) == r.point(1).exact      # the same scenarios: the same load


def test_a_stopped_search_is_not_certified():
    r = saturate(pair_family(CHEAP, DEAR), backend="cpu", method="exact", max_states=5)
    assert r.status == "limit" and r.saturating_clients is None
    assert r.certified is False and r.as_dict()["answer_certified"] is False


# ---------------------------------------------------------------------------- properties

@st.composite
def scenarios(draw, name):
    def request(i):
        return Request(f"{name}{i}", service=draw(st.integers(1, 3)),
                       cost=draw(st.integers(0, 5)))
    steps = [Think(draw(st.integers(0, 3))), request(1)]
    if draw(st.booleans()):
        steps.append(Choice([Think(1)], [request(2)]))
    return Scenario(name, steps)


@st.composite
def systems(draw):
    a, b = draw(scenarios("a")), draw(scenarios("b"))
    workers = draw(st.integers(1, 2))
    server = Server(workers=workers, admissions=draw(st.integers(1, workers)))
    return a, b, server


def recost(sc: Scenario, k: int) -> Scenario:
    """The same scenario with every request's cost changed (occupancy must not move)."""
    def step(x):
        if isinstance(x, Request):
            return Request(x.name, service=x.service, cost=(x.cost + k) % 7)
        if isinstance(x, Choice):
            return Choice(*[[step(y) for y in br] for br in x.branches])
        return x
    return Scenario(sc.name, [step(x) for x in sc.steps])


SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(systems(), st.integers(1, 6))
def test_costs_do_not_change_occupancy(drawn, k):
    a, b, server = drawn
    one = System({a: 2, b: 1}, server=server)
    other = System({recost(a, k): 2, recost(b, k): 1}, server=server)
    assert occupancy(one) == occupancy(other)
    family = lambda n, x=a, y=b: System(apportion({x: 2, y: 1}, n), server=server)  # noqa: E731
    refam = lambda n, x=recost(a, k), y=recost(b, k): System(  # noqa: E731
        apportion({x: 2, y: 1}, n), server=server)
    r1 = saturate(family, backend="cpu", max_clients=4, method="exact", witness=False)
    r2 = saturate(refam, backend="cpu", max_clients=4, method="exact", witness=False)
    assert (r1.saturating_clients, r1.certified) == (r2.saturating_clients, r2.certified)


@SETTINGS
@given(systems())
def test_saturate_agrees_with_exact_analysis(drawn):
    a, b, server = drawn
    family = lambda n: System(apportion({a: 2, b: 1}, n), server=server)  # noqa: E731
    for method in ("exact", "auto"):
        r = saturate(family, backend="cpu", max_clients=4, method=method, witness=False)
        w = server.workers
        n = r.saturating_clients
        if n is not None:
            assert r.certified and occupancy(family(n)) == w
        top = n - 1 if n is not None else 4
        for m in range(1, top + 1):
            assert occupancy(family(m)) < w
        for p in r.curve:       # every point's bounds hold the exact occupancy
            exact = occupancy(family(p.clients))
            assert (p.lower is None or p.lower <= exact) and \
                (p.upper is None or exact <= p.upper)


@SETTINGS
@given(systems())
def test_workers_is_monotone_in_each_count(drawn):
    a, b, server = drawn
    base = System({a: 1, b: 1}, server=server)
    need = {}
    for na, nb in ((1, 1), (2, 1), (1, 2), (2, 2)):
        r = workers_needed(base, {"a": na, "b": nb}, backend="cpu", jobs=1, max_workers=6,
                           cost=False)
        need[na, nb] = r.workers if r.workers is not None else 7
        # the answer against the oracle: saturated with one fewer, not with it
        if r.workers is not None:
            sys_w = System({a: na, b: nb}, server=Server(r.workers, admissions=min(
                server.admissions, r.workers)))
            assert occupancy(sys_w) < r.workers
    assert need[1, 1] <= need[2, 1] <= need[2, 2] and need[1, 1] <= need[1, 2] <= need[2, 2]


@SETTINGS
@given(scenarios("a"))
def test_one_client_occupies_the_same_whatever_the_workers(sc):
    loads = {w: headroom(System({sc: 1}, server=Server(workers=w)), {"a": 1}, backend="cpu",
                         cost=False).exact for w in (1, 2, 3)}
    assert len(set(loads.values())) == 1
    assert loads[1] == occupancy(System({sc: 1}, server=Server(workers=1)))


def test_headroom_saturate_and_frontier_agree_where_they_meet():
    from dvecost.capacity import frontier

    base = System({CHEAP: 1, DEAR: 1}, server=Server(workers=1))
    r = saturate(pair_family(CHEAP, DEAR), backend="cpu", method="exact")
    f = frontier(base, "cheap", "dear", max_clients=(3, 3), backend="cpu", jobs=1)
    for p in r.curve:
        mix = dict(p.mix)
        h = headroom(base, {"cheap": mix.get("cheap", 0), "dear": mix.get("dear", 0)},
                     backend="cpu", cost=False)
        assert h.exact == p.exact and h.saturated == bool(p.reaches(r.capacity))
        q = f.point(mix.get("cheap", 0), mix.get("dear", 0))
        if q is not None:
            assert q.exact == p.exact and q.saturated == h.saturated


def test_requests_that_cost_nothing_still_occupy_workers():
    """Every request of cost 0: headroom and workers once divided by a capacity of 0."""
    free = Scenario("free", [Think(1), Request("x", service=2, cost=0)])
    base = System({free: 1}, server=Server(workers=2))
    h = headroom(base, {"free": 3}, backend="cpu")
    assert h.exact == occupancy(System({free: 3}, server=Server(workers=2))) == Fraction(6, 5)
    assert h.capacity == 2 and h.cost_load == 0 and not h.saturated
    w = workers_needed(base, {"free": 3}, backend="cpu", jobs=1)
    assert w.workers == 2 and w.tried[0].saturated and w.cost_load == 0


def test_the_capacity_questions_run_under_a_memory_guard_by_default(monkeypatch):
    """Nothing they do by default may take the machine: with no --max-memory, every analysis
    runs under dvecost.saturation.memory_guard (here made tiny, so the first one stops)."""
    import dvecost.saturation as sat
    from runtime.errors import MemoryLimitExceeded

    monkeypatch.setattr(sat, "memory_guard", lambda: 1)
    r = saturate(pair_family(CHEAP, DEAR), backend="cpu", method="exact")
    assert r.status == "limit" and not r.certified and "memory" in r.stopped
    w = workers_needed(System({CHEAP: 1}, server=Server()), {"cheap": 2}, backend="cpu",
                       jobs=1)
    assert w.status == "limit" and w.workers is None
    with pytest.raises(MemoryLimitExceeded):
        headroom(System({CHEAP: 1}, server=Server()), {"cheap": 2}, backend="cpu")
    # a limit the caller gives wins over the guard
    ok = headroom(System({CHEAP: 1}, server=Server()), {"cheap": 2}, backend="cpu",
                  max_memory=2**40)
    assert ok.exact == Fraction(1, 2)
