"""``dvecost workers``, ``dvecost headroom`` and ``dvecost saturate --frontier`` against single
analyses of the rendered models (DVE text, symmetry reduction off: a path that shares no search code)."""

from __future__ import annotations

import json
import multiprocessing
import pathlib
import re
import signal
import subprocess
import sys
import time
from fractions import Fraction

import pytest

import dve
from dvecost import analyze
from replay import replay_analysis
from dvecost.cli import main
from scenarios import Server, System
from scenarios.templates import EDITOR_SCENARIOS

SC = {sc.name: sc for sc in EDITOR_SCENARIOS}
ROOT = pathlib.Path(__file__).resolve().parents[2]


def single_load(tmp_path, counts: dict[str, int], workers: int = 1) -> Fraction:
    """The occupancy of one rendered editor model, analysed on its own without symmetry."""
    system = System({SC[n]: k for n, k in counts.items() if k}, server=Server(workers=workers),
                    name="editor")
    path = tmp_path / f"m{sum(counts.values())}_{workers}.dve"
    path.write_text(dve.format_model(system.to_model()))
    a = analyze(path, cost="busy", backend="cpu", symmetry="off", witness=False)
    return Fraction(a.value).limit_denominator(10_000)


def test_workers_cli_agrees_with_single_analyses(tmp_path, capsys):
    code = main(["workers", "editor", "--clients", "reader=2,exporter=2", "--backend", "cpu",
                 "--json", "-q"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    tried = out["tried"]
    assert [t["workers"] for t in tried] == list(range(1, out["workers"] + 1))
    for t in tried:
        assert Fraction(t["exact"]) == single_load(tmp_path, {"reader": 2, "exporter": 2},
                                                   t["workers"])
        assert t["saturated"] == (Fraction(t["exact"]) >= t["workers"])
    assert not tried[-1]["saturated"] and all(t["saturated"] for t in tried[:-1])


def test_workers_cli_text_and_errors(capsys):
    assert main(["workers", "editor", "--clients", "reader=2,exporter=2", "--backend",
                 "cpu", "-q"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("2 reader, 2 exporter: ") and "needed" in text[0]
    assert text[1].split() == ["workers", "load", "≈", "capacity", "used", "saturated",
                               "states"]
    assert main(["workers", "editor", "--clients", "reader=two"]) == 2
    assert "NAME=COUNT" in capsys.readouterr().err
    assert main(["workers", "editor", "--clients", "nobody=2"]) == 2
    assert "no scenario 'nobody'" in capsys.readouterr().err


def test_frontier_cli_agrees_with_single_analyses(tmp_path, capsys):
    csv_path = tmp_path / "f.csv"
    code = main(["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max",
                 "3,3", "--backend", "cpu", "--json", "-q", "--csv", str(csv_path)])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["grid"] == 16 and out["analyses"] <= 3 + 3 + 2 and out["monotone"]
    points = {(p["n_a"], p["n_b"]): Fraction(p["exact"]) for p in out["points"]}
    # Three points of the walk, each against its own analysis of the rendered model.
    for (na, nb) in sorted(k for k in points if sum(k))[:3]:
        assert points[(na, nb)] == single_load(tmp_path, {"reader": na, "exporter": nb})
    # The staircase read back: below capacity at its value, saturated one above (or by a
    # point to its left, by monotonicity).
    for step in out["stair"]:
        na, nb = step["n_a"], step["max_n_b"]
        if nb is not None:
            assert points[(na, nb)] < 1
        above = max((k for k in points if k[1] == (nb + 1 if nb is not None else 0)
                     and k[0] <= na), default=None)
        if nb is None or nb < 3:
            assert above is not None and points[above] >= 1
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "reader,exporter,exact,value,saturated,n_states"
    assert len(lines) == 1 + len(out["points"])


def test_frontier_cli_text(capsys):
    assert main(["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max",
                 "2,3", "--backend", "cpu", "-q"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("editor: frontier of reader x exporter (0..2 x 0..3), capacity 1")
    # Two exporters alone: 2 x 8/22 = 8/11, three saturate.
    assert text[3].split() == ["0", "2", "8/11", "1"]
    assert main(["saturate", "editor", "--frontier", "reader"]) == 2
    assert "two scenario names" in capsys.readouterr().err


def test_frontier_jobs_change_nothing_the_user_reads(capsys):
    """--jobs 2 analyses ahead in worker processes; the table, the JSON points (in order)
    and the progress lines are those of --jobs 1 (seconds aside)."""
    runs = {}
    for jobs in ("1", "2"):
        for fmt in ([], ["--json"]):
            assert main(["saturate", "editor", "--frontier", "reader,exporter",
                         "--frontier-max", "3,3", "--backend", "cpu", "--jobs", jobs,
                         *fmt]) == 0
            out, err = capsys.readouterr()
            if fmt:
                d = json.loads(out)
                for p in d["points"]:
                    p.pop("seconds")
                d.pop("seconds")
                out = d
            runs[jobs, bool(fmt)] = out, [line.rsplit(",", 1)[0] for line in err.splitlines()]
    assert runs["1", False] == runs["2", False] and runs["1", True] == runs["2", True]
    text, progress = runs["1", False]
    assert progress[0] == "reader 0, exporter 0: load 0 (0.0000), below capacity, 0 states"
    assert progress[1] == "reader 0, exporter 1: load 4/11 (0.3636), below capacity, 22 states"
    assert len(progress) == runs["1", True][0]["analyses"] + 1   # + the empty point


def test_workers_jobs_change_nothing(capsys):
    outs = []
    for jobs in ("1", "2"):
        assert main(["workers", "editor", "--clients", "reader=2,exporter=2", "--backend",
                     "cpu", "--jobs", jobs, "-q"]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "1 worker needed" in outs[0]
    assert main(["workers", "editor", "--clients", "reader=3", "--jobs", "0"]) == 2
    assert "jobs must be an integer >= 1" in capsys.readouterr().err


def test_saturate_jobs_change_nothing_the_user_reads(capsys):
    """The search itself with --jobs 2: the same report and JSON curve as --jobs 1 (seconds
    and the time line aside); the points it uses are heard in the same order."""
    runs = {}
    for jobs in ("1", "2"):
        assert main(["saturate", "editor", "--backend", "cpu", "--jobs", jobs]) == 0
        out, err = capsys.readouterr()
        text = [re.sub(r"\s+\d+\.\d\d$", "", line) for line in out.splitlines()
                if not line.startswith("time: ")]
        done = [line.rsplit(",", 1)[0] for line in err.splitlines() if ": load " in line]
        assert main(["saturate", "editor", "--backend", "cpu", "--jobs", jobs, "--json",
                     "-q"]) == 0
        d = json.loads(capsys.readouterr().out)
        curve = [(p["clients"], p["exact"], p["n_states"]) for p in d["curve"]]
        runs[jobs] = text, done, curve, d["saturating_clients"]
    assert runs["1"] == runs["2"] and runs["1"][3] == 6
    assert [c for c, _, _ in runs["1"][2]] == [1, 2, 3, 4, 5, 6, 8]   # 3: decided after
    assert main(["saturate", "editor", "--jobs", "0"]) == 2
    assert "jobs must be an integer >= 1" in capsys.readouterr().err


def test_frontier_workers_option(tmp_path, capsys):
    assert main(["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max",
                 "1,2", "--workers", "2", "--backend", "cpu", "--json", "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["capacity"] == 2
    p = next(p for p in out["points"] if (p["n_a"], p["n_b"]) == (1, 2))
    assert Fraction(p["exact"]) == single_load(tmp_path, {"reader": 1, "exporter": 2}, 2)
    assert main(["saturate", "editor", "--workers", "2"]) == 2
    assert "--workers applies to --frontier only" in capsys.readouterr().err


def _frontier_result(max_a: int, max_b: int):
    """A frontier over a stand-in load 2a/15 + b/6 (capacity 1), for the plot's tests."""
    from scenarios import Request, Scenario
    from scenarios.capacity import frontier
    from scenarios.saturation import Evaluation

    x, y = Scenario("x", Request("r", 1)), Scenario("y", Request("r", 1))

    def fake(model, *, resource, witness):
        na = sum(1 for p in model.processes if p.name.startswith("x_"))
        nb = sum(1 for p in model.processes if p.name.startswith("y_"))
        return Evaluation(Fraction(2 * na, 15) + Fraction(nb, 6), n_states=1)

    return frontier(System({x: 1, y: 1}, server=Server()), "x", "y", evaluate=fake,
                    max_clients=(max_a, max_b))


@pytest.mark.parametrize("size", [(6, 6), (40, 40)])
def test_frontier_plot_shows_the_staircase_on_integer_axes(size):
    pytest.importorskip("matplotlib")
    from dvecost.cli.frontier import build_figure

    r = _frontier_result(*size)
    fig = build_figure(r)
    fig.canvas.draw()
    ax = fig.axes[0]
    assert ax.get_xlabel() == "x clients" and ax.get_ylabel() == "y clients"
    for ticks, top in ((ax.get_xticks(), size[0]), (ax.get_yticks(), size[1])):
        shown = [t for t in ticks if -0.5 <= t <= top + 0.5]
        assert len(shown) >= 3 and all(float(t).is_integer() for t in shown)
    assert ax.get_xlim() == (-0.5, size[0] + 0.5) and ax.get_ylim() == (-0.5, size[1] + 0.5)
    (stair,) = [line for line in ax.lines if line.get_label().startswith("largest y")]
    assert [tuple(map(int, xy)) for xy in stair.get_xydata()] == \
        [(a, b) for a, b in r.stair if b is not None]
    # Every evaluated point once, coloured by load / capacity; saturated ones as squares.
    drawn = {}
    for coll in ax.collections:
        for (xv, yv), c in zip(coll.get_offsets(), coll.get_array()):
            drawn[int(xv), int(yv)] = c
    assert drawn == {(p.n_a, p.n_b): pytest.approx(float(p.exact / r.capacity))
                     for p in r.points}
    assert fig.axes[1].get_ylabel() == "load / capacity (1)"
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_frontier_plot_file(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    path = tmp_path / "f.png"
    assert main(["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max",
                 "2,3", "--backend", "cpu", "-q", "--plot", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == f"plot: written to {path}"
    assert path.read_bytes()[:4] == b"\x89PNG"
    assert [p.name for p in tmp_path.iterdir()] == ["f.png"]   # no temporary file left
    assert main(["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max",
                 "2,3", "--backend", "cpu", "-q", "--plot", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["files"] == {"plot": str(path)}


def test_frontier_plot_without_matplotlib(tmp_path, capsys, monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # import fails
    path = tmp_path / "f.png"
    assert main(["saturate", "editor", "--frontier", "reader,exporter", "--plot",
                 str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--plot needs matplotlib" in err and "reader 0" not in err
    assert not path.exists()


BIG = ["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max", "40,40",
       "--workers", "4", "--backend", "cpu", "--jobs", "2"]   # minutes of work in all


def test_frontier_timeout_keeps_the_points_found(capsys):
    code = main([*BIG, "--json", "--timeout", "1.5"])
    out, err = capsys.readouterr()
    assert code == 3
    d = json.loads(out)
    assert d["status"] == "timeout" and "time limit of 1.5 s reached" in d["stopped"]
    got = [(p["n_a"], p["n_b"]) for p in d["points"]]
    # The walk's points in its order (0, 0), (0, 1), ..., then those analysed ahead.
    assert got[:2] == [(0, 0), (0, 1)] and len(set(got)) == len(got)
    assert "the frontier found so far follows" in err
    assert multiprocessing.active_children() == []


def test_sigint_stops_the_worker_processes_and_prints_the_frontier_so_far():
    proc = subprocess.Popen([sys.executable, "-m", "dvecost", *BIG], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith("reader 0, exporter 1:"):
            workers = [int(c) for t in pathlib.Path(f"/proc/{proc.pid}/task").iterdir()
                       for c in (t / "children").read_text().split()]
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=60)
    err = "".join(seen) + err
    assert proc.returncode == 130 and "Traceback" not in err
    assert len(workers) == 2 and not any(pathlib.Path(f"/proc/{w}").exists() for w in workers)
    lines = out.splitlines()
    assert lines[0].startswith("editor: frontier of reader x exporter (0..40 x 0..40), "
                               "capacity 4")
    assert any(ln.startswith("stopped: (0, ") and "interrupted by SIGINT" in ln
               for ln in lines)
    assert "dvecost: (0, " in err and "the frontier found so far follows" in err


@pytest.mark.slow
def test_four_worker_frontier_agrees_with_dvecost_analyze_of_the_rendered_models(tmp_path,
                                                                               capsys):
    """The target's setting (4 workers, two jobs) on a corner of the grid; three of its points
    against `dvecost analyze` of the rendered DVE text: (0, 4) explored in full (symmetry off,
    a path that shares no quotient code), (0, 8) and (1, 8) (over 10^9 states in full) with
    symmetry reduction, as a user would run them."""
    assert main(["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max",
                 "1,8", "--workers", "4", "--backend", "cpu", "--jobs", "2", "--json",
                 "-q"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["capacity"] == 4 and out["status"] == "ok"
    points = {(p["n_a"], p["n_b"]): p for p in out["points"]}
    assert all(p["certified"] for p in out["points"])
    for (na, nb), symmetry in (((0, 4), "off"), ((0, 8), "auto"), ((1, 8), "auto")):
        system = System({SC[n]: k for n, k in (("reader", na), ("exporter", nb)) if k},
                        server=Server(workers=4), name="editor")
        path = tmp_path / f"editor_{na}_{nb}.dve"
        path.write_text(dve.format_model(system.to_model()))
        assert main(["analyze", str(path), "--cost", "server", "--backend", "cpu",
                     "--symmetry", symmetry, "--no-witness", "--json", "-q"]) == 0
        single = json.loads(capsys.readouterr().out)
        assert single["certified"]
        assert Fraction(single["exact"]) == Fraction(points[na, nb]["exact"])
        assert (Fraction(single["exact"]) >= 4) == points[na, nb]["saturated"]


def test_the_worker_processes_die_with_a_killed_parent():
    """kill -9 gives the parent no chance to end its workers: they die with it (Linux)."""
    proc = subprocess.Popen([sys.executable, "-m", "dvecost", *BIG], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if line.startswith("reader 0, exporter 1:"):
            workers = [int(c) for t in pathlib.Path(f"/proc/{proc.pid}/task").iterdir()
                       for c in (t / "children").read_text().split()]
            proc.kill()
            break
    proc.communicate(timeout=60)
    assert len(workers) == 2

    def alive(pid):
        try:
            state = pathlib.Path(f"/proc/{pid}/status").read_text().split("State:")[1]
        except FileNotFoundError:
            return False
        return not state.strip().startswith("Z")   # a zombie is dead, waiting to be reaped

    deadline = time.monotonic() + 10
    while any(alive(w) for w in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(w) for w in workers)


def test_headroom_cli_agrees_with_a_single_analysis_and_its_run_replays(tmp_path, capsys):
    """The load against the capacity, what is left, and the critical cycle: the value is that
    of the rendered model analysed without symmetry, and the printed run (lifted to named
    clients) replays step by step on that model."""
    counts = {"reader": 2, "exporter": 2}
    code = main(["headroom", "editor", "--clients", "reader=2,exporter=2", "--workers", "2",
                 "--backend", "cpu", "--json", "-q"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["status"] == "ok" and d["certified"]
    exact = Fraction(d["exact"])
    assert exact == single_load(tmp_path, counts, 2)
    assert (d["workers"], d["capacity"], d["clients"]) == (2, 2, counts)
    assert Fraction(d["headroom_exact"]) == 2 - exact and d["saturated"] == (exact >= 2)
    assert d["used"] == pytest.approx(float(exact / 2))
    assert Fraction(d["analysis"]["exact"]) == exact
    model = System({SC[n]: k for n, k in counts.items()}, server=Server(workers=2),
                   name="editor").to_model()
    assert replay_analysis(model, d["analysis"]) > 0

    assert main(["headroom", "editor", "--clients", "reader=2,exporter=2", "--workers", "2",
                 "--backend", "cpu", "-q"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == "editor: 2 reader, 2 exporter on a server with 2 workers, capacity 2"
    assert text[1] == (f"worst busy workers per tick {exact} ({float(exact):.4f}): "
                       f"{float(exact / 2):.1%} of capacity, headroom {2 - exact} "
                       f"({float(2 - exact):.4f})")
    assert any(line.startswith("critical cycle: ") for line in text)


def test_headroom_cli_errors(capsys):
    assert main(["headroom", "editor", "--clients", "reader=x"]) == 2
    assert "NAME=COUNT" in capsys.readouterr().err
    assert main(["headroom", "paper-no-server", "--clients", "client=2"]) == 2
    assert "has no server" in capsys.readouterr().err
    assert main(["headroom", "editor", "--clients", "reader=0"]) == 2
    assert "at least one client" in capsys.readouterr().err
    # A limit stops it as it stops analyze: exit 3, the counts, one JSON object.
    assert main(["headroom", "editor", "--clients", "reader=6,exporter=3", "--workers", "4",
                 "--max-states", "100", "--backend", "cpu", "--json"]) == 3
    out, err = capsys.readouterr()
    d = json.loads(out)
    assert d["status"] == "limit" and d["limit"]["name"] == "--max-states"
    assert d["counts"]["states"] > 100 and "limit --max-states 100 reached" in err


def _console(command: str) -> list[str]:
    """The output lines shown after ``$ command`` in docs/scenarios.md."""
    text = (ROOT / "docs" / "scenarios.md").read_text()
    assert f"$ {command}\n" in text, f"no console block for {command!r}"
    return text.split(f"$ {command}\n", 1)[1].split("```", 1)[0].splitlines()


def test_the_docs_frontier_and_headroom_examples_are_what_the_commands_print(capsys):
    command = "dvecost saturate editor --frontier reader,exporter --frontier-max 6,6"
    assert main(command.split()[1:] + ["-q", "--backend", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines() == _console(command)
    command = "dvecost headroom editor --clients reader=6,exporter=3 --workers 4"
    assert main(command.split()[1:] + ["-q", "--backend", "cpu"]) == 0
    out = capsys.readouterr().out.splitlines()
    shown = _console(command)
    # (the processes' line is abbreviated in the docs)
    assert out[:4] == shown[:4] and out[5:9] == shown[5:9]
