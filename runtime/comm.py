"""The collective operations one search needs to run as several processes (SPMD).

A :class:`Comm` is the small interface a distributed search is written against: its ``rank``
and ``size``, and five collectives (:meth:`~Comm.alltoallv`, :meth:`~Comm.allreduce`,
:meth:`~Comm.exscan`, :meth:`~Comm.allgather`, :meth:`~Comm.barrier`). Three implementations,
none of them a transport of its own:

- :class:`SelfComm`, one process: every collective is the identity (or its one-process
  value), so code written against a :class:`Comm` runs unchanged without MPI;
- :class:`MpiComm`, processes started by ``mpiexec`` exchanging NumPy arrays through mpi4py
  (one machine or a cluster);
- :class:`NcclComm`, one process per GPU exchanging CuPy arrays through NCCL
  (``cupy.cuda.nccl``); the processes are started by ``mpiexec`` and NCCL's unique id is
  broadcast over MPI, as ``cupyx.distributed`` bootstraps it.

:func:`world` picks one from the environment: the NCCL one when ``DVECOST_COMM=nccl``, the MPI
one when the process was started by ``mpiexec`` with more than one process (mpi4py imported
only then), else :class:`SelfComm`.

Examples
--------
>>> import numpy as np
>>> c = SelfComm()
>>> c.rank, c.size
(0, 1)
>>> recv, counts = c.alltoallv(np.array([[5, 1], [7, 2]], np.uint64), np.array([2]))
>>> recv.tolist(), counts.tolist()
([[5, 1], [7, 2]], [2])
>>> c.allreduce(3), c.exscan(3), c.allgather(4)
(3, 0, [4])
"""

from __future__ import annotations

import math
import os

import numpy as np

__all__ = ["Comm", "SelfComm", "Forwarding", "MpiComm", "NcclComm", "world",
           "launched_world_size", "DistributedError"]

#: Environment variables by which MPI launchers (MPICH's hydra, Open MPI, Slurm's PMI) tell a
#: process the size of its world; read before mpi4py is imported (its import initialises MPI).
_SIZE_VARS = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MPI_LOCALNRANKS", "PMIX_SIZE")


class DistributedError(RuntimeError):
    """A distributed run cannot start or go on (no mpi4py, a collective too large, ...)."""


def launched_world_size() -> int:
    """How many processes the launcher started this one among (1 without a launcher).

    >>> import os
    >>> launched_world_size() >= 1
    True
    """
    for var in _SIZE_VARS:
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    return 1


class Comm:
    """The interface (see the module docstring). Arrays are of :attr:`xp`: NumPy for the
    CPU implementations, CuPy for :class:`NcclComm`."""

    rank: int = 0
    size: int = 1
    xp = np

    def alltoallv(self, send, counts, recv_counts=None):
        """Each process sends ``send[sum(counts[:q]):sum(counts[:q+1])]`` (rows of a 1-D or
        2-D array, grouped by destination) to process ``q``.

        Returns ``(recv, recv_counts)``: the rows received, grouped by source in rank order,
        and how many came from each process (a NumPy array of ``size``). ``recv_counts``,
        when the caller knows them (an answer to an earlier exchange goes back with its
        counts swapped), saves exchanging the counts first where the transport allows (NCCL;
        MPI exchanges them anyway, to agree on whether the exchange goes in rounds)."""
        raise NotImplementedError

    def allreduce(self, value, op: str = "sum"):
        """``op`` (``'sum'``, ``'max'`` or ``'min'``) over every process of an int or of a
        NumPy array of int64 (the same shape everywhere)."""
        raise NotImplementedError

    def exscan(self, value: int) -> int:
        """The sum of ``value`` over the processes of lower rank (0 on rank 0)."""
        raise NotImplementedError

    def allgather(self, value) -> list:
        """Every process's ``value`` (a picklable Python value), in rank order."""
        raise NotImplementedError

    def barrier(self) -> None:
        """Return once every process has called it."""
        raise NotImplementedError


class Forwarding(Comm):
    """Another communicator's collectives, as they are, with an array module of its own
    (``xp``, default the other's): a base for wrappers that change one thing (tests compute
    with a stand-in of a device module; a tool measures a communicator that
    :func:`runtime.guard.guarded`, which wraps only MPI's and NCCL's, leaves unwrapped).

    >>> f = Forwarding(SelfComm())
    >>> f.size, f.allreduce(3), f.allgather("x")
    (1, 3, ['x'])
    """

    def __init__(self, comm: Comm, xp=None) -> None:
        self.comm = comm
        self.rank, self.size = comm.rank, comm.size
        self.xp = comm.xp if xp is None else xp

    def alltoallv(self, send, counts, recv_counts=None):
        return self.comm.alltoallv(send, counts, recv_counts)

    def allreduce(self, value, op: str = "sum"):
        return self.comm.allreduce(value, op)

    def exscan(self, value: int) -> int:
        return self.comm.exscan(value)

    def allgather(self, value) -> list:
        return self.comm.allgather(value)

    def barrier(self) -> None:
        self.comm.barrier()


class SelfComm(Comm):
    """One process: each collective's value for a world of one."""

    def alltoallv(self, send, counts, recv_counts=None):
        return send, np.asarray(counts, np.int64).reshape(1)

    def allreduce(self, value, op: str = "sum"):
        _check_op(op)
        return value

    def exscan(self, value: int) -> int:
        return 0

    def allgather(self, value) -> list:
        return [value]

    def barrier(self) -> None:
        return None


def _check_op(op: str) -> None:
    if op not in ("sum", "max", "min"):
        raise ValueError(f"unknown reduction '{op}': expected sum, max or min")


#: The largest count MPI's C interface takes (an ``int``): larger exchanges go in rounds.
_MPI_COUNT_MAX = 2**31 - 1
#: The tag of a two-process exchange's ``Sendrecv`` (point-to-point messages are matched apart
#: from collectives; between one pair they arrive in the order sent).
_PAIR_TAG = 26


class MpiComm(Comm):
    """Processes started by ``mpiexec``, NumPy arrays exchanged through mpi4py.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        The communicator (``MPI.COMM_WORLD`` by default).

    Attributes
    ----------
    max_bytes : int
        The most bytes one process sends or receives in one MPI exchange (what MPI's C
        interface counts in an ``int``); larger exchanges go in rounds, on every process
        alike. Settable (tests make it small).
    """

    max_bytes = _MPI_COUNT_MAX

    def __init__(self, comm=None) -> None:
        try:
            from mpi4py import MPI
        except ImportError:   # pragma: no cover - the 'dist' extra brings it
            raise DistributedError("a distributed run needs mpi4py: pip install "
                                   "'dvecost[dist]'") from None
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()

    def exchange_counts(self, counts) -> tuple[np.ndarray, int]:
        """What every process sends to every other, by one ``Allgather`` of ``counts``:
        this process's receive counts, and the most rows any process sends or receives in
        the exchange (the same on every process, so that all of them exchange alike)."""
        counts = np.ascontiguousarray(counts, np.int64).reshape(self.size)
        every = np.empty((self.size, self.size), np.int64)   # row q: what q sends
        self.comm.Allgather(counts, every)
        # (The sums in Python: a few numbers, where NumPy's reductions cost microseconds
        # each, and a search exchanges four times a level.)
        rows = every.tolist()
        most = max(max(sum(r) for r in rows), max(sum(c) for c in zip(*rows)))
        return every[:, self.rank].copy(), most

    def alltoallv(self, send, counts, recv_counts=None):
        send = np.ascontiguousarray(send)
        counts = np.asarray(counts, np.int64).reshape(self.size)
        # The counts travel even when the receiver knows its own (``recv_counts`` is then
        # what they say): whether the exchange goes in rounds must be agreed, or a process
        # over the limit would wait in a collective the others never enter.
        rcounts, most = self.exchange_counts(counts)
        recv = np.empty((int(rcounts.sum()),) + send.shape[1:], send.dtype)
        self.exchange_into(send, counts, rcounts, recv, most)
        return recv, rcounts

    def exchange_into(self, send, counts, rcounts, recv, most: int, work=None) -> None:
        """The rows of :meth:`alltoallv` once the counts are known both ways: received into
        ``recv`` (allocated by the caller, rows grouped by source), in rounds where ``most``
        (the most rows any process sends or receives, the same on every process) passes
        :attr:`max_bytes`. ``work``: the rounds' buffer (:meth:`round_bytes` bytes, uint8),
        allocated here when not given."""
        row = send.dtype.itemsize * math.prod(send.shape[1:])
        if most * row <= self.max_bytes:
            self._direct(send, counts, rcounts, row, recv)
            return
        # Over the limit somewhere: in rounds of at most that many bytes per process, each
        # round a slice of every destination's rows, sent from and received into one buffer
        # (allocated once: no allocation between the rounds' collectives).
        per = max(1, (self.max_bytes // self.size) // max(row, 1))
        work = np.empty(self.round_bytes(row), np.uint8) if work is None else work
        half = per * self.size * row
        tail = send.shape[1:]

        def rows(at: int, k: int):
            return work[at:at + k * row].view(send.dtype).reshape((k,) + tail)
        s0, r0 = _displs(counts), _displs(rcounts)
        done_s = np.zeros(self.size, np.int64)
        done_r = np.zeros(self.size, np.int64)
        while self.allreduce(int((counts - done_s).max(initial=0)), "max") > 0:
            cs = np.minimum(counts - done_s, per)
            cr = np.minimum(rcounts - done_r, per)
            part, got = rows(0, int(cs.sum())), rows(half, int(cr.sum()))
            at = _displs(cs)
            for q in range(self.size):
                part[at[q]:at[q] + cs[q]] = send[s0[q] + done_s[q]:s0[q] + done_s[q] + cs[q]]
            self._direct(part, cs, cr, row, got)
            at = _displs(cr)
            for q in range(self.size):
                recv[r0[q] + done_r[q]:r0[q] + done_r[q] + cr[q]] = got[at[q]:at[q] + cr[q]]
            done_s += cs
            done_r += cr

    def round_bytes(self, row: int) -> int:
        """Bytes of the buffer an exchange in rounds works in, rows of ``row`` bytes: one
        round's rows sent and one round's received."""
        per = max(1, (self.max_bytes // self.size) // max(row, 1))
        return 2 * per * self.size * row

    def _direct(self, send, counts, rcounts, row: int, recv=None):
        """One MPI ``Alltoallv`` of rows of ``row`` bytes (the counts known both ways), into
        ``recv`` where given."""
        if recv is None:
            recv = np.empty((int(rcounts.sum()),) + send.shape[1:], send.dtype)
        if self.size == 2:
            # Two processes: the other's rows by one Sendrecv and this process's own by a
            # copy. MPICH's Alltoallv took about twice as long for a level's rows (103 us
            # against 57 us for 80,000 words each way, both processes ready), passing the
            # rows a process keeps through MPI as well.
            me = self.rank
            s, r = send.view(np.uint8).reshape(-1), recv.view(np.uint8).reshape(-1)
            s0, r0 = int(counts[0]) * row, int(rcounts[0]) * row
            mine_s, theirs_s = (s[:s0], s[s0:]) if me == 0 else (s[s0:], s[:s0])
            mine_r, theirs_r = (r[:r0], r[r0:]) if me == 0 else (r[r0:], r[:r0])
            self.comm.Sendrecv([theirs_s, self.MPI.BYTE], 1 - me, _PAIR_TAG,
                               [theirs_r, self.MPI.BYTE], 1 - me, _PAIR_TAG)
            mine_r[:] = mine_s
            return recv
        sb, rb = counts * row, rcounts * row
        self.comm.Alltoallv([send.view(np.uint8).reshape(-1), (sb, _displs(sb)), self.MPI.BYTE],
                            [recv.view(np.uint8).reshape(-1), (rb, _displs(rb)), self.MPI.BYTE])
        return recv

    def allreduce(self, value, op: str = "sum"):
        _check_op(op)
        mop = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[op]
        if isinstance(value, np.ndarray):
            out = np.empty_like(value)
            self.comm.Allreduce(np.ascontiguousarray(value), out, op=mop)
            return out
        return self.comm.allreduce(value, op=mop)

    def exscan(self, value: int) -> int:
        got = self.comm.exscan(int(value), op=self.MPI.SUM)
        return 0 if got is None else int(got)

    def allgather(self, value) -> list:
        return self.comm.allgather(value)

    def barrier(self) -> None:
        self.comm.Barrier()


def _displs(counts: np.ndarray) -> np.ndarray:
    d = np.zeros(counts.shape[0], np.int64)
    np.cumsum(counts[:-1], out=d[1:])
    return d


class NcclComm(Comm):
    """One process per GPU, CuPy arrays exchanged through NCCL (``cupy.cuda.nccl``).

    The processes are started by ``mpiexec`` (``dvecost analyze --gpus N`` starts them
    itself); rank ``r`` uses GPU ``r`` modulo the GPUs it sees, and rank 0's NCCL unique id
    reaches the others over MPI. Python values (:meth:`allgather`) and the counts of an
    exchange travel over MPI as well: they are a few integers.
    """

    def __init__(self, mpi: MpiComm | None = None) -> None:
        import cupy
        from cupy.cuda import nccl
        self.mpi = MpiComm() if mpi is None else mpi
        self.rank, self.size = self.mpi.rank, self.mpi.size
        self.xp, self.nccl = cupy, nccl
        cupy.cuda.Device(self.rank % cupy.cuda.runtime.getDeviceCount()).use()
        uid = nccl.get_unique_id() if self.rank == 0 else None
        uid = self.mpi.comm.bcast(uid, root=0)
        self.comm = nccl.NcclCommunicator(self.size, uid, self.rank)
        self.stream = cupy.cuda.get_current_stream()

    def _type(self, dtype):
        n = self.nccl
        table = {np.dtype(np.int8): n.NCCL_INT8, np.dtype(np.uint8): n.NCCL_UINT8,
                 np.dtype(np.int32): n.NCCL_INT32, np.dtype(np.uint32): n.NCCL_UINT32,
                 np.dtype(np.int64): n.NCCL_INT64, np.dtype(np.uint64): n.NCCL_UINT64,
                 np.dtype(np.float64): n.NCCL_FLOAT64}
        return table[np.dtype(dtype)]

    def alltoallv(self, send, counts, recv_counts=None):
        xp = self.xp
        send = xp.ascontiguousarray(send)
        counts = np.asarray(counts, np.int64).reshape(self.size)
        rcounts = self.mpi.exchange_counts(counts)[0] if recv_counts is None else \
            np.asarray(recv_counts, np.int64).reshape(self.size)
        recv = xp.empty((int(rcounts.sum()),) + send.shape[1:], send.dtype)
        self.exchange_into(send, counts, rcounts, recv)
        return recv, rcounts

    def exchange_into(self, send, counts, rcounts, recv, most: int = 0, work=None) -> None:
        """The rows of :meth:`alltoallv` once the counts are known both ways, received into
        ``recv`` (a CuPy array allocated by the caller, rows grouped by source). ``most`` and
        ``work`` are not used (NCCL counts in ``size_t``: no rounds)."""
        row = send.dtype.itemsize * int(np.prod(send.shape[1:], dtype=np.int64))
        # As bytes: every dtype (NCCL has no 16-bit integers), rows of any width.
        sd, rd = _displs(counts) * row, _displs(rcounts) * row
        sp, rp, s = send.data.ptr, recv.data.ptr, self.stream.ptr
        u8 = self.nccl.NCCL_UINT8
        self.nccl.groupStart()
        for q in range(self.size):
            if counts[q]:
                self.comm.send(sp + int(sd[q]), int(counts[q]) * row, u8, q, s)
            if rcounts[q]:
                self.comm.recv(rp + int(rd[q]), int(rcounts[q]) * row, u8, q, s)
        self.nccl.groupEnd()

    def allreduce(self, value, op: str = "sum"):
        _check_op(op)
        if isinstance(value, (int, np.integer, np.ndarray)):   # small: over MPI
            return self.mpi.allreduce(value, op)
        out = self.xp.empty_like(value)
        self.allreduce_into(value, out, op)
        return out

    def allreduce_into(self, value, out, op: str = "sum") -> None:
        """:meth:`allreduce` of a CuPy array into ``out`` (allocated by the caller, like
        ``value``), through NCCL."""
        nop = {"sum": self.nccl.NCCL_SUM, "max": self.nccl.NCCL_MAX,
               "min": self.nccl.NCCL_MIN}[op]
        self.comm.allReduce(value.data.ptr, out.data.ptr, value.size, self._type(value.dtype),
                            nop, self.stream.ptr)

    def exscan(self, value: int) -> int:
        return self.mpi.exscan(value)

    def allgather(self, value) -> list:
        return self.mpi.allgather(value)

    def barrier(self) -> None:
        self.stream.synchronize()
        self.mpi.barrier()


_WORLD: Comm | None = None


def world() -> Comm:
    """The communicator of this process, made once: :class:`NcclComm` when
    ``DVECOST_COMM=nccl``, :class:`MpiComm` when a launcher started more than one process,
    else :class:`SelfComm` (mpi4py is not imported then).

    >>> import os
    >>> world().size == launched_world_size() or os.environ.get("DVECOST_COMM") == "nccl"
    True
    """
    global _WORLD
    if _WORLD is None:
        if os.environ.get("DVECOST_COMM") == "nccl":
            _WORLD = NcclComm()
        elif launched_world_size() > 1:
            _WORLD = MpiComm()
        else:
            _WORLD = SelfComm()
    return _WORLD
