"""``dvecost explore --save --json`` stopped by a signal in every phase.

Whatever the signal hits (loading, exploring, assembling the graph, saving it, summarising),
the command prints what it found (the JSON has ``status`` and the counts, the text the
counts), exits 130 for SIGINT and 143 for SIGTERM, and leaves at the ``--save`` path either
nothing or a complete graph file, never a part of one (and no temporary beside it).

The in-process tests make one phase raise the stop as the signal handler would (the stage
functions are replaced in the test only); the subprocess test sends real signals at a sweep of
delays and checks the same invariant for each.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from runtime.errors import Interrupted
from dvecost.cli import main

#: 3 x 31 x 31 x 31 = 89,373 states: big enough that every phase takes measurable time.
GRID = """
byte a; byte b; byte c;
process P { state s, t, u; init s;
  trans s -> t { guard a < 30; effect a = a + 1; cost 1; }, t -> u {}, u -> s {},
        s -> s { guard a > 0; effect a = a - 1; cost 2; }; }
process Q { state s; init s;
  trans s -> s { guard b < 30; effect b = b + 1; cost 3; },
        s -> s { guard b > 0; effect b = b - 1; }; }
process R { state s; init s;
  trans s -> s { guard c < 30; effect c = c + 1; },
        s -> s { guard c > 0; effect c = c - 1; cost 5; }; }
system async;
"""


@pytest.fixture
def grid(tmp_path):
    path = tmp_path / "grid.dve"
    path.write_text(GRID)
    return str(path)


@pytest.fixture
def full(grid, capsys):
    """The complete run's JSON, for comparing counts."""
    assert main(["explore", grid, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _check_target(target, full_states):
    """Nothing, or a complete graph file, at ``target``; no temporary beside it."""
    from statespace import load_graph
    folder = os.path.dirname(target)
    assert [f for f in os.listdir(folder) if f.endswith(".tmp")] == []
    if os.path.exists(target):
        g = load_graph(target)
        assert g.complete and g.n_states == full_states
        return True
    return False


def _stop_once(monkeypatch, owner, name, signum=2):
    """Make ``owner.name`` raise the stop the first time it is called, then work again."""
    real = getattr(owner, name)
    calls = []

    def stopped(*args, **kw):
        calls.append(1)
        if len(calls) == 1:
            raise Interrupted(signum, signal.Signals(signum).name)
        return real(*args, **kw)

    monkeypatch.setattr(owner, name, stopped)
    return calls


def _interrupted_json(out, err, phase, signame="SIGINT"):
    j = json.loads(out)
    assert j["status"] == "interrupted" and j["stopped_in"] == phase
    assert f"interrupted by {signame}; " in err and "found so far" in err
    assert f"{j['n_states']:,} states, {j['n_transitions']:,} transitions" in err
    assert "Traceback" not in err
    return j


def test_a_signal_while_the_graph_is_assembled_reports_all_of_it(grid, full, tmp_path,
                                                                  monkeypatch, capsys):
    from statespace.search import GraphBuilder
    real = GraphBuilder.finish

    def finish(self, counts, t0):
        if counts[3]:   # complete: the loop is over, the arrays are being put together
            raise Interrupted(15, "SIGTERM")
        return real(self, counts, t0)

    monkeypatch.setattr(GraphBuilder, "finish", finish)
    target = str(tmp_path / "g.npz")
    assert main(["explore", grid, "--json", "--save", target]) == 143
    out, err = capsys.readouterr()
    j = _interrupted_json(out, err, "explore", "SIGTERM")
    # Every state was expanded: the partial graph is all of it, only not marked complete.
    assert (j["n_states"], j["n_transitions"]) == (full["n_states"], full["n_transitions"])
    assert j["complete"] is False and j["n_expanded"] == full["n_states"]
    assert not _check_target(target, full["n_states"]) and "not written" in err


def test_a_signal_while_saving_reports_the_graph_and_writes_nothing(grid, full, tmp_path,
                                                                    monkeypatch, capsys):
    from statespace import graphfile as graph_mod

    def savez_then_signal(f, **arrays):
        f.write(b"PK\x03\x04 the first bytes of the archive")
        raise Interrupted(2, "SIGINT")

    monkeypatch.setattr(graph_mod.np, "savez", savez_then_signal)
    target = str(tmp_path / "g.npz")
    assert main(["explore", grid, "--json", "--save", target]) == 130
    out, err = capsys.readouterr()
    j = _interrupted_json(out, err, "save")
    assert j["complete"] is True and j["n_states"] == full["n_states"]
    assert "saved" not in j and f"{target} not written (interrupted)" in err
    assert not _check_target(target, full["n_states"])


def test_a_signal_while_saving_keeps_the_old_file(grid, full, tmp_path, monkeypatch, capsys):
    from statespace import graphfile as graph_mod
    target = str(tmp_path / "g.npz")
    assert main(["explore", grid, "-q", "--save", target]) == 0
    before = open(target, "rb").read()
    capsys.readouterr()
    _stop_once(monkeypatch, graph_mod.np, "savez")
    assert main(["explore", grid, "--save", target]) == 130
    out, err = capsys.readouterr()
    assert f"states        {full['n_states']:,}" in out
    assert open(target, "rb").read() == before
    assert _check_target(target, full["n_states"])


def test_a_signal_while_summarising_still_prints_the_summary(grid, full, monkeypatch, capsys):
    import dvecost.cli.explore as cli_explore
    calls = _stop_once(monkeypatch, cli_explore, "summary")
    assert main(["explore", grid, "--json"]) == 130
    out, err = capsys.readouterr()
    j = _interrupted_json(out, err, "report")
    assert len(calls) == 2 and j["n_states"] == full["n_states"]
    assert j["n_deadlocks"] == full["n_deadlocks"] and j["depth"] == full["depth"]


def test_a_signal_after_the_result_is_final_changes_nothing(grid, full, monkeypatch, capsys):
    # The stop arrives once the result is final (while it is printed): ignored, so the
    # printed status and the exit code agree.
    import dvecost.cli as cli
    import dvecost.cli.explore as cli_explore
    real = cli.emit_json

    def emit_then_signal(*a, **k):
        os.kill(os.getpid(), signal.SIGINT)   # the handler runs here, between bytecodes
        return real(*a, **k)

    monkeypatch.setattr(cli_explore, "emit_json", emit_then_signal)
    assert main(["explore", grid, "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["status"] == "ok" and err == ""


def _caught_sigterm(pid: int) -> bool:
    """Whether the process catches SIGTERM: Python does not by default, so this says
    dvecost's stop handlers are installed (its command is running)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


def _start(grid, target):
    p = subprocess.Popen([sys.executable, "-m", "dvecost", "explore", grid, "--json", "--save",
                          target], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.monotonic()
    while not _caught_sigterm(p.pid):
        assert p.poll() is None, p.communicate()
        assert time.monotonic() - t0 < 60
        time.sleep(0.002)
    return p, time.monotonic()


@pytest.mark.slow
def test_real_signals_at_a_sweep_of_delays_keep_the_invariant(grid, tmp_path):
    """Real SIGINT/SIGTERM from the moment the command runs to its end (fractions of the
    calibrated run time); each run: one JSON object with status and counts, exit code of the
    signal (or 0 with status ok when the signal came after the result was final), and nothing
    or a complete file at the --save path."""
    target = str(tmp_path / "g.npz")
    p, ready = _start(grid, target)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    full = json.loads(out)
    length = sum(full["timings"].values())   # load, explore (assembling included), save
    os.unlink(target)
    phases = []
    for k, frac in enumerate((0.05, 0.3, 0.6, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.2)):
        sig = (signal.SIGINT, signal.SIGTERM)[k % 2]
        p, ready = _start(grid, target)
        time.sleep(max(0.0, ready + frac * length - time.monotonic()))
        p.send_signal(sig)
        out, err = p.communicate(timeout=120)
        where = f"signal {sig.name} at {frac:.2f} of the run: {err!r}"
        assert "Traceback" not in err, where
        j = json.loads(out)   # exactly one JSON object
        assert out.count("\n") == 1, where
        if j.get("stopped_in") == "load":   # before exploring: nothing found yet
            assert j["status"] == "interrupted" and p.returncode == 128 + sig, where
            assert "n_states" not in j and "while loading the model" in err, where
            assert not _check_target(target, full["n_states"]), where
            phases.append("load")
            continue
        assert j["n_states"] <= full["n_states"] and j["n_transitions"] <= full["n_transitions"]
        if j["status"] == "ok":   # the signal came after the result was final
            assert p.returncode == 0 and j == {**full, "timings": j["timings"],
                                               "peak_memory_bytes": j["peak_memory_bytes"]}
            assert _check_target(target, full["n_states"]), where
            phases.append("done")
        else:
            assert j["status"] == "interrupted" and p.returncode == 128 + sig, where
            assert f"{j['n_states']:,} states" in err, where
            if j["complete"]:
                assert j["n_states"] == full["n_states"], where
            assert not _check_target(target, full["n_states"]), where
            phases.append(j["stopped_in"])
        if os.path.exists(target):
            os.unlink(target)
    assert "explore" in phases, phases   # the sweep did reach into the work


def test_a_signal_while_saving_the_partial_graph_of_a_limit(grid, full, tmp_path, monkeypatch,
                                                            capsys):
    # The case of issue 12: a limit stops the run, the partial graph is being saved, SIGINT.
    from statespace import graphfile as graph_mod
    _stop_once(monkeypatch, graph_mod.np, "savez")
    target = str(tmp_path / "g.npz")
    assert main(["explore", grid, "--json", "--max-states", "5000", "--save", target]) == 130
    out, err = capsys.readouterr()
    j = _interrupted_json(out, err, "save")
    assert j["complete"] is False and 5000 < j["n_states"] < full["n_states"]
    assert j["n_expanded"] < j["n_states"] and "limit" not in j
    assert not _check_target(target, full["n_states"]) and "not written" in err


def test_cycle_a_signal_once_the_answer_is_final_changes_nothing(tmp_path, monkeypatch, capsys):
    # The same rule in `cycle`: one JSON object, the answer's status and exit code.
    import dvecost.cli.cycle as cli_cycle
    edges = tmp_path / "g.txt"
    edges.write_text("2 2\n0 1 3 1\n1 0 5 1\n")
    real = cli_cycle.emit_json

    def emit_then_signal(*a, **k):
        os.kill(os.getpid(), signal.SIGTERM)
        return real(*a, **k)

    monkeypatch.setattr(cli_cycle, "emit_json", emit_then_signal)
    assert main(["cycle", str(edges), "--json"]) == 0
    out, err = capsys.readouterr()
    (line,) = out.splitlines()
    assert json.loads(line)["status"] == "ok" and json.loads(line)["exact"] == "4"
    assert err == ""
