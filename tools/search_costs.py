"""Two costs of a distributed search on the host, measured where they arise: run under
``mpiexec``; process 0 prints one JSON line.

- ``explore``: the model explored ``REPEATS`` times with the graph left in the processes
  (the counts-only hand-over, as ``dvecost bench scale --no-gather``), the least of the runs
  per process: CPU seconds (``time.process_time``), system seconds and minor page faults
  (``getrusage``). With ``--plain`` glibc's allocator is left as it is (the search otherwise
  has it keep freed memory, :func:`runtime.memory.keep_freed_memory`; the setting lasts for
  the process, so the two ways are two launches, to be interleaved);
- ``exchange``: one exchange of the communicator (``MpiComm.alltoallv`` as the search calls
  it: its counts agreed, then the rows) against MPI's ``Alltoallv`` of the same rows alone,
  for rows of one uint64 word, each the least of 300 after a barrier (both processes ready).

A model file, then optionally a template's ``N`` (``-D N=...``); e.g. the bundled
client/server template at 10 clients::

    PYTHONPATH=$PWD mpiexec -n 2 python tools/search_costs.py \
        dvecost/examples/client_server_template.dve 10
    PYTHONPATH=$PWD mpiexec -n 2 python tools/search_costs.py \
        dvecost/examples/client_server_template.dve 10 --plain
"""

from __future__ import annotations

import json
import resource
import sys
import time

import numpy as np

REPEATS = 9
#: Words each process sends to each process in the timed exchanges.
SIZES = (10, 1000, 40000)


def _explore(cm, comm) -> dict:
    from statespace.dist import explore_distributed

    def counts_only(share, comm, cm, **options):
        return share.n

    best = None
    for _ in range(REPEATS):
        comm.barrier()
        r0, c0 = resource.getrusage(resource.RUSAGE_SELF), time.process_time()
        explore_distributed(cm, comm, handover=counts_only)
        c1, r1 = time.process_time(), resource.getrusage(resource.RUSAGE_SELF)
        got = {"cpu_s": c1 - c0, "sys_s": r1.ru_stime - r0.ru_stime,
               "faults": r1.ru_minflt - r0.ru_minflt}
        if best is None or got["cpu_s"] < best["cpu_s"]:
            best = got
    return best


def _exchange(comm) -> dict:
    MPI = comm.MPI
    out = {}
    for n in SIZES:
        send = np.arange(comm.size * n, dtype=np.uint64)
        counts = np.full(comm.size, n, np.int64)
        recv = np.empty_like(send)
        b = counts * 8
        d = np.concatenate([[0], np.cumsum(b)[:-1]])
        ours = raw = float("inf")
        for _ in range(300):
            comm.barrier()
            t = time.perf_counter()
            comm.alltoallv(send, counts)
            ours = min(ours, time.perf_counter() - t)
            comm.barrier()
            t = time.perf_counter()
            comm.comm.Alltoallv([send.view(np.uint8), (b, d), MPI.BYTE],
                                [recv.view(np.uint8), (b, d), MPI.BYTE])
            raw = min(raw, time.perf_counter() - t)
        out[str(n)] = {"comm_us": round(ours * 1e6, 1), "alltoallv_us": round(raw * 1e6, 1)}
    return out


def main(argv: list[str]) -> None:
    import dve
    import statespace.dist.search as search
    from runtime.comm import MpiComm, world
    from statespace import compile_model

    plain = "--plain" in argv
    args = [a for a in argv if a != "--plain"]
    if plain:
        search.keep_freed_memory = lambda: False
    comm = world()
    defines = {"N": int(args[1])} if len(args) > 1 else None
    cm = compile_model(dve.load_model(args[0], defines=defines))
    explored = _explore(cm, comm)
    each = comm.allgather(explored)
    exchanged = _exchange(comm) if isinstance(comm, MpiComm) else None
    if comm.rank == 0:
        print(json.dumps({"allocator": "glibc's own" if plain else "keeps freed memory",
                          "explore": each, "exchange": exchanged}))


if __name__ == "__main__":
    main(sys.argv[1:])
