"""The cycle engine across processes (``ocm.dist``) gives the one-process engine's answer in
the same mode (``per_scc`` True, the default: edges inside SCCs, found by colouring across
the processes; or False: trimming only): the same value, critical cycle and its edges,
iterations and certificate, or the same error naming the same cycle. Oracles: that engine
(SciPy's SCCs, one process's Howard: no routing, halo, colouring or pointer doubling shared
with ``ocm.dist``) and the brute-force enumeration of ``ocm.reference`` for the value.
Run as one process (``SelfComm``), as ``mpiexec -n 2`` and ``-n 3`` processes, and, for
breadth, as threads in lockstep (``lockstep.py``)."""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import ocm
from ocm.dist import DistributedRangeError, block_starts, optimal_cycle_distributed, split_graph
from ocm.reference import brute_force_cycle
from runtime.comm import SelfComm

from cycle_cases import (CASES, DeviceComm, answer, comparable, graph_of, random_case,
                         random_runs)
from lockstep import run_lockstep
from mpirun import ROOT, run

EX = ROOT / "dvecost" / "examples"
MODELS = [str(EX / m) for m in ("client_server.dve", "deadlock.dve", "pipeline.dve",
                                "printer.dve", "resources.dve", "rings_async.dve",
                                "zero_time.dve", "rings_sync.dve")] + \
    [f"{EX / 'client_server_template.dve'}:3", f"{EX / 'pool_template.dve'}:3",
     f"{EX / 'editor_farm.py'}:2"]
BEEM_SAMPLE = ["firewire_link.1", "public_subscribe.1", "cyclic_scheduler.1", "brp.1"]
RANDOM = [f"random:{s}" for s in range(24)]


def one_process(g, kind: str, mode: str, per_scc: bool = True) -> dict:
    try:
        return answer(ocm.optimal_cycle(*g, kind=kind, mode=mode, per_scc=per_scc, xp=np))
    except ocm.errors.OcmError as exc:
        return answer(exc)


def distributed(g, kind: str, mode: str, P: int, per_scc: bool = True,
                xp=None, runs=None) -> list[dict]:
    """The answer of every process; over the array module ``xp`` (a stand-in of CuPy) when
    given; the graph cut in ``runs`` (``split_graph``'s) when given, else in blocks."""
    def body(comm):
        if xp is not None:
            comm = DeviceComm(comm, xp)
        try:
            return answer(optimal_cycle_distributed(
                split_graph(*g, comm.rank, comm.size, runs=runs), comm, kind=kind, mode=mode,
                per_scc=per_scc))
        except ocm.errors.OcmError as exc:
            return answer(exc)
    if P == 1:
        return [body(SelfComm())]
    return run_lockstep(P, body)


@pytest.mark.parametrize("spec", MODELS[:4] + RANDOM[:8])
def test_one_process_comm_is_the_one_process_engine(spec):
    g = graph_of(spec)
    for case in CASES:
        assert distributed(g, *case[:2], 1, case[2]) == [one_process(g, *case)], (spec, case)


def test_blocks_cover_the_graph_and_keep_edge_ids():
    g = random_case(5)
    blocks = [split_graph(*g, r, 3) for r in range(3)]
    assert [int(b.layout.global_ids()[0]) for b in blocks] + [g[0].shape[0] - 1] == \
        block_starts(g[0].shape[0] - 1, 3).tolist()
    assert np.array_equal(np.concatenate([b.indices for b in blocks]), g[1])
    assert [int(b.layout.global_edges(np.zeros(1, np.int64))[0]) for b in blocks] == \
        [int(g[0][b.layout.global_ids()[0]]) for b in blocks]
    assert np.array_equal(np.concatenate([b.cost for b in blocks]), g[2])


def test_the_answer_is_the_brute_force_optimum_on_random_graphs():
    for seed in range(12):
        g = random_case(seed)
        for kind, mode, per_scc in CASES:
            got = distributed(g, kind, mode, 2, per_scc)[0]
            try:
                want = brute_force_cycle(g[0], g[1], g[2], g[3] if kind == "ratio" else None,
                                         mode=mode)
            except ZeroDivisionError:
                assert got["error"] == "ZeroTimeCycleError"
                t = g[3]
                assert got["edges"] and all(int(t[e]) == 0 for e in got["edges"])
                continue
            if want is None:
                assert got["error"] == "NoCycleError"
                continue
            assert Fraction(got["value"]) == want[0] and got["certified"], (seed, kind, mode)
            # The critical cycle is a closed walk of the graph with that value.
            vs, es = got["cycle"], got["edges"]
            for i, (v, e) in enumerate(zip(vs, es)):
                assert g[0][v] <= e < g[0][v + 1] and g[1][e] == vs[(i + 1) % len(vs)]
            t = sum(int(g[3][e]) for e in es) if kind == "ratio" else len(es)
            assert Fraction(sum(int(g[2][e]) for e in es), t) == want[0]


@st.composite
def small_graphs(draw):
    n = draw(st.integers(1, 9))
    m = draw(st.integers(0, 3 * n))
    u = sorted(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)))
    v = draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m))
    cost = draw(st.lists(st.integers(-3, 3), min_size=m, max_size=m))
    time = draw(st.lists(st.integers(0, 2), min_size=m, max_size=m))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(np.array(u, dtype=np.int64), minlength=n), out=indptr[1:])
    return (indptr, np.array(v, dtype=np.int64), np.array(cost, dtype=np.int64),
            np.array(time, dtype=np.int64))


@settings(max_examples=40, deadline=None)
@given(small_graphs(), st.integers(2, 4), st.sampled_from(CASES))
def test_property_blocks_in_lockstep_equal_one_process(g, P, case):
    kind, mode, per_scc = case
    want = one_process(g, kind, mode, per_scc)
    got = distributed(g, kind, mode, P, per_scc)
    assert all(a == want for a in got)


@settings(max_examples=60, deadline=None)
@given(small_graphs(), st.integers(1, 4), st.sampled_from(CASES), st.integers(0, 2**16))
def test_property_random_runs_equal_one_process(g, P, case, seed):
    """The graph cut in random runs of ids (several a process, in a local order that is not
    id order, some processes holding none, as a distributed search leaves them): the
    one-process answer exactly (value, cycle, edges, iterations, certificate, or the same
    error), on every process."""
    kind, mode, per_scc = case
    runs = random_runs(g[0].shape[0] - 1, P, seed)
    want = one_process(g, kind, mode, per_scc)
    got = distributed(g, kind, mode, P, per_scc, runs=runs)
    assert all(a == want for a in got), runs


@pytest.mark.parametrize("spec", [MODELS[0], MODELS[5], MODELS[8]] + RANDOM[:12])
def test_random_runs_of_models_equal_one_process(spec):
    """State graphs of models and the random multigraphs cut in random runs over 3 threads
    (seeded): every case the one-process engine's answer."""
    g = graph_of(spec)
    runs = random_runs(g[0].shape[0] - 1, 3, len(spec))
    for case in CASES:
        want = one_process(g, *case)
        assert distributed(g, *case[:2], 3, case[2], runs=runs) == [want] * 3, (spec, case)


@settings(max_examples=40, deadline=None)
@given(small_graphs(), st.integers(1, 3), st.sampled_from(CASES), st.integers(1, 4))
def test_property_small_slices_equal_one_process(g, P, case, block):
    """Every pass in slices of a few edges (``EDGE_BLOCK``: the halo's index, the colouring's
    rounds and its frontier's ranges in groups, the backward lists' keys, the improvement and
    the certificate): the one-process answer, whatever the slices."""
    import pytest as _pt
    from ocm.dist import ops
    with _pt.MonkeyPatch.context() as mp:
        mp.setattr(ops, "EDGE_BLOCK", block)
        kind, mode, per_scc = case
        want = one_process(g, kind, mode, per_scc)
        got = distributed(g, kind, mode, P, per_scc)
    assert all(a == want for a in got)


def _mpi(n: int, specs: list[str], tmp_path, **env: str) -> list[dict]:
    out = tmp_path / f"cycle{n}.jsonl"
    r = run(n, str(ROOT / "tests" / "dist" / "cycle_worker.py"), str(out), *specs,
            extra_env=env)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.parametrize("n", [2, 3])
def test_mpiexec_equals_one_process(n, tmp_path):
    # (three processes on the two-core CI machine share cores: fewer graphs there)
    specs = MODELS + RANDOM[::2] if n == 2 else MODELS[::4] + RANDOM[1::8]
    got = _mpi(n, specs, tmp_path)
    assert len(got) == len(specs) * len(CASES)
    graphs = {s: graph_of(s) for s in specs}
    for g in got:
        assert g["size"] == n
        assert g["answer"] == one_process(graphs[g["spec"]], g["kind"], g["mode"],
                                          g["per_scc"]), g


@pytest.mark.parametrize("n", [2, 3])
def test_mpiexec_random_runs_equal_one_process(n, tmp_path):
    """Across real processes, each graph cut in random runs of ids (``DIST_RUNS``): the
    one-process answer; with 2 processes over the stand-in of CuPy too."""
    specs = MODELS[1::3] + RANDOM[3::6]
    graphs = {s: graph_of(s) for s in specs}
    env = {"DIST_RUNS": "1", **({"DIST_XP": "stand-in"} if n == 2 else {})}
    got = _mpi(n, specs, tmp_path, **env)
    assert len(got) == len(specs) * len(CASES)
    for g in got:
        assert comparable(g["answer"]) == comparable(
            one_process(graphs[g["spec"]], g["kind"], g["mode"], g["per_scc"])), g


@pytest.mark.slow
@pytest.mark.parametrize("n, runs", [(2, ""), (3, ""), (2, "1"), (3, "1")])
def test_mpiexec_beem_sample_equals_one_process(n, runs, tmp_path, beem_dir):
    """BEEM models and the random graphs, in blocks and in random runs of ids."""
    specs = [str(beem_dir / "models" / f"{b}.dve") for b in BEEM_SAMPLE] + RANDOM
    got = _mpi(n, specs, tmp_path, **({"DIST_RUNS": runs} if runs else {}))
    graphs = {s: graph_of(s) for s in specs}
    for g in got:
        assert g["answer"] == one_process(graphs[g["spec"]], g["kind"], g["mode"],
                                          g["per_scc"]), g


def test_sums_that_could_wrap_are_refused_as_one_process_refuses_them():
    g = random_case(4)
    big = (g[0], g[1], g[2] * 2**59, g[3])
    want = one_process(big, "mean", "max")
    assert want["error"] == "InputError"
    assert distributed(big, "mean", "max", 2) == [want, want]


def test_biases_beyond_int64_stop_never_wrap():
    """Costs near 2**50 on a ring of 3000: one process moves its biases to Python ints; the
    engine across processes (int64 exchanges) stops with a clear error on every process."""
    import sys
    sys.path.insert(0, str(ROOT / "tests" / "ocm"))
    from ocm_graphs import overflow_graph
    g = overflow_graph()
    want = ocm.optimal_cycle(*g, kind="ratio", xp=np)
    assert want.certified

    def body(comm):
        try:
            r = optimal_cycle_distributed(split_graph(*g, comm.rank, comm.size), comm,
                                          kind="ratio")
            return r.value, r.certified
        except DistributedRangeError as exc:
            return str(exc)
    got = run_lockstep(2, body)
    assert got[0] == got[1]
    # Either the exact answer (a bound that held) or the stop: never another value.
    assert got[0] == (want.value, True) or "int64" in got[0]


# ---- the device path (CuPy under NCCL), here over the NumPy stand-in of CuPy ----------------

def _stand_in(monkeypatch):
    sys.path.insert(0, str(ROOT / "tests" / "statespace"))
    from device_stand_in import stand_in
    return stand_in(monkeypatch)


@settings(max_examples=30, deadline=None)
@given(small_graphs(), st.integers(1, 3), st.sampled_from(CASES),
       st.one_of(st.none(), st.integers(0, 2**16)))
def test_property_device_path_equals_one_process(g, P, case, seed):
    """The device branches (scatters by an atomic-minimum kernel, rows and ranges by scans,
    the improvement by scatters, the layout's searches) give the one-process answer,
    whatever the blocks or runs."""
    import pytest as _pt
    from ocm.dist import ops
    with _pt.MonkeyPatch.context() as mp:
        xp = _stand_in(mp)
        mp.setattr(ops, "EDGE_BLOCK", 3)   # passes over the edges in slices, rows straddling
        kind, mode, per_scc = case
        want = comparable(one_process(g, kind, mode, per_scc))
        runs = None if seed is None else random_runs(g[0].shape[0] - 1, P, seed)
        got = distributed(g, kind, mode, P, per_scc, xp=xp, runs=runs)
    assert all(comparable(a) == want for a in got)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 4)), max_size=12))
def test_property_device_rows_and_ranges_are_the_loops(ranges):
    """The device forms of ``edge_rows`` and ``expand_ranges`` (a scan of steps placed at
    the non-empty rows' starts) equal the obvious loops, empty rows and ranges included."""
    import pytest as _pt
    from ocm.dist.ops import edge_rows, expand_ranges
    lo = np.array([r[0] for r in ranges], np.int64)
    deg = np.array([r[1] for r in ranges], np.int64)
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    want_rows = [i for i, d in enumerate(deg) for _ in range(d)]
    want_ranges = [v for a, d in zip(lo, deg) for v in range(a, a + d)]
    with _pt.MonkeyPatch.context() as mp:
        xp = _stand_in(mp)
        rows = edge_rows(xp.asarray(indptr), xp)
        got = expand_ranges(xp.asarray(lo), xp.asarray(lo + deg), xp)
    assert rows.dtype == np.int32 and rows.tolist() == want_rows
    assert got.dtype == np.int64 and got.tolist() == want_ranges


def test_device_path_says_gpu_and_counts_rounds(monkeypatch):
    xp = _stand_in(monkeypatch)
    g = graph_of(f"{EX / 'client_server_template.dve'}:3")
    rounds: dict = {}
    r = optimal_cycle_distributed(split_graph(*g, 0, 1), DeviceComm(SelfComm(), xp),
                                  kind="ratio", rounds=rounds)
    want = ocm.optimal_cycle(*g, kind="ratio", xp=np)
    assert (r.value, r.cycle, r.certified, r.backend) == (want.value, want.cycle, True, "gpu")
    # One Howard round per iteration, ceil(log2 k) doubling rounds per iteration; the
    # colouring's rounds bounded by its vertices (each round moves a colour one edge on).
    k = g[0].shape[0] - 1
    assert rounds["howard"] == r.iterations
    assert rounds["cycle_doubling"] <= r.iterations * max(1, math.ceil(math.log2(k)))
    assert 2 * r.iterations <= rounds["doubling"] <= r.iterations * (math.log2(k) + 2)
    assert 1 <= rounds["scc_phases"] and rounds["scc_forward"] <= k + rounds["scc_phases"]


def test_device_phases_wait_for_the_device_once_a_phase(monkeypatch):
    """Each phase's clock waits for the device where the phase ends, never per round: as
    many waits as phase ends (3 before the colouring, 2 a colouring phase, the restriction,
    5 a Howard iteration, the last improvement, the certificate and the cycle), far fewer
    than the rounds; the timings name the phases of ``ocm.dist.PHASES`` and no other."""
    from ocm.dist import PHASES, engine
    xp = _stand_in(monkeypatch)
    waits = []
    monkeypatch.setattr(engine, "synchronize", lambda m: waits.append(m))
    g = graph_of(f"{EX / 'client_server_template.dve'}:3")
    rounds: dict = {}
    r = optimal_cycle_distributed(split_graph(*g, 0, 1), DeviceComm(SelfComm(), xp),
                                  kind="ratio", rounds=rounds)
    assert r.certified and all(m is xp for m in waits)
    assert len(waits) == 7 + 2 * rounds["scc_phases"] + 5 * r.iterations
    exchanges = sum(v for k, v in rounds.items() if k not in ("howard", "scc_phases"))
    assert len(waits) < exchanges
    phases = [k for k in r.timings if k != "total"]
    assert phases == list(PHASES)     # all of them (a ratio: the zero-time check too), in order
    assert all(v >= 0 for v in r.timings.values())
    # One process: each phase's slowest is its own, so they add up to at most the total.
    assert sum(r.timings[k] for k in phases) <= r.timings["total"]


@pytest.mark.parametrize("n", [2, 3])
def test_mpiexec_device_path_equals_one_process(n, tmp_path):
    """``mpiexec -n 2`` and ``-n 3`` over the stand-in of CuPy: the engine's device branches
    across real processes give the one-process answer."""
    specs = MODELS[::2] + RANDOM[::3] if n == 2 else MODELS[::5] + RANDOM[2::8]
    got = _mpi(n, specs, tmp_path, DIST_XP="stand-in")
    assert len(got) == len(specs) * len(CASES)
    graphs = {s: graph_of(s) for s in specs}
    for g in got:
        assert g["answer"].get("backend", "gpu") == "gpu"
        assert comparable(g["answer"]) == comparable(
            one_process(graphs[g["spec"]], g["kind"], g["mode"], g["per_scc"])), g


def _as_palette(a):
    values, label = np.unique(a, return_inverse=True)
    return ocm.Palette(label.astype(np.uint8), values.astype(np.int64))


@pytest.mark.parametrize("device", [False, True])
def test_palette_blocks_give_the_dense_answer(device, monkeypatch):
    """Costs and times held as palettes (one row per edge, as the block hand-over gives
    them) give the answer of the same blocks with per-edge arrays, over NumPy and over the
    device branches."""
    import dataclasses
    xp = _stand_in(monkeypatch) if device else None
    for seed in range(10):
        g = random_case(seed)
        for kind, mode, per_scc in CASES[::3]:
            want = comparable(one_process(g, kind, mode, per_scc))

            def body(comm):
                b = split_graph(*g, comm.rank, comm.size)
                b = dataclasses.replace(b, cost=_as_palette(b.cost), time=_as_palette(b.time))
                c = comm if xp is None else DeviceComm(comm, xp)
                try:
                    return answer(optimal_cycle_distributed(b, c, kind=kind, mode=mode,
                                                            per_scc=per_scc))
                except ocm.errors.OcmError as exc:
                    return answer(exc)
            assert all(comparable(a) == want for a in run_lockstep(2, body)), (seed, kind)
