"""The saturation search as an object: its pieces on their own, and what it does not repeat
(a model checked or analysed twice, a run simulated twice)."""

from __future__ import annotations

import collections
from fractions import Fraction as F

import dve.check
import scenarios.bounds
from scenarios import Request, Scenario, Server, System, Think
from scenarios.saturation import Evaluation, PointStarted, SaturationPoint
from scenarios.search import SaturationSearch

U = Scenario("u", [Think(2), Request("r", service=1)])


def n_clients(model):
    return sum(1 for p in model.processes if p.name != "server")


def counting(load):
    """An evaluator of ``load(n)`` that records each call."""
    calls = []

    def evaluate(model, *, resource, witness):
        calls.append((n_clients(model), resource, witness))
        return Evaluation(load(n_clients(model)), 10, witness="run" if witness else None)

    return evaluate, calls


def test_a_search_evaluates_nothing_until_it_runs_and_its_pieces_stand_alone():
    evaluate, calls = counting(lambda n: min(F(1), F(n, 3)))
    heard = []
    s = SaturationSearch(lambda n: System({U: n}, server=Server()), evaluate=evaluate,
                         progress=heard.append)
    assert calls == [] and heard == [] and s.points == {} and s.capacity == 1
    p = s.point(2)                          # one point, decided, not recorded
    assert (p.clients, p.exact, p.how) == (2, F(2, 3), "exact") and s.points == {}
    s.waiting(2)
    s.received(p)
    assert s.points == {2: p} and heard == [PointStarted(2, (("u", 2),)), p]
    assert s.result().curve == (p,) and s.result().saturating_clients is None


def test_each_model_is_evaluated_once_per_search():
    """``N = 1`` of one scenario alone is the model of that scenario's alone rate: the
    bounds' alone rate and the point share one evaluation."""
    evaluate, calls = counting(lambda n: min(F(1), F(n, 3)))
    s = SaturationSearch(lambda n: System({U: n}, server=Server()), evaluate=evaluate,
                         method="auto", witness=False)
    r = s.run()
    assert r.saturating_clients == 3 and r.alone == (("u", F(1, 3)),)
    value_only = [c for c in calls if not c[2]]
    assert len(value_only) == len(set(value_only))
    assert (1, "busy", False) in value_only


def test_two_searches_share_nothing():
    a, calls_a = counting(lambda n: F(n, 4))
    b, calls_b = counting(lambda n: F(n, 2))
    fam = lambda n: System({U: n})                  # noqa: E731
    ra = SaturationSearch(fam, evaluate=a, witness=False).run()
    rb = SaturationSearch(fam, evaluate=b, witness=False).run()
    assert (ra.saturating_clients, rb.saturating_clients) == (4, 2)
    assert len(calls_b) == len({c[0] for c in calls_b})   # none answered by a's evaluations


def test_the_real_search_checks_each_model_once_and_simulates_the_answer_once(monkeypatch):
    """``dvecost saturate editor``: each model built is checked once (the evaluator's own
    check is gone: dve.load_model does it), and the answer's run, found by simulation at
    N = 6, is not simulated again to be decoded."""
    import dvecost.analysis
    from dvecost.saturation import saturate

    checks, analyses = collections.Counter(), []
    check, analyze = dve.check.check_model, dvecost.analysis.analyze
    monkeypatch.setattr(dve.check, "check_model", lambda m, *a, **k: checks.update([m])
                        or check(m, *a, **k))
    monkeypatch.setattr(dvecost.analysis, "analyze", lambda m, *a, **k: analyses.append(1)
                        or analyze(m, *a, **k))
    simulated = collections.Counter()
    find = scenarios.bounds.find_witness

    def counted(system, *a, **k):
        if k.get("target") is not None:
            simulated[system] += 1
        return find(system, *a, **k)

    monkeypatch.setattr(scenarios.bounds, "find_witness", counted)
    r = saturate("editor", backend="cpu")
    assert r.saturating_clients == 6 and r.point(6).how == "witness" and r.witness.cycle
    assert sum(checks.values()) >= len(analyses) > 0 and max(checks.values()) == 1
    assert simulated and max(simulated.values()) == 1


def test_kept_run_is_the_smallest_saturating_one():
    """The bounds keep the run of the smallest N decided by a run, whatever order the
    points come in (the bisection decides 8 before 6)."""
    from dvecost.saturation import evaluator

    s = SaturationSearch("editor", evaluate=evaluator(backend="cpu"), method="auto")
    r = s.run()
    assert r.saturating_clients == 6 and s.bounds.kept_run is None   # handed to the answer
    t = SaturationSearch("editor", evaluate=evaluator(backend="cpu"), method="bounds")
    t.alone_rates  # (filled as the bounds need them)
    for n in (8, 6):
        p = t.point(n)
        assert isinstance(p, SaturationPoint) and p.how == "witness"
    assert t.bounds.kept_run[0] == 6
