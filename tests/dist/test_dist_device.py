"""The distributed search's device path (the one it takes over NCCL on GPUs) on the CPU: a NumPy
stand-in of CuPy (``tests/statespace/device_stand_in.py``) as its array module under
``mpiexec -n 2`` and ``-n 3``, the generated successor kernel compiled for the host where a C++
compiler is found. Every array is the one-process build's (the oracle: the one-process
explorer on NumPy, which shares none of the routing, numbering by ranks or hand-over), with
small batches so that a level's successors come from several calls."""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from statespace import build_state_graph

from mpirun import ROOT, run

sys.path.insert(0, str(ROOT / "tests" / "dist"))
from dist_worker import load, summary  # noqa: E402

EX = ROOT / "dvecost" / "examples"
#: system async models (the kernel's), with and without constant charges, the error state,
#: deadlocks; system sync ones (the array form over the stand-in, steps numbered as met).
ASYNC = ["client_server.dve", "deadlock.dve", "error_state.dve", "resources.dve",
         "zero_time.dve", "rings_async.dve"]
SYNC = ["rings_sync.dve"]
RENDERED = [("client_server_template.dve", 4), ("editor_farm.py", 2)]


def _device_run(n: int, specs: list[str], tmp_path, kind: str, batch: int,
                **env: str) -> list[dict]:
    out = tmp_path / f"out{n}.jsonl"
    r = run(n, str(ROOT / "tests" / "dist" / "dist_worker.py"), str(out), *specs,
            extra_env={"DIST_XP": kind, "DIST_BATCH": str(batch), **env})
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


def _check(got: list[dict], specs: list[str], n: int) -> None:
    assert [g["model"] for g in got] == specs
    for g in got:
        want = summary(build_state_graph(load(g["model"])))
        assert g["size"] == n
        assert {k: g[k] for k in want} == want, g["model"]


@pytest.mark.parametrize("n", [2, 3])
def test_device_path_identical_to_one_process(n, tmp_path):
    kind = "stand-in-kernels" if shutil.which("g++") or shutil.which("c++") else "stand-in"
    specs = [str(EX / m) for m in ASYNC + SYNC] + [f"{EX / m}:{k}" for m, k in RENDERED]
    _check(_device_run(n, specs, tmp_path, kind, batch=5), specs, n)


@pytest.mark.parametrize("min_rows", ["0", ""])
def test_device_path_array_form_identical_to_one_process(min_rows, tmp_path):
    """Without a kernel compiler (a device module without ``RawModule``) the array form runs
    over the device module (``min_rows`` 0), or, for batches smaller than the one-GPU
    explorer's threshold (the default), on the host: the same graph either way."""
    specs = [str(EX / m) for m in ("client_server.dve", "error_state.dve", "resources.dve",
                                   "rings_sync.dve")]
    _check(_device_run(2, specs, tmp_path, "stand-in", batch=3, DIST_MIN_ROWS=min_rows),
           specs, 2)


def test_one_process_device_path_in_process(monkeypatch):
    """Without mpiexec: one process (``SelfComm``) on the stand-in gives the one-process
    graph, its successors from the generated kernel when a compiler is found, and the rows it
    keeps compact (int32 targets and actions: 8 bytes a transition, and where charges are not
    constants of the action an int32 palette row: 12)."""
    sys.path.insert(0, str(ROOT / "tests" / "statespace"))
    from device_stand_in import stand_in

    from runtime.comm import SelfComm
    from statespace import compile_model
    from statespace.dist import explore_distributed
    from statespace.dist.successors import NextStates

    kernels = bool(shutil.which("g++") or shutil.which("c++"))
    fake = stand_in(monkeypatch, kernels=kernels)
    for m in ("client_server.dve", "error_state.dve", "rings_sync.dve"):
        timings: dict = {}
        g = explore_distributed(load(str(EX / m)), SelfComm(), xp=fake, batch=2,
                                timings=timings)
        assert summary(g) == summary(build_state_graph(load(str(EX / m)))), m
        cm = compile_model(load(str(EX / m)))
        per_edge = 8 if NextStates(cm).charge_table is not None else 12
        assert timings["row_bytes"] == per_edge * g.n_edges, m
        # Per level its phases' wall seconds: a level each, summing to no more than the
        # search, each phase's sum over the levels its total.
        levels = timings["levels"]
        assert len(levels) == g.depth + 1, m
        assert sum(sum(lv.values()) for lv in levels) <= timings["search"]
        for phase, (wall, _) in timings["phases"].items():
            assert sum(lv.get(phase, 0.0) for lv in levels) == pytest.approx(wall), phase


@pytest.mark.slow
def test_device_path_beem_sample_identical_to_one_process(tmp_path, beem_dir):
    """A sample of BEEM models (several key words, property products, the error state)."""
    from test_dist_identity import BEEM_SAMPLE
    kind = "stand-in-kernels" if shutil.which("g++") or shutil.which("c++") else "stand-in"
    specs = [str(beem_dir / "models" / f"{b}.dve") for b in BEEM_SAMPLE]
    _check(_device_run(2, specs, tmp_path, kind, batch=1000), specs, 2)


@pytest.mark.parametrize("kind", ["", "stand-in"])
def test_a_failed_allocation_on_one_process_stops_both_with_the_counts(kind, tmp_path):
    """Process 1's visited set fails for want of memory at its fourth look-up (host path and
    device path): both processes stop at the same level's end (none waits forever in a
    collective), with OutOfMemory and the counts of the levels before."""
    model = f"{EX / 'client_server_template.dve'}:4"
    out = tmp_path / "oom.jsonl"
    r = run(2, str(ROOT / "tests" / "dist" / "dist_worker.py"), str(out), model,
            extra_env={"DIST_XP": kind, "DIST_FAIL": "1:4"}, timeout=120)
    assert r.returncode == 0, r.stderr
    (got,) = [json.loads(line) for line in out.read_text().splitlines()]
    full = build_state_graph(load(model))
    assert got["stop"] == "OutOfMemory"
    c = got["counts"]
    assert 0 < c["expanded"] <= c["states"] < full.n_states
    assert c["transitions"] < full.n_edges


def test_a_failed_allocation_after_the_levels_agreement_stops_before_the_hand_over(
        monkeypatch):
    """An allocation failing once a level's stop is agreed (keeping its rows) is agreed at
    the next one, or, after the last level, before the hand-over: never a graph with rows
    missing."""
    import statespace.dist.kept as dist_kept
    from runtime.comm import SelfComm
    from runtime.errors import OutOfMemory
    from statespace.dist import explore_distributed

    model = load(str(EX / "client_server.dve"))
    full = build_state_graph(model)
    real = dist_kept.count_values
    for at in (3, full.depth + 1):   # a middle level; the last one (one call a level)
        calls = [0]

        def failing(xp, a, n, at=at, calls=calls):
            calls[0] += 1
            if calls[0] == at:
                raise MemoryError("test")
            return real(xp, a, n)
        monkeypatch.setattr(dist_kept, "count_values", failing)
        with pytest.raises(OutOfMemory) as info:
            explore_distributed(model, SelfComm())
        assert calls[0] >= at
        assert info.value.counts["states"] <= full.n_states


def test_rows_placed_in_blocks_are_the_rows_placed_at_once(monkeypatch):
    """The hand-over's placing of received rows, a block of edges at a time (a device's), and
    the host's, against an obvious per-row placement (sources in any order, empty rows,
    blocks cutting rows)."""
    import numpy as np

    from statespace.dist import handover

    sys.path.insert(0, str(ROOT / "tests" / "statespace"))
    from device_stand_in import stand_in

    dev = stand_in(monkeypatch)   # (NumPy's arrays, not NumPy: the device's placing)
    rng = np.random.default_rng(5)
    for block in (1, 3, 7, 1 << 26):
        monkeypatch.setattr(handover, "PLACE_BLOCK", block)
        n = 40
        rid = rng.permutation(n)[:25]
        deg = rng.integers(0, 4, rid.shape[0])
        edges = rng.integers(0, 1000, int(deg.sum()))
        got_deg, got = handover.place_rows(dev, rid, deg, n, [edges])
        rows, at = {}, 0
        for r, d in zip(rid.tolist(), deg.tolist()):
            rows[r], at = edges[at:at + d].tolist(), at + d
        want = [e for r in range(n) for e in rows.get(r, [])]
        assert got.tolist() == want
        assert got_deg.tolist() == [len(rows.get(r, [])) for r in range(n)]
        # The host's placing (each edge's place by one repeat of the rows' shifts).
        host_deg, spot = handover.row_places(rid, deg, n)
        placed = np.empty_like(edges)
        placed[spot] = edges
        assert placed.tolist() == want and host_deg.tolist() == got_deg.tolist()
        host_deg, placed = handover.place_rows(np, rid, deg, n, [edges])
        assert placed.tolist() == want and host_deg.tolist() == got_deg.tolist()


def test_rows_and_states_placed_by_runs_are_placed_by_ids(monkeypatch):
    """The host's hand-over placing rows and states that come in runs of consecutive ids (as
    the search keeps them: one run a level and process) by slices, or in any order each by
    its id, against an obvious per-row placement."""
    import numpy as np

    from statespace.dist import handover

    rng = np.random.default_rng(7)
    for few in (1, 64, 10**9):   # runs always, as the default decides, never
        monkeypatch.setattr(handover, "FEW_RUNS", few)
        for trial in range(20):
            n = int(rng.integers(1, 300))
            # Cut 0 .. n - 1 into runs, dealt to two "processes", each's runs ascending.
            cuts = np.unique(rng.integers(0, n, int(rng.integers(0, 12))))
            runs = [r for r in np.split(np.arange(n), cuts) if r.shape[0]]
            who = rng.integers(0, 2, len(runs))
            rid = np.concatenate([r for p in (0, 1) for r, w in zip(runs, who) if w == p])
            if trial % 4 == 0:
                rid = rng.permutation(n)   # no runs to speak of
            deg = rng.integers(0, 4, n)
            edges = rng.integers(0, 1000, int(deg.sum())).astype(np.int32)
            rows, at = {}, 0
            for r, d in zip(rid.tolist(), deg.tolist()):
                rows[r], at = edges[at:at + d].tolist(), at + d
            out_deg, place = handover.host_rows(rid, deg, n)
            assert place(edges).tolist() == [e for r in range(n) for e in rows[r]]
            assert out_deg.tolist() == [len(rows[r]) for r in range(n)]
            states = rng.integers(0, 100, (n, 3)).astype(np.int8)
            placed = handover.place_states(np, states, rid, n)
            want = np.empty_like(states)
            for i, r in enumerate(rid.tolist()):
                want[r] = states[i]
            assert placed.tolist() == want.tolist()
