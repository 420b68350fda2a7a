"""The ``dvecost saturate`` and ``dvecost scenarios`` contract: exit codes, text, JSON, plot."""

from __future__ import annotations

import csv
import io
import json
import pathlib
import re
import signal
import subprocess
import sys
from fractions import Fraction as F

import pytest

import dve
import dvecost
from dvecost.cli import main

#: The repository root (not imported from conftest: tests/statespace has a conftest too).
ROOT = pathlib.Path(__file__).resolve().parents[2]

CURVE_KEYS = {"clients", "exact", "value", "n_states"}


def run(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_list(capsys):
    code, out, err = run(capsys, "saturate", "--list")
    assert code == 0 and err == ""
    names = [line.split()[0] for line in out.splitlines()]
    assert names == ["paper-no-server", "paper-server", "editor"]
    assert all(len(line.split(None, 1)[1]) > 20 for line in out.splitlines())
    code, out2, _ = run(capsys, "scenarios", "list")
    assert code == 0 and out2 == out


def test_text_report(capsys):
    code, out, err = run(capsys, "saturate", "paper-server", "--method", "exact", "--backend",
                         "cpu", "-q")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[1] == "capacity 1 = 1 worker, all busy on every tick"
    assert lines[2].split() == ["clients", "mix", "states", "load", "(exact)", "load",
                                "seconds"]
    assert [ln.split()[:6] for ln in lines[3:7]] == [
        ["1", "1", "client", "21", "1/3", "0.3333"], ["2", "2", "client", "200", "2/3", "0.6667"],
        ["3", "3", "client", "644", "1", "1.0000"], ["4", "4", "client", "6314", "1", "1.0000"]]
    assert lines[7] == ("saturation: 3 clients bring the occupancy ('busy': busy workers per "
                        "tick) to 1, reaching the capacity 1; 2 give 2/3 (0.6667)")
    assert lines[9] == ("cost: at N=3 the worst load of 'server' (the requests' cost per tick, "
                        "its own worst case) is 1 (1.0000)")
    assert lines[10].startswith("critical cycle at N=3: 18 steps (18 ticks) costing 18, load 1; "
                                "to see it step by step: dvecost scenarios render paper-server 3")
    assert lines[10].endswith("dvecost analyze m.dve --cost busy")
    assert re.fullmatch(r"time: \d+\.\d\d s analysing 4 models, \d+\.\d\d s decoding the "
                        r"answer's run; peak memory \d+ MiB", lines[11])
    assert len(lines) == 12


def test_mix_and_capacity_of_a_two_worker_file(capsys, tmp_path):
    """Default capacity = the server's (2 workers), printed with why; the mix at every N."""
    path = tmp_path / "shop.py"
    path.write_text(SHOP)
    code, out, err = run(capsys, "saturate", path, "--backend", "cpu", "--linear",
                         "--max-clients", "4", "--capacity", "3/2", "-q")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[1] == "capacity 3/2 (given with --capacity)"
    rows = {int(ln.split()[0]): ln for ln in lines[3:]
            if ln.split() and ln.split()[0].isdigit()}
    assert "  1 browser  " in rows[1] and "  2 browser + 1 buyer  " in rows[3]
    assert ("saturation: 4 clients (3 browser + 1 buyer) bring the occupancy ('busy': busy "
            "workers per tick) to 3/2, reaching the capacity 3/2; 3 give at most 7/6 (1.1667)") in out
    code, out, _ = run(capsys, "saturate", path, "--backend", "cpu", "--max-clients", "3",
                       "--json", "-q", "--no-witness")
    d = json.loads(out)
    assert (d["capacity"], d["capacity_why"]) == (2, "2 workers, all busy on every tick")
    assert [c["mix"] for c in d["curve"]] == [{"browser": 1}, {"browser": 2},
                                              {"browser": 2, "buyer": 1}]
    code, out, _ = run(capsys, "saturate", path, "--backend", "cpu", "--max-clients", "3", "-q")
    assert out.splitlines()[1] == "capacity 2 = 2 workers, all busy on every tick"


#: A small scenario file with two workers (the shop of docs/scenarios.md, smaller).
SHOP = """
from scenarios import Scenario, Think, Request, Server, apportion

browser = Scenario("browser", [Think(2), Request("page", service=2)])
buyer = Scenario("buyer", [Think(1), Request("pay", service=3)])
server = Server(workers=2)

def system(n):
    return apportion({browser: 2, buyer: 1}, n)
"""


def test_a_file_without_a_server_is_warned(capsys, tmp_path):
    path = tmp_path / "noserver.py"
    path.write_text(SHOP.replace("server = Server(workers=2)", ""))
    code, out, err = run(capsys, "saturate", path, "--backend", "cpu", "--max-clients", "2",
                         "-q")
    assert code == 0
    assert err.startswith("warning: the system has no server: the load measured is the "
                          "clients' own work per tick")
    assert "capacity 1 (default 1: the system has no server)" in out
    code, _, err = run(capsys, "saturate", "paper-no-server", "--backend", "cpu")
    assert code == 0 and "warning" not in err  # the template is server-free by design


def test_json(capsys):
    code, out, err = run(capsys, "saturate", "paper-server", "--json", "--capacity", "2/3", "-q")
    assert code == 0 and err == "" and out.count("\n") == 1  # one object on one line
    d = json.loads(out)
    assert list(d)[0] == "status" and list(d)[-2:] == ["timings", "peak_memory_bytes"]
    assert (d["status"], d["partial"]) == ("ok", False)
    assert d["saturating_clients"] == 2 and d["capacity"] == pytest.approx(2 / 3)
    assert d["capacity_exact"] == "2/3" and d["monotone"] is True
    assert d["capacity_why"] == "given" and d["saturating_mix"] == {"client": 2}
    assert [c["clients"] for c in d["curve"]] == [1, 2]
    assert all(CURVE_KEYS <= c.keys() for c in d["curve"])
    # (N = 1 is below by the upper bound, which decides it alone: the bracket "at most 1/3")
    assert (d["curve"][0]["decided"], d["curve"][0]["exact"], d["curve"][0]["value"],
            d["curve"][0]["high"]) == ("bound", None, None, "1/3")
    assert d["timings"]["search"] == pytest.approx(sum(c["seconds"] for c in d["curve"]),
                                                   abs=1e-3)
    assert d["peak_memory_bytes"] > 0 and d["timings"]["witness"] > 0
    w = d["witness"]  # the critical cycle of N = 2, its mean the load 2/3
    assert w["clients"] == 2 and w["cycle_steps"] == len(w["cycle"])
    assert w["cycle_cost"] * 3 == w["cycle_steps"] * 2 == w["cycle_time"] * 2
    assert {m["process"] for m in w["cycle"][0]["moves"]} == {"server", "client_1", "client_2"}


def test_csv(capsys, tmp_path):
    path = tmp_path / "curve.csv"
    code, out, _ = run(capsys, "saturate", "editor", "--method", "exact", "--backend", "cpu",
                       "--max-clients", "4",
                       "--json", "--csv", path, "-q")
    assert code == 0
    d = json.loads(out)
    assert d["csv"] == str(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == ["clients", "mix", "n_reader", "n_writer", "n_exporter", "states",
                             "load_exact", "load", "seconds", "certified", "decided",
                             "load_low", "load_high"]
    assert [(r["clients"], r["mix"], r["n_reader"], r["n_writer"], r["n_exporter"])
            for r in rows] == [("1", "1 reader", "1", "0", "0"),
                               ("2", "1 reader + 1 writer", "1", "1", "0"),
                               ("3", "2 reader + 1 writer", "2", "1", "0"),
                               ("4", "2 reader + 1 writer + 1 exporter", "2", "1", "1")]
    for r, c in zip(rows, d["curve"]):
        assert r["decided"] == c["decided"] and r["certified"] == "true"
        if c["decided"] == "exact":
            assert (int(r["states"]), r["load_exact"], float(r["load"])) == \
                (c["n_states"], c["exact"], c["value"])
        else:       # 3, skipped by the bisection, decided below by the alone rates
            assert (r["states"], r["load_exact"], r["load_high"]) == ("", "", c["high"])
    assert [p.name for p in tmp_path.iterdir()] == ["curve.csv"]  # no temporary file left
    code, out, _ = run(capsys, "saturate", "paper-server", "--max-clients", "1", "--csv", path,
                       "--method", "exact", "-q")
    assert out.splitlines()[-1] == f"csv: written to {path}"
    (row,) = list(csv.reader(path.read_text().splitlines()))[1:]
    assert row[:6] + row[7:] == ["1", "1 client", "1", "21", "1/3", "0.3333333333333333",
                                 "true", "exact", "1/3", "1/3"]


@pytest.mark.parametrize("option", ["--csv", "--plot"])
def test_an_unwritable_file_is_refused_before_the_search(capsys, tmp_path, option):
    if option == "--plot":
        pytest.importorskip("matplotlib")
    code, out, err = run(capsys, "saturate", "paper-server", option, tmp_path / "no" / "c.png")
    assert code == 2 and out == "" and "cannot write" in err and "no folder" in err
    assert "N = 1" not in err  # nothing was evaluated


def test_a_plot_format_matplotlib_lacks_is_refused(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    code, out, err = run(capsys, "saturate", "paper-server", "--plot", tmp_path / "c.xyz")
    assert code == 2 and out == "" and "name it with one of the suffixes" in err and ".png" in err


def test_json_without_saturation(capsys):
    code, out, _ = run(capsys, "saturate", "paper-server", "--json", "--max-clients", "2")
    assert code == 0
    d = json.loads(out)
    assert d["saturating_clients"] is None and [c["clients"] for c in d["curve"]] == [1, 2]


def test_capacity_above_the_bound(capsys):
    code, out, _ = run(capsys, "saturate", "paper-server", "--capacity", "1.5")
    assert code == 0 and "no saturation" in out and "at most 1" in out


def test_a_system_past_its_cutoffs_says_why_it_never_saturates(capsys, tmp_path):
    """Quick requests (1 tick at cost 5) and long ones (4 ticks at cost 2) on three workers,
    asked for 8 (the admissions' bound: no request is worth more than 8). From N=7 both
    scenarios are at their cutoffs (quick 4, long 7): one more client always waits and
    changes nothing, so the search ends there, in the text and in the JSON."""
    spec = tmp_path / "mixed.py"
    spec.write_text("from scenarios import Request, Scenario, Server, Think\n"
                    "quick = Scenario('quick', [Think(1), Request('q', 1, cost=5)])\n"
                    "long = Scenario('long', [Think(1), Request('r', 4, cost=2)])\n"
                    "server = Server(workers=3)\n"
                    "def system(n):\n    return {quick: n, long: n}\n")
    code, out, _ = run(capsys, "saturate", spec, "--resource", "server", "--capacity", "8",
                       "--backend", "cpu", "-q")
    assert code == 0 and "no saturation: up to 7 clients" in out
    # (N=7 is below by the rate program: at most 7, the admissions' bound, which decides it)
    assert ("why: from N=7 on every scenario has at least its cutoff (quick 4, long 7): one "
            "more client always waits and changes nothing, so the load stays at most 7 for every "
            "N up to 64 and none reaches 8") in out
    # Asked for 7 instead, the search saturates at 5; the report's bound line gives the
    # admissions' bound and what it rests on.
    code, out, _ = run(capsys, "saturate", spec, "--resource", "server", "--capacity", "7",
                       "--backend", "cpu", "-q", "--no-witness")
    assert code == 0 and "saturation: 5 clients" in out
    assert ("bound: the load of 'server' (cost per tick) never exceeds 8 (one request admitted "
            "per tick, none worth more than 8: r, 4 ticks x 2)") in out.splitlines()
    code, out, _ = run(capsys, "saturate", spec, "--resource", "server", "--capacity", "8",
                       "--backend", "cpu", "--json")
    d = json.loads(out)
    assert d["saturating_clients"] is None and d["curve"][-1]["clients"] == 7
    assert (d["curve"][-1]["low"], d["curve"][-1]["high"]) == (None, "7")
    assert "cutoff (quick 4, long 7)" in d["note"]


def test_a_pool_that_admissions_cannot_fill_is_answered_without_analysis(capsys, tmp_path):
    """Readers alone on four workers: the server admits one request per tick and a reader's
    is worth 2 ticks, so the load never passes 2 < 4, for any number of readers."""
    spec = tmp_path / "readers.py"
    spec.write_text("from scenarios import Server\n"
                    "from scenarios.templates import EDITOR_SCENARIOS\n"
                    "server = Server(workers=4)\n"
                    "def system(n):\n    return {EDITOR_SCENARIOS[0]: n}\n")
    code, out, _ = run(capsys, "saturate", spec, "--backend", "cpu", "--json")
    d = json.loads(out)
    assert code == 0 and d["saturating_clients"] is None and d["curve"] == []
    assert d["load_bound_exact"] == "2"
    assert d["load_bound_why"] == ("one request admitted per tick, none holding a worker "
                                   "more than 2 ticks: open")
    assert d["note"].startswith("the load can never reach 4: it is at most 2")
    # The editor's three scenarios on eight workers (docs/scenarios.md): at most an export's 6.
    spec.write_text("from scenarios import Server, apportion\n"
                    "from scenarios.templates import EDITOR_SCENARIOS, EDITOR_WEIGHTS\n"
                    "server = Server(workers=8)\n"
                    "def system(n):\n"
                    "    return apportion(dict(zip(EDITOR_SCENARIOS, EDITOR_WEIGHTS)), n)\n")
    code, out, _ = run(capsys, "saturate", spec, "--backend", "cpu", "-q")
    assert code == 0 and ("why: the load can never reach 8: it is at most 6 (one request "
                          "admitted per tick, none holding a worker more than 6 ticks: "
                          "export)") in out


def test_one_scenario(capsys):
    code, out, _ = run(capsys, "saturate", "editor", "--scenario", "exporter", "--json")
    d = json.loads(out)
    assert code == 0 and d["saturating_clients"] == 3 and d["scenario"] == "exporter"


def test_state_limit_exits_3(capsys):
    code, out, err = run(capsys, "saturate", "editor", "--method", "exact", "--max-states",
                         "500", "--json")
    assert code == 3
    d = json.loads(out)
    assert d["saturating_clients"] is None and d["stopped"].startswith("N=4: state limit")
    assert (d["status"], d["partial"]) == ("limit", True)
    assert err.splitlines()[-1].startswith("dvecost: N=4: state limit")
    assert err.splitlines()[-1].endswith("; the curve found so far follows")


@pytest.mark.parametrize("argv, words", [
    (["saturate"], "needs a SPEC"),
    (["saturate", "no-such-template"], "unknown template or scenario file 'no-such-template'"),
    (["saturate", "paper-server", "--capacity", "-1"], "bad capacity"),
    (["saturate", "paper-server", "--scenario", "nobody"], "no scenario 'nobody'"),
    (["saturate", "paper-server", "--max-clients", "0"], "--max-clients: must be between 1"),
    (["scenarios", "render", "paper-server", "0"], "N must be between 1 and 10,000, got 0"),
    (["scenarios", "render", "nope", "2"], "unknown template"),
])
def test_invalid_input_exits_2(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and words in err


def test_bad_option_is_usage_error(capsys):
    code, _, err = run(capsys, "saturate", "paper-server", "--max-clients", "x")
    assert code == 2 and "--max-clients: expected a whole number" in err


def test_plot_without_matplotlib(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    code, out, err = run(capsys, "saturate", "paper-server", "--plot", tmp_path / "c.png")
    assert code == 2 and out == ""
    assert "--plot needs matplotlib" in err and "dvecost[plot]" in err
    assert not (tmp_path / "c.png").exists()


def test_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "c.png"
    code, out, _ = run(capsys, "saturate", "paper-server", "--plot", path, "-q")
    assert code == 0 and path.read_bytes()[:4] == b"\x89PNG"
    assert out.splitlines()[-1] == f"plot: written to {path}"
    code, out, _ = run(capsys, "saturate", "paper-server", "--plot", path, "--json", "-q")
    assert json.loads(out)["plot"] == str(path)


def test_plot_shows_the_evaluated_points_on_integer_ticks():
    pytest.importorskip("matplotlib")
    from dvecost.cli.saturate import build_figure
    from scenarios.saturation import SaturationPoint, SaturationResult

    def result(ns):
        pts = tuple(SaturationPoint(n, F(min(n, 5), 5), n, 0.0, mix=(("u", n),)) for n in ns)
        return SaturationResult("demo", F(1), 5, pts, True, (), 64, None, "server")

    fig = build_figure(result([1, 2, 4, 5, 6, 8]))
    ax = fig.axes[0]
    points = ax.lines[0]
    assert list(points.get_xdata()) == [1, 2, 4, 5, 6, 8]  # only the evaluated N ...
    assert points.get_linestyle() == "None"               # ... not joined by a line
    assert [float(y) for y in points.get_ydata()] == [0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    assert list(ax.get_xticks()) == [1, 2, 4, 5, 6, 8]
    fig = build_figure(result(range(1, 41)))              # many points: integer ticks
    fig.canvas.draw()
    ticks = [t for t in fig.axes[0].get_xticks() if 1 <= t <= 40]
    assert ticks and all(float(t).is_integer() for t in ticks)


def test_render(capsys, tmp_path):
    code, out, err = run(capsys, "scenarios", "render", "paper-server", "2")
    assert code == 0 and err == ""
    assert out.startswith("// dvecost scenarios render paper-server 2\n")
    model = dve.parse_model(out, "rendered.dve")
    assert [p.name for p in model.processes] == ["server", "client_1", "client_2"]
    path = tmp_path / "m.dve"
    assert run(capsys, "scenarios", "render", "editor", "3", "-o", path)[:2] == (0, "")
    assert dve.load_model(str(path)).system.kind == "sync"
    code, out, _ = run(capsys, "scenarios", "render", "editor", "2", "--scenario", "writer")
    assert code == 0 and "process writer_2" in out and "reader" not in out


def test_python_m_dvecost(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dvecost", "saturate", "--list"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "editor" in proc.stdout


PAPER_PROGRESS = [
    "N = 1 (1 client): exploring ...", "N = 1 (1 client): load 1/3 (0.3333), 21 states, # s",
    "N = 2 (2 client): exploring ...", "N = 2 (2 client): load 2/3 (0.6667), 200 states, # s",
    "N = 4 (4 client): exploring ...", "N = 4 (4 client): load 1 (1.0000), 6,314 states, # s",
    "N = 3 (3 client): exploring ...", "N = 3 (3 client): load 1 (1.0000), 644 states, # s",
    "N = 3 (3 client): decoding the critical cycle ...",
]


def on_screen(err: str) -> list[str]:
    """What a terminal shows of ``err``: each line as its last carriage return left it."""
    return [ln.split("\r")[-1].replace("\x1b[K", "") for ln in err.split("\n")[:-1]]


@pytest.mark.parametrize("tty", [False, True])
def test_progress_lines_on_stderr_terminal_or_not(capsys, monkeypatch, tty):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: tty, raising=False)
    code, out, err = run(capsys, "saturate", "paper-server", "--method", "exact", "--json")
    assert code == 0 and json.loads(out)["saturating_clients"] == 3
    assert [re.sub(r"\d+\.\d\d s$", "# s", ln) for ln in on_screen(err)] == PAPER_PROGRESS
    # On a terminal, what each analysis is doing shows on a line rewritten in place, wiped
    # before the next line and at the end; in a file there is none of it.
    assert ("\r\x1b[K  parse: reading the model" in err) == tty
    assert ("\r" in err) == tty
    last = err.split("\n")[-1]       # after the last full line: live lines, then wiped
    assert last.split("\r")[-1].replace("\x1b[K", "") == "" and last.endswith(
        "\r\x1b[K" if tty else "")
    code, out, err = run(capsys, "saturate", "paper-server", "--method", "exact", "--json", "-q")
    assert code == 0 and err == ""


def test_the_live_line_is_wiped_before_any_other():
    from dvecost.cli.saturate import progress_printer
    from scenarios.saturation import PointStarted, SaturationPoint

    buf = io.StringIO()
    show = progress_printer(buf, live=True)
    show(PointStarted(8, (("u", 8),)))
    show.phase("explore", "124,186 states, 900,000 edges")
    show.phase("explore", "250,001 states, 1,800,000 edges")
    show(SaturationPoint(8, F(1), 534137, 4.0, mix=(("u", 8),)))
    show(PointStarted(8, (("u", 8),), witness=True))
    show.phase("report", "decoding the critical cycle")
    show.clear()
    assert buf.getvalue() == (
        "N = 8 (8 u): exploring ...\n"
        "\r\x1b[K  explore: 124,186 states, 900,000 edges"
        "\r\x1b[K  explore: 250,001 states, 1,800,000 edges"
        "\r\x1b[KN = 8 (8 u): load 1 (1.0000), 534,137 states, 4.00 s\n"
        "N = 8 (8 u): decoding the critical cycle ...\n"
        "\r\x1b[K  report: decoding the critical cycle\r\x1b[K")
    buf = io.StringIO()
    show = progress_printer(buf, live=False)
    show.phase("explore", "1 states")
    show.clear()
    assert buf.getvalue() == ""


def _saturate_process(*argv):
    return subprocess.Popen([sys.executable, "-m", "dvecost", "saturate", *argv], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _signal_at(proc, prefix, signum):
    """Send ``signum`` once stderr shows the line starting with ``prefix``; the output."""
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith(prefix):
            proc.send_signal(signum)
            break
    out, err = proc.communicate(timeout=120)
    return out, "".join(seen) + err


def test_sigterm_prints_the_curve_so_far_as_json():
    """The editor's N = 8 takes seconds (534,137 states): a signal sent when it starts lands
    while it is being explored."""
    proc = _saturate_process("editor", "--method", "exact", "--backend", "cpu", "--json")
    out, err = _signal_at(proc, "N = 8 (5 reader + 2 writer + 1 exporter): exploring",
                          signal.SIGTERM)
    assert proc.returncode == 143
    d = json.loads(out)
    assert (d["status"], d["partial"], d["saturating_clients"]) == ("interrupted", True, None)
    assert [(c["clients"], c["exact"]) for c in d["curve"]] == [(1, "1/6"), (2, "7/18"),
                                                                (4, "16/19")]
    assert d["stopped"].startswith("N=8: interrupted by SIGTERM")
    assert "dvecost: N=8: interrupted by SIGTERM" in err and "Traceback" not in err


def test_sigint_prints_the_curve_so_far_as_text():
    proc = _saturate_process("editor", "--backend", "cpu")
    out, err = _signal_at(proc, "N = 8 (5 reader + 2 writer + 1 exporter): checking the bounds",
                          signal.SIGINT)
    assert proc.returncode == 130 and "Traceback" not in err
    lines = out.splitlines()
    assert [ln.split()[0] for ln in lines[3:6]] == ["1", "2", "4"]
    assert lines[6] == ("no answer: the search stopped before its end; so far no N evaluated "
                        "reaches the capacity 1: the answer, if any, is above 4")
    assert lines[7].startswith("interrupted: N=8: interrupted by SIGINT")
    assert lines[7].endswith("; the curve above is what was found so far")


def test_timeout_stops_with_the_curve_so_far(capsys):
    # The analysts' server has 8 workers: the exact search needs N = 22 and seconds of
    # exploration, so 0.3 s cannot suffice however fast the machine (the editor's one worker
    # saturates in about 0.3 s, which made this test flaky; so do the analysts with
    # --method auto, whose bounds settle every N without exploring).
    spec = str(pathlib.Path(dvecost.__file__).parent / "examples" / "analysts.py")
    code, out, err = run(capsys, "saturate", spec, "--backend", "cpu", "--timeout", "0.3",
                         "--json", "-q", "--method", "exact")
    assert code == 3
    d = json.loads(out)
    assert (d["status"], d["partial"], d["saturating_clients"]) == ("timeout", True, None)
    assert [c["clients"] for c in d["curve"]] == [1, 2, 4, 8, 16][:len(d["curve"])]
    assert "time limit of 0.3 s reached" in d["stopped"] and "time limit" in err


def test_memory_limit_stops_with_the_curve_so_far(capsys):
    code, out, err = run(capsys, "saturate", "editor", "--backend", "cpu", "--max-memory", "1M",
                         "--json", "-q", "--method", "exact")
    assert code == 3
    d = json.loads(out)
    assert (d["status"], d["partial"], d["saturating_clients"]) == ("limit", True, None)
    assert d["stopped"].startswith("N=1: memory limit") and d["curve"] == []


@pytest.mark.parametrize("ns, words", [
    ([1, 2, 4, 8], "so far N=8 reaches the capacity 1 and N=4 does not: the answer lies in 5..8 "
                   "(if the load is monotone)"),
    ([1, 2, 4, 8, 6], "so far N=6 reaches the capacity 1 and N=4 does not: the answer lies in "
                      "5..6 (if the load is monotone)"),
    ([1, 2, 4, 8, 6, 5], "so far N=6 reaches the capacity 1 and N=5 does not: the answer is 6"),
    ([1, 2], "so far no N evaluated reaches the capacity 1: the answer, if any, is above 2"),
])
def test_a_partial_answer_says_where_the_answer_lies(ns, words):
    from dvecost.cli.saturate import render_answer
    from scenarios.saturation import SaturationPoint, SaturationResult

    pts = tuple(SaturationPoint(n, F(min(n, 6), 6), n, 0.0, mix=(("u", n),)) for n in sorted(ns))
    r = SaturationResult("demo", F(1), None, pts, True, (), 64, None, "server",
                         stopped="N=7: interrupted by SIGINT", status="interrupted")
    lines = render_answer(r).splitlines()
    assert lines[0] == "no answer: the search stopped before its end; " + words
    assert lines[1] == ("interrupted: N=7: interrupted by SIGINT; the curve above is what was "
                        "found so far")


def test_lockstep_clients_are_counted_per_class_past_62_bits(capsys, tmp_path):
    """Clients in lockstep with no server: N = 64 has 2^64 joint system sync steps, more than
    the full product's 62-bit step codes allow; with the clients explored per class (symmetry
    reduction) the search goes on and finds the exact answer, load N/2."""
    path = tmp_path / "lock.py"
    path.write_text("from scenarios import Scenario, Think, Request\n"
                    "u = Scenario('u', [Think(1), Request('r', service=1)])\n"
                    "def system(n):\n    return {u: n}\n")
    code, out, err = run(capsys, "saturate", path, "--capacity", "20", "--json", "-q")
    assert code == 0
    d = json.loads(out)
    assert (d["status"], d["saturating_clients"]) == ("ok", 40)
    # (after 32 and 64, the first N whose upper bound reaches 20, 40, is asked: the search's
    # floor; 33..39 are below by that bound)
    # (every N below 40 is decided by the upper bound alone: at most N/2)
    assert [(c["clients"], c["exact"]) for c in d["curve"] if c["exact"] is not None] == [
        (40, "20"), (64, "32")]
    assert all(c["decided"] == "bound" and c["high"] == str(F(c["clients"], 2))
               for c in d["curve"] if c["clients"] < 40)


@pytest.mark.parametrize("extra", [[], ["--frontier", "u,v", "--frontier-max", "1,1"]])
def test_a_stop_before_the_search_begins_still_answers_in_json(capsys, tmp_path, extra):
    """--timeout while the scenario file is still building its systems (here: sleeping):
    there is no curve yet, but --json still prints one object saying so, exit 3."""
    spec = tmp_path / "slow.py"
    spec.write_text("import time\n"
                    "from scenarios import Request, Scenario, Server\n"
                    "u = Scenario('u', Request('r', 1))\n"
                    "v = Scenario('v', Request('s', 1))\n"
                    "server = Server()\n"
                    "def system(n):\n"
                    "    time.sleep(0.3)\n"
                    "    return {u: n, v: n}\n")
    code, out, err = run(capsys, "saturate", spec, "--backend", "cpu", "--timeout", "0.2",
                         "--json", *extra)
    d = json.loads(out)
    assert code == 3 and d["status"] == "timeout" and "Traceback" not in err
    assert "time limit of 0.2 s reached" in err
    assert d["limit"] == {"name": "--timeout", "value": "0.2"}


PAIR = """
from scenarios import Request, Scenario, Server, Think, apportion
cheap = Scenario("cheap", [Think(1), Request("look", service=1, cost=1)])
dear = Scenario("dear", [Think(1), Request("buy", service=1, cost=4)])
def system(n):
    return System(apportion({cheap: 1, dear: 1}, n), server=Server(workers=1))
from scenarios import System
"""


def test_occupancy_and_cost_as_the_user_reads_them(capsys, tmp_path):
    """The mixed-cost pair: text, JSON and the cost load's own cycle (replayed: its steps'
    costs add up to the reported load), and headroom's JSON with both analyses."""
    spec = tmp_path / "pair.py"
    spec.write_text(PAIR)
    code, out, _ = run(capsys, "saturate", spec, "--method", "exact", "--backend", "cpu",
                       "--json", "-q")
    d = json.loads(out)
    assert code == 0 and d["resource"] == "busy" and d["capacity"] == 1
    assert d["saturating_clients"] == 4 and d["answer_certified"] is True
    assert d["undecided_below"] == [] and d["cost_resource"] == "server"
    assert F(d["cost_load_exact"]) == F(5, 2)
    cyc = d["cost_witness"]["cycle"]
    assert F(sum(s["cost"] for s in cyc), len(cyc)) == F(5, 2)
    assert F(sum(s["cost"] for s in d["witness"]["cycle"]), d["witness"]["cycle_steps"]) == 1
    code, out, _ = run(capsys, "saturate", spec, "--method", "exact", "--backend", "cpu", "-q")
    assert ("cost: at N=4 the worst load of 'server' (the requests' cost per tick, its own "
            "worst case) is 5/2 (2.5000)") in out.splitlines()
    code, out, _ = run(capsys, "headroom", spec, "--clients", "cheap=1,dear=1", "--backend",
                       "cpu", "--json", "-q")
    h = json.loads(out)
    assert (F(h["exact"]), F(h["cost_load_exact"])) == (F(1, 2), F(5, 4))
    assert h["analysis"]["cost"] == "busy" and h["cost_analysis"]["cost"] == "server"
    assert F(h["cost_analysis"]["exact"]) == F(5, 4)
