"""``dvecost saturate --exact-budget``: the time the exact analysis of one point may take inside
``--method auto`` (and ``bounds``), past which the point is left open between its certified
bounds (issue 24, "never fall off the cliff").

What is checked: a real exploration stops at its budget, early; a point forced over its budget
is open, never decided, the answer a certified range holding the answer of ``--method exact``,
the reason in the text, the JSON and the exit code (3); with a budget it does not reach, the
search is the one without a budget, point for point, and answers as ``--method exact``
(property over generated systems, against exact analysis of the full product); the flag's
parsing and the places it does not apply (exit 2).

A budget "forced over" uses a clock that jumps once the search starts deciding its points
(:meth:`scenarios.search.SaturationSearch.waiting`): every exact analysis of a point then
spends its budget at its first progress report, whatever the machine's speed, while the alone
rates (analysed before any point) are not touched.
"""

from __future__ import annotations

import json
import re
import time
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dvecost
import dvecost.saturation
from dve.errors import ConfigurationError
from dvecost.cli import main
from dvecost.saturation import (EXACT_BUDGET_SECONDS, ExactBudgetExceeded, budget_for,
                                evaluator, saturate)
from scenarios import (Choice, Request, Scenario, Server, System, Think, apportion,
                       resolve_spec)
from scenarios.search import SaturationSearch


def run(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.fixture
def forced(monkeypatch):
    """Every exact analysis of a point spends its budget at once (see the module's text)."""
    deciding = []
    real_waiting, real_budgeted = SaturationSearch.waiting, dvecost.saturation.budgeted

    def waiting(self, n):
        deciding.append(n)
        real_waiting(self, n)

    def clock():
        # An hour more at each reading once points are being decided.
        clock.ticks += bool(deciding)
        return time.perf_counter() + 3600.0 * clock.ticks
    clock.ticks = 0

    monkeypatch.setattr(SaturationSearch, "waiting", waiting)
    monkeypatch.setattr(dvecost.saturation, "budgeted",
                        lambda seconds, report: real_budgeted(seconds, report, clock))
    return deciding


def occupancy(system: System) -> Fraction:
    """The oracle: the maximal cycle mean of ``busy`` on the full product, no budget."""
    a = dvecost.analyze(system.to_model(), cost="busy", symmetry="off", backend="cpu")
    assert a.certified
    return Fraction(a.value)


# ---------------------------------------------------------------------------- the evaluator

def test_a_budget_stops_a_large_exploration_early():
    """42 viewers and converters: exact analysis runs for minutes; half a second of budget
    stops it within a few seconds (the model's compilation and the first chunks report
    nothing), naming the budget and the states found."""
    _, family = resolve_spec("dvecost/examples/converters.py")
    system = family(42)
    model = system.to_model()
    t0 = time.perf_counter()
    with pytest.raises(ExactBudgetExceeded) as info:
        evaluator(backend="cpu", budget=0.5)(model, resource=system.resource, witness=False)
    assert time.perf_counter() - t0 < 15.0
    exc = info.value
    assert exc.seconds == 0.5 and str(exc).startswith("exact-analysis budget of 0.5 s spent: ")
    assert str(exc).endswith(f"{exc.n_explored:,} states found")


def test_the_answers_run_and_unbudgeted_evaluations_are_never_cut():
    """A decoded evaluation (the answer's run, of a point already decided) has no budget,
    nor has an evaluator without one: both finish where a zero budget stops the value."""
    system = resolve_spec("editor")[1](4)
    model = system.to_model()
    with pytest.raises(ExactBudgetExceeded):
        evaluator(backend="cpu", budget=0.0)(model, resource="busy", witness=False)
    full = evaluator(backend="cpu", budget=0.0)(model, resource="busy", witness=True)
    plain = evaluator(backend="cpu")(model, resource="busy", witness=False)
    assert full.certified and full.exact == plain.exact == occupancy(system)


def test_budget_for_each_method():
    assert budget_for("auto") == budget_for("bounds") == EXACT_BUDGET_SECONDS
    assert budget_for("auto", 2.5) == 2.5 and budget_for("auto", 0) is None
    assert budget_for("exact") is None and budget_for("exact", 0) is None
    for bad in (-1, float("nan"), True):
        with pytest.raises(ConfigurationError, match="bad exact-analysis budget"):
            budget_for("auto", bad)
    with pytest.raises(ConfigurationError, match="method exact analyses every point"):
        saturate("editor", backend="cpu", method="exact", exact_budget=5)


# ---------------------------------------------------------------------------- the search

def test_a_point_over_its_budget_is_open_and_the_range_holds_the_exact_answer(capsys, forced):
    exact_code, exact_out, _ = run(capsys, "saturate", "editor", "--method", "exact",
                                   "--json", "-q")
    assert exact_code == 0
    exact = json.loads(exact_out)
    assert exact["answer_certified"] and exact["exact_budget"] is None
    answer = exact["saturating_clients"]

    forced.clear()
    code, out, err = run(capsys, "saturate", "editor", "--exact-budget", "10", "--json")
    assert code == 3
    d = json.loads(out)
    assert d["exact_budget"] == 10.0 and d["answer_certified"] is False
    lo, hi = d["answer_range"]
    assert lo <= answer <= hi and hi - lo <= 2
    opened = [p for p in d["curve"] if p["decided"] == "open"]
    assert opened and not [p for p in d["curve"] if p["decided"] == "exact"]
    loads = {p["clients"]: Fraction(p["exact"]) for p in exact["curve"] if p["exact"]}
    for p in opened:
        assert p["note"].startswith("exact analysis stopped: exact-analysis budget of 10 s "
                                    "spent loading the model, before exploration; low: ")
        assert f"dvecost: N={p['clients']}: {p['note']}" in err.splitlines()
        # (its progress line says so as it ends)
        assert any(re.fullmatch(rf"N = {p['clients']} \(.*\): load .*, left open, exact "
                                r"analysis stopped: exact-analysis budget of 10 s spent "
                                r"loading the model, before exploration, \d+\.\d\d s", ln)
                   for ln in err.splitlines())
        if p["clients"] in loads:   # the bounds hold the exact load, which is not reported
            assert Fraction(p["low"]) <= loads[p["clients"]] <= Fraction(p["high"])
        assert p["exact"] is None
    # The text says which point is open, why, and how to give exact analysis more time.
    forced.clear()
    code, out, _ = run(capsys, "saturate", "editor", "--exact-budget", "10", "-q")
    assert code == 3
    lines = out.splitlines()
    assert any(ln.startswith(f"not certified: N={opened[0]['clients']} left open") and
               "exact-analysis budget of 10 s spent" in ln and
               f"the answer lies in {lo}..{hi}" in ln for ln in lines)
    assert any(ln.startswith("hint: --exact-budget SECONDS") for ln in lines)


def test_without_a_budget_the_same_search_decides_the_point_exactly(capsys, forced):
    """'--exact-budget none' (and 0): the clock is never read, the point is exact."""
    for none in ("none", "0"):
        code, out, _ = run(capsys, "saturate", "editor", "--exact-budget", none, "--json",
                           "-q")
        assert code == 0
        d = json.loads(out)
        assert d["exact_budget"] is None and d["answer_certified"] is True
        assert any(p["decided"] == "exact" for p in d["curve"])


@st.composite
def scenario(draw, name):
    def request(i):
        return Request(f"{name}{i}", service=draw(st.integers(1, 3)))
    steps = [Think(draw(st.integers(0, 3))), request(1)]
    if draw(st.booleans()):
        steps.append(Choice([Think(1)], [request(2)]))
    return Scenario(name, steps)


@st.composite
def families(draw):
    a, b = draw(scenario("a")), draw(scenario("b"))
    workers = draw(st.integers(1, 2))
    server = Server(workers=workers, admissions=draw(st.integers(1, workers)))
    return lambda n: System(apportion({a: 2, b: 1}, n), server=server)


SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])


def _table(r):
    return [(p.clients, p.how, p.exact, p.lower, p.upper) for p in r.curve]


@SETTINGS
@given(families())
def test_a_budget_not_reached_changes_nothing(family):
    """An hour of budget: the search without one, point for point, and the answer of
    --method exact; every point's bounds hold the exact load."""
    kw = dict(backend="cpu", max_clients=4, witness=False)
    budget = saturate(family, method="auto", exact_budget=3600, **kw)
    free = saturate(family, method="auto", exact_budget=0, **kw)
    exact = saturate(family, method="exact", **kw)
    assert _table(budget) == _table(free)
    assert (budget.saturating_clients, budget.certified) == (exact.saturating_clients,
                                                             exact.certified)
    for p in budget.curve:
        load = occupancy(family(p.clients))
        assert p.lower is None or p.lower <= load
        assert p.upper is None or load <= p.upper


@SETTINGS
@given(families())
def test_a_budget_spent_never_decides_a_point(forced, family):
    """Every exact analysis of a point over its budget: no point is exact, each point's
    bounds hold its exact load, and the answer (or its range) holds that of exact
    analysis."""
    kw = dict(backend="cpu", max_clients=4, witness=False)
    exact = saturate(family, method="exact", **kw)
    forced.clear()
    r = saturate(family, method="auto", exact_budget=1, **kw)
    assert r.status == "ok"
    assert not [p for p in r.curve if p.how == "exact"]
    for p in r.curve:
        load = occupancy(family(p.clients))
        assert p.lower is None or p.lower <= load
        assert p.upper is None or load <= p.upper
        if p.how == "open":
            assert p.note.startswith("exact analysis stopped: exact-analysis budget of 1 s")
    if r.certified:
        assert r.saturating_clients == exact.saturating_clients
    elif r.answer_range is not None and exact.saturating_clients is not None:
        lo, hi = r.answer_range
        assert lo <= exact.saturating_clients <= hi


# ---------------------------------------------------------------------------- the flag

@pytest.mark.parametrize("argv, message", [
    (("editor", "--exact-budget", "soon"), "bad duration 'soon'"),
    (("editor", "--exact-budget", "-3"), "bad duration '-3'"),
    (("editor", "--exact-budget", ""), "bad duration ''"),
    (("editor", "--method", "exact", "--exact-budget", "5"),
     "method exact analyses every point to its end"),
    (("dvecost/examples/client_server_template.dve", "--param", "N", "--exact-budget", "5"),
     "--exact-budget applies to the search over a scenario spec"),
    (("editor", "--frontier", "reader,writer", "--exact-budget", "5"),
     "not to --frontier"),
])
def test_the_flag_is_checked_before_any_work(capsys, argv, message):
    code, out, err = run(capsys, "saturate", *argv)
    assert code == 2 and message in err and out == ""


def test_the_json_says_the_budget_in_force(capsys):
    code, out, _ = run(capsys, "saturate", "paper-server", "--json", "-q")
    assert code == 0 and json.loads(out)["exact_budget"] == EXACT_BUDGET_SECONDS
    code, out, _ = run(capsys, "saturate", "paper-server", "--exact-budget", "2m", "--json",
                       "-q")
    assert code == 0 and json.loads(out)["exact_budget"] == 120.0
