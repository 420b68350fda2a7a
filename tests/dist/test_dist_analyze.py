"""``dvecost analyze`` with the graph left in blocks (``DVECOST_DIST_ENGINE=blocks``): what
process 0 prints, text and ``--json``, is what one process prints (timings aside), for
answers, no-cycle and zero-time-cycle models; process 0 holds only the runs shown."""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys

import numpy as np
import pytest

from dvecost import analyze
from dvecost.cli import main
from dvecost.distributed import BlockRun
from runtime.comm import SelfComm
from statespace.dist.blocks import GatheredGraphError

from mpirun import ROOT, run
from mpirun import env as process_env

EX = ROOT / "dvecost" / "examples"


def _strip(out: str):
    """What is compared of an output: the JSON less its timings, memory, the phases across
    processes (and the symmetry summary, whose reason says a distributed search explores the
    full product), or the text less its timings line."""
    try:
        d = json.loads(out)
    except ValueError:
        return [line for line in out.splitlines() if not line.startswith("timings:")]
    for k in ("timings", "peak_memory_bytes", "symmetry", "distributed"):
        d.pop(k, None)
    return d


def _one_process(args: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = main(args)
    return code, buf.getvalue()


CASES = [("client_server.dve", ["--json"]), ("deadlock.dve", ["--json"]),
         ("zero_time.dve", ["--ratio", "--json"]), ("resources.dve", ["--cost", "cpu", "--min"]),
         ("rings_sync.dve", ["--ratio", "--json"]), ("error_state.dve", [])]


@pytest.mark.parametrize("n", [2, 3])
def test_blocks_print_what_one_process_prints(n):
    cases = CASES if n == 2 else CASES[:3]
    for model, extra in cases:
        args = ["analyze", str(EX / model), "--symmetry", "off", "--trace", "-q", *extra]
        r = run(n, "-m", "dvecost", *args, extra_env={"DVECOST_DIST_ENGINE": "blocks"})
        code, out = _one_process(args)
        assert r.returncode == code, (model, r.stderr)
        assert _strip(r.stdout) == _strip(out), model


def test_gather_path_by_default_prints_the_same():
    args = ["analyze", str(EX / "printer.dve"), "--json", "--symmetry", "off", "-q"]
    r = run(2, "-m", "dvecost", *args)
    assert r.returncode == 0, r.stderr
    assert _strip(r.stdout) == _strip(_one_process(args)[1])


def test_process_0_holds_only_the_runs_shown():
    run_ = BlockRun(SelfComm())
    model = str(EX / "client_server.dve")
    a = analyze(model, symmetry="off", explore=run_.explore, engine=run_.engine,
                lazy_graph=True)
    b = analyze(model, symmetry="off")
    assert (a.value, a.iterations, a.certified) == (b.value, b.iterations, b.certified)
    assert [s.as_dict() for s in a.cycle] == [s.as_dict() for s in b.cycle]
    assert [s.as_dict() for s in a.prefix] == [s.as_dict() for s in b.prefix]
    g = a.graph
    shown = {s.edge for s in a.cycle} | {s.edge for s in a.prefix}
    assert g.n_edges == b.n_transitions and g.n_states == b.n_states
    others = sorted(set(range(g.n_edges)) - shown)
    read = [e for e in others if _readable(g, e)]
    # Only rows of the runs' states were gathered: most edges cannot be read at all.
    assert len(read) < g.n_edges // 2
    with pytest.raises(GatheredGraphError, match="held in blocks"):
        np.asarray(g.indices)


def _readable(g, e: int) -> bool:
    try:
        g.peek("indices", e)
        return True
    except GatheredGraphError:
        return False


@pytest.mark.parametrize("xp_kind, P", [("", 2), ("stand-in", 2), ("stand-in", 3)])
def test_blocks_from_host_and_device_searches_give_the_one_process_answer(xp_kind, P,
                                                                          tmp_path):
    """The block hand-over from a search on the host and on the device path (a NumPy
    stand-in of CuPy, as under NCCL: the rows handed over and the engine run in that module,
    its device branches): the engine's answer and the cycle's states are one process's."""
    import sys
    sys.path.insert(0, str(ROOT / "tests" / "dist"))
    import ocm
    from cycle_cases import answer, comparable
    from dist_worker import load
    from dvecost import pipeline
    from statespace import build_state_graph
    specs = [str(EX / m) for m in ("client_server.dve", "resources.dve", "rings_sync.dve",
                                   "error_state.dve")]
    out = tmp_path / "blocks.jsonl"
    r = run(P, str(ROOT / "tests" / "dist" / "blocks_worker.py"), str(out), *specs,
            extra_env={"DIST_XP": xp_kind, "DIST_BATCH": "7"} if xp_kind else None)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["model"] for g in got] == specs
    for g in got:
        one = build_state_graph(load(g["model"]))
        arrays = pipeline.engine_arrays(one, g["resource"], ratio=True, backend="cpu")
        want = answer(ocm.optimal_cycle(*arrays, kind="ratio", xp=np))
        assert g["answer"].get("backend") == ("gpu" if xp_kind else "cpu")
        assert comparable(g["answer"]) == comparable(want)
        assert g["states"] == {str(v): one.states[v].tolist() for v in g["answer"]["cycle"]}
        # Narrow edges in the engine: int32 targets (ids fit), the cost and the time read
        # through one palette row per edge (as narrow as the one-process graph's rows).
        assert g["widths"] == [4, one.charge.dtype.itemsize, one.charge.dtype.itemsize, True]


@pytest.mark.parametrize("xp_kind", ["", "stand-in"])
def test_block_hand_over_keeps_every_row_where_it_was_found(xp_kind, tmp_path):
    """The block hand-over moves no row: each process's block is the one-process graph's
    rows of its states (oracle: the one-process build, no hand-over), the processes' states
    cover the ids once, in runs of consecutive ids (several a process: one a level), and
    the answer is the one-process engine's."""
    import sys
    sys.path.insert(0, str(ROOT / "tests" / "dist"))
    import ocm
    from cycle_cases import answer, comparable
    from dist_worker import load
    from dvecost import pipeline
    from statespace import build_state_graph
    specs = [str(EX / m) for m in ("client_server.dve", "rings_sync.dve", "error_state.dve")] \
        + [f"{EX / 'client_server_template.dve'}:3"]
    out = tmp_path / "blocks.jsonl"
    env = {"DIST_XP": xp_kind, "DIST_BATCH": "7"} if xp_kind else None
    r = run(3, str(ROOT / "tests" / "dist" / "blocks_worker.py"), str(out), *specs,
            extra_env=env)
    assert r.returncode == 0, r.stderr
    for g in (json.loads(line) for line in out.read_text().splitlines()):
        one = build_state_graph(load(g["model"]))
        ids = sorted(v for gid, *_ in g["rows"] for v in gid)
        assert ids == list(range(one.n_states)), g["model"]
        runs = sum(1 + sum(1 for a, b in zip(gid, gid[1:]) if b != a + 1)
                   for gid, *_ in g["rows"] if gid)
        assert runs > 3 or one.n_states < 10, g["model"]   # not blocks: runs of levels
        for gid, ptr, tgt, act in g["rows"]:
            assert len(ptr) == len(gid) + 1 and ptr[0] == 0, g["model"]
            for j, v in enumerate(gid):
                e0, e1 = int(one.indptr[v]), int(one.indptr[v + 1])
                assert tgt[ptr[j]:ptr[j + 1]] == one.indices[e0:e1].tolist(), g["model"]
                assert act[ptr[j]:ptr[j + 1]] == one.action[e0:e1].tolist(), g["model"]
        arrays = pipeline.engine_arrays(one, g["resource"], ratio=True, backend="cpu")
        want = answer(ocm.optimal_cycle(*arrays, kind="ratio", xp=np))
        assert comparable(g["answer"]) == comparable(want), g["model"]


def test_auto_prints_what_one_process_prints():
    """``DVECOST_DIST_ENGINE=auto`` under ``mpiexec`` on the CPU: a search on the host
    gathers (its memory is the search's limits' business), so process 0 prints what one
    process prints, answers and stops alike."""
    for model, extra in CASES[:3]:
        args = ["analyze", str(EX / model), "--symmetry", "off", "-q", *extra]
        r = run(2, "-m", "dvecost", *args, extra_env={"DVECOST_DIST_ENGINE": "auto"})
        code, out = _one_process(args)
        assert r.returncode == code, (model, r.stderr)
        assert _strip(r.stdout) == _strip(out), model


def test_auto_hand_over_keeps_blocks_only_beyond_the_budget(tmp_path):
    """``hand_over_auto`` gathers a graph whose transitions times
    ``GATHER_BYTES_PER_EDGE`` fit the budget, and leaves it in blocks otherwise, where the
    engine across processes gives the one-process answer."""
    import sys
    sys.path.insert(0, str(ROOT / "tests" / "dist"))
    import ocm
    from cycle_cases import answer, comparable
    from dist_worker import load
    from dvecost import pipeline
    from statespace import build_state_graph
    from statespace.dist.blocks import GATHER_BYTES_PER_EDGE
    specs = [str(EX / m) for m in ("client_server.dve", "resources.dve")]
    ones = {s: build_state_graph(load(s)) for s in specs}
    for budget in (0, GATHER_BYTES_PER_EDGE * ones[specs[0]].n_edges):
        out = tmp_path / f"auto{budget}.jsonl"
        r = run(2, str(ROOT / "tests" / "dist" / "blocks_worker.py"), str(out), *specs,
                extra_env={"DIST_BUDGET": str(budget)})
        assert r.returncode == 0, r.stderr
        got = {g["model"]: g for g in map(json.loads, out.read_text().splitlines())}
        for s, one in ones.items():
            fits = one.n_edges * GATHER_BYTES_PER_EDGE <= budget
            assert got[s]["gathered"] == (one.n_edges if fits else None), (s, budget)
            if not fits:
                arrays = pipeline.engine_arrays(one, got[s]["resource"], ratio=True,
                                                backend="cpu")
                want = answer(ocm.optimal_cycle(*arrays, kind="ratio", xp=np))
                assert comparable(got[s]["answer"]) == comparable(want)


def test_stall_dumps_the_process_stack_while_a_step_does_not_end():
    """``DVECOST_DIST_STALL=SECONDS`` beside the trace: the process writes its Python stack
    to standard error each time that long passes (how a stalled phase shows where it is),
    and exits cleanly; without it, only the trace's lines."""
    code = ("import time\n"
            "from dvecost.cli.distributed import dist_trace\n"
            "trace = dist_trace()\n"
            "trace('[process 0] check 0.1 s (at 1.0 s)')\n"
            "def stalled_phase():\n"
            "    time.sleep(0.5)\n"
            "stalled_phase()\n")
    for stall in ("0.1", ""):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           timeout=60, env=process_env(DVECOST_DIST_TRACE="1",
                                                       DVECOST_DIST_STALL=stall))
        assert r.returncode == 0, r.stderr
        assert r.stderr.startswith("[process 0] check 0.1 s (at 1.0 s)\n")
        dumped = "most recent call first" in r.stderr and "stalled_phase" in r.stderr
        assert dumped is bool(stall)


def test_json_reports_each_phase_across_processes():
    """``--json`` of a blocked run says where its time went: the search, the hand-over, every
    phase of the engine (``ocm.dist.PHASES``, in order) and the runs gathered, each the
    slowest process's seconds, and the engine's rounds (one Howard round per iteration);
    the gathering path and one process, which run no engine across processes, have no such
    key."""
    from ocm.dist import PHASES
    args = ["analyze", str(EX / "client_server_template.dve"), "-D", "N=3", "--ratio",
            "--json", "--symmetry", "off", "-q"]
    r = run(2, "-m", "dvecost", *args, extra_env={"DVECOST_DIST_ENGINE": "blocks",
                                                   "DVECOST_DIST_TRACE": "1"})
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    got = d["distributed"]
    # DVECOST_DIST_TRACE: every process says each step as it ends, on standard error.
    import re
    steps = re.findall(r"\[process (\d)\] ([\w.]+) [0-9.]+ s \(at [0-9.]+ s\)", r.stderr)
    handover = ["handover." + x for x in ("rows_check", "palette", "offsets", "layout",
                                          "deadlocks")]
    for rank in "01":
        assert [s for q, s in steps if q == rank if s not in ("scc_forward", "scc_backward")
                ] == ["search", "share", *handover, "handover", "counts", "check",
                      "zero_time_check", "trim", "restrict",
                      *["improve", "value_cycles", "value_representatives", "value_sums",
                        "value_ranks"] * d["iterations"], "improve", "certify", "cycle",
                      "witness"]
    assert got["processes"] == 2
    assert list(got["seconds"]) == ["search", "handover", "counts", *PHASES, "witness"]
    assert all(isinstance(v, float) and v >= 0 for v in got["seconds"].values())
    assert got["rounds"]["howard"] == d["iterations"] >= 1
    assert got["rounds"]["trim"] >= 1 and got["rounds"]["scc_forward"] >= 1
    # The engine's phases fill analyze's own: scc (trim, colouring, restriction) at least.
    s = got["seconds"]
    scc = s["zero_time_check"] + s["trim"] + s["scc_forward"] + s["scc_backward"] + s["restrict"]
    assert d["timings"]["scc"] >= scc * 0.999
    assert "distributed" not in json.loads(_one_process(args)[1])
    g = run(2, "-m", "dvecost", *args)
    assert g.returncode == 0 and "distributed" not in json.loads(g.stdout)


@pytest.mark.parametrize("xp_kind", ["", "--stand-in"])
def test_engine_phases_tool_reports_the_phases_and_the_answer(xp_kind, tmp_path):
    """``tools/engine_phases.py`` under ``mpiexec -n 2`` (NumPy, and the stand-in of CuPy):
    the one-process answer, every phase in order, one cProfile a process."""
    from ocm.dist import PHASES
    path = EX / "client_server_template.dve"
    args = [str(ROOT / "tools" / "engine_phases.py"), str(path), "N=3", "--profile",
            str(tmp_path)] + ([xp_kind] if xp_kind else [])
    r = run(2, *args)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    one = analyze(str(path), defines={"N": 3}, backend="cpu", witness=False, symmetry="off")
    assert (d["value"], d["certified"], d["n"], d["m"]) == (one.exact, True, one.n_states,
                                                            one.n_transitions)
    want = ["search", "handover", "counts", *[p for p in PHASES if p != "zero_time_check"],
            "witness"]
    assert [k for k in d["seconds"] if k != "zero_time_check"] == want
    assert sorted(p.name for p in tmp_path.iterdir()) == ["engine.0.prof", "engine.1.prof"]


def test_an_unknown_engine_is_one_error_and_exit_2():
    """``DVECOST_DIST_ENGINE`` other than gather, blocks or auto: exit 2 on every process,
    the message printed once (by process 0), no traceback."""
    args = ["analyze", str(EX / CASES[0][0]), "-q"]
    r = run(2, "-m", "dvecost", *args, extra_env={"DVECOST_DIST_ENGINE": "block"})
    assert r.returncode == 2
    assert r.stderr.count("DVECOST_DIST_ENGINE=block: expected gather, blocks or auto") == 1
    assert "Traceback" not in r.stderr and r.stdout == ""


def test_the_default_is_auto_and_gather_forces_gathering():
    """With no ``DVECOST_DIST_ENGINE`` a search on CPU processes gathers (the default is
    ``auto``), as ``gather`` does: both print what one process prints."""
    for how in (None, "gather"):
        args = ["analyze", str(EX / CASES[0][0]), "--symmetry", "off", "-q", *CASES[0][1]]
        extra = {} if how is None else {"DVECOST_DIST_ENGINE": how}
        r = run(2, "-m", "dvecost", *args, extra_env=extra)
        code, out = _one_process(args)
        assert r.returncode == code, r.stderr
        assert _strip(r.stdout) == _strip(out)
