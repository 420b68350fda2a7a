"""Allocation failures agreed between processes: every process stops at the same collective.

A process of a run across processes whose allocation fails (NumPy's ``MemoryError``, CuPy's
``OutOfMemoryError``) cannot simply raise: the others would wait for it in their next
collective, and the run would end by ``mpiexec``'s clean-up with a traceback. From the end of
the search to the answer (the hand-over, the cycle engine, the runs gathered) the processes
talk through a :class:`Guarded` communicator instead, which makes such a failure a fact they
agree on:

- every collective of a :class:`Guarded` begins with the same MPI operation, an
  ``Allgather`` of a fixed header of ``size + 3`` words: a *failed* flag, the collective's
  kind (a check that every process calls the same one), and the collective's own few numbers
  (an exchange's counts, the value of an ``allreduce`` of an int, the bytes of an
  ``allgather``'s pickle). The counts of an exchange travelled first anyway: the flag rides
  with them, and an ``allreduce`` of an int is the header itself, so the guard adds no
  message to most collectives;
- a process whose allocation failed calls that same ``Allgather`` with the flag set
  (:meth:`Guarded.fail`, from the region of :func:`agreed` that caught the failure). Every
  other process is either waiting in its next collective's header or on its way to it: they
  meet there, see the flag, exchange what each knows (the failed process's phase, the counts),
  and every process raises the same :class:`runtime.errors.AgreedOutOfMemory`. No process
  waits for one that left;
- a buffer a collective receives into is allocated *before* the header where its size is
  known (an answer whose counts the caller passes); where only the header tells it, a small
  one is received into a buffer kept for the purpose (and copied out after the exchange, where
  a failure is an ordinary one, agreed at the next collective), and a large one is allocated
  and agreed by one more ``Allgather`` of a word before the data moves;
- :func:`agreed` ends its region with a guarded ``barrier``, so that a failure after the
  region's last exchange (process 0 assembling what it gathered) is agreed too.

One process (:class:`runtime.comm.SelfComm`) is left as it is: :func:`guarded` returns it
unchanged and a failure raises where it happens, as before.

For tests only, ``DVECOST_FAULT=RANK:PHASE[:N][:HOW]`` makes an allocation fail on process
``RANK`` just before the ``N``-th collective (default 1) of phase ``PHASE`` (what
:func:`set_phase` names: ``handover``, ``counts``, ``witness``, or a phase of
:data:`ocm.dist.PHASES`): a ``MemoryError`` raised (``HOW`` = ``memory``, the default), an
error of the name and message of CuPy's (``cupy``), a real allocation of 2**60 bytes of the
communicator's array module, which NumPy or CuPy refuses (``huge``), or a ``MemoryError`` in
the receive buffer of that collective or of the next one that receives (``recv``).

Examples
--------
>>> from runtime.comm import SelfComm
>>> c = SelfComm()
>>> guarded(c) is c
True
>>> with agreed(c, "trim", known={"states": 3}) as g:
...     g.allreduce(2)
2
"""

from __future__ import annotations

import contextlib
import os
import pickle
from typing import Iterator

import numpy as np

from .comm import Comm, MpiComm, NcclComm
from .device import is_out_of_memory
from .errors import AgreedOutOfMemory

__all__ = ["Guarded", "guarded", "agreed", "set_phase", "has_failed", "FAULT_VAR",
           "SCRATCH_BYTES", "OutOfMemoryError", "FaultSpec"]

#: The environment variable of fault injection (tests only; see the module docstring).
FAULT_VAR = "DVECOST_FAULT"

#: Receive buffers up to this size, whose size only the header tells, are received into a
#: buffer kept for the purpose and copied out (no allocation between the header and the data).
SCRATCH_BYTES = 1 << 16

# The kinds of collective, word 1 of the header (0: a failed process's header).
_EXCHANGE, _REDUCE, _REDUCE_ARRAY, _EXSCAN, _GATHER, _BARRIER = range(1, 7)
_HEAD = 3   # words before the payload: failed, kind, wide (a value past int64)


class OutOfMemoryError(Exception):
    """What fault injection raises for ``HOW=cupy``: of the name and message of CuPy's
    allocator's error (recognised by :func:`runtime.device.is_out_of_memory`, as CuPy's is),
    without CuPy."""


def _failed_allocation(exc: BaseException) -> bool:
    return isinstance(exc, MemoryError) or is_out_of_memory(exc)


class FaultSpec:
    """A parsed ``DVECOST_FAULT`` (see the module docstring; tests only).

    >>> f = FaultSpec("1:trim:3:recv")
    >>> f.rank, f.phase, f.nth, f.how
    (1, 'trim', 3, 'recv')
    """

    def __init__(self, spec: str) -> None:
        words = spec.split(":")
        if len(words) < 2 or not words[0].isdigit():
            raise ValueError(f"{FAULT_VAR}={spec}: expected RANK:PHASE[:N][:memory|cupy|recv]")
        self.rank, self.phase = int(words[0]), words[1]
        rest = words[2:]
        self.nth = int(rest.pop(0)) if rest and rest[0].isdigit() else 1
        self.how = rest[0] if rest else "memory"
        if self.how not in ("memory", "cupy", "huge", "recv"):
            raise ValueError(f"{FAULT_VAR}={spec}: HOW is memory, cupy, huge or recv")
        self.done = False

    def due(self, rank: int, phase: str, calls: int, receiving: bool) -> bool:
        if self.done or rank != self.rank or phase != self.phase:
            return False
        return calls >= self.nth if self.how == "recv" and receiving else \
            calls == self.nth and self.how != "recv"

    def fire(self, xp) -> None:
        """Raise the injected failure (``huge``: a real allocation of 2**60 bytes of ``xp``,
        which its allocator refuses)."""
        self.done = True
        if self.how == "huge":
            xp.empty(1 << 60, np.uint8)
        if self.how == "cupy":
            raise OutOfMemoryError("Out of memory allocating 1,048,576 bytes (allocated so "
                                   f"far: 0 bytes; injected by {FAULT_VAR})")
        raise MemoryError(f"injected by {FAULT_VAR}")


class _State:
    """What the views of one communicator share (:class:`Guarded` and its ``mpi``)."""

    def __init__(self, rank: int) -> None:
        self.phase = ""
        self.calls = 0   # collectives since the phase began (for fault injection)
        # Headers sent and receive buffers agreed by one more word, since the state was made
        # (what the agreement costs: tools/guard_cost.py reads them).
        self.headers = 0
        self.agreed_buffers = 0
        self.known: dict[str, int] = {}   # totals every process knows
        self.local: dict[str, int] = {}   # this process's parts, summed on a failure
        self.failed: AgreedOutOfMemory | None = None
        spec = os.environ.get(FAULT_VAR)
        fault = FaultSpec(spec) if spec else None
        self.fault = fault if fault is not None and fault.rank == rank else None
        self.scratch: dict[int, object] = {}   # id(array module) -> kept receive buffer
        # (every process reads the same spec: with a receive buffer's failure injected, none
        # keeps one, so that every receive whose size the header tells is agreed)
        self.scratch_bytes = 0 if fault is not None and fault.how == "recv" else SCRATCH_BYTES


class Guarded(Comm):
    """A :class:`runtime.comm.MpiComm` or :class:`~runtime.comm.NcclComm` whose every
    collective agrees first on whether an allocation failed (see the module docstring).
    The same collectives, the same answers; :attr:`mpi`, beside NCCL's, is the guarded MPI
    communicator (one state: a failure is agreed whichever of the two the processes meet in).
    Made by :func:`guarded`."""

    def __init__(self, inner: Comm, state: _State | None = None) -> None:
        self.inner = inner
        self.rank, self.size, self.xp = inner.rank, inner.size, inner.xp
        self.host = inner if isinstance(inner, MpiComm) else inner.mpi
        self.MPI, self.comm = self.host.MPI, self.host.comm
        self.state = _State(self.rank) if state is None else state
        self.head = np.zeros(self.size + _HEAD, np.int64)
        self.every = np.zeros((self.size, self.size + _HEAD), np.int64)
        self.flags = np.zeros(self.size, np.int64)
        if isinstance(inner, NcclComm):
            self.mpi = Guarded(inner.mpi, self.state)

    # ------------------------------------------------------------------ agreement
    def _agree(self, kind: int, words=(), wide: int = 0) -> np.ndarray:
        """The header of a collective: every process's (failed, kind, wide, words...);
        raises the agreed failure where a process failed."""
        st = self.state
        if st.failed is not None:   # (a collective after an agreed failure: none follows)
            raise st.failed
        st.calls += 1
        st.headers += 1
        if st.fault is not None and st.fault.due(self.rank, st.phase, st.calls, False):
            st.fault.fire(self.xp)   # (as if an allocation failed just before this one)
        h = self.head
        h[:] = 0
        h[1], h[2] = kind, wide
        h[_HEAD:_HEAD + len(words)] = words
        self.comm.Allgather(h, self.every)
        if self.every[:, 0].any():
            self._stop(self.every[:, 0])
        kinds = self.every[:, 1]
        if (kinds != kind).any():   # (every process raises it: all see the same headers)
            raise RuntimeError(f"processes called different collectives: kinds "
                               f"{kinds.tolist()} (a collective outside SPMD order)")
        return self.every

    def fail(self, device: bool = False) -> None:
        """Called by a process whose allocation failed, in place of its next collective:
        the header with the flag set, met by the others' next collective; raises the agreed
        :class:`~runtime.errors.AgreedOutOfMemory` (every process raises it)."""
        st = self.state
        if st.failed is not None:
            raise st.failed
        h = self.head
        h[:] = 0
        h[0] = 2 if device else 1
        self.comm.Allgather(h, self.every)
        self._stop(self.every[:, 0])

    def _stop(self, flags: np.ndarray) -> None:
        """Every process, once a header showed a failure: the failed processes' phases and
        every process's counts exchanged (one pickled ``allgather``), then the same error
        raised everywhere."""
        st = self.state
        flags = np.array(flags, np.int64)
        mine = (st.phase if flags[self.rank] else None, dict(st.local))
        got = self.comm.allgather(mine)
        first = int(np.flatnonzero(flags)[0])
        counts = dict(st.known)
        for key in {k for _, part in got for k in part}:
            counts.setdefault(key, sum(int(part.get(key, 0)) for _, part in got))
        exc = AgreedOutOfMemory(got[first][0] or "", first, self.size,
                                device=bool(flags[first] == 2),
                                n_explored=int(counts.get("states", 0)))
        exc.counts = counts
        st.failed = exc
        raise exc

    def _scratch(self, xp):
        """The kept receive buffer of module ``xp`` (allocated on first use, before a
        header: a failure there is an ordinary one)."""
        buf = self.state.scratch.get(id(xp))
        if buf is None:
            buf = self.state.scratch[id(xp)] = xp.empty(self.state.scratch_bytes, np.uint8)
        return buf

    def _before(self, xp, shape: tuple, dtype):
        """A receive buffer whose size is known before the header."""
        st = self.state
        if st.fault is not None and st.fault.due(self.rank, st.phase, st.calls + 1, True):
            st.fault.fire(xp)
        return xp.empty(shape, dtype)

    def _after(self, xp, shape: tuple, dtype, largest: int):
        """A receive buffer whose size the header told: ``(buffer, copy)``, ``copy`` true
        where it is the kept one (the caller copies the rows out after the exchange). Where
        some process receives more than the kept buffer holds (``largest`` bytes: the same
        on every process, from the header), each allocates its own and they agree on it (one
        ``Allgather`` of a word) before any data moves."""
        dtype = np.dtype(dtype)
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        st = self.state
        if largest <= st.scratch_bytes:   # (so on every process)
            return self._scratch(xp)[:nbytes].view(dtype).reshape(shape), True
        due = st.fault is not None and st.fault.due(self.rank, st.phase, st.calls, True)
        st.agreed_buffers += 1
        buf, flag = None, 0
        try:
            if due:
                st.fault.fire(xp)
            buf = xp.empty(shape, dtype)
        except Exception as exc:   # noqa: BLE001 - only a failed allocation
            if not _failed_allocation(exc):
                raise
            flag = 2 if is_out_of_memory(exc) else 1
        self.flags[:] = 0
        one = np.array([flag], np.int64)
        self.comm.Allgather(one, self.flags)
        if self.flags.any():
            self._stop(self.flags)
        return buf, False

    # ------------------------------------------------------------------ collectives
    def alltoallv(self, send, counts, recv_counts=None):
        xp = self.xp
        send = xp.ascontiguousarray(send)
        counts = np.asarray(counts, np.int64).reshape(self.size)
        tail = tuple(send.shape[1:])
        recv, copy = None, False
        if recv_counts is not None:
            rc = np.asarray(recv_counts, np.int64).reshape(self.size)
            recv = self._before(xp, (int(rc.sum()),) + tail, send.dtype)
        else:
            self._scratch(xp)
        every = self._agree(_EXCHANGE, counts)[:, _HEAD:]   # row q: what q sends
        rcounts = every[:, self.rank].copy()
        most = int(max(every.sum(axis=1).max(), every.sum(axis=0).max()))
        row = send.dtype.itemsize * int(np.prod(tail, dtype=np.int64))
        if recv is None:
            recv, copy = self._after(xp, (int(rcounts.sum()),) + tail, send.dtype,
                                     int(every.sum(axis=0).max()) * row)
        work = None
        if isinstance(self.inner, MpiComm) and most * row > self.inner.max_bytes:
            # In rounds (so on every process): their buffer allocated and agreed first.
            work, _ = self._after(np, (self.inner.round_bytes(row),), np.uint8, 1 << 62)
        self.inner.exchange_into(send, counts, rcounts, recv, most, work)
        return (recv.copy() if copy else recv), rcounts

    def allreduce(self, value, op: str = "sum"):
        if op not in ("sum", "max", "min"):
            raise ValueError(f"unknown reduction '{op}': expected sum, max or min")
        if isinstance(value, (int, np.integer)):
            v = int(value)
            wide = int(not -2**63 <= v < 2**63)
            every = self._agree(_REDUCE, [0 if wide else v], wide)
            if every[:, 2].any():   # a value past int64 somewhere: pickled, as mpi4py does
                return self.host.allreduce(v, op)
            got = [int(x) for x in every[:, _HEAD]]
            return {"sum": sum, "max": max, "min": min}[op](got)
        xp = np if isinstance(value, np.ndarray) else self.xp
        value = xp.ascontiguousarray(value)
        out = self._before(xp, value.shape, value.dtype)
        self._agree(_REDUCE_ARRAY, [value.size])
        if xp is np:
            mop = {"sum": self.MPI.SUM, "max": self.MPI.MAX, "min": self.MPI.MIN}[op]
            self.comm.Allreduce(value, out, op=mop)
        else:
            self.inner.allreduce_into(value, out, op)
        return out

    def exscan(self, value: int) -> int:
        v = int(value)
        wide = int(not -2**63 <= v < 2**63)
        every = self._agree(_EXSCAN, [0 if wide else v], wide)
        if every[:, 2].any():
            return self.host.exscan(v)
        return int(sum(int(x) for x in every[:self.rank, _HEAD]))

    def allgather(self, value) -> list:
        data = np.frombuffer(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL), np.uint8)
        self._scratch(np)
        sizes = self._agree(_GATHER, [data.shape[0]])[:, _HEAD].copy()
        at = np.zeros(self.size + 1, np.int64)
        np.cumsum(sizes, out=at[1:])
        buf, _ = self._after(np, (int(at[-1]),), np.uint8, int(at[-1]))
        self.comm.Allgatherv(data, [buf, (sizes, at[:-1]), self.MPI.BYTE])
        return [pickle.loads(buf[at[q]:at[q + 1]]) for q in range(self.size)]

    def barrier(self) -> None:
        if isinstance(self.inner, NcclComm):
            self.inner.stream.synchronize()
        self._agree(_BARRIER)


_GUARDS: list[tuple[Comm, Guarded]] = []


def guarded(comm: Comm) -> Comm:
    """``comm`` with its failures agreed (:class:`Guarded`, one per communicator): an
    :class:`~runtime.comm.MpiComm` or :class:`~runtime.comm.NcclComm` of several processes;
    any other communicator (one process, a test's stand-in) as it is."""
    if isinstance(comm, Guarded) or comm.size == 1 or \
            not isinstance(comm, (MpiComm, NcclComm)):
        return comm
    for inner, g in _GUARDS:
        if inner is comm:
            return g
    g = Guarded(comm)
    _GUARDS.append((comm, g))
    return g


def set_phase(comm: Comm, phase: str) -> None:
    """Name what the processes of a guarded ``comm`` do now (the phase an agreed failure
    reports, and fault injection's); nothing for another communicator."""
    if isinstance(comm, Guarded):
        comm.state.phase = phase
        comm.state.calls = 0


def has_failed(comm: Comm) -> bool:
    """Whether the processes of ``comm`` agreed on a failure (no collective follows one)."""
    return isinstance(comm, Guarded) and comm.state.failed is not None


@contextlib.contextmanager
def agreed(comm: Comm, phase: str, *, known: dict | None = None,
           local: dict | None = None) -> Iterator[Comm]:
    """A region whose failed allocations every process agrees on; gives the guarded ``comm``
    (:func:`guarded`), which every collective of the region must use.

    A ``MemoryError`` or a device's out-of-memory error raised in the region on one process
    becomes its :meth:`Guarded.fail` (the others meet it in their next collective), and every
    process raises the same :class:`~runtime.errors.AgreedOutOfMemory`, its ``counts`` the
    ``known`` totals and the sums of every process's ``local`` counts. The region ends with a
    guarded ``barrier`` (a failure after its last exchange is agreed there). Regions nest; the
    inner one's phase and counts hold inside it. Other errors pass as they are (those of the
    engine are agreed already: every process raises them).
    """
    g = guarded(comm)
    if not isinstance(g, Guarded):
        yield comm
        return
    st = g.state
    saved = (st.phase, st.calls, st.known, st.local)
    st.phase, st.calls = phase, 0
    st.known = {**st.known, **(known or {})}
    st.local = {**st.local, **(local or {})}
    device = None
    try:
        yield g
        g.barrier()
    except AgreedOutOfMemory:
        raise
    except Exception as exc:   # noqa: BLE001 - only a failed allocation
        if not _failed_allocation(exc):
            raise
        device = is_out_of_memory(exc)
    else:
        st.phase, st.calls, st.known, st.local = saved
    if device is not None:   # (out of the handler: the failed frames may go first)
        g.fail(device)
