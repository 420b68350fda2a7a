"""The distributed search with its side work (on GPUs: a level's states unpacked and its rows
kept on a second stream, joined later) run as late as a device may run it: only when joined.
Every array must still be the one-process build's (the oracle: the one-process explorer,
which has no side work, no routing and no numbering by ranks). P ranks as threads in
lockstep (``lockstep.py``)."""

from __future__ import annotations

import sys

import pytest

import statespace.dist.search as dist_search
from statespace import build_state_graph
from statespace.dist import explore_distributed

from mpirun import ROOT

sys.path.insert(0, str(ROOT / "tests" / "dist"))
sys.path.insert(0, str(ROOT / "tests" / "statespace"))
from dist_worker import load  # noqa: E402
from device_stand_in import same_graph  # noqa: E402
from lockstep import run_lockstep  # noqa: E402

EX = ROOT / "dvecost" / "examples"


class LateSide:
    """Side work that runs only when joined, in the order it came (a stream's order)."""

    runs = 0

    def __init__(self, xp) -> None:
        self.stream = object()   # (there is a side: the search defers its rows)
        self.queue: list = []

    def run(self, fn, *args):
        self.queue.append((fn, args))
        LateSide.runs += 1

    def join(self) -> None:
        queue, self.queue = self.queue, []
        for fn, args in queue:
            fn(*args)


@pytest.mark.parametrize("P", [2, 3])
@pytest.mark.parametrize("spec", ["client_server.dve", "rings_sync.dve", "error_state.dve",
                                  "deadlock.dve", "resources.dve"])
def test_side_work_run_when_joined_gives_the_one_process_graph(spec, P, monkeypatch):
    monkeypatch.setattr(dist_search, "SideWork", LateSide)
    monkeypatch.setattr(dist_search, "_defer_signals", lambda search: {})
    monkeypatch.setattr(dist_search, "_restore_signals", lambda saved: None)
    model = load(str(EX / spec))
    LateSide.runs = 0
    got = run_lockstep(P, lambda comm: explore_distributed(model, comm))
    assert LateSide.runs > 0   # (the side path was taken)
    same_graph(build_state_graph(model), got[0])
    assert all(g is None for g in got[1:])
