"""Cutoffs (scenarios/cutoff.py): from P clients of a scenario on, the load is that of P.

The oracle is the full product (``symmetry='off'``), analysed for every count: it shares no
code with the cutoff, which only reads the period of one client alone."""

from __future__ import annotations

from fractions import Fraction

import pytest

from dvecost.capacity_report import frontier_text
from dvecost.analysis import analyze
from dvecost.saturation import evaluator
from scenarios import Choice, Loop, Request, Scenario, Server, System, Think
from scenarios.capacity import frontier
from scenarios.cutoff import cutoff
from scenarios.templates import EDITOR_SCENARIOS

X = Scenario("x", [Think(2), Request("r", 1)])
PICK = Scenario("o", [Think(1), Choice(Request("a", 1), Request("b", 3))])


def loads(system: System) -> tuple[Fraction, Fraction]:
    """The maximal and minimal load of the full product."""
    model = system.to_model()
    return tuple(Fraction(analyze(model, cost="server", backend="cpu", witness=False,
                                  symmetry="off", mode=m).value) for m in ("max", "min"))


@pytest.mark.parametrize("x, workers, other", [
    (X, 3, PICK),
    (Scenario("x", [Request("r", 1), Think(2)]), 2, PICK),
    (Scenario("x", [Think(1), Request("r", 2), Think(1)]), 1, None),
    (Scenario("x", [Loop([Think(1)], times=2), Request("r", 2)]), 2, None),
])
def test_the_load_is_constant_from_the_cutoff_on(x, workers, other):
    system = System({x: 1, **({other: 1} if other else {})}, server=Server(workers))
    p = cutoff(system, "x")
    assert p is not None and p <= 8
    at = [loads(system.with_counts({x: n, **({other: 1} if other else {})}))
          for n in (p, p + 1, p + 2)]
    assert at[0] == at[1] == at[2]


def test_the_cutoff_is_tight_here():
    """One client fewer than the cutoff still changes the load (the test above can fail)."""
    system = System({X: 1, PICK: 1}, server=Server(3))
    assert cutoff(system, "x") == 5
    assert loads(system.with_counts({X: 4, PICK: 1}))[0] == Fraction(7, 6)
    assert loads(system.with_counts({X: 5, PICK: 1}))[0] == Fraction(4, 3)


def test_the_period_by_hand():
    # reader: 1 tick to send, admitted (1 tick of service), served its 2nd tick, 1 to read
    # the reply, 8 thinking: 12. analyst: 12 thinking, send, 8 of service, reply: 22.
    reader = EDITOR_SCENARIOS[0]
    analyst = Scenario("analyst", [Think(12), Request("report", service=8)])
    assert cutoff(System({reader: 1}, server=Server(4)), "reader") == 12
    assert cutoff(System({analyst: 1}, server=Server(8)), "analyst") == 22


@pytest.mark.parametrize("steps", [
    [Think(1), Choice(Request("a", 1), Request("b", 2))],            # a choice
    [Request("a", 1), Think(1), Request("b", 2)],                     # two requests
    [Loop([Think(1), Request("a", 1)], times=2)],                     # two, in a loop
    [Loop(Think(1), times=(1, 2)), Request("a", 1)],                  # a variable loop
])
def test_no_cutoff_where_the_argument_does_not_apply(steps):
    sc = Scenario("s", steps)
    assert cutoff(System({sc: 1}, server=Server(2)), "s") is None


def test_no_cutoff_without_a_server_or_for_an_unknown_scenario():
    assert cutoff(System({X: 1}), "x") is None
    assert cutoff(System({X: 1}, server=Server()), "nope") is None


def test_the_frontier_with_cutoffs_is_the_frontier_without():
    spec = System({X: 1, PICK: 1}, server=Server(3))
    ev = evaluator(backend="cpu")
    plain = frontier(spec, "x", "o", evaluate=ev, max_clients=(8, 2))
    cut = frontier(spec, "x", "o", evaluate=ev, max_clients=(8, 2), cutoffs=True)
    assert cut.stair == plain.stair and (cut.cutoff_a, cut.cutoff_b) == (5, None)
    assert max(p.n_a for p in cut.points) == 5 < max(p.n_a for p in plain.points)
    assert cut.analyses < plain.analyses
    # Every row's load (or its bounds, where the walk passed the row over) is the one
    # analysed without the cutoff; the rows above the cutoff all read the cutoff's point.
    compared = 0
    for a, b in plain.stair:
        if b is None or plain.point(a, b) is None:
            continue
        here, exact = cut.point(a, b), plain.point(a, b).exact
        if here is not None:
            assert here.exact == exact
            compared += 1
        else:
            low, high = cut.load_range(a, b)
            assert (low is None or low <= exact) and exact <= high
    assert compared >= 2 and all(cut.point(a, 2) is cut.point(5, 2) for a in range(5, 9))
    assert "x from 5 on: the load of 5 x" in frontier_text(cut)
    assert cut.as_dict()["cutoffs"] == {"x": 5, "o": None}


def test_dvecost_frontier_uses_the_cutoffs():
    """What ``dvecost saturate --frontier`` runs: no count of x above its cutoff analysed."""
    from dvecost.capacity import frontier as dv_frontier

    spec = System({X: 1, PICK: 1}, server=Server(3))
    r = dv_frontier(spec, "x", "o", max_clients=(7, 1), backend="cpu", jobs=1)
    assert r.cutoff_a == 5 and max(p.n_a for p in r.points) <= 5
    assert len(r.stair) == 8 and r.stair[7][1] == r.stair[5][1]


def test_saturate_on_a_pool_that_admissions_bound():
    """x on three workers: one admission per tick of 1 tick of service, so at most one worker
    is ever busy with x. Asked whether the load reaches 1 (not the capacity 3, which the
    admissions alone rule out with no analysis), the search finds it at 5, x's cutoff: the
    load can change no more from there, so no larger N is analysed."""
    from dvecost.saturation import saturate

    family = lambda n: System({X: n}, server=Server(3))  # noqa: E731
    r = saturate(family, backend="cpu", witness=False, method="exact")
    assert r.saturating_clients is None and r.curve == () and r.load_bound == 1
    assert "it is at most 1 (one request admitted per tick" in r.note
    r = saturate(family, "1", backend="cpu", witness=False, method="exact")
    assert r.saturating_clients == 5 and max(p.clients for p in r.curve) == 5
    assert [str(p.exact) for p in r.curve if p.how == "exact"] == ["1/5", "2/5", "4/5", "1"]
    assert r.point(3).how == "bound" and r.certified     # 3 x 1/5 < 1 by the alone rate
    # The oracle, past the cutoff: the full product of 9 clients.
    assert loads(System({X: 9}, server=Server(3)))[0] == 1


def test_saturate_with_cutoffs_finds_the_same_answer():
    """analysts.py's family (cutoff 22): the answer 22 without analysing 32 analysts."""
    from dvecost.saturation import saturate

    analyst = Scenario("analyst", [Think(12), Request("report", service=8)])
    r = saturate(lambda n: System({analyst: n}, server=Server(8)), backend="cpu",
                 witness=False, method="exact")
    assert r.saturating_clients == 22 and max(p.clients for p in r.curve) == 22
    assert r.point(21).exact == Fraction(84, 11) and r.note is None


def test_no_plateau_when_a_scenario_has_no_cutoff():
    from scenarios.search import plateau as _plateau

    both = lambda n: System({X: n, PICK: 1}, server=Server(3))      # noqa: E731
    assert _plateau(both, 20) is None
    assert _plateau(lambda n: System({X: n}, server=Server(3)), 20) == (5, "x 5")
    assert _plateau(lambda n: System({X: n}, server=Server(3)), 5) is None  # nothing above
