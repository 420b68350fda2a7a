"""The memory of the cycle engine across processes (issue 26): the passes over the edges a
group or a slice at a time equal the obvious loops, and ``tools/engine_memory.py`` (the peak
of live array bytes per phase, per transition of each process) reports the one-process
answer with every phase, each process's peak under a bound, so that a change that makes an
array per edge again shows here."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dvecost import analyze
from ocm.dist import PHASES, ops

from mpirun import ROOT, run

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "statespace"))

from engine_memory import PhaseMeter  # noqa: E402

EX = ROOT / "dvecost" / "examples"

#: Peak bytes per transition, the graph included, of any process of ``mpiexec -n 2``
#: runs of cs_8 with slices of 2^12 edges: measured 35.1 to 37.6 over NumPy and the
#: stand-in, against 68.7 to 79.1 before the engine's passes went by slices and int32
#: (several int64 arrays per edge at once). cs_8 has about 6 transitions a state: a
#: vertex's int64 array is 1.3 bytes a transition here, less on larger models.
BOUND = 42.0


def _stand_in(mp):
    from device_stand_in import stand_in
    return stand_in(mp)


def degrees():
    return st.lists(st.integers(0, 7), max_size=30)


@settings(max_examples=100, deadline=None)
@given(degrees(), st.integers(1, 9), st.integers(0, 2**30), st.booleans())
def test_row_counts_and_groups_are_the_loops(deg, block, seed, device):
    """``edge_groups`` covers every row and edge once, in order, each group within a slice
    (a longer row alone); ``row_counts`` equals counting each row's flags in a loop."""
    indptr = np.concatenate([[0], np.cumsum(deg)]).astype(np.int64)
    flags = np.random.default_rng(seed).integers(0, 2, size=int(indptr[-1])) == 1
    want = [int(flags[indptr[i]:indptr[i + 1]].sum()) for i in range(len(deg))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ops, "EDGE_BLOCK", block)
        xp = _stand_in(mp) if device else np
        groups = ops.edge_groups(indptr, xp)
        got = ops.row_counts(indptr, lambda rows, e: flags[e], xp, np.int32)
    rows = [r for g, _ in groups for r in range(g.start, g.stop)]
    edges = [e for _, s in groups for e in range(s.start, s.stop)]
    assert rows == list(range(len(deg)))
    assert edges == list(range(int(indptr[-1])))
    for g, s in groups:
        assert s == slice(int(indptr[g.start]), int(indptr[g.stop]))
        assert s.stop - s.start <= block or g.stop - g.start == 1
    assert got.dtype == np.int32 and got.tolist() == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=20), st.integers(1, 9),
       st.integers(0, 2**30), st.booleans(), st.booleans())
def test_first_max_edges_is_the_loop(deg, block, seed, device, palette):
    """Each row's largest cost and its lowest edge, a slice at a time (rows straddling the
    slices), over a cost array or a palette: the loop's."""
    from ocm.primitives import Palette
    rng = np.random.default_rng(seed)
    m = sum(deg)
    src = np.repeat(np.arange(len(deg)), deg).astype(np.int32)
    label = rng.integers(0, 3, size=m)
    values = rng.integers(-5, 6, size=3)
    cost = values[label]
    want = []
    for r in range(len(deg)):
        e = np.flatnonzero(src == r)
        want.append((int(cost[e].max()), int(e[np.argmax(cost[e])])))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ops, "EDGE_BLOCK", block)
        xp = _stand_in(mp) if device else np
        c = Palette(label.astype(np.uint8), values.astype(np.int64)) if palette else cost
        best, edge = ops.first_max_edges(c, src, len(deg), xp)
    assert list(zip(best.tolist(), edge.tolist())) == want


@given(st.integers(0, 100), st.integers(1, 40))
def test_id_slices_cover_the_ids_in_parts(n, block):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ops, "EDGE_BLOCK", block)
        parts = ops.id_slices(n)
    assert [i for s in parts for i in range(s.start, s.stop)] == list(range(n))
    assert all(s.stop - s.start <= max(1, block // 4) for s in parts) and len(parts) >= 1


def test_meter_counts_live_arrays_per_phase():
    """A phase's figure is the peak of what was allocated since the start and not freed,
    an array freed before the phase ended counted in its phase, not in the next."""
    m = PhaseMeter()
    m.start()
    a = np.ones(1 << 20)          # 8 MiB, freed within the first phase
    del a
    m.lap("trim", 0.0)
    b = np.ones(1 << 18)          # 2 MiB, live through the second
    m.lap("restrict", 0.0)
    m.stop()
    assert (8 << 20) <= m.peak["trim"] < (9 << 20)
    assert (2 << 20) <= m.peak["restrict"] < (3 << 20)
    del b


@pytest.mark.parametrize("xp_kind", ["", "--stand-in"])
def test_engine_memory_tool_reports_each_phase_under_the_bound(xp_kind):
    """``tools/engine_memory.py`` under ``mpiexec -n 2``: the one-process answer, each
    process's transitions adding up to the graph's, every phase in order, and each
    process's peak (the graph included) under :data:`BOUND` bytes a transition."""
    path = EX / "client_server_template.dve"
    r = run(2, str(ROOT / "tools" / "engine_memory.py"), str(path), "N=8", "--edge-block",
            "4096", "--json", *([xp_kind] if xp_kind else []))
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    one = analyze(str(path), defines={"N": 8}, backend="cpu", witness=False, symmetry="off")
    assert (d["value"], d["certified"]) == (one.exact, True)
    procs = d["per_process"]
    assert sum(p["m"] for p in procs) == one.n_transitions
    assert sum(p["n"] for p in procs) == one.n_states
    for p in procs:
        assert list(p["phases"]) == [k for k in PHASES if k in p["phases"]]
        assert {"check", "trim", "scc_forward", "scc_backward", "restrict", "value_sums",
                "improve", "certify"} <= set(p["phases"])
        # the graph is counted in every phase, and each phase holds more than the graph
        assert all(v > p["graph"] for v in p["phases"].values())
        peak = max(p["phases"].values()) / p["m"]
        assert peak <= BOUND, (p["rank"], {k: round(v / p["m"], 1)
                                           for k, v in p["phases"].items()})
