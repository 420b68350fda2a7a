"""The saturation search: its logic on fake curves, and its answers on real models."""

from __future__ import annotations

import json
import math
import pathlib
from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dve import syntax
from dve.errors import ConfigurationError
from runtime.errors import Interrupted, StateLimitExceeded, TimeLimitExceeded
from dvecost.cli import main
from dvecost.saturation import saturate as dvecost_saturate
from scenarios import Request, Scenario, Server, System, saturate
from scenarios.saturation import Evaluation, Plan, SaturationPoint, parse_capacity


def analyse_saturation(*args, **kw):
    """The search with every point analysed exactly (the API's default is the command's,
    ``method='auto'``): what these tests check is the exact curve."""
    return dvecost_saturate(*args, **{"method": "exact", **kw})

U = Scenario("u", Request("r", 1))


def family(n):
    return System({U: n})


def counts(model):
    """Clients per scenario, read off the model's process names (``SCENARIO_k``)."""
    out = {}
    for p in model.processes:
        if p.name != "server":
            name = p.name.rsplit("_", 1)[0]
            out[name] = out.get(name, 0) + 1
    return out


def fake(curve):
    """An evaluator reading the load of N clients off ``curve(N)``; it records the calls
    (value-only ones in ``calls``, witness ones in ``witnessed``)."""
    calls, witnessed = [], []

    def evaluate(model, *, resource, witness):
        assert isinstance(model, syntax.Model)
        n = sum(counts(model).values())
        (witnessed if witness else calls).append(n)
        return Evaluation(F(curve(n)), 10 * n, witness=("run", n) if witness else None)

    evaluate.calls = calls
    evaluate.witnessed = witnessed
    return evaluate


# ---------------------------------------------------------------------------- fake curves

@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 13, 40, 64])
def test_linear_curve(k):
    ev = fake(lambda n: F(n, k))
    r = saturate(family, evaluate=ev)
    assert r.saturating_clients == k and r.monotone and not r.violations
    bisect = 2 * math.ceil(math.log2(k)) + 1 if k > 1 else 1
    # the bisection first, then every N below the answer it skipped, smallest first: a
    # stand-in load is no rendered model, so no upper bound decides them
    assert len(ev.calls) == len(set(ev.calls)) and set(range(1, k + 1)) <= set(ev.calls)
    skipped = [n for n in range(1, k) if n not in ev.calls[:bisect]]
    assert ev.calls[len(ev.calls) - len(skipped):] == skipped
    assert r.certified and [p.clients for p in r.curve] == sorted(ev.calls)
    assert r.point(k).exact >= 1 and (k == 1 or r.point(k - 1).exact < 1)


def test_search_order_is_exponential_then_binary():
    ev = fake(lambda n: F(n, 11))
    assert saturate(family, evaluate=ev).saturating_clients == 11
    assert ev.calls == [1, 2, 4, 8, 16, 12, 10, 11] + [3, 5, 6, 7, 9]


def test_capacity_is_compared_exactly():
    ev = fake(lambda n: F(n, 3))
    assert saturate(family, capacity="5/3", evaluate=ev).saturating_clients == 5
    assert saturate(family, capacity=F(5, 3) + F(1, 10**9), evaluate=fake(lambda n: F(n, 3))) \
        .saturating_clients == 6


def test_no_saturation_up_to_max_clients():
    ev = fake(lambda n: F(n, 100))
    r = saturate(family, max_clients=20, evaluate=ev)
    assert r.saturating_clients is None and r.stopped is None
    assert ev.calls == [1, 2, 4, 8, 16, 20]  # the limit itself is tried
    # the N it skipped are not decided (no bound for a stand-in load): not certified
    assert r.undecided_below == (3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 17, 18, 19)
    assert not r.certified and r.as_dict()["answer_certified"] is False


def test_max_clients_one():
    r = saturate(family, max_clients=1, evaluate=fake(lambda n: F(1, 2)))
    assert r.saturating_clients is None and [p.clients for p in r.curve] == [1]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=40), st.integers(1, 30))
def test_bisect_agrees_with_linear_on_monotone_curves(steps, cap):
    values = [sum(steps[:i + 1]) for i in range(len(steps))]  # non-decreasing

    def curve(n):
        return values[min(n, len(values)) - 1]

    m = len(values) + 5
    a = saturate(family, cap, max_clients=m, evaluate=fake(curve))
    b = saturate(family, cap, max_clients=m, search="linear", evaluate=fake(curve))
    assert a.monotone and b.monotone
    assert a.saturating_clients == b.saturating_clients == next(
        (n for n in range(1, m + 1) if curve(n) >= cap), None)


def test_non_monotone_curve_is_detected_and_reported():
    #            N:  1  2  3  4  5  6  7  8
    values = {1: 0, 2: 3, 3: 1, 4: 2, 5: 2, 6: 3, 7: 4, 8: 5}
    ev = fake(lambda n: F(values[n], 3))
    r = saturate(family, max_clients=8, evaluate=ev)
    assert ev.calls == [1, 2]          # N = 2 already reaches 1: the answer is 2 ...
    assert r.saturating_clients == 2 and r.monotone  # ... and nothing contradicts it
    ev = fake(lambda n: F([0, 2, 1, 2, 2, 2, 3, 3][n - 1], 3))
    r = saturate(family, max_clients=8, evaluate=ev)
    assert ev.calls == [1, 2, 4, 8, 6, 7, 3, 5]   # then 3 and 5, skipped below 7
    assert r.saturating_clients == 7 and not r.monotone and r.certified
    assert [(a.clients, b.clients) for a, b in r.violations] == [(2, 3)]
    ev = fake(lambda n: F([0, 1, 3, 2, 2, 2, 3, 3][n - 1], 3))
    r = saturate(family, max_clients=8, evaluate=ev)
    # the bisection answers 7; 3, skipped, saturates: the answer is 3, not 7
    assert ev.calls == [1, 2, 4, 8, 6, 7, 3] and r.saturating_clients == 3 and r.certified
    ev = fake(lambda n: F([1, 2, 1, 3, 3, 3, 3, 3][n - 1], 3))
    r = saturate(family, max_clients=8, evaluate=ev)
    assert ev.calls == [1, 2, 4, 3]
    assert r.saturating_clients == 4 and not r.monotone
    assert [(a.clients, b.clients) for a, b in r.violations] == [(2, 3)]


def test_linear_search_finds_the_first_saturating_n_on_any_curve():
    values = [1, 3, 1, 2, 3, 3]
    r = saturate(family, max_clients=6, search="linear",
                 evaluate=fake(lambda n: F(values[n - 1], 3)))
    assert r.saturating_clients == 2 and [p.clients for p in r.curve] == [1, 2]


def test_state_limit_stops_the_search():
    def evaluate(model, *, resource, witness):
        n = sum(counts(model).values())
        if n >= 8:
            raise StateLimitExceeded(1000, 1001)
        return Evaluation(F(n, 10), 5)

    r = saturate(family, evaluate=evaluate)
    assert r.saturating_clients is None and [p.clients for p in r.curve] == [1, 2, 4]
    assert r.stopped.startswith("N=8: state limit") and r.status == "limit" and r.partial


def test_progress_hears_the_plan_then_each_point_started_and_finished():
    seen = []
    r = saturate(family, evaluate=fake(lambda n: F(n, 3)), progress=seen.append)
    assert isinstance(seen[0], Plan) and seen[0].capacity == 1 and seen[0].resource == "work"
    kinds = [(type(e).__name__, e.clients, getattr(e, "witness", None)) for e in seen[1:]]
    assert kinds == [("PointStarted", 1, False), ("SaturationPoint", 1, None),
                     ("PointStarted", 2, False), ("SaturationPoint", 2, None),
                     ("PointStarted", 4, False), ("SaturationPoint", 4, None),
                     ("PointStarted", 3, False), ("SaturationPoint", 3, None),
                     ("PointStarted", 3, True)]
    assert [e for e in seen if isinstance(e, SaturationPoint)] == \
        [r.point(n) for n in (1, 2, 4, 3)]
    assert all(e.mix == (("u", e.clients),) for e in seen[1:])


def test_the_witness_is_decoded_for_the_answer_only():
    ev = fake(lambda n: F(n, 5))
    r = saturate(family, evaluate=ev)
    assert ev.calls == [1, 2, 4, 8, 6, 5, 3] and ev.witnessed == [5]
    assert r.witness == ("run", 5) and r.witness_seconds > 0
    ev = fake(lambda n: F(n, 5))
    r = saturate(family, evaluate=ev, witness=False)
    assert r.witness is None and r.witness_seconds == 0 and ev.witnessed == []
    ev = fake(lambda n: F(n, 100))
    r = saturate(family, max_clients=4, evaluate=ev)  # no answer, nothing to decode
    assert r.saturating_clients is None and r.witness is None and ev.witnessed == []


def test_the_evaluator_gets_the_model_of_each_system():
    shop = Scenario("browser", Request("page", 2))
    buy = Scenario("buyer", Request("pay", 4, cost=3))
    models = []

    def evaluate(model, *, resource, witness):
        models.append((model, resource))
        return Evaluation(F(1), 1)

    saturate(lambda n: System({shop: n, buy: 1}, server=Server(workers=2)), capacity=1,
             evaluate=evaluate, witness=False)
    model, resource = models[0]
    assert resource == "busy"
    assert model == System({shop: 1, buy: 1}, server=Server(workers=2)).to_model()


@pytest.mark.parametrize("stop, status", [
    (KeyboardInterrupt(), "interrupted"),
    (Interrupted(15, "SIGTERM"), "interrupted"),
    (TimeLimitExceeded(2.5), "timeout"),
])
def test_a_stop_carries_the_curve_so_far(stop, status):
    def evaluate(model, *, resource, witness):
        n = sum(counts(model).values())
        if n == 8:
            raise stop
        return Evaluation(F(n, 16), 7 * n)

    with pytest.raises(type(stop)) as info:
        saturate(family, evaluate=evaluate)
    r = info.value.partial
    assert r.status == status and r.partial and r.saturating_clients is None
    assert [(p.clients, p.exact, p.n_states) for p in r.curve] == [
        (1, F(1, 16), 7), (2, F(2, 16), 14), (4, F(4, 16), 28)]
    assert r.stopped.startswith("N=8: ")
    assert r.as_dict()["status"] == status and r.as_dict()["partial"] is True


CURVES = [lambda n: F(n, 7), lambda n: min(F(1), F(n * n, 90)), lambda n: F(n, 100),
          lambda n: F(1) if n >= 3 else F(n, 5)]


@pytest.mark.parametrize("curve", CURVES)
@pytest.mark.parametrize("search", ["bisect", "linear"])
def test_two_processes_make_the_same_search(curve, search):
    """Points analysed ahead in a second process change nothing the user sees: the same
    answer, the same curve (only the points the search asked for) and the same progress
    events in the same order (a point evaluated ahead is heard as it is used, with no
    'started' event, since nothing waits for it)."""
    heard = {1: [], 2: []}
    results = {}
    for jobs in (1, 2):
        results[jobs] = saturate(family, evaluate=fake(curve), search=search, max_clients=40,
                                 jobs=jobs, progress=heard[jobs].append)
    one, two = results[1], results[2]
    assert two.saturating_clients == one.saturating_clients and two.witness == one.witness
    assert [(p.clients, p.exact) for p in two.curve] == [(p.clients, p.exact) for p in one.curve]
    points = lambda events: [e.clients for e in events if isinstance(e, SaturationPoint)]
    assert points(heard[2]) == points(heard[1])
    started = [e.clients for e in heard[2] if type(e).__name__ == "PointStarted"]
    assert set(started) <= set(points(heard[1])) | {one.saturating_clients}


def test_a_stop_with_two_processes_keeps_what_was_analysed():
    def evaluate(model, *, resource, witness):
        n = sum(counts(model).values())
        if n == 8:
            raise KeyboardInterrupt
        return Evaluation(F(n, 16), 7 * n)

    with pytest.raises(KeyboardInterrupt) as info:
        saturate(family, evaluate=evaluate, jobs=2)
    r = info.value.partial
    assert r.status == "interrupted" and r.stopped.startswith("N=8: ")
    # 1, 2 and 4 at least (asked for), maybe also points analysed ahead (kept, as analysed).
    assert {1, 2, 4} <= {p.clients for p in r.curve}
    assert all(p.exact == F(p.clients, 16) for p in r.curve)


def test_a_stop_in_the_binary_phase_keeps_the_bracket():
    def evaluate(model, *, resource, witness):
        n = sum(counts(model).values())
        if n == 6:
            raise KeyboardInterrupt
        return Evaluation(F(n, 5), n)

    with pytest.raises(KeyboardInterrupt) as info:
        saturate(family, evaluate=evaluate)
    r = info.value.partial
    assert [p.clients for p in r.curve] == [1, 2, 4, 8] and r.bracket() == (4, 8)


def test_default_capacity_is_the_servers_and_says_why():
    job = Scenario("job", [Request("run", 2, cost=3)])
    ev = fake(lambda n: F(n))
    r = saturate(lambda n: System({job: n}, server=Server(workers=2)), evaluate=ev)
    # occupancy: every worker busy on every tick, whatever a request costs
    assert r.capacity == 2 and r.capacity_why == "2 workers, all busy on every tick"
    assert r.saturating_clients == 2 and r.warnings == () and r.resource == "busy"
    with pytest.raises(ConfigurationError, match="no default capacity"):
        saturate(lambda n: System({job: n}, server=Server(workers=2)), evaluate=ev,
                 resource="server")
    r = saturate(lambda n: System({job: n}, server=Server(workers=2)), capacity="5",
                 evaluate=fake(lambda n: F(n)))
    assert r.capacity == 5 and r.capacity_why == "given"
    assert r.as_dict()["capacity_why"] == "given"


def test_no_server_is_warned_except_for_a_template_meant_that_way():
    r = saturate(family, evaluate=fake(lambda n: F(n, 2)))
    assert r.capacity_why == "default 1: the system has no server"
    assert len(r.warnings) == 1 and "no server" in r.warnings[0]
    assert "Server(workers=" in r.warnings[0]
    r = saturate("paper-no-server", evaluate=fake(lambda n: F(3, 8)))
    assert r.warnings == () and r.saturating_clients is None


def test_mix_of_each_point():
    # Requests of 2 ticks: two workers can both be kept busy (one admission per tick).
    a, b = Scenario("browser", Request("x", 2)), Scenario("buyer", Request("y", 2))
    from scenarios import apportion

    r = saturate(lambda n: System(apportion({a: 2, b: 1}, n), server=Server(workers=2)),
                 search="linear", max_clients=6, evaluate=fake(lambda n: F(n, 3)))
    assert [(p.clients, p.mix) for p in r.curve] == [
        (1, (("browser", 1),)), (2, (("browser", 2),)), (3, (("browser", 2), ("buyer", 1))),
        (4, (("browser", 3), ("buyer", 1))), (5, (("browser", 4), ("buyer", 1))),
        (6, (("browser", 4), ("buyer", 2)))]
    assert r.as_dict()["curve"][5]["mix"] == {"browser": 4, "buyer": 2}
    assert r.as_dict()["saturating_mix"] == {"browser": 4, "buyer": 2}


@pytest.mark.parametrize("kwargs, words", [
    ({"capacity": "0"}, "above 0"), ({"capacity": "x"}, "bad capacity"),
    ({"capacity": "1/0"}, "bad capacity"), ({"max_clients": 0}, "max_clients"),
    ({"search": "random"}, "unknown search"), ({"scenario": "nobody"}, "no scenario 'nobody'"),
])
def test_bad_arguments(kwargs, words):
    with pytest.raises(ConfigurationError, match=words):
        saturate(family, evaluate=fake(lambda n: 1), **kwargs)


def test_unknown_spec():
    with pytest.raises(ConfigurationError, match="unknown template or scenario file 'nope'"):
        saturate("nope", evaluate=fake(lambda n: 1))


def test_an_evaluator_is_required():
    with pytest.raises(ConfigurationError, match="needs an evaluator"):
        saturate(family, evaluate=None)


def test_parse_capacity():
    assert parse_capacity("1.5") == F(3, 2) and parse_capacity(" 2 ") == 2


def test_scenario_grows_alone_and_system_spec_grows_in_proportion():
    a, b = Scenario("a", Request("x", 1)), Scenario("b", Request("y", 1))
    seen = []

    def evaluate(model, *, resource, witness):
        seen.append(counts(model))
        return Evaluation(F(sum(seen[-1].values()), 4), 1)

    saturate(lambda n: System({a: n, b: 2 * n}), scenario="b", evaluate=evaluate,
             witness=False)
    assert seen == [{"b": 1}, {"b": 2}, {"b": 4}, {"b": 3}]
    seen.clear()
    saturate(System({a: 1, b: 3}), evaluate=evaluate, witness=False)
    # D'Hondt with weights 1:3: b, b, a, b, ...
    assert seen == [{"b": 1}, {"b": 2}, {"a": 1, "b": 3}, {"a": 1, "b": 2}]


def test_result_as_dict():
    r = saturate(family, capacity="3/2", evaluate=fake(lambda n: F(n, 2)))
    d = json.loads(json.dumps(r.as_dict()))
    assert d["saturating_clients"] == 3 and d["capacity"] == 1.5
    assert d["capacity_exact"] == "3/2" and d["monotone"] is True
    assert (d["status"], d["partial"]) == ("ok", False)
    assert d["curve"][0] == {"clients": 1, "mix": {"u": 1}, "exact": "1/2", "value": 0.5,
                             "n_states": 10, "seconds": d["curve"][0]["seconds"],
                             "certified": True, "decided": "exact", "low": "1/2",
                             "high": "1/2", "note": None}


# ---------------------------------------------------------------------------- real models

def test_paper_server_saturates_at_three(results):
    r = results("paper-server")
    assert r.saturating_clients == 3 and r.monotone
    assert [(p.clients, p.exact) for p in r.curve] == [(1, F(1, 3)), (2, F(2, 3)), (3, 1), (4, 1)]
    assert r.resource == "busy" and r.load_bound == 1
    # The witness is the decoded critical cycle of the answer's model, with the answer's mean.
    steps = r.witness.cycle
    # The answer's analysis explored 128 classes of the 644 states (symmetry reduction).
    assert r.witness.symmetry["full_states"] == r.point(3).n_states == 644
    assert r.witness.n_states == r.witness.symmetry["classes"] < 644
    assert F(sum(s.cost for s in steps), len(steps)) == r.point(3).exact == 1


def test_paper_no_server_never_saturates_and_says_why():
    r = analyse_saturation("paper-no-server", backend="cpu")
    assert r.saturating_clients is None and r.stopped is None
    assert [(p.clients, p.exact) for p in r.curve] == [(1, F(3, 8))]
    assert "worst client alone" in r.note and r.certified


def test_capacity_above_the_bound_needs_no_analysis():
    r = saturate("paper-server", capacity=2, evaluate=fake(lambda n: 1 / 0))
    assert r.saturating_clients is None and r.curve == () and "at most 1" in r.note


def test_real_non_monotone_curve_is_flagged():
    """The cheap client of test_scenarios_loads: adding clients that occupy the worker for free
    lowers the load from 1/3."""
    paid = Scenario("paid", [Request("x", 1)])
    free = Scenario("free", [Request("idle", 10, cost=0)])
    family = lambda n: System({paid: 1, free: n - 1}, server=Server())  # noqa: E731
    # On occupancy the free clients hold the worker: 3 clients keep it busy, monotonely.
    busy = analyse_saturation(family, max_clients=4, backend="cpu", witness=False)
    assert busy.saturating_clients == 3 and busy.monotone and busy.certified
    # On the requests' cost they lower the load from 1/3.
    r = analyse_saturation(family, 1, resource="server", max_clients=4, backend="cpu",
                           witness=False)
    assert r.saturating_clients is None and not r.monotone
    assert (r.curve[0].clients, r.curve[0].exact) == (1, F(1, 3))
    assert all(b.exact < F(1, 3) for b in r.curve[1:] if b.exact is not None)
    assert all(b.reaches(1) is False for b in r.curve) and r.certified
    assert {(a.clients, b.clients) for a, b in r.violations} >= {(1, 2), (1, 4)}


@pytest.fixture(scope="module")
def results():
    """Each real sweep once per module (the editor's takes a few seconds)."""
    cache = {}

    def get(spec):
        if spec not in cache:
            cache[spec] = analyse_saturation(spec, backend="cpu")
        return cache[spec]

    return get


@pytest.mark.parametrize("spec, expected", [("paper-server", 3), ("editor", 6)])
def test_answer_agrees_with_analyze_on_rendered_models(tmp_path, capsys, results, spec,
                                                       expected):
    r = results(spec)
    n = r.saturating_clients
    assert n == expected
    values = {}
    for k in (n - 1, n):
        path = tmp_path / f"{spec}_{k}.dve"
        assert main(["scenarios", "render", spec, str(k), "-o", str(path)]) == 0
        assert main(["analyze", str(path), "--cost", "server", "--backend", "cpu",
                     "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        assert d["certified"]
        values[k] = F(d["exact"])
        assert values[k] == r.point(k).exact
    assert values[n - 1] < r.capacity <= values[n]


def test_editor_report_is_the_one_in_the_docs(results):
    """docs/scenarios.md shows `dvecost saturate editor`: the same lines, times aside."""
    import re

    from dvecost.cli.saturate import render_report

    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" / "scenarios.md").read_text()
    block = text.split("$ dvecost saturate editor --method exact\n", 1)[1].split("```", 1)[0]

    def masked(lines):  # times vary: the seconds column blanked, the time line left out
        return [re.sub(r"  \d+\.\d\d$", "  #", ln) for ln in lines
                if not ln.startswith("time: ")]

    assert masked(render_report(results("editor")).splitlines()) == masked(block.splitlines())


def test_editor_curve(results):
    r = results("editor")
    assert [(p.clients, str(p.exact)) for p in r.curve if p.how == "exact"] == [
        (1, "1/6"), (2, "7/18"), (4, "16/19"), (5, "22/23"), (6, "1"), (8, "1")]
    # 3, skipped by the bisection, is below by the alone rates added up
    assert r.point(3).how == "bound" and r.point(3).upper < 1
    assert r.monotone and r.saturating_clients == 6 and r.certified


def test_one_scenario_of_the_editor():
    r = analyse_saturation("editor", scenario="exporter", backend="cpu", witness=False)
    assert r.saturating_clients == 3 and r.point(2).exact == F(8, 11)


def test_the_report_names_the_n_left_undecided():
    """Without an answer, the N the bisection skipped (no bound decides a stand-in load) are
    named in the text, as ranges, and in the JSON; the answer is not certified."""
    from dvecost.cli.saturate import render_report

    r = saturate(family, max_clients=20, evaluate=fake(lambda n: F(n, 100)))
    line = next(ln for ln in render_report(r).splitlines() if ln.startswith("not certified"))
    assert line == ("not certified: N=3, 5..7, 9..15, 17..19 not decided (not evaluated, "
                    "assumed below; --linear decides every N)")
    assert r.as_dict()["undecided_below"] == [3, 5, 6, 7, 9, 10, 11, 12, 13, 14, 15, 17, 18,
                                             19]
    assert r.as_dict()["answer_certified"] is False
