"""A limit and a signal in the middle of a distributed run stop every process at the same level:
the counts found so far printed once (by process 0), exit 3 or 128 + signal, and no process
left behind."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from mpirun import ROOT, env, mpiexec, none_left, ours, run, signalled_code

TEMPLATE = ROOT / "dvecost" / "examples" / "client_server_template.dve"


def test_state_limit_stops_every_process_with_the_counts(tmp_path):
    model = tmp_path / "limit_cs.dve"
    shutil.copy(TEMPLATE, model)
    r = run(2, "-m", "dvecost", "analyze", str(model), "-D", "N=6", "--max-states", "2000",
            "--json")
    assert r.returncode == 3, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1                                  # one process prints
    d = json.loads(lines[0])
    assert d["status"] == "limit"
    c = d["counts"]
    # Stopped at the end of the level that passed the limit: more than the limit, fewer
    # than the whole graph, and every expanded state's edges counted.
    assert 2000 < c["states"] < 33_000 and c["expanded"] < c["states"]
    assert c["transitions"] >= c["expanded"]
    assert r.stderr.count("--max-states 2000") == 1
    assert none_left(str(model))


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc to find the processes")
def test_sigterm_stops_every_process_none_left_behind(tmp_path):
    model = tmp_path / "sigterm_cs.dve"
    shutil.copy(TEMPLATE, model)
    p = subprocess.Popen([mpiexec(), "-n", "2", sys.executable, "-m", "dvecost", "analyze",
                          str(model), "-D", "N=12", "--json"], env=env(), cwd=ROOT,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        # Both processes started and exploring (their imports take a second or two).
        deadline = time.time() + 60
        while len(ours(str(model))) < 3 and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(3.0)
        assert p.poll() is None, "the run ended before the signal: use a larger model"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode in signalled_code(128 + signal.SIGTERM), err
    lines = out.strip().splitlines()
    assert len(lines) == 1
    d = json.loads(lines[0])
    assert d["status"] == "interrupted"
    assert 0 < d["counts"]["expanded"] < d["counts"]["states"]
    assert err.count("interrupted by SIGTERM") == 1
    assert none_left(str(model))
    assert os.path.exists(model)
