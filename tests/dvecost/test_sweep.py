"""Sweeping a DVE model's input constant: ``dvecost saturate model.dve --param N`` and its kin.

The oracle is :func:`dvecost.analyze` called on each ``-D`` value by hand, with symmetry
reduction off (the full product), so it shares neither the sweep's loop, nor its family of
models, nor the orbit exploration the sweep's analyses use.
"""

from __future__ import annotations

import csv
import io
import json
import pathlib
from fractions import Fraction as F

import pytest
from hypothesis import given, settings, strategies as st

from dve.errors import ConfigurationError, ModelError
from runtime.errors import Interrupted
from dvecost import analyze
from dvecost.cli import main
from dvecost import examples
from dvecost.sweep import PointStarted, SweepPoint, model_family, model_headroom, sweep

#: Templates shipped beside the pinned examples (not among them: their size is an input).
HERE = pathlib.Path(examples.__file__).resolve().parent
CLIENT_SERVER = HERE / "client_server_template.dve"
POOL = HERE / "pool_template.dve"


def oracle(model, values, *, cost=None, **defines):
    """The load at each value of ``N``, from separate full analyses."""
    out = {}
    for n in values:
        a = analyze(model, defines={**defines, "N": n}, cost=cost, backend="cpu",
                    symmetry="off", witness=False)
        assert a.certified
        out[n] = F(a.value)
    return out


def run(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


# ---------------------------------------------------------------------------- the answer

@pytest.mark.parametrize("model, cost, capacity, stop", [
    (POOL, "busy", "2", 5),          # 3N/7 reaches 2 at N = 5
    (POOL, "busy", "9/7", 4),        # exactly at N = 3
    (POOL, "cpu", "3", 4),           # cpu: 6N/7 reaches 3 at N = 4
    (POOL, "busy", "4", 4),          # none up to 4
    (CLIENT_SERVER, None, "2", 3),   # the async template: 13/5 from N = 1 on
    (CLIENT_SERVER, None, "3", 3),   # ... never 3
])
def test_sweep_equals_one_analysis_per_value(model, cost, capacity, stop):
    r = sweep(model, "N", start=1, stop=stop, capacity=capacity, resource=cost,
              backend="cpu")
    cap = F(capacity)
    truth = oracle(model, range(1, stop + 1), cost=cost)
    expected = next((n for n in range(1, stop + 1) if truth[n] >= cap), None)
    assert r.answer == r.saturating == expected
    # Linear: every value from 1 up to the answer (or to the end), none after it.
    assert [p.n for p in r.curve] == list(range(1, (stop if expected is None else expected) + 1))
    for p in r.curve:
        assert p.exact == truth[p.n] and p.capacity == cap and p.certified
        assert p.saturated == (truth[p.n] >= cap)
    assert r.certified and not r.assumes_monotone and r.status == "ok"
    if expected is not None:
        assert r.point(expected).exact >= cap
        assert all(p.exact < cap for p in r.curve if p.n < expected)
        # The answer's run: its cycle's mean is the load.
        cycle = r.witness.cycle
        assert F(sum(s.cost for s in cycle), len(cycle)) == truth[expected]


def test_full_state_counts_are_the_products():
    """The states reported are the full product's (8 per client), though orbits were explored."""
    r = sweep(POOL, "N", stop=4, capacity=9, resource="busy", backend="cpu", witness=False)
    assert [p.n_states for p in r.curve] == [8, 64, 512, 4096]


def test_capacity_from_the_model_may_depend_on_the_input():
    """``CAPACITY = W``: the sweep over W judges each value against its own capacity."""
    r = sweep(POOL, "W", defines={"N": 5}, resource="busy", goal="below", stop=5,
              backend="cpu", witness=False)
    load = oracle(POOL, [5], cost="busy")[5]                   # 15/7, whatever W
    assert [(p.n, p.capacity, p.exact) for p in r.curve] == [(w, F(w), load) for w in (1, 2, 3)]
    assert r.answer == 3 and r.capacity is None and r.certified
    assert r.family.capacity_why == "the model's constant CAPACITY"


# A family whose load falls and rises again: load(N) is the constant cost of one self-loop.
WAVY = """input int N = 1;
process P { state s; init s; trans s -> s { cost (N == 3) * 9 + (N >= 8) * 9; }; }
system sync;"""


def test_bisect_rests_on_monotonicity_and_says_so():
    lin = sweep(WAVY, "N", stop=16, capacity=5, backend="cpu")
    bis = sweep(WAVY, "N", stop=16, capacity=5, search="bisect", backend="cpu")
    assert lin.answer == 3 and lin.certified
    # 1, 2, 4, 8 (saturated), then 6, 7 between 4 and 8: the bisection misses 3.
    assert [p.n for p in bis.curve] == [1, 2, 4, 6, 7, 8] and bis.answer == 8
    assert bis.assumes_monotone and not bis.certified
    assert bis.as_dict()["assumes_monotone"] is True


def test_bisect_agrees_on_a_monotone_family():
    r = sweep(POOL, "N", stop=8, capacity=2, resource="busy", search="bisect", backend="cpu",
              witness=False)
    assert r.answer == 5 and [p.n for p in r.curve] == [1, 2, 4, 5, 6, 8]
    assert r.monotone and r.assumes_monotone and not r.certified


def test_falls_are_reported():
    r = sweep(WAVY, "N", stop=5, capacity=100, backend="cpu", witness=False)
    assert not r.monotone and [(a.n, b.n) for a, b in r.violations] == [(3, 4), (3, 5)]


@settings(max_examples=12, deadline=None)
@given(a=st.integers(0, 5), b=st.integers(0, 5), m=st.integers(2, 7),
       cap=st.fractions(F(1, 2), F(7)), start=st.integers(0, 3))
def test_any_family_matches_the_oracle(a, b, m, cap, start):
    """Property: for load(N) = (a*N + b) % m, summed over two processes of which one only
    moves every other tick, the linear sweep's answer is the first value of the oracle's
    curve at or above the capacity, from ``start``."""
    text = f"""input int N = 0;
    process P {{ state s; init s; trans s -> s {{ cost (({a} * N + {b}) % {m}); }}; }}
    process Q {{ state u, v; init u; trans u -> v {{ cost N % 2; }}, v -> u {{ }}; }}
    system sync;"""
    stop = start + 5
    r = sweep(text, "N", start=start, stop=stop, capacity=cap, backend="cpu", witness=False)
    truth = oracle(text, range(start, stop + 1))
    expected = next((n for n in range(start, stop + 1) if truth[n] >= cap), None)
    assert r.answer == expected
    last = stop if expected is None else expected
    assert {p.n: p.exact for p in r.curve} == {n: truth[n] for n in range(start, last + 1)}
    assert r.certified


# ---------------------------------------------------------------------------- what users read

def test_cli_text_json_csv(capsys, tmp_path):
    out_csv = tmp_path / "curve.csv"
    code, out, err = run(capsys, "saturate", POOL, "--param", "N", "--to", "6", "--resource",
                         "busy", "--backend", "cpu", "--csv", out_csv)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (f"{POOL}: worst load of 'busy' per tick against N (every value from "
                        "1, up to 6)")
    assert lines[1] == "capacity 2 = the model's constant CAPACITY"
    assert lines[2].split() == ["N", "states", "load", "(exact)", "load", "seconds"]
    assert [ln.split()[:4] for ln in lines[3:8]] == [
        ["1", "8", "3/7", "0.4286"], ["2", "64", "6/7", "0.8571"],
        ["3", "512", "9/7", "1.2857"], ["4", "4096", "12/7", "1.7143"],
        ["5", "32768", "15/7", "2.1429"]]
    assert lines[8] == ("saturation: N = 5 brings the load of 'busy' to 15/7, reaching the "
                        "capacity 2; N = 4 gives 12/7 (1.7143)")
    assert lines[9] == ("certified: every N from 1 to 4 was analysed exactly and stays below "
                        "the capacity")
    assert lines[10].startswith("critical cycle at N=5: 7 steps (7 time units) costing 15, "
                                f"load 15/7; to see it step by step: dvecost analyze {POOL} "
                                "-D N=5 --cost busy")
    assert f"csv: written to {out_csv}" in out
    # progress: one line per value started and done, then the answer's run
    assert err.splitlines()[:2] == ["N = 1: exploring ...",
                                    "N = 1: load 3/7 (0.4286) of capacity 2, below, 8 states, "
                                    + err.splitlines()[1].rsplit(", ", 1)[1]]
    assert err.splitlines()[-1] == "N = 5: decoding the critical cycle ..."
    rows = list(csv.DictReader(io.StringIO(out_csv.read_text())))
    assert [(r["N"], r["load_exact"], r["capacity"], r["saturated"]) for r in rows] == [
        ("1", "3/7", "2", "false"), ("2", "6/7", "2", "false"), ("3", "9/7", "2", "false"),
        ("4", "12/7", "2", "false"), ("5", "15/7", "2", "true")]

    code, out, err = run(capsys, "saturate", POOL, "--param", "N", "--to", "6", "--resource",
                         "busy", "--backend", "cpu", "--json", "-q")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert list(d)[0] == "status" and d["status"] == "ok" and d["partial"] is False
    assert (d["param"], d["from"], d["to"], d["resource"], d["system"]) == ("N", 1, 6, "busy",
                                                                            "sync")
    assert (d["saturating"], d["answer"], d["answer_certified"], d["capacity"]) == (5, 5, True,
                                                                                   2)
    assert d["capacity_why"] == "the model's constant CAPACITY"
    assert [(p["n"], p["exact"], p["saturated"]) for p in d["curve"]] == [
        (1, "3/7", False), (2, "6/7", False), (3, "9/7", False), (4, "12/7", False),
        (5, "15/7", True)]
    assert d["witness"]["n"] == 5 and d["witness"]["cycle_cost"] == 15
    assert d["witness"]["cycle_steps"] == len(d["witness"]["cycle"]) == 7
    assert list(d)[-1] == "peak_memory_bytes"


def test_cli_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    png = tmp_path / "curve.png"
    code, out, _ = run(capsys, "saturate", POOL, "--param", "N", "--to", "3", "--resource",
                       "busy", "--capacity", "1", "--backend", "cpu", "--plot", png, "-q")
    assert code == 0 and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "capacity 1 (given with --capacity)" in out


def test_cli_no_saturation_and_async_warning(capsys):
    code, out, err = run(capsys, "saturate", CLIENT_SERVER, "--param", "N", "--to", "2",
                         "--capacity", "3", "--backend", "cpu")
    assert code == 0
    assert "no saturation: no N from 1 to 2 reaches the capacity (the load is at most 13/5" in out
    assert "warning: the model is 'system async'" in err


def test_cli_bisect_marked(capsys):
    code, out, _ = run(capsys, "saturate", POOL, "--param", "N", "--to", "8", "--resource",
                       "busy", "--bisect", "--backend", "cpu", "-q", "--no-witness")
    assert code == 0
    assert "(exponential then binary search from 1, up to 8)" in out.splitlines()[0]
    assert ("not certified: the bisection skipped 1 value below 5 (e.g. N = 3); the answer "
            "holds if the load never falls as N grows") in out


def test_state_limit_keeps_the_curve(capsys):
    code, out, err = run(capsys, "saturate", POOL, "--param", "N", "--to", "8", "--resource",
                         "busy", "--capacity", "100", "--max-states", "200", "--backend", "cpu",
                         "--json", "-q")
    assert code == 3
    d = json.loads(out)
    assert d["status"] == "limit" and d["partial"] and d["answer"] is None
    assert [p["n"] for p in d["curve"]] == list(range(1, len(d["curve"]) + 1))
    assert d["curve"] and d["stopped"].startswith(f"N={len(d['curve']) + 1}: ")
    assert "the curve found so far follows" in err


def test_timeout_keeps_the_curve(capsys):
    """--timeout stops the sweep wherever it is (here in a model of many clients) with the
    values analysed so far, exit 3."""
    code, out, err = run(capsys, "saturate", POOL, "--param", "N", "--resource", "busy",
                         "--capacity", "100", "--timeout", "1.5", "--backend", "cpu", "--json",
                         "-q")
    d = json.loads(out)
    assert code == 3 and d["status"] == "timeout" and d["partial"] and d["answer"] is None
    assert [p["n"] for p in d["curve"]] == list(range(1, len(d["curve"]) + 1))
    assert "time limit of 1.5 s reached" in d["stopped"]
    assert "the curve found so far follows" in err


def test_a_signal_keeps_the_curve():
    """A stop in the middle (here raised by the progress callback as the signal handler would)
    carries the result so far."""
    def progress(event):
        if isinstance(event, PointStarted) and event.n == 3:
            raise Interrupted(2, "SIGINT")

    with pytest.raises(Interrupted) as caught:
        sweep(POOL, "N", resource="busy", stop=8, backend="cpu", progress=progress)
    partial = caught.value.partial
    assert partial.status == "interrupted" and partial.partial
    assert [p.n for p in partial.curve] == [1, 2] and partial.answer is None
    assert partial.stopped.startswith("N=3: ")
    assert not partial.certified


# ---------------------------------------------------------------------------- errors

@pytest.mark.parametrize("argv, message", [
    (["--param", "M", "--resource", "busy"],
     "dvecost: error: --param M: the model has no input 'M'; its inputs: N, W"),
    (["--resource", "busy"], "needs --param NAME"),
    (["--param", "N"], "the model charges 2 cost resources (busy, cpu): name the one whose "
                       "load is judged with --resource NAME"),
    (["--param", "N", "--resource", "gpu"], "--resource gpu: the model charges no resource "
                                            "'gpu'; it charges: busy, cpu"),
    (["--param", "N", "--resource", "busy", "--from", "5", "--to", "3"], "bad range 5..3"),
    (["--param", "N", "--resource", "busy", "-D", "N=3"], "both set 'N'"),
    (["--param", "N", "--resource", "busy", "--scenario", "x"],
     "--scenario applies to scenario specs"),
    (["--param", "N", "--resource", "busy", "--frontier", "a,b"],
     "--param sweeps one input; --frontier A,B walks two"),
    (["--param", "N", "--resource", "busy", "--max-clients", "9"], "--max-clients (use --to)"),
    (["--param", "N", "--resource", "busy", "--method", "bounds"], "--method bounds applies"),
    (["--param", "N", "--resource", "busy", "--bisect", "--linear"], "contradict"),
    (["--param", "N", "--resource", "busy", "--capacity", "0"], "it must be above 0"),
])
def test_bad_usage_with_a_model(capsys, argv, message):
    code, out, err = run(capsys, "saturate", POOL, *argv, "--backend", "cpu")
    assert code == 2 and out == ""
    assert message in err


def test_a_constant_is_pointed_at(capsys):
    code, _, err = run(capsys, "saturate", POOL, "--param", "THINK", "--resource", "busy")
    assert code == 2
    lines = err.splitlines()
    assert lines[0] == (f"{POOL}:13:11: error[not-an-input]: --param THINK: 'THINK' is a "
                        "constant, not an input, so it cannot vary")
    assert lines[1].endswith("const int THINK = 4;") and "^" in lines[2]
    assert "hint: declare it `input int THINK = ...;`" in err


def test_missing_capacity_and_type_range(tmp_path, capsys):
    m = tmp_path / "m.dve"
    m.write_text("input byte N = 1;\nprocess P { state s; init s; trans s -> s { cost N; }; }\n"
                 "system sync;\n")
    code, _, err = run(capsys, "saturate", m, "--param", "N")
    assert code == 2 and "the model does not say its capacity: give --capacity C" in err
    code, _, err = run(capsys, "saturate", m, "--param", "N", "--capacity", "2", "--to", "300")
    assert code == 2
    assert err.startswith(f"{m}:1:12: error[value-out-of-range]: --param N: 300 does not fit "
                          "its type byte (0..255)")
    m.write_text("input int N = 1;\nconst int CAPACITY = 2 - N;\n"
                 "process P { state s; init s; trans s -> s { cost N; }; }\nsystem sync;\n")
    code, _, err = run(capsys, "saturate", m, "--param", "N", "--from", "2")
    assert code == 2 and err.startswith(f"{m}:2:11: error[bad-capacity]: CAPACITY = 0 here")


def test_a_model_broken_at_some_value_says_which(tmp_path, capsys):
    m = tmp_path / "m.dve"
    m.write_text("input int N = 1;\nconst int CAPACITY = 5;\nbyte a[4 - N];\n"
                 "process P { state s; init s; trans s -> s { cost N; }; }\nsystem sync;\n")
    code, out, err = run(capsys, "saturate", m, "--param", "N", "--backend", "cpu", "-q")
    assert code == 2 and out == ""
    assert err.splitlines()[0] == (f"{m}:3:8: error[array-size-invalid]: expected an array "
                                   "size above 0, found 0 for 'a' (with N = 4)")
    assert err.splitlines()[1] == "    3 | byte a[4 - N];"


def test_model_options_refused_for_scenarios(capsys):
    for argv in (["--param", "N"], ["--to", "4"], ["--bisect"], ["-D", "N=2"]):
        code, out, err = run(capsys, "saturate", "paper-server", *argv)
        assert code == 2 and out == ""
        assert "to DVE models (a .dve file), not to the scenario spec paper-server" in err


def test_model_family_checks_before_exploring():
    f = model_family(POOL, "N", resource="busy")
    assert (f.decl.name, f.decl.type, f.decl.default) == ("N", "int", 3)
    assert f.resources == ("busy", "cpu") and f.system == "sync"
    with pytest.raises(ConfigurationError, match="its inputs: N, W"):
        model_family(POOL, "Q", resource="busy")
    with pytest.raises(ModelError, match="not-an-input"):
        model_family(POOL, "HEAVY", resource="busy")


# ---------------------------------------------------------------------------- headroom, workers

def test_headroom_of_a_model(capsys):
    h = model_headroom(POOL, defines={"N": 4}, resource="busy", backend="cpu")
    truth = oracle(POOL, [4], cost="busy", W=2)[4]
    assert (h.exact, h.capacity, h.headroom, h.saturated) == (truth, 2, 2 - truth, False)
    code, out, _ = run(capsys, "headroom", POOL, "-D", "N=4", "-D", "W=1", "--resource", "busy",
                       "--backend", "cpu", "--json")
    d = json.loads(out)
    assert code == 0 and d["status"] == "ok"
    assert (d["exact"], d["capacity"], d["saturated"], d["defines"]) == (
        "12/7", 1, True, {"N": 4, "W": 1})
    assert d["analysis"]["exact"] == "12/7"
    code, out, _ = run(capsys, "headroom", POOL, "-D", "N=4", "--resource", "busy",
                       "--capacity", "3", "--backend", "cpu")
    assert code == 0
    assert out.splitlines()[:2] == [
        f"{POOL} with N=4: load of 'busy' against capacity 3 (given)",
        "worst load 12/7 (1.7143): 57.1% of capacity, headroom 9/7 (1.2857)"]


def test_headroom_errors(capsys):
    code, _, err = run(capsys, "headroom", POOL, "-D", "N=2", "--clients", "a=1")
    assert code == 2 and "--clients applies to scenario specs" in err
    code, _, err = run(capsys, "headroom", "paper-server")
    assert code == 2 and "headroom needs --clients" in err
    code, _, err = run(capsys, "headroom", CLIENT_SERVER, "-D", "N=2")
    assert code == 2 and "does not say its capacity" in err


def test_workers_of_a_model(capsys):
    code, out, err = run(capsys, "workers", POOL, "--param", "W", "-D", "N=5", "--resource",
                         "busy", "--backend", "cpu", "--json")
    d = json.loads(out)
    assert code == 0 and d["goal"] == "below" and d["answer"] == 3 and d["saturating"] is None
    assert [(p["n"], p["capacity"], p["saturated"]) for p in d["curve"]] == [
        (1, "1", True), (2, "2", True), (3, "3", False)]
    # --capacity is one worker's, as for scenarios: W workers of 1/2 keep 15/7 below from 5 on
    code, out, _ = run(capsys, "workers", POOL, "--param", "W", "-D", "N=5", "--resource",
                       "busy", "--capacity", "1/2", "--backend", "cpu", "-q")
    assert code == 0 and "workers: W = 5 keeps the load of 'busy' at 15/7" in out
    code, _, err = run(capsys, "workers", POOL, "-D", "N=6", "--resource", "busy")
    assert code == 2 and "needs --param NAME" in err
    code, _, err = run(capsys, "workers", "paper-server", "--clients", "client=2",
                       "--param", "W")
    assert code == 2 and "--param applies to DVE models" in err


# ---------------------------------------------------------------------------- the tutorial

def test_tutorial_shows_the_model_and_a_real_sweep(capsys, monkeypatch):
    """docs/tutorial.md shows pool_template.dve in full and the report of its sweep: both must
    stay what the file and the command give (timings aside)."""
    text = (HERE.parents[1] / "docs" / "tutorial.md").read_text()
    assert "```dve\n" + POOL.read_text() + "```" in text
    shown = text.split("$ dvecost saturate dvecost/examples/pool_template.dve --param N "
                       "--resource busy\n", 1)[1].split("```", 1)[0].splitlines()
    monkeypatch.chdir(HERE.parents[1])   # the tutorial's commands run from the repository
    code, out, err = run(capsys, "saturate", "dvecost/examples/pool_template.dve", "--param",
                         "N", "--resource", "busy", "--backend", "cpu")
    assert code == 0

    def steady(lines):   # drop the seconds: the last column, and the time line
        return [ln.rsplit(None, 1)[0] if ln[:1].isdigit() else ln
                for ln in lines if not ln.startswith("time: ")]

    real = err.splitlines() + out.splitlines()
    assert steady([ln.rsplit(", ", 1)[0] for ln in shown]) == \
        steady([ln.rsplit(", ", 1)[0] for ln in real])


def test_an_option_the_scenarios_define_too_is_shared():
    """Where a command's scenario options already have --resource or --capacity, the model
    options use them (no second option, no refusal for scenarios)."""
    import argparse

    from dvecost.cli import sweep as cli_sweep

    p = argparse.ArgumentParser()
    p.add_argument("--resource")
    p.add_argument("--capacity")
    cli_sweep.add_workers_options(p)
    args = p.parse_args(["--resource", "busy", "--capacity", "2"])
    assert (args.resource, args.capacity) == ("busy", "2")
    assert cli_sweep.model_only_options(args, "--param") == {"-D": False, "--param": False}
    alone = argparse.ArgumentParser()
    cli_sweep.add_workers_options(alone)
    args = alone.parse_args(["--resource", "busy"])
    assert cli_sweep.model_only_options(args)["--resource"] is True


def test_an_input_capacity_is_set_with_define():
    text = ("input int N = 1;\ninput int CAPACITY = 2;\n"
            "process P { state s; init s; trans s -> s { cost N; }; }\nsystem sync;\n")
    assert sweep(text, "N", backend="cpu", witness=False).answer == 2
    r = sweep(text, "N", defines={"CAPACITY": 3}, backend="cpu", witness=False)
    assert r.answer == 3 and r.capacity == 3 and r.as_dict()["defines"] == {"CAPACITY": 3}
