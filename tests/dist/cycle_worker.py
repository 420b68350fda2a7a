"""Run under ``mpiexec``: the distributed cycle engine on graphs every process builds the same
way, each process holding its block (:func:`ocm.dist.split_graph`); process 0 writes one JSON
line per (graph, kind, mode, per_scc): the answer, or the error's type, message and cycle.

``python cycle_worker.py OUT SPEC ...``: a SPEC is a model (``MODEL[:N]`` as for
``dist_worker.py``) or ``random:SEED`` (:func:`graphs.random_case`). With ``DIST_XP`` set
the engine runs over the NumPy stand-in of CuPy (its device branches: scatters by atomic
minima, ranges by ``searchsorted``), each block handed to it as that module's arrays.
Under NCCL (``DVECOST_COMM=nccl``) each block goes to its process's GPU first. With
``DIST_RUNS`` set, each graph is cut in random runs of ids
(:func:`cycle_cases.random_runs`, seeded by the graph's place in the list) instead of blocks.
"""

import dataclasses
import json
import os
import pathlib
import sys

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from runtime.comm import world  # noqa: E402
from ocm.dist import optimal_cycle_distributed, split_graph  # noqa: E402

from cycle_cases import CASES, answer, graph_of, random_runs, worker_comm  # noqa: E402


def main() -> None:
    comm = worker_comm(world())
    out = []
    for i, spec in enumerate(sys.argv[2:]):
        g = graph_of(spec)
        runs = random_runs(g[0].shape[0] - 1, comm.size, i) if os.environ.get("DIST_RUNS") \
            else None
        for kind, mode, per_scc in CASES:
            block = split_graph(*g, comm.rank, comm.size, runs=runs)
            if comm.xp is not np and not os.environ.get("DIST_XP"):
                # NCCL's communicator: the block's arrays on this process's GPU
                block = dataclasses.replace(block, indptr=comm.xp.asarray(block.indptr),
                                            indices=comm.xp.asarray(block.indices),
                                            cost=comm.xp.asarray(block.cost),
                                            time=None if block.time is None else
                                            comm.xp.asarray(block.time))
            try:
                got = answer(optimal_cycle_distributed(block, comm, kind=kind, mode=mode,
                                                       per_scc=per_scc))
            except Exception as exc:   # noqa: BLE001 - the error is the answer compared
                got = answer(exc)
            out.append({"spec": spec, "kind": kind, "mode": mode, "per_scc": per_scc,
                        "size": comm.size,
                        "answer": got})
    everyone = comm.allgather(out)
    if comm.rank == 0:
        assert all(o == everyone[0] for o in everyone), "the processes disagree"
        pathlib.Path(sys.argv[1]).write_text("\n".join(json.dumps(o) for o in out))


if __name__ == "__main__":
    main()
