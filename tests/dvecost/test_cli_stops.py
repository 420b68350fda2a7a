"""Signals and timeouts where they used to get lost: while the program loads its modules,
while ``--jobs`` forks its worker processes, after the search while files are written, and in
text-mode ``analyze`` (which prints what it found)."""

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

#: A counter that runs for 2**31 steps: exploring it never ends within a test.
ENDLESS = """
int x;
process P { state a; init a;
  trans a -> a { guard x < 2147483000; effect x = x + 1; cost 1; }; }
system async;
"""

CLEAN = ("Traceback", "KeyboardInterrupt", "Exception ignored", "internal error",
         "RuntimeError")


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) process ``pid`` has used so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_cpu(proc, seconds: float, limit: float = 60.0) -> None:
    """Wait until the child has used ``seconds`` of CPU: a point of its own progress, whatever
    the load of the machine (a fixed sleep may end before it has loaded its modules)."""
    t0 = time.monotonic()
    while cpu_seconds(proc.pid) < seconds:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < limit
        time.sleep(0.02)


def _popen(*args, flags=()):
    return subprocess.Popen([sys.executable, *flags, "-m", "dvecost", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_modules_load_stops_cleanly(signum, code):
    """Sent as soon as NumPy starts loading (``-X importtime`` lists each module as it is
    loaded, on stderr): the first ~0.3 s of the program, before any command runs."""
    for argv in (["headroom", "paper-server", "--clients", "client=2", "--json"],
                 ["saturate", "paper-server", "--json"]):
        proc = _popen(*argv, "--backend", "cpu", flags=("-X", "importtime"))
        seen = []
        for line in proc.stderr:
            seen.append(line)
            if "numpy" in line:
                proc.send_signal(signum)
                break
        out, err = proc.communicate(timeout=60)
        err = "".join(seen) + err
        assert proc.returncode == code, err[-2000:]
        assert not [w for w in CLEAN if w in err], err[-2000:]
        d = json.loads(out)
        assert d["status"] == "interrupted" and signal.Signals(signum).name in d["message"]


def test_text_analyze_interrupted_prints_what_it_found(tmp_path):
    model = tmp_path / "endless.dve"
    model.write_text(ENDLESS)
    proc = _popen("analyze", str(model), "--backend", "cpu")
    wait_cpu(proc, 1.0)   # past the imports (about 0.3 s of CPU), exploring
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    head, states, transitions = out.splitlines()
    assert head == f"{model}: no value (interrupted before the answer)"
    n = int(states.split()[4].replace(",", ""))
    assert n > 1 and f"{n:,} state" in err and "interrupted by SIGINT" in err


def test_a_signal_while_the_pool_forks_is_not_lost(monkeypatch):
    """A signal whose handler runs inside an at-fork callback (logging registers one) was
    printed as "Exception ignored" and the walk ran on to its end. Here every fork of the pool
    raises SIGINT in the parent right after forking: the walk must stop with it."""
    from scenarios.parallel import PointWalk

    armed = [True]

    def after_fork():
        if armed[0]:
            armed[0] = False
            signal.raise_signal(signal.SIGINT)
            sum(range(1000))   # bytecodes in which a pending handler would run

    os.register_at_fork(after_in_parent=after_fork)

    def stop(signum, frame):
        raise Interrupted(signum, "SIGINT")

    def walk(saturated, out):
        n = 0
        while not saturated(n):
            n += 1
        out.append(n)

    old = signal.signal(signal.SIGINT, stop)
    try:
        w = PointWalk(walk, lambda n: n >= 6, jobs=2)
        with pytest.raises(Interrupted):
            w.run()
    finally:
        armed[0] = False
        signal.signal(signal.SIGINT, old)
    assert len(w.points) < 7   # stopped, not run to its end


@pytest.mark.parametrize("cpu", [0.2, 0.4, 0.6])   # of about 1.3 s in all
def test_sigint_with_jobs_2_stops_cleanly(cpu):
    """SIGINT at several points of a `--jobs 2` run (loading, forking, analysing), each a
    point of the parent's own CPU time."""
    proc = _popen("workers", "editor", "--clients", "reader=6,exporter=3", "--jobs", "2",
                  "--backend", "cpu", "--json", "-q")
    wait_cpu(proc, cpu)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert not [w for w in CLEAN if w in err], err
    assert json.loads(out)["status"] == "interrupted"


def test_sigint_while_the_plot_is_written_still_prints_the_result(tmp_path, capsys,
                                                                  monkeypatch):
    """The search is over: a Ctrl-C while its files are written stops nothing (a second one
    would end the program at once)."""
    import dvecost.cli.saturate as sat

    def plot_interrupted(result, path):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)   # the handler runs here
        open(path, "w").write("plot")
        return path

    monkeypatch.setattr(sat, "write_plot", plot_interrupted)
    monkeypatch.setattr(sat, "check_output_files", lambda *a: None)
    plot = str(tmp_path / "p.png")
    code = main(["saturate", "paper-server", "--plot", plot, "--backend", "cpu", "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and "saturation: 3 clients" in out and f"plot: written to {plot}" in out


def test_a_signal_while_the_pool_starts_its_thread_is_not_an_error(monkeypatch):
    """A SIGINT between the pool's manager thread being made and being started used to end in
    "RuntimeError: cannot join thread before it is started" (the pool's shutdown joined it)."""
    import concurrent.futures.process as cfp

    from scenarios.parallel import PointWalk

    start = cfp._ExecutorManagerThread.start

    def start_interrupted(self):
        signal.raise_signal(signal.SIGINT)
        sum(range(1000))   # bytecodes in which a pending handler would run
        start(self)

    monkeypatch.setattr(cfp._ExecutorManagerThread, "start", start_interrupted)

    def stop(signum, frame):
        raise Interrupted(signum, "SIGINT")

    old = signal.signal(signal.SIGINT, stop)
    try:
        with pytest.raises(Interrupted):
            PointWalk(lambda saturated, out: out.append(saturated(1)), lambda n: True,
                      jobs=2).run()
    finally:
        signal.signal(signal.SIGINT, old)


def test_a_stop_swallowed_by_a_finalizer_is_raised_again():
    """A handler's exception raised inside a finalizer (or an at-fork callback) is printed as
    "Exception ignored" and lost; the command's handlers raise it again a moment later."""
    from dvecost.cli import _Stops

    class Finalized:
        def __del__(self):
            signal.raise_signal(signal.SIGINT)
            sum(range(1000))   # bytecodes in which the pending handler runs

    with pytest.raises(Interrupted) as caught:
        with _Stops(None):
            obj = Finalized()
            del obj
            t0 = time.monotonic()
            while time.monotonic() - t0 < 2:
                time.sleep(0.01)
    assert caught.value.signum == signal.SIGINT and time.monotonic() - t0 < 1
