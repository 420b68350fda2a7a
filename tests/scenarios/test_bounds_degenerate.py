"""``--method auto|bounds`` on systems with a scenario that takes no time or charges nothing
(issue 28): the alone-rate bound must not refuse what exact analysis answers, and stays an
upper bound of the exact load."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dvecost import analyze
from dvecost.saturation import saturate
from scenarios import Loop, Request, Scenario, Server, System, Think
from scenarios.bounds import alone_rates, bound_gap, ticks, upper_bound

NO_TIME = """
from scenarios import *
a = Scenario("a", [Think(1), Request("r", service=1)])
z = Scenario("z", [Loop(Request("r", service=1), times=0)])
def system(n):
    return apportion({a: 3, z: 1}, n)
"""

COST_ZERO_FIRST = """
from scenarios import *
a = Scenario("a", [Think(1), Request("r", service=1, cost=0)])
b = Scenario("b", [Think(3), Request("s", service=1)])
{extra}
def system(n):
    return {{a: 1, b: n}}
"""


def _answers(path, **kw):
    out = {}
    for method in ("exact", "auto", "bounds"):
        r = saturate(str(path), method=method, backend="cpu", max_clients=8, **kw)
        out[method] = r
    return out


def _loads_agree(rs):
    # Every point: exact where known; a bracket from the bounds containing the exact load.
    exact = {p.clients: p.exact for p in rs["exact"].curve if p.exact is not None}
    for m in ("auto", "bounds"):
        for p in rs[m].curve:
            if p.clients not in exact:
                continue
            if p.exact is not None:
                assert p.exact == exact[p.clients]
            if p.high is not None:
                assert exact[p.clients] <= p.high
            if p.low is not None:
                assert p.low <= exact[p.clients]


@pytest.mark.parametrize("text", [NO_TIME, COST_ZERO_FIRST.format(extra=""),
                                  COST_ZERO_FIRST.format(extra="server = Server()")],
                         ids=["no-time", "cost-0-no-server", "cost-0-server"])
def test_auto_and_bounds_answer_as_exact(tmp_path, text):
    f = tmp_path / "s.py"
    f.write_text(text)
    rs = _answers(f)
    want = rs["exact"].saturating_clients
    assert want is not None
    assert rs["auto"].saturating_clients == rs["bounds"].saturating_clients == want
    _loads_agree(rs)


def test_a_scenario_that_takes_no_time_has_no_alone_rate():
    a = Scenario("a", [Think(1), Request("r", service=1)])
    z = Scenario("z", [Think(0), Loop(Request("r", service=1), times=0)])
    assert ticks(a) and not ticks(z)
    assert "takes no time" in bound_gap(System({a: 1, z: 1}))
    assert bound_gap(System({a: 2})) is None
    # The shape's bound only; the alone rates are not asked for.
    ub = upper_bound(System({a: 1, z: 1}), lambda one: pytest.fail("asked an alone rate"))
    assert ub.alone_sum is None and ub.value == ub.shape


def _exact(system: System) -> Fraction:
    return Fraction(analyze(system.to_model(), cost=system.resource, backend="cpu",
                            witness=False).value)


@pytest.mark.parametrize("server,resource", [(None, None), (Server(), "server"),
                                             (Server(workers=2), "server"), (Server(), "busy")])
def test_a_scenario_that_charges_nothing_has_rate_0_and_the_bound_holds(server, resource):
    free = Scenario("free", [Think(1), Request("f", service=2, cost=0)])
    idle = Scenario("idle", [Think(2)])                      # sends no request at all
    paid = Scenario("paid", [Think(2), Request("p", service=1, cost=2)])
    asked = []

    def alone(one):
        asked.append(one.scenarios[0].name)
        return _exact(one)

    for counts in ({free: 1, paid: 1}, {free: 2, idle: 1, paid: 2}, {paid: 1, free: 1}):
        system = System(counts, server=server, resource=resource)
        rates = {name: rho for name, _, rho in alone_rates(system, alone)}
        # A request of cost 0 charges no cost, but occupies a worker ('busy').
        assert rates["free"] == (0 if resource != "busy" else
                                 _exact(System({free: 1}, server=server, resource="busy")))
        assert rates.get("idle", 0) == 0
        assert rates["paid"] == _exact(System({paid: 1}, server=server, resource=resource))
        assert _exact(system) <= upper_bound(system, alone).value
    # A scenario that sends nothing is never analysed alone (its system cannot be built);
    # without a server a cost-0 request charges no transition, so neither is that one.
    assert "idle" not in asked and (server is not None or "free" not in asked)


def test_interleaved_clients_with_a_free_and_an_idle_scenario(tmp_path):
    # The interleaved system's load is the largest alone rate of its scenarios: one whose
    # requests cost 0 or that sends none has rate 0 (its model alone lacks 'work'), not an
    # error; the load is that of the rendered system, analysed whole.
    f = tmp_path / "s.py"
    f.write_text(COST_ZERO_FIRST.format(extra="i = Scenario('i', [Think(3)])\n"
                                        "composition = 'async'").replace(
        "{a: 1, b: n}", "{a: 1, b: n, i: 1}"))
    from scenarios.loader import load_spec
    whole = load_spec(f)(2)
    want = Fraction(analyze(whole.to_model(), cost="work", backend="cpu", witness=False).value)
    assert want == Fraction(1, 4)                     # b: think 3, work 1
    for method in ("exact", "auto"):
        r = saturate(str(f), method=method, backend="cpu", max_clients=8)
        assert r.saturating_clients is None
        assert {p.exact for p in r.curve} == {want}
