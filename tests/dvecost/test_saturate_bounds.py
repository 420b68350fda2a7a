"""``dvecost saturate --method auto|exact|bounds``: points decided by bounds, what the user reads.

The answer with bounds equals the answer of exact analysis; the run that decides the answer's
point (found by simulating the model) is replayed step by step with the independent checker
of ``replay.py``, from the ``--json`` output as printed; the table, the ``decided:`` line, the
JSON and CSV fields say how each point was decided; ``--method bounds`` says where an
undecided answer lies; limits still stop a search with exit code 3.
"""

from __future__ import annotations

import csv
import json
from fractions import Fraction

import pytest

import scenarios
import scenarios.search
from dvecost.cli import main
from dvecost.saturation import saturate, system_load
from replay import replay_analysis
from scenario_files import SHOP

#: Readers and exporters on two workers admitting two requests per tick (a tick is three
#: steps of the model).
ADMISSIONS = """
from scenarios import Scenario, Think, Request, Server, apportion

reader = Scenario("reader", [Request("open", service=2), Think(8)])
exporter = Scenario("exporter", [Request("open", service=2), Think(4),
                                 Request("export", service=6), Think(6)])
server = Server(workers=2, admissions=2)

def system(n):
    return apportion({reader: 2, exporter: 1}, n)
"""

#: Exporters alone on the same server: saturated from 6 on (a quick run to find).
EXPORTERS = """
from scenarios import Scenario, Think, Request, Server

exporter = Scenario("exporter", [Request("open", service=2), Think(4),
                                 Request("export", service=6), Think(6)])
server = Server(workers=2, admissions=2)

def system(n):
    return {exporter: n}
"""

#: Clients whose phases must interlock to keep two workers busy: five saturate (20/9 of
#: alone rates), which only the runs spreading them over their round show.
BURSTS = """
from scenarios import Scenario, Think, Request, Server

burst = Scenario("burst", [Request("load", service=3), Request("ack", service=1), Think(1)])
server = Server(workers=2, admissions=2)

def system(n):
    return {burst: n}
"""


def _spec(tmp_path, spec):
    files = {"shop": SHOP, "admissions": ADMISSIONS, "exporters": EXPORTERS, "bursts": BURSTS}
    if spec in files:
        path = tmp_path / f"{spec}.py"
        path.write_text(files[spec])
        return str(path)
    return spec


def run(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("spec, capacity", [
    ("paper-server", None), ("editor", None), ("shop", None), ("shop", "3/2"),
    ("exporters", None), pytest.param("admissions", None, marks=pytest.mark.slow)])
def test_auto_answers_as_exact_and_its_bounds_hold(tmp_path, spec, capacity):
    spec = _spec(tmp_path, spec)
    auto = saturate(spec, capacity, backend="cpu", method="auto", witness=False)
    exact = saturate(spec, capacity, backend="cpu", method="exact", witness=False)
    assert auto.saturating_clients == exact.saturating_clients is not None
    assert auto.certified and auto.method == "auto"
    family = scenarios.resolve_spec(spec)[1]
    for p in auto.curve:
        e = system_load(family(p.clients), backend="cpu").exact
        assert p.how in ("exact", "bound", "witness")
        assert p.lower is None or p.lower <= e
        assert e <= p.upper
        if p.exact is not None:
            assert p.exact == e
        if p.how == "bound":
            assert p.high < auto.capacity and p.n_states is None
        if p.how == "witness":
            assert p.low >= auto.capacity


@pytest.mark.parametrize("spec", ["paper-server", "editor", "exporters",
                                  pytest.param("admissions", marks=pytest.mark.slow)])
def test_the_simulated_answer_replays_on_its_model(tmp_path, spec, monkeypatch):
    # (the bounds' path, also where the model is small enough to analyse exactly first)
    monkeypatch.setattr(scenarios.search, "EXACT_FIRST_CLASSES", 0)
    spec = _spec(tmp_path, spec)
    r = saturate(spec, backend="cpu", method="auto")
    n = r.saturating_clients
    assert r.point(n).how == "witness" and r.point(n).exact == r.capacity
    model = scenarios.resolve_spec(spec)[1](n).to_model()
    d = r.witness.as_dict()
    assert replay_analysis(model, d) == len(d["prefix"]) + len(d["cycle"])
    assert Fraction(d["exact"]) == r.capacity == Fraction(d["cycle_cost"], len(d["cycle"]))


def test_the_json_witness_replays_as_printed(capsys, tmp_path):
    spec = _spec(tmp_path, "exporters")
    code, out, _ = run(capsys, "saturate", spec, "--backend", "cpu", "--json", "-q")
    assert code == 0
    d = json.loads(out)
    assert d["method"] == "auto" and d["answer_certified"] is True
    assert d["saturating_clients"] == 6 and d["alone_rates"] == {"exporter": "4/11"}
    assert d["answer_range"] is None
    w = d["witness"]
    assert w["decided"] == "witness" and w["clients"] == d["saturating_clients"]
    model = scenarios.resolve_spec(spec)[1](w["clients"]).to_model()
    printed = {"cost": d["resource"], "kind": "mean", "initial": w["initial"],
               "prefix": w["prefix"], "cycle": w["cycle"], "cycle_cost": w["cycle_cost"],
               "cycle_time": w["cycle_time"], "exact": d["capacity_exact"]}
    assert replay_analysis(model, printed) == len(w["prefix"]) + len(w["cycle"])
    # Two admissions per tick: three steps per tick, the admission steps take no time.
    assert w["cycle_steps"] == 3 * w["cycle_time"]
    for p in d["curve"]:
        assert p["decided"] in ("bound", "witness", "exact")
        if p["decided"] == "witness":
            assert Fraction(p["low"]) >= Fraction(d["capacity_exact"])
        if p["decided"] == "bound":
            assert Fraction(p["high"]) < Fraction(d["capacity_exact"]) and p["n_states"] is None


def test_the_text_report_says_how_each_point_was_decided(capsys, monkeypatch):
    monkeypatch.setattr(scenarios.search, "EXACT_FIRST_CLASSES", 0)   # the bounds first
    code, out, err = run(capsys, "saturate", "editor", "--backend", "cpu", "-q")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[2].split() == ["clients", "mix", "states", "load", "(exact)", "load",
                                "decided", "seconds"]
    rows = {int(ln.split()[0]): ln for ln in lines[3:10]}
    assert rows[1].split()[-2:-1] == ["bound"] and " - " in rows[1]
    assert rows[5].split()[-2] == "exact" and "22/23" in rows[5] and "4366" in rows[5]
    assert rows[6].split()[-2] == "witness"
    assert "saturation: 6 clients (3 reader + 2 writer + 1 exporter)" in out
    assert rows[3].split()[-2] == "bound"   # skipped by the bisection, decided after it
    assert ("decided: 4 by the upper bound, 2 by a simulated run, 1 by exact analysis "
            "(method auto); alone rates: reader 1/6, writer 2/9, exporter 4/11") in lines
    assert any(ln.startswith("saturating run at N=6 (found by simulation, replayable): ")
               and "cycle of 28 steps (28 ticks) costing 28, load 1" in ln for ln in lines)
    assert "not certified" not in out


def test_bounds_only_says_where_the_answer_lies(capsys):
    code, out, _ = run(capsys, "saturate", "editor", "--method", "bounds", "--json", "-q")
    assert code == 0
    d = json.loads(out)
    open_ = [p for p in d["curve"] if p["decided"] == "open"]
    assert [p["clients"] for p in open_] == [5]
    assert Fraction(open_[0]["low"]) <= Fraction(22, 23) <= Fraction(open_[0]["high"]) == 1
    assert d["saturating_clients"] == 6 and d["answer_certified"] is False
    assert d["answer_range"] == [5, 6]
    code, out, _ = run(capsys, "saturate", "editor", "--method", "bounds", "-q")
    # what each end rests on, then the range
    assert any(ln.startswith("not certified: N=5 left open (load between ")
               and " and 1) [low: a simulated run (" in ln and "; high: " in ln
               and ln.endswith("]; the answer lies in 5..6 (the upper bound keeps every "
                               "N up to 4 below)") for ln in out.splitlines())


def test_a_limit_in_the_exact_fallback_leaves_the_point_open_between_its_bounds(capsys):
    """Exact analysis past a limit inside auto: the point stays open with what each end rests
    on, the search goes on, the answer is a certified range, and the exit code is 3."""
    code, out, err = run(capsys, "saturate", "editor", "--max-states", "500", "--json")
    assert code == 3
    d = json.loads(out)
    assert d["status"] == "ok" and d["saturating_clients"] == 6
    assert d["answer_certified"] is False and d["answer_range"] == [5, 6]
    (p,) = [p for p in d["curve"] if p["decided"] == "open"]
    assert p["clients"] == 5 and Fraction(p["low"]) <= Fraction(22, 23) <= Fraction(p["high"])
    assert p["note"].startswith("exact analysis stopped: state limit reached")
    assert "; low: a simulated run" in p["note"] and "; high: " in p["note"]
    assert err.splitlines()[-1] == "dvecost: N=5: " + p["note"]


def test_the_csv_says_how_each_point_was_decided(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(scenarios.search, "EXACT_FIRST_CLASSES", 0)   # the bounds first
    path = tmp_path / "curve.csv"
    code, _, _ = run(capsys, "saturate", "paper-server", "--csv", path, "-q")
    assert code == 0
    rows = list(csv.DictReader(path.open(newline="")))
    # (a point the upper bound decides is the bracket "at most U": no simulation runs for it)
    assert [(r["clients"], r["decided"], r["states"], r["load_exact"], r["load_low"],
             r["load_high"]) for r in rows] == [
        ("1", "bound", "", "", "", "1/3"), ("2", "bound", "", "", "", "2/3"),
        ("3", "witness", "", "1", "1", "1"), ("4", "witness", "", "1", "1", "1")]


def test_method_is_checked(capsys):
    code, _, err = run(capsys, "saturate", "paper-server", "--method", "guess")
    assert code == 2 and "invalid choice: 'guess'" in err


def test_progress_lines_say_how_each_point_was_decided(capsys):
    import re

    code, _, err = run(capsys, "saturate", "editor", "--method", "bounds", "--json")
    assert code == 0
    done = [re.sub(r"\d+\.\d\d s$", "# s", ln) for ln in err.splitlines() if ": load " in ln]
    assert done[0] == "N = 1 (1 reader): load <= 1/6, below by the upper bound, # s"
    assert any(re.fullmatch(r"N = 5 \(3 reader \+ 1 writer \+ 1 exporter\): load \d+/\d+\.\.1, "
                            r"left open by the bounds, # s", ln) for ln in done)
    assert "N = 6 (3 reader + 2 writer + 1 exporter): load 1, saturated by a simulated run, " \
        "# s" in done


def test_a_limit_while_computing_the_alone_rates_names_them(capsys):
    code, out, _ = run(capsys, "saturate", "editor", "--backend", "cpu", "--max-memory", "1M",
                       "--json", "-q")
    assert code == 3
    d = json.loads(out)
    assert d["stopped"].startswith("the alone rate of 'reader': memory limit")
    assert d["curve"] == [] and d["status"] == "limit"


def test_a_spread_run_certifies_the_answer_and_replays(tmp_path):
    """Five clients saturate (four stay below: 16/9 by their alone rates), shown by a run that
    spreads the clients over their round; it replays step by step on the model."""
    spec = _spec(tmp_path, "bursts")
    r = saturate(spec, backend="cpu", method="bounds")
    assert r.saturating_clients == 5 and r.certified
    assert r.point(4).how == "bound" and r.point(4).high == Fraction(16, 9)
    assert r.point(5).how == "witness" and r.point(5).low == 2
    assert system_load(scenarios.resolve_spec(spec)[1](5), backend="cpu").exact == 2
    model = scenarios.resolve_spec(spec)[1](5).to_model()
    d = r.witness.as_dict()
    assert replay_analysis(model, d) == len(d["prefix"]) + len(d["cycle"])
    assert Fraction(d["cycle_cost"], len(d["cycle"])) == 2


def test_a_point_decided_by_the_bounds_shows_its_progress_on_a_terminal(capsys, tmp_path,
                                                                        monkeypatch):
    """On a terminal, the count model's ticks and the simulation's ticks and best cycle so far
    are shown on the live line while a point is decided by the bounds; with -q, nothing."""
    import dvecost.cli.saturate as cli_saturate
    from scenarios import bounds, schedule

    monkeypatch.setattr(scenarios.search, "EXACT_FIRST_CLASSES", 0)   # the bounds first
    # (no planner: the count model's spread rows and the simulation run)
    monkeypatch.setattr(scenarios.search, "PLAN_SECONDS", 0.0)
    monkeypatch.setattr(scenarios.search, "WALKED_RUNS", False)
    monkeypatch.setattr(cli_saturate, "is_terminal", lambda stream: True)
    monkeypatch.setattr(bounds, "PROGRESS_TICKS", 1)
    monkeypatch.setattr(schedule, "PROGRESS_TICKS", 1)
    spec = _spec(tmp_path, "bursts")
    code, out, err = run(capsys, "saturate", spec, "--backend", "cpu", "--method", "bounds")
    assert code == 0 and "saturation: 5 clients" in out
    assert "\r\x1b[K  count model: tick 1 of at most 3,000: 0 spread rows keep the server " \
           "full" in err
    assert "\r\x1b[K  planner: a cycle of full ticks on the count model, 0 s at most" in err
    assert "\r\x1b[K  simulation: tick 1 of at most " in err
    ticks = [t for t in err.split("\r\x1b[K") if t.startswith("  simulation: ")]
    assert ticks[0].endswith("no closed walk yet")
    assert "best cycle so far " in ticks[-1]           # a walk closed before it stopped
    code, out, err = run(capsys, "saturate", spec, "--backend", "cpu", "--method", "bounds",
                         "-q")
    assert code == 0 and err == ""


def test_the_simulation_and_the_count_model_tell_their_progress():
    from scenarios import Scenario, Server, System, Think
    from scenarios.bounds import find_witness
    from scenarios.schedule import simulate

    user = Scenario("user", [Think(5), scenarios.Request("job", service=3)])
    system = System({user: 4}, server=Server(workers=2, admissions=2))
    told = []
    find_witness(system, rows=2, max_ticks=120, progress=lambda *a: told.append(a))
    assert [t for t, _, _ in told] == [50, 100] and {m for _, m, _ in told} == {120}
    assert all(b is None or 0 < b <= 2 for _, _, b in told)
    told.clear()
    # (no row of three clients aimed nowhere keeps two workers busy: none ever closes)
    simulate(system, Fraction(2), [[-1, -1, -1, -1]], ticks=250,
             progress=lambda *a: told.append(a))
    assert told == [(100, 250, 0), (200, 250, 0)]
