"""Run under ``mpiexec``: each model named explored by every process with the graph left in
blocks (``hand_over_blocks``; ``DIST_XP``/``DIST_BATCH`` as for ``dist_worker.py``: the
device path over a NumPy stand-in of CuPy, the search's and the engine's), the cycle engine
across the processes, and on process 0 one JSON line per model: the answer and the runs'
states gathered for it, and every block's rows (its states' ids in local order, offsets,
targets, actions), and what process 0 holds of the whole graph: the entries of the witness
graph's offsets and its deadlocks' count and first, and :func:`counts_graph`'s counts.
``DIST_BUDGET=B``: the hand-over that gathers where the graph fits
``B`` bytes (``hand_over_auto``); a gathered graph's line gives its edges only."""

import functools
import json
import os
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "tests" / "statespace"))

from runtime.comm import world  # noqa: E402
from runtime.device import to_host  # noqa: E402
from dvecost.distributed import engine_block, host_comm, solve_blocks  # noqa: E402
from statespace.dist import explore_distributed  # noqa: E402
from statespace.dist.blocks import (StateBlock, counts_graph, hand_over_auto,  # noqa: E402
                                     hand_over_blocks, witness_graph)

from cycle_cases import answer, worker_comm  # noqa: E402
from dist_worker import load, options  # noqa: E402


def main() -> None:
    comm = worker_comm(world())
    out = []
    opts = options()
    handover = hand_over_blocks
    if os.environ.get("DIST_BUDGET"):   # the hand-over that decides, with this budget
        handover = functools.partial(hand_over_auto, budget=int(os.environ["DIST_BUDGET"]))
    for spec in sys.argv[2:]:
        block = explore_distributed(load(spec), comm, handover=handover, **opts)
        if not isinstance(block, StateBlock):   # gathered to process 0
            if comm.rank == 0:
                out.append({"model": spec, "gathered": block.n_edges})
            continue
        res = block.model.resources
        got = answer(solve_blocks(block, comm, res[0], "ratio", "max"))
        # (as BlockRun gathers them: over MPI beside NCCL, the runs' few entries on the host)
        g = witness_graph(block, host_comm(comm), got.get("edges", []))
        c = counts_graph(block, host_comm(comm))
        # What the engine reads per edge of the block: targets, then each edge's palette row
        # for the cost and the time (engine_block), in bytes.
        e = engine_block(block, res[0], True)
        widths = [int(e.indices.dtype.itemsize), int(e.cost.label.dtype.itemsize),
                  int(e.time.label.dtype.itemsize), e.cost.label is e.time.label]
        # Every block's rows, gathered here for the test to compare (small models only).
        rows = comm.allgather((block.layout.global_ids().tolist(),
                               to_host(block.indptr).tolist(),
                               to_host(block.targets).tolist(), to_host(block.actions).tolist()))
        if comm.rank == 0:
            states = {v: g.peek("states", v).tolist() for v in got.get("cycle", [])}
            out.append({"model": spec, "answer": got, "resource": res[0], "gathered": None,
                        "states": {str(k): v for k, v in states.items()},
                        "widths": widths, "rows": rows,
                        "indptr": [g.indptr.index.tolist(), g.indptr.values.tolist()],
                        "deadlocks": [g.n_deadlocks, _first(g)],
                        "counts": [c.n_states, c.n_edges, c.n_deadlocks, _first(c),
                                   len(c.indptr.index), c.error_state, c.depth]})
    if comm.rank == 0:
        pathlib.Path(sys.argv[1]).write_text("\n".join(json.dumps(o) for o in out))


def _first(g):
    """The graph's first deadlock (its one entry of ``deadlocks`` held), None without."""
    return int(g.deadlocks[0]) if g.n_deadlocks else None


if __name__ == "__main__":
    main()
