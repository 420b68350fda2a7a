"""A fake :class:`runtime.comm.Comm` for tests: ``P`` ranks as threads of one process meeting
at every collective (a barrier, then each reads what the others put in shared slots).

It adds breadth to the property tests of the distributed engine (many small graphs, several
``P``, in one process); it does not replace the ``mpiexec`` tests, which run the real
transport between processes.
"""

from __future__ import annotations

import threading

import numpy as np

from runtime.comm import Comm


class _Shared:
    def __init__(self, size: int) -> None:
        self.size = size
        self.slots: list = [None] * size
        self.barrier = threading.Barrier(size, timeout=60)


class LockstepComm(Comm):
    """Rank ``rank`` of ``size`` threads sharing one :class:`_Shared`."""

    def __init__(self, shared: _Shared, rank: int) -> None:
        self.shared, self.rank, self.size = shared, rank, shared.size

    def _swap(self, value) -> list:
        s = self.shared
        s.barrier.wait()
        s.slots[self.rank] = value
        s.barrier.wait()
        got = list(s.slots)
        s.barrier.wait()
        return got

    def alltoallv(self, send, counts, recv_counts=None):
        counts = np.asarray(counts, np.int64).reshape(self.size)
        at = np.concatenate([[0], np.cumsum(counts)])
        parts = [np.array(send[at[q]:at[q + 1]], copy=True) for q in range(self.size)]
        got = self._swap(parts)
        mine = [got[r][self.rank] for r in range(self.size)]
        rc = np.array([p.shape[0] for p in mine], np.int64)
        if recv_counts is not None:
            assert np.array_equal(rc, np.asarray(recv_counts, np.int64).reshape(self.size))
        recv = np.concatenate(mine) if mine else send[:0]
        return recv.reshape((-1,) + tuple(np.shape(send)[1:])), rc

    def allreduce(self, value, op: str = "sum"):
        got = self._swap(value)
        f = {"sum": np.sum, "max": np.max, "min": np.min}[op]
        if isinstance(value, np.ndarray):
            return f(np.stack(got), axis=0)
        return type(value)(f(got)) if isinstance(value, int) else f(got)

    def exscan(self, value: int) -> int:
        return int(sum(self._swap(int(value))[:self.rank]))

    def allgather(self, value) -> list:
        return self._swap(value)

    def barrier(self) -> None:
        self._swap(None)


def run_lockstep(size: int, body) -> list:
    """``body(comm)`` on ``size`` threads, one :class:`LockstepComm` each; the results in
    rank order, or the first exception raised (re-raised here)."""
    shared = _Shared(size)
    out: list = [None] * size
    errs: list = [None] * size

    def go(r: int) -> None:
        try:
            out[r] = body(LockstepComm(shared, r))
        except BaseException as exc:   # noqa: BLE001 - handed to the caller
            errs[r] = exc

    threads = [threading.Thread(target=go, args=(r,)) for r in range(size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for e in errs:
        if e is not None:
            raise e
    return out
