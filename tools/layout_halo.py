"""The halo's build (``ocm.dist.block.Halo``) in blocks of consecutive ids against the runs a
distributed search leaves (one run a level per process, each level cut in P equal parts), on
the one-process graph of cs_N: process 0's build, in this one process, its exchange answered
by a stand-in that hands back what was sent (so the figure is the build's own work, not the
transport's).

    PYTHONPATH=$PWD python tools/layout_halo.py N [P] [REPEAT]

Prints per layout the best of REPEAT builds in CPU seconds, and the remote targets.
"""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "dist"))

from ocm.dist.block import Halo, split_graph  # noqa: E402
from runtime.comm import Comm  # noqa: E402
from statespace import build_state_graph  # noqa: E402

from dist_worker import load  # noqa: E402


class Echo(Comm):
    """Process 0 of ``size`` whose exchanges receive what it sent."""

    def __init__(self, size: int) -> None:
        self.rank, self.size = 0, size

    def alltoallv(self, send, counts, recv_counts=None):
        return send, np.asarray(counts, np.int64)


def search_runs(parent: np.ndarray, size: int) -> list:
    """Each breadth-first level (ids in level order) cut in ``size`` consecutive parts, part
    ``q`` to process ``q``: the layout of the distributed search's shares."""
    n = parent.shape[0]
    depth = np.zeros(n, np.int64)
    for v in range(1, n):   # (parents have lower ids)
        depth[v] = depth[parent[v]] + 1
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(depth)) + 1, [n]])
    runs: list = [[] for _ in range(size)]
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        cut = [a + (b - a) * q // size for q in range(size + 1)]
        for q in range(size):
            runs[q].append((cut[q], cut[q + 1] - cut[q]))
    return runs


def main() -> None:
    n_clients = int(sys.argv[1])
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    g = build_state_graph(load(f"{ROOT}/dvecost/examples/client_server_template.dve:"
                               f"{n_clients}"))
    ip, ind = np.asarray(g.indptr), np.asarray(g.indices)
    runs = search_runs(np.asarray(g.parent), size)
    print(f"cs_{n_clients}: {ip.shape[0] - 1} states, {int(ip[-1])} transitions, "
          f"{sum(len(r) for r in runs)} runs over {size} processes")
    cost = np.zeros(ind.shape[0], np.int64)
    for name, rr in [("blocks", None), ("runs", runs)]:
        b = split_graph(ip, ind, cost, None, 0, size, runs=rr)
        best, h = None, None
        for _ in range(repeat):
            c0 = time.process_time()
            h = Halo(Echo(size), b.layout, b.indices)
            c = time.process_time() - c0
            best = c if best is None else min(best, c)
        print(f"{name:6s} process 0: {b.m_local} edges, {h.remote.shape[0]} remote targets, "
              f"halo built in {best:.3f} s of CPU (best of {repeat})")


if __name__ == "__main__":
    main()
