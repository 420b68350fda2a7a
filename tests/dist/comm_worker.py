"""Run under ``mpiexec``: every collective of :func:`runtime.comm.world` on data each process
makes from its rank; process 0 writes what every process received (gathered with the
collective under test's neighbour, ``allgather``) to the JSON file named first. A second
argument sets the most bytes one MPI exchange moves at once (the exchanges beyond it go in
rounds); without one, exchanges, gathers and sums larger than the guard's kept buffer and
than int64 run too. With ``COMM_GUARDED`` set, the communicator is the guarded one
(:func:`runtime.guard.guarded`): the same answers are expected."""

import json
import pathlib
import sys

import numpy as np

import os

from runtime.comm import world
from runtime.guard import SCRATCH_BYTES, guarded

#: Rows of the large exchange (uint64: past the guard's kept receive buffer).
BIG = SCRATCH_BYTES // 8 + 1000


def rows_for(rank: int, size: int):
    """What ``rank`` sends: to process ``q``, ``(rank + q) % 3`` rows, each row
    ``[rank, q, j]`` (uint64), and the same as int16 in a 1-D array."""
    counts = np.array([(rank + q) % 3 for q in range(size)], np.int64)
    rows = [[rank, q, j] for q in range(size) for j in range(counts[q])]
    return np.array(rows, np.uint64).reshape(-1, 3), counts


def expected(P: int, large: bool = False) -> list[dict]:
    """What each process must receive, from what each sends (:func:`rows_for`)."""
    sent = [rows_for(r, P) for r in range(P)]
    out = []
    for q in range(P):
        recv, rc = [], []
        for r in range(P):
            rows, counts = sent[r]
            start = int(counts[:q].sum())
            part = rows[start:start + counts[q]].tolist()
            recv += part
            rc.append(int(counts[q]))
        out.append({"rank": q, "recv": recv, "recv_counts": rc,
                    "recv16": [row[2] for row in recv], "back_is_sent": True,
                    "sum": sum(r + 1 for r in range(P)), "max": 10 * (P - 1), "min": -5,
                    "vec": [sum(k * (r + 1) for r in range(P)) for k in range(4)],
                    "exscan": sum(r + 1 for r in range(q))})
        if large:   # every process sends BIG rows of (rank + 1) to each
            out[-1].update(big=[BIG * P, sum((r + 1) * BIG for r in range(P))],
                           wide=sum(2**70 + r for r in range(P)),
                           gathered=[BIG * (r + 1) for r in range(P)])
    return out


def main() -> None:
    comm = world()
    if len(sys.argv) > 2:   # the most bytes an MPI exchange moves at once (rounds beyond)
        comm.max_bytes = int(sys.argv[2])
    if os.environ.get("COMM_GUARDED"):
        comm = guarded(comm)
    xp = comm.xp
    r, P = comm.rank, comm.size
    send, counts = rows_for(r, P)
    got, rcounts = comm.alltoallv(xp.asarray(send), counts)
    small = xp.asarray(send[:, 2].astype(np.int16))
    got16, _ = comm.alltoallv(small, counts, rcounts)
    back, _ = comm.alltoallv(got, rcounts, counts)
    out = {
        "rank": r,
        "recv": np.asarray(got.get() if hasattr(got, "get") else got).tolist(),
        "recv_counts": rcounts.tolist(),
        "recv16": np.asarray(got16.get() if hasattr(got16, "get") else got16).tolist(),
        "back_is_sent": bool(np.array_equal(np.asarray(back.get() if hasattr(back, "get")
                                                       else back), send)),
        "sum": comm.allreduce(r + 1), "max": comm.allreduce(r * 10, "max"),
        "min": comm.allreduce(r - 5, "min"),
        "vec": comm.allreduce(np.arange(4, dtype=np.int64) * (r + 1)).tolist(),
        "exscan": comm.exscan(r + 1),
    }
    if len(sys.argv) <= 2:
        big = xp.full(BIG * P, r + 1, np.uint64)
        each = np.full(P, BIG, np.int64)
        got, _ = comm.alltoallv(big, each)   # receive counts told by the header
        again, _ = comm.alltoallv(big, each, each)   # known before it
        assert bool((again == got).all())
        out.update(big=[int(got.shape[0]), int(got.sum())], wide=comm.allreduce(2**70 + r),
                   gathered=[len(b) for b in comm.allgather(b"x" * (BIG * (r + 1)))])
    comm.barrier()
    everyone = comm.allgather(out)
    if r == 0:
        pathlib.Path(sys.argv[1]).write_text(json.dumps(everyone))


if __name__ == "__main__":
    main()
