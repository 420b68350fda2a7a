"""What process 0 holds of a graph left in blocks (``DVECOST_DIST_ENGINE=blocks``): the counts
and the runs shown, nothing of every state. ``analyze`` across processes prints what one
process prints (text and ``--json``, exit code and standard error) on models with several
deadlocks, an error state, no cycle, a zero-time cycle; every run it prints replays in the
model (``tests/dvecost/replay.py``, an interpreter sharing no code with the report); the
witness graph's offsets are exactly the one-process graph's at the runs' rows, and any other
entry is refused."""

from __future__ import annotations

import contextlib
import io
import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dve
from dvecost import analyze
from dvecost.cli import main
from dvecost.distributed import BlockRun
from runtime.comm import SelfComm
from statespace import build_state_graph
from statespace.dist.blocks import Entries, GatheredGraphError
from statespace.witness import Witness

from mpirun import ROOT, run

sys.path.insert(0, str(ROOT / "tests" / "dvecost"))
from replay import Replayer, check_trace, replay_analysis  # noqa: E402

EX = ROOT / "dvecost" / "examples"

#: A cycle reached in 9 steps, four deadlocks and the error state (an index out of range).
SEVERAL_DEADLOCKS = """byte buf[2];
byte x;

process P {
    state a, b, d, e;
    init a;
    trans
        a -> a { guard x < 12; effect x = x + 1; cost 1; },
        a -> b { guard x == 9; cost 3; },
        b -> a { cost 5; time 2; },
        a -> e { guard x == 7; effect buf[x] = 1; },
        a -> d { guard x % 4 == 2; };
}

system async;
"""

#: No cycle: every run ends in one of seven deadlocks.
NO_CYCLE = """byte x;

process P {
    state a, d;
    init a;
    trans
        a -> a { guard x < 20; effect x = x + 1; cost 2; },
        a -> d { guard x % 3 == 2; };
}

system async;
"""


def _models(tmp_path) -> dict:
    """Name -> (path, defines) of the models the runs analyse."""
    got = {m: (str(EX / f"{m}.dve"), None) for m in
           ("client_server", "deadlock", "error_state", "zero_time", "rings_sync", "resources")}
    got["cs3"] = (str(EX / "client_server_template.dve"), {"N": 3})
    for name, text in (("several_deadlocks", SEVERAL_DEADLOCKS), ("no_cycle", NO_CYCLE)):
        path = tmp_path / f"{name}.dve"
        path.write_text(text)
        got[name] = (str(path), None)
    return got


def _args(path: str, defines, *extra: str) -> list[str]:
    d = [f"-D{k}={v}" for k, v in (defines or {}).items()]
    return ["analyze", path, *d, "--symmetry", "off", "-q", *extra]


def _one_process(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


def _comparable(out: str, drop: tuple = ()):
    """An output less what differs between runs (timings, memory; the symmetry summary, whose
    reason says a distributed search explores the full product; the phases across
    processes; and the keys ``drop``)."""
    try:
        d = json.loads(out)
    except ValueError:
        return [line for line in out.splitlines() if not line.startswith("timings:")]
    for k in ("timings", "peak_memory_bytes", "symmetry", "distributed", *drop):
        d.pop(k, None)
    return d


#: The environment of a run over GPUs, one process each (what ``--gpus`` sets).
NCCL = {"DVECOST_COMM": "nccl", "NCCL_NVLS_ENABLE": "0"}


def _across(P: int, runs: list[list[str]], tmp_path, env: dict | None = None) -> list[dict]:
    """Every run of ``runs`` by ``P`` processes with the graph in blocks (one ``mpiexec``:
    tests/dist/analyze_worker.py)."""
    spec, out = tmp_path / f"runs{P}.json", tmp_path / f"out{P}.jsonl"
    spec.write_text(json.dumps(runs))
    r = run(P, str(ROOT / "tests" / "dist" / "analyze_worker.py"), str(out), str(spec),
            extra_env={"DVECOST_DIST_ENGINE": "blocks", **(env or {})})
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def _check_same_and_replay(runs: list[list[str]], got: list[dict], models: dict,
                           drop: tuple = (), stderr: bool = True) -> int:
    """Each run across processes against one process's (``drop``: keys of the JSON not
    compared; ``stderr``: standard error compared too); every run printed replayed. Returns
    the steps replayed."""
    assert [g["args"] for g in got] == runs
    steps = 0
    for args, g in zip(runs, got):
        code, out, err = _one_process(args)
        assert g["code"] == code, (args, g["stderr"])
        if stderr:
            assert g["stderr"] == err, args
        assert _comparable(g["stdout"], drop) == _comparable(out, drop), args
        if "--json" not in args:
            continue
        path, defines = next(v for v in models.values() if v[0] == args[1])
        model = dve.load_model(path, defines=defines)
        d = json.loads(g["stdout"])
        if d["status"] == "ok":
            steps += replay_analysis(model, d)
        elif d.get("error") == "no-cycle" and d["trace"]:
            steps += check_trace(model, "cost", _initial(model), d["trace"],
                                 key="deadlock_trace")
    return steps


def _initial(model) -> dict:
    """The model's initial state as the replayer reads it."""
    return Replayer(model, "cost").initial()


@pytest.mark.parametrize("P", [2, 3])
def test_blocks_print_and_replay_what_one_process_does(P, tmp_path):
    models = _models(tmp_path)
    runs = []
    for name in ("client_server", "deadlock", "error_state", "several_deadlocks", "cs3",
                 "rings_sync", "no_cycle"):
        path, defines = models[name]
        runs.append(_args(path, defines, "--json", "--trace"))
        runs.append(_args(path, defines, "--ratio", "--json"))
    for name in ("several_deadlocks", "error_state", "deadlock", "no_cycle", "zero_time"):
        path, defines = models[name]
        runs.append(_args(path, defines, "--trace"))
    runs.append(_args(*models["zero_time"], "--ratio", "--json"))
    runs.append(_args(*models["zero_time"], "--ratio"))
    runs.append(_args(*models["resources"], "--cost", "cpu", "--min", "--json"))
    got = _across(P, runs, tmp_path)
    steps = _check_same_and_replay(runs, got, models)
    assert steps > 50
    # The runs the models call for were printed: deadlock and error traces, no answer.
    by = {tuple(g["args"]): g for g in got}
    d = json.loads(by[tuple(_args(*models["several_deadlocks"], "--json", "--trace"))]["stdout"])
    assert (d["n_deadlocks"], d["error_state_reached"]) == (4, True)
    assert d["deadlock_trace"] and d["error_trace"] and len(d["prefix"]) == 9
    d = json.loads(by[tuple(_args(*models["no_cycle"], "--json", "--trace"))]["stdout"])
    assert d["error"] == "no-cycle" and "7 deadlock states" in d["message"]
    d = json.loads(by[tuple(_args(*models["zero_time"], "--ratio", "--json"))]["stdout"])
    assert d["error"] == "zero-time-cycle" and len(d["trace"]) == 2


BEEM_DEADLOCKS = ["firewire_link.1", "msmie.1", "brp.1"]   # 18, 24 and 72 deadlocks


def test_beem_models_with_deadlocks_print_and_replay_what_one_process_does(tmp_path,
                                                                           beem_dir):
    models = {b: (str(beem_dir / "models" / f"{b}.dve"), None) for b in BEEM_DEADLOCKS}
    runs = [_args(path, None, "--json") for path, _ in models.values()] + \
        [_args(models["brp.1"][0], None, "--trace")]
    got = _across(2, runs, tmp_path)
    assert _check_same_and_replay(runs, got, models) > 0
    assert all(json.loads(g["stdout"])["n_deadlocks"] > 1 for g in got[:3])


# ------------------------------------------------------------------------- what process 0 holds

def _oracle_rows(one, edges: list[int]) -> set:
    """The states whose rows the runs shown read, from the one-process graph by walking its
    parents: the edges' sources, the tree paths to the smallest of them, to the first
    deadlock, to the error state, and the initial state."""
    ip = one.indptr.tolist()
    sources = set()
    for e in edges:
        sources.add(next(s for s in range(one.n_states) if ip[s] <= e < ip[s + 1]))
    ends = ([min(sources)] if sources else []) + ([int(one.deadlocks[0])] if one.n_deadlocks
                                                  else []) + [one.error_state, 0]
    rows = set(sources)
    for v in ends:
        while v >= 0:
            rows.add(v)
            v = int(one.parent[v])
    return rows


@pytest.mark.parametrize("xp_kind, P", [("", 2), ("stand-in", 2), ("", 3)])
def test_process_0_holds_the_offsets_of_the_runs_rows_only(xp_kind, P, tmp_path):
    """The witness graph's offsets are the one-process graph's exactly at the rows of the
    runs shown (a row's state's and the next state's: oracle, the one-process graph's
    parents walked), nothing else; its deadlocks are their count and the first; the counts
    graph holds no offset at all."""
    _check_held(P, xp_kind, tmp_path)


def _check_held(P: int, xp_kind: str, tmp_path, env: dict | None = None) -> None:
    """:func:`test_process_0_holds_the_offsets_of_the_runs_rows_only` on ``P`` processes
    (``xp_kind``: the stand-in of CuPy; ``env``: more environment, NCCL's)."""
    sys.path.insert(0, str(ROOT / "tests" / "dist"))
    from dist_worker import load
    specs = [str(EX / m) for m in ("client_server.dve", "error_state.dve", "deadlock.dve")] \
        + [str(tmp_path / "several_deadlocks.dve"), str(tmp_path / "no_cycle.dve"),
           f"{EX / 'client_server_template.dve'}:3"]
    _models(tmp_path)   # (writes the generated models)
    out = tmp_path / "blocks.jsonl"
    r = run(P, str(ROOT / "tests" / "dist" / "blocks_worker.py"), str(out), *specs,
            extra_env={**({"DIST_XP": xp_kind} if xp_kind else {}), **(env or {})})
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["model"] for g in got] == specs
    for g in got:
        one = build_state_graph(load(g["model"]))
        rows = _oracle_rows(one, g["answer"].get("edges", []))
        index, values = g["indptr"]
        assert index == sorted(rows | {s + 1 for s in rows}), g["model"]
        assert values == one.indptr[index].tolist(), g["model"]
        first = int(one.deadlocks[0]) if one.n_deadlocks else None
        assert g["deadlocks"] == [one.n_deadlocks, first], g["model"]
        assert g["counts"] == [one.n_states, one.n_edges, one.n_deadlocks, first, 0,
                               one.error_state, one.depth], g["model"]
        assert len(index) < one.n_states or one.n_states < 40, g["model"]


def test_a_read_beyond_the_runs_is_refused_not_guessed(tmp_path):
    """Process 0's graph after a blocked analysis: its offsets and deadlocks are entries of
    the runs (a few hundred bytes for a graph of 513 states); every read of an
    offset, an edge's source or a deadlock not held raises, and so does taking the whole
    offsets as an array."""
    model = str(EX / "client_server_template.dve")
    run_ = BlockRun(SelfComm())
    a = analyze(model, defines={"N": 4}, symmetry="off", explore=run_.explore,
                engine=run_.engine, lazy_graph=True)
    one = build_state_graph(dve.load_model(model, defines={"N": 4}))
    g = a.graph
    assert isinstance(g.indptr, Entries) and g.n_states == one.n_states > 500
    assert g.indptr.nbytes < 64 * (len(a.cycle) + len(a.prefix) + 2)
    held = set(g.indptr.index.tolist())
    outside = next(i for i in range(one.n_states) if i not in held)
    with pytest.raises(GatheredGraphError, match="held in blocks"):
        g.indptr[outside]
    with pytest.raises(GatheredGraphError, match="held in blocks"):
        np.asarray(g.indptr)
    w = Witness(g, "cost")
    shown = {s.edge for s in a.cycle} | {s.edge for s in a.prefix}
    assert all(w.source_of(e) == s.source for s in (*a.cycle, *a.prefix) for e in [s.edge])
    lone = next(e for e in range(one.n_edges) if e not in shown
                and not any(one.indptr[s] <= e < one.indptr[s + 1] for s in held
                            if s + 1 in held))
    with pytest.raises(GatheredGraphError, match="in no row held"):
        w.source_of(lone)
    # Several deadlocks: their count and the first, no other.
    path = tmp_path / "several_deadlocks.dve"
    path.write_text(SEVERAL_DEADLOCKS)
    run_ = BlockRun(SelfComm())
    a = analyze(str(path), symmetry="off", explore=run_.explore, engine=run_.engine,
                lazy_graph=True)
    one = build_state_graph(dve.load_model(str(path)))
    assert a.n_deadlocks == one.n_deadlocks == 4
    assert int(a.graph.deadlocks[0]) == int(one.deadlocks[0])
    with pytest.raises(GatheredGraphError, match="held in blocks"):
        a.graph.deadlocks[1]


def test_held_bytes_tool_reports_the_runs_entries_only():
    """``tools/held_bytes.py`` under ``mpiexec -n 2``: the graph's counts (the one-process
    build's) and process 0's offsets as entries of the runs, a few hundred bytes."""
    path = EX / "client_server_template.dve"
    r = run(2, str(ROOT / "tools" / "held_bytes.py"), str(path), "4")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    one = build_state_graph(dve.load_model(str(path), defines={"N": 4}))
    assert (d["n"], d["m"], d["processes"]) == (one.n_states, one.n_edges, 2)
    assert d["offsets_type"] == "Entries" and 0 < d["offsets_bytes"] < 1000
    assert d["offsets_bytes"] < one.indptr.nbytes // 4


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=30), st.data())
def test_entries_find_an_edges_row_as_the_whole_offsets_do(degrees, data):
    """``np.searchsorted`` of offsets held in part (:class:`Entries`) against a scan of the
    whole offsets (the oracle): the same row for every edge of a row whose two offsets are
    held (empty rows around it included), an error for every other edge."""
    ip = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    n = len(degrees)
    rows = sorted(data.draw(st.sets(st.integers(0, n - 1))))
    index = [s for r in rows for s in (r, r + 1)]
    e = Entries((n + 1,), np.array(index, np.int64), ip[index])
    for edge in range(int(ip[-1])):
        row = next(s for s in range(n) if ip[s] <= edge < ip[s + 1])
        if row in index and row + 1 in index:   # (the rows asked for, and any between)
            assert int(np.searchsorted(e, edge, side="right")) - 1 == row
        else:
            with pytest.raises(GatheredGraphError, match="in no row held"):
                np.searchsorted(e, edge, side="right")
    for i in range(n + 1):
        if i in index:
            assert int(e[i]) == int(ip[i])
        else:
            with pytest.raises(GatheredGraphError):
                e[i]


def test_entries_refuse_one_index_with_two_values():
    with pytest.raises(ValueError, match="given twice"):
        Entries((4,), np.array([1, 2, 2]), np.array([5, 6, 7]))
    assert Entries((4,), np.array([2, 1, 2]), np.array([6, 5, 6])).index.tolist() == [1, 2]


# ------------------------------------------------------------------------------ on the GPUs

def _gpus() -> int:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:   # no CuPy, no driver, no device
        return 0


@pytest.mark.gpu
def test_gpus_blocks_print_replay_and_hold_only_the_runs(tmp_path):
    """Over two GPUs (NCCL, the rows on the devices): what process 0 prints is one
    process's and replays, and it holds the runs' offsets exactly, as on the CPU."""
    if _gpus() < 2:
        pytest.skip(f"needs CuPy and 2 GPUs (found {_gpus()})")
    models = _models(tmp_path)
    runs = [_args(*models[m], "--json", "--trace")
            for m in ("several_deadlocks", "no_cycle", "error_state", "cs3")]
    runs += [_args(*models["zero_time"], "--ratio", "--json"),
             _args(*models["several_deadlocks"], "--trace")]
    got = _across(2, runs, tmp_path, NCCL)
    # (standard error not compared: a library's warning on one side, the first compile of a
    # kernel, would differ; the JSON carries the no-answer messages and runs)
    assert _check_same_and_replay(runs, got, models, drop=("backend", "iterations"),
                                  stderr=False) > 20
    assert json.loads(got[0]["stdout"])["backend"] == "gpu"
    _check_held(2, "", tmp_path, NCCL)
