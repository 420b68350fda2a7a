"""Limits, signals and memory: ``--max-states``, ``--max-memory``, ``--timeout``, SIGINT and
SIGTERM stop cleanly with what was found so far (exit 3, 130, 143), never a traceback."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from dvecost.cli import ByteSize, emit_json, main, parse_seconds, parse_size, stop_info
from runtime.errors import Interrupted, StateLimitExceeded

#: A counter that runs for 2**31 steps: exploring it never ends within a test.
ENDLESS = """
int x;
process P { state a; init a;
  trans a -> a { guard x < 2147483000; effect x = x + 1; cost 1; }; }
system async;
"""

#: 201 states x = 0..200; every state has a self-loop of cost x, and a step to x + 1.
LADDER = """
byte x;
process P { state a; init a;
  trans a -> a { guard x < 200; effect x = x + 1; cost 0; },
        a -> a { cost x; }; }
system async;
"""

#: A binary tree of depth 10: 2047 states, the 1024 leaves deadlock.
TREE = """
int x; byte d;
process P { state a; init a;
  trans a -> a { guard d < 10; effect x = 2 * x, d = d + 1; },
        a -> a { guard d < 10; effect x = 2 * x + 1, d = d + 1; }; }
system async;
"""


def dvecost(*args, **kw):
    """Run the CLI in a fresh interpreter (exit codes and signals as a user sees them)."""
    return subprocess.Popen([sys.executable, "-m", "dvecost", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_until_busy(proc, seconds=1.0, limit=60.0):
    """Wait until the child has used ``seconds`` of CPU (past its imports, exploring)."""
    t0 = time.monotonic()
    while cpu_seconds(proc.pid) < seconds:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < limit
        time.sleep(0.05)


@pytest.fixture
def model(tmp_path):
    def write(text, name="m.dve"):
        p = tmp_path / name
        p.write_text(text)
        return str(p)
    return write


# ---------------------------------------------------------------- the shared CLI machinery

def test_sizes_and_durations_keep_what_the_user_wrote():
    assert parse_size("1G") == 2**30 and str(parse_size("1G")) == "1G"
    assert parse_size("512m") == 512 * 2**20 and parse_size("1.5K") == 1536
    assert isinstance(parse_size("2GiB"), ByteSize)
    assert parse_seconds("2m") == 120 and str(parse_seconds("2m")) == "2m"
    for bad in ("0", "-1G", "1Q", "G", ""):
        with pytest.raises(ValueError):
            parse_size(bad)
    for bad in ("0", "-3", "abc", "1d"):
        with pytest.raises(ValueError):
            parse_seconds(bad)


def test_emit_json_is_one_line_with_status_timings_and_peak(capsys):
    emit_json("ok", n_states=np.int64(3), value=None, timings={"explore": 0.5})
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    obj = json.loads(out)
    assert list(obj) == ["status", "n_states", "timings", "peak_memory_bytes"]
    assert obj["n_states"] == 3 and obj["timings"] == {"explore": 0.5}
    assert obj["peak_memory_bytes"] >= 10 * 2**20   # an interpreter with NumPy loaded


def test_stop_info_names_the_limit_as_written_and_the_counts():
    from argparse import Namespace
    exc = StateLimitExceeded(10, 12)
    info = stop_info(exc, Namespace(max_states=10))
    assert info["status"] == "limit" and info["exit_code"] == 3
    assert info["limit"] == {"name": "--max-states", "value": "10"}
    assert "12 states found so far" in info["message"]
    sig = Interrupted(2, "SIGINT")
    assert stop_info(sig)["exit_code"] == 130 and stop_info(sig)["status"] == "interrupted"


@pytest.mark.parametrize("cmd", ["explore", "analyze", "saturate"])
def test_max_states_zero_is_refused_alike(cmd, model, capsys):
    target = model(LADDER) if cmd != "saturate" else "editor"
    assert main([cmd, target, "--max-states", "0"]) == 2
    assert "--max-states" in capsys.readouterr().err


def test_bad_option_prints_the_subcommands_usage(model, capsys):
    assert main(["explore", model(LADDER), "--no-such-option"]) == 2
    err = capsys.readouterr().err
    assert "usage: dvecost explore" in err and "--no-such-option" in err
    assert main(["cycle", "g.txt", "--max-states", "3"]) == 2   # cycle has no state limit
    assert "usage: dvecost cycle" in capsys.readouterr().err


@pytest.mark.parametrize("cmd", ["explore", "cycle", "analyze", "saturate"])
def test_every_command_takes_max_memory_and_timeout(cmd, capsys):
    assert main([cmd, "--help"]) == 0
    out = capsys.readouterr().out
    assert "--max-memory" in out and "--timeout" in out


# ---------------------------------------------------------------- partial graphs

def test_partial_graph_has_no_invented_deadlocks(model, tmp_path, capsys):
    from dve import load_model
    from statespace import build_state_graph, load_graph
    full = build_state_graph(load_model(TREE))
    assert full.n_states == 2047 and full.n_deadlocks == 1024
    out = tmp_path / "part.npz"
    assert main(["explore", model(TREE), "--max-states", "100", "--json", "--save",
                 str(out)]) == 3
    info = json.loads(capsys.readouterr().out)
    assert info["status"] == "limit" and info["complete"] is False
    assert info["limit"] == {"name": "--max-states", "value": "100"}
    k = info["n_expanded"]
    assert 0 < k < info["n_states"]
    # Breadth-first numbering is the same in both runs: the oracle is the full graph's
    # deadlocks among the first k states (none: leaves are at depth 10).
    expect = [int(d) for d in full.deadlocks if d < k]
    assert info["n_deadlocks"] == len(expect) == 0
    saved = load_graph(out)
    assert saved.complete is False and saved.n_expanded == k
    assert saved.deadlocks.tolist() == expect


#: A chain x = 0..200 with a dead end beside every step: half the states deadlock.
COMB = """
byte x;
process P { state a, dead; init a;
  trans a -> a { guard x < 200; effect x = x + 1; }, a -> dead {}; }
system async;
"""


def test_partial_deadlocks_are_the_expanded_ones():
    # Stopped with some dead ends expanded and some not: only the expanded ones deadlock.
    from dve import load_model
    from statespace import build_state_graph
    g = build_state_graph(load_model(COMB))
    assert g.n_states == 402 and g.n_deadlocks == 201
    with pytest.raises(StateLimitExceeded) as e:
        build_state_graph(load_model(COMB), max_states=50, chunk_size=3)
    part = e.value.partial
    k = part.n_expanded
    assert 10 < k < part.n_states
    expect = [int(d) for d in g.deadlocks if d < k]
    assert part.deadlocks.tolist() == expect and len(expect) >= 5
    assert all(len(part.successors(i)) == 0 for i in range(k, part.n_states))


def test_cycle_on_a_partial_graph_gives_a_bound_and_says_so(model, tmp_path, capsys):
    part, full = tmp_path / "part.npz", tmp_path / "full.npz"
    assert main(["explore", model(LADDER), "--max-states", "50", "-q", "--save",
                 str(part)]) == 3
    assert main(["explore", model(LADDER), "-q", "--save", str(full)]) == 0
    capsys.readouterr()
    assert main(["cycle", str(full)]) == 0
    assert "maximal cycle mean: 200 (certified)" in capsys.readouterr().out
    assert main(["cycle", str(part), "--json"]) == 3
    cap = capsys.readouterr()
    j = json.loads(cap.out)
    # The expanded states are x = 0 .. k-1, each with its self-loop of cost x.
    assert j["status"] == "incomplete" and j["bound"] == "lower"
    assert j["exact"] == str(j["n_expanded"] - 1)
    assert "incomplete" in cap.err
    assert main(["cycle", str(part)]) == 3
    out = capsys.readouterr().out
    assert "partial graph only" in out and "at least" in out and "(certified)" not in out


# ---------------------------------------------------------------- time and signals

def test_timeout_stops_with_counts(model):
    p = dvecost("explore", model(ENDLESS), "--timeout", "1", "--json")
    out, err = p.communicate(timeout=120)
    assert p.returncode == 3, err
    j = json.loads(out)
    assert j["status"] == "timeout" and j["limit"] == {"name": "--timeout", "value": "1"}
    assert j["n_states"] > 1 and j["complete"] is False
    assert "time limit" in err and f"{j['n_states']:,} states" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signals_print_what_was_found(model, sig, code):
    p = dvecost("explore", model(ENDLESS), "-q")
    wait_until_busy(p)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    name = signal.Signals(sig).name
    assert f"interrupted by {name}" in err and "found so far" in err
    assert "Traceback" not in err
    assert "(partial: stopped before the end)" in out
    n = int(out.split("states")[1].split()[0].replace(",", ""))
    assert f"{n:,} states" in err and n > 1


def test_signal_json_is_marked_interrupted(model, tmp_path):
    target = tmp_path / "g.npz"
    p = dvecost("explore", model(ENDLESS), "--json", "--save", str(target))
    wait_until_busy(p)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143
    j = json.loads(out)
    assert j["status"] == "interrupted" and j["complete"] is False
    assert not target.exists() and "not written" in err
    assert [f for f in os.listdir(tmp_path) if f.endswith(".tmp")] == []


# ---------------------------------------------------------------- memory

def _limit_address_space(nbytes):
    def pre():
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
    return pre


def test_out_of_memory_is_exit_3_with_counts(model):
    # Exploring a wide model under an address-space limit: the allocation that fails ends
    # the run with the counts so far, no traceback.
    wide = """
    int x; int y;
    process P { state a; init a;
      trans a -> a { guard x < 30000; effect x = x + 1; },
            a -> a { guard y < 30000; effect y = y + 1; }; }
    system async;
    """
    p = dvecost("explore", model(wide), "-q",
                preexec_fn=_limit_address_space(380 * 2**20))
    out, err = p.communicate(timeout=240)
    assert p.returncode == 3, err
    assert "out of memory" in err and "states" in err and "Traceback" not in err


def test_max_memory_bounds_peak_rss(beem_dir):
    # Counting only the output arrays, `--max-memory 1G` once peaked at 2.1 GB (bakery.7).
    p = dvecost("explore", str(beem_dir / "models" / "bakery.5.dve"), "--max-memory", "300M",
                "--json", "-q")
    out, err = p.communicate(timeout=300)
    assert p.returncode == 3, err
    j = json.loads(out)
    assert j["status"] == "limit" and j["limit"] == {"name": "--max-memory", "value": "300M"}
    assert j["n_states"] > 100_000
    assert j["peak_memory_bytes"] <= 1.25 * 300 * 2**20
    assert "--max-memory 300M" in err


def test_max_memory_below_what_the_program_holds_says_so(model, capsys):
    assert main(["explore", model(LADDER), "--max-memory", "1M", "--json"]) == 3
    cap = capsys.readouterr()
    j = json.loads(cap.out)
    assert j["status"] == "limit" and j["n_states"] == 1 and j["n_expanded"] == 0
    assert "--max-memory 1M reached" in cap.err and "hint:" in cap.err


def test_max_clients_beyond_the_limit_is_refused_before_any_work(capsys):
    """``--max-clients 10**20`` hung sharing clients out; it is refused at once, exit 2."""
    from fractions import Fraction

    from scenarios import saturate
    from scenarios.loader import MAX_CLIENTS

    t0 = time.perf_counter()
    assert main(["saturate", "editor", "--max-clients", str(10**20)]) == 2
    assert time.perf_counter() - t0 < 5
    err = capsys.readouterr().err
    assert f"--max-clients: must be between 1 and {MAX_CLIENTS:,}" in err
    assert "Traceback" not in err
    built = []
    with pytest.raises(Exception, match=f"at most {MAX_CLIENTS:,}"):
        saturate(lambda n: built.append(n), evaluate=lambda *a, **k: Fraction(0),
                 max_clients=MAX_CLIENTS + 1)
    assert built == []   # no family(n) was built


def test_a_stop_after_exploration_reports_the_graph_found(monkeypatch, capsys):
    """SIGTERM in the cycle engine: exploration is over, so the message and the JSON carry
    the complete graph's counts (rings_sync: 6 states; the engine is made to raise the stop,
    as the signal handler would, which is deterministic)."""
    import ocm
    from dvecost.examples import example_path

    def stopped(*a, **k):
        raise Interrupted(15, "SIGTERM")

    from dvecost import analyze
    path = str(example_path("rings_sync.dve"))
    ref = analyze(path, backend="cpu", witness=False)
    monkeypatch.setattr(ocm, "optimal_cycle", stopped)
    assert main(["analyze", path, "--json", "--backend", "cpu"]) == 143
    out, err = capsys.readouterr()
    found = f"{ref.n_states:,} states, {ref.n_transitions:,} transitions found so far"
    assert err.strip() == f"dvecost: interrupted by SIGTERM; {found}"
    obj = json.loads(out)
    assert obj["status"] == "interrupted"
    assert obj["counts"] == {"states": ref.n_states, "transitions": ref.n_transitions}


def test_a_stop_while_rendering_reports_the_graph_found(monkeypatch, capsys):
    import dvecost.report
    from dvecost.examples import example_path

    def stopped(*a, **k):
        raise Interrupted(2, "SIGINT")

    monkeypatch.setattr(dvecost.report, "render_text", stopped)
    assert main(["analyze", str(example_path("rings_sync.dve")), "--backend", "cpu"]) == 130
    out, err = capsys.readouterr()
    assert "interrupted by SIGINT; " in err and " transitions found so far" in err
    assert out.splitlines()[0].endswith("rings_sync.dve: no value (interrupted before the answer)")


def test_analyze_max_memory_checks_the_engine_before_it_starts(monkeypatch, capsys):
    """The engine's estimate (the one ``cycle`` uses) over --max-memory: exit 3 with the
    graph's counts, and the engine never runs. The estimate is made huge so that exploration
    passes the limit and the engine would not: deterministic whatever the process holds."""
    import ocm
    import ocm.backend
    from dvecost import analyze
    from dvecost.examples import example_path

    path = str(example_path("rings_sync.dve"))
    ref = analyze(path, backend="cpu", witness=False)
    assert ocm.backend.engine_memory_bytes(ref.n_states, ref.n_transitions) == \
        64 * ref.n_transitions + 96 * (ref.n_states + 1)
    ran = []
    monkeypatch.setattr(ocm, "optimal_cycle", lambda *a, **k: ran.append(1))
    monkeypatch.setattr(ocm.backend, "engine_memory_bytes", lambda n, m: 2**60)
    assert main(["analyze", path, "--json", "--max-memory", "64G", "--backend", "cpu"]) == 3
    out, err = capsys.readouterr()
    assert ran == []
    assert err.strip() == (f"dvecost: limit --max-memory 64G reached; {ref.n_states:,} states, "
                           f"{ref.n_transitions:,} transitions found so far")
    obj = json.loads(out)
    assert obj["status"] == "limit" and obj["limit"] == {"name": "--max-memory", "value": "64G"}
    assert obj["counts"] == {"states": ref.n_states, "transitions": ref.n_transitions}


def test_a_process_started_from_a_large_one_measures_its_own_memory(beem_dir):
    """getrusage's ru_maxrss survives fork and exec: a dvecost started by a parent holding
    600 MB read 600 MB as its peak, and --max-memory 300M stopped bakery.5 after a few
    thousand states (in CI, under pytest's own large process). The peak is its own now."""
    import numpy as np

    ballast = np.ones(600 * 2**20 // 8)   # pages touched: the parent's RSS grows by 600 MB
    p = dvecost("explore", str(beem_dir / "models" / "bakery.5.dve"), "--max-memory", "300M",
                "--json", "-q")
    out, err = p.communicate(timeout=300)
    del ballast
    j = json.loads(out)
    assert p.returncode == 3 and j["status"] == "limit", err
    assert j["n_states"] > 100_000
    assert j["peak_memory_bytes"] <= 1.25 * 300 * 2**20
