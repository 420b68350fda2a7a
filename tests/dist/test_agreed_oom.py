"""An allocation that fails on one process after a distributed search (the hand-over, the
counts, each phase of the engine across processes, the runs gathered) stops every process at
the same collective (:mod:`runtime.guard`): exit 3, the stop line with the graph's counts
printed once by process 0, no traceback, no process left behind. The failures are injected by
``DVECOST_FAULT`` (for tests only): a ``MemoryError``, an error named as CuPy's, or the receive
buffer of an exchange."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from dve import load_model
from ocm.dist import PHASES
from runtime.comm import SelfComm
from runtime.guard import agreed, guarded
from statespace import build_state_graph

from mpirun import ROOT, none_left, run

TEMPLATE = ROOT / "dvecost" / "examples" / "client_server_template.dve"

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for processes")


def _counts() -> dict:
    """The oracle: the one-process build's counts of the model the runs analyse."""
    g = build_state_graph(load_model(str(TEMPLATE), defines={"N": 4}))
    return {"states": g.n_states, "transitions": g.n_edges}


COUNTS = None


def _stops(tmp_path, P: int, fault: str, engine: str = "blocks", ratio: bool = True):
    """Run ``analyze`` on ``P`` processes with ``fault`` injected; check how it ended."""
    global COUNTS
    COUNTS = COUNTS or _counts()
    model = tmp_path / "agreed_oom_cs.dve"   # (its name finds the processes left, if any)
    shutil.copy(TEMPLATE, model)
    r = run(P, "-m", "dvecost", "analyze", str(model), "-D", "N=4", "--json",
            *(["--ratio"] if ratio else []), timeout=180,
            extra_env={"DVECOST_DIST_ENGINE": engine, "DVECOST_FAULT": fault})
    rank, phase = fault.split(":")[:2]
    gpu = "GPU " if fault.endswith(":cupy") else ""
    assert r.returncode == 3, (fault, r.stdout, r.stderr)
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1, r.stdout                       # one process prints
    d = json.loads(lines[0])
    assert d["status"] == "out_of_memory"
    assert d["counts"] == COUNTS
    line = f"out of {gpu}memory on process {rank} of {P} (phase: {phase})"
    assert line in d["message"]
    assert r.stderr.count(line) == 1, r.stderr             # the stop line, once
    assert "Traceback" not in r.stderr, r.stderr
    assert none_left(str(model))


# A few in CI (each a run of P processes): the hand-over (NumPy refusing a real allocation),
# the engine (a failure before a collective, one named as CuPy's, a receive buffer the header
# sized), the runs gathered.
FAST = [(2, "1:handover:1:huge"), (2, "0:trim:2"), (2, "1:value_sums:1:cupy"),
        (3, "2:scc_forward:2:recv"), (3, "1:witness:1:recv")]


@pytest.mark.parametrize("P, fault", FAST)
def test_a_failed_allocation_stops_every_process_with_the_counts(P, fault, tmp_path):
    _stops(tmp_path, P, fault)


def test_the_text_report_says_it_once(tmp_path):
    global COUNTS
    COUNTS = COUNTS or _counts()
    model = tmp_path / "agreed_oom_text.dve"
    shutil.copy(TEMPLATE, model)
    r = run(2, "-m", "dvecost", "analyze", str(model), "-D", "N=4", timeout=180,
            extra_env={"DVECOST_DIST_ENGINE": "blocks", "DVECOST_FAULT": "1:improve"})
    assert r.returncode == 3, r.stderr
    assert r.stdout.count("no value (stopped before the answer)") == 1, r.stdout
    assert f"states found so far       {COUNTS['states']:,}" in r.stdout
    assert f"transitions found so far  {COUNTS['transitions']:,}" in r.stdout
    assert r.stderr.strip() == (f"dvecost: out of memory on process 1 of 2 (phase: improve); "
                                f"{COUNTS['states']:,} states, {COUNTS['transitions']:,} "
                                "transitions found so far")
    assert none_left(str(model))


def test_a_failure_while_the_graph_is_gathered_to_process_0(tmp_path):
    # (the default engine on CPU processes gathers the graph to process 0)
    _stops(tmp_path, 2, "0:handover:1:recv", engine="auto", ratio=False)


STEPS = ("handover", "counts") + PHASES + ("witness",)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["", ":1:recv", ":1:cupy", ":2:huge"])
@pytest.mark.parametrize("phase", STEPS)
def test_every_phase_in_turn(phase, how, tmp_path):
    for P, rank in ((2, 0), (2, 1), (3, 2)):
        _stops(tmp_path, P, f"{rank}:{phase}{how}")


def test_one_process_is_left_as_it_was():
    c = SelfComm()
    assert guarded(c) is c
    with pytest.raises(MemoryError, match="as before"):
        with agreed(c, "trim", known={"states": 1}) as g:
            assert g is c
            raise MemoryError("as before")


def test_a_bad_fault_spec_is_refused(monkeypatch):
    from runtime.guard import FAULT_VAR, FaultSpec
    monkeypatch.setenv(FAULT_VAR, "x")
    for spec in ("x", "1", "1:trim:2:boom", "a:trim"):
        with pytest.raises(ValueError, match="DVECOST_FAULT"):
            FaultSpec(spec)
    f = FaultSpec("1:trim:3:recv")
    assert (f.rank, f.phase, f.nth, f.how) == (1, "trim", 3, "recv")
