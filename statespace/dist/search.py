"""Level-synchronous breadth-first search over several processes, with the one-process ids.

Every state is owned by one process, ``owner_of(key) = mix(key) mod P`` (on the host, keys of
one word: :func:`word_owners`, a multiplicative hash): its key is in that process's visited
set. The states of a level are expanded elsewhere: each process expands (and
records) one run of consecutive ids a level, the ids it numbered. Level by level:

1. each process expands its run of the level (its frontier, in id order) and gives every
   successor its *rank*, ``source id * A + action`` (``A`` actions; for ``system sync`` the
   step ids, numbered as one process numbers them, see :mod:`statespace.dist.steps`):
   unique per successor, and the order in which the one-process search discovers them;
2. each successor's key and rank go to the key's owner (one ``alltoallv``), which looks the
   keys up in its own visited set: a key first seen in this level is new, with the smallest
   rank of its occurrences;
3. the new states are numbered exactly as one process numbers them. The one-process explorer
   gives new states the next ids in order of their smallest rank (expanding states in id order
   and numbering by first (source, action) occurrence is FIFO breadth-first search, whatever
   its chunks), so the ids of level ``L + 1`` are ``n`` (the states before it) plus the
   position of each new state's smallest rank among all of the level's. Each rank goes, with
   its key, to the process owning its source's share of the level's id range (``P`` shares in
   id order, ranks of lower sources to lower processes, cut so that each process numbered
   about as many of the last level's new states: :func:`_rebalanced`), which sorts what it
   received; the
   counts (the matrix of who sends how many ranks to whom, in the level's one ``allreduce``,
   which also agrees the stop) give its first id. It numbers a run of consecutive ids, keeps
   their states, parents and steps, and expands them in the next level; the ids go back to
   the owners the way the ranks came;
4. the owners send each successor's id back to the process that expanded its source, which
   sorts its edges by (source, target, action): the CSR rows stay with their source's
   expander, one run of ids a level, so that the hand-over copies runs of rows (slices), not
   each edge to its place.

Stops are agreed: a state or memory limit, a signal or the ``--timeout`` clock (recorded, not
raised, while the search runs) and an allocation failure are shared by the level's
``allreduce`` (once its successors are looked up) and acted on at the level's end, so that
every process stops at the same level with the same counts (no process is left waiting in a
collective). At the end each process's share of the graph is handed over
(:func:`statespace.dist.handover.hand_over`: today gathered to process 0, where it is
assembled exactly as one process assembles it and the cycle engine runs).

On the device
-------------
Every step above is written over the search's array module ``xp``: NumPy, or CuPy when the
communicator is NCCL's (one process per GPU; ``xp=`` chooses another, e.g. a NumPy stand-in
of a device module in tests). On a device the frontier, the successors (the model's generated
kernel, the one the one-GPU explorer uses, where the model is in its scope), the owners, the
visited set, the numbering and the kept rows all stay in the GPU's memory, and the exchanges
go GPU to GPU through NCCL: what crosses to the host per level is the P counts of each
exchange, the level's one vector of stops and counts (its ``allreduce``), and the sizes
CuPy reads back to shape an array (a ``flatnonzero``'s count). ``system sync`` models also
bring each level's distinct step ids to the host (:mod:`statespace.dist.steps`), as the
one-GPU explorer does.
"""

from __future__ import annotations

import signal
import time as _time
from collections.abc import Callable

import numpy as np

from runtime.arrays import on_device, stable_argsort
from runtime.comm import Comm, launched_world_size
from runtime.device import SideWork, is_out_of_memory, release_pool, synchronize, to_host
from runtime.errors import (Interrupted, MemoryLimitExceeded, OutOfMemory, RunStopped,
                            StateLimitExceeded)
from runtime.guard import agreed
from runtime.memory import current_rss, keep_freed_memory

from ..explore import as_compiled
from ..graph import StateGraph
from ..model import states_dtype
from ..quotient import Quotient
from ..search import DEVICE_CHUNK
from ..store import VisitedSet
from ..symmetry import Symmetry
from .handover import Share, exchange, hand_over
from .kept import Kept, bits
from .route import by_owner, owner_of, routed
from .steps import StepNumbers
from .successors import NextStates

__all__ = ["explore_distributed", "distributed_quotient"]

_U = np.uint64
#: An odd constant near 2**64 over the golden ratio: the multiplier of :func:`word_owners`.
_GOLDEN = _U(0x9E3779B97F4A7C15)
#: States expanded per call of the successor function on the host (bounds its temporaries);
#: on a device :data:`statespace.search.DEVICE_CHUNK`, as the one-GPU explorer takes them.
BATCH = 1 << 17
#: Stops coded for the agreement at a level's end, the most urgent largest.
_GO, _STATES, _MEMORY, _OOM, _SIGNAL = 0, 1, 2, 3, 4


#: What a distributed search reduces: nothing (it explores the full product).
DISTRIBUTED_SYMMETRY = Symmetry(reason="a distributed search explores the full product")


def distributed_quotient(model, comm: Comm, **options) -> Quotient | None:
    """:func:`explore_distributed` as the :class:`~statespace.quotient.Quotient` the analysis
    takes (no symmetry reduced): on process 0; None on the others."""
    cm = as_compiled(model)
    graph = explore_distributed(cm, comm, **options)
    return None if graph is None else Quotient(graph, DISTRIBUTED_SYMMETRY, cm)


def explore_distributed(model, comm: Comm, *, property: bool = True,
                        max_states: int | None = None, max_memory: int | None = None,
                        progress: Callable[[int, int, float], None] | None = None,
                        error_successors: bool = False, timings: dict | None = None,
                        xp=None, batch: int | None = None,
                        handover: Callable | None = None) -> StateGraph | None:
    """Explore ``model`` as one of ``comm.size`` processes (each calls this with its ``comm``).

    Parameters
    ----------
    model : CompiledModel or dve.syntax.Model
    comm : runtime.comm.Comm
        The processes' communicator (:class:`~runtime.comm.SelfComm` for one process).
    property, max_states, max_memory, progress, error_successors
        As for :func:`statespace.build_state_graph`; ``max_memory`` bounds each process's
        resident memory, checked at each level's end; ``progress`` is called on process 0.
    timings : dict, optional
        Filled with this process's wall seconds: ``search`` (the levels, the graph spread
        over the processes) and ``gather`` (the hand-over: the graph to process 0 and
        assembled there, or left in blocks), of which ``share`` (this process's levels joined
        into one share first); ``sent``, the bytes it sent to other processes during the levels;
        ``row_bytes``, the bytes of the CSR rows it kept (targets, actions, palette rows);
        and ``phases``, per phase of a level (``expand``, ``route``, ``keys out``,
        ``visited``, ``agree``, ``number``, ``targets back``, ``rows``, ``owned``) its
        ``(wall, CPU)`` seconds summed over the levels (a phase that ends in a collective
        includes the wait for the other processes: MPICH's waiting spins, so it is CPU too);
        ``levels``, per level in order its phases' wall seconds on this process (a dict).
    xp : module, optional
        The array module the search runs on: by default the communicator's (CuPy for NCCL's,
        so that the search runs on the device; NumPy otherwise).
    batch : int, optional
        States expanded per call of the successor function (default :data:`BATCH` on the
        host, :data:`statespace.search.DEVICE_CHUNK` on a device).
    handover : callable, optional
        What becomes of the processes' shares when the levels are done, called as
        :func:`~statespace.dist.handover.hand_over` is (its default): the graph gathered to
        process 0; :func:`statespace.dist.blocks.hand_over_blocks` leaves it in blocks of
        consecutive ids, one per process, for the cycle engine across processes.

    Returns
    -------
    StateGraph or None
        On process 0 the whole graph, identical array for array to
        :func:`statespace.build_state_graph`'s; None on the others.

    Raises
    ------
    runtime.errors.StateLimitExceeded, MemoryLimitExceeded, OutOfMemory
        On every process, at the same level: ``n_explored`` and ``counts`` are the whole
        search's so far (``partial`` is None: the graph is not gathered).
    runtime.errors.RunStopped
        A signal or the timeout on any process: every process raises it at the level's end,
        with the counts so far.
    """
    cm = as_compiled(model, property=property)
    xp = comm.xp if xp is None else xp
    if batch is None:
        batch = DEVICE_CHUNK if on_device(xp) else BATCH
    if launched_world_size() > 1 and not on_device(xp):
        # The levels' temporaries (megabytes, allocated and freed level after level) reuse
        # freed memory rather than fresh pages (see runtime.memory.keep_freed_memory). Only
        # in processes a launcher started for the run: the setting is process-wide, and a
        # process that runs other work besides (ranks as threads in tests) keeps glibc's.
        keep_freed_memory()
    search = _Search(cm, comm, max_states, max_memory, progress, error_successors, xp,
                     max(1, int(batch)))
    search.handover = hand_over if handover is None else handover
    graph = search.run()
    if timings is not None:
        timings.update(search.seconds)
    return graph


class _Search:
    """One process's share of the search (see the module docstring), over module ``xp``."""

    def __init__(self, cm, comm, max_states, max_memory, progress, error_successors, xp,
                 batch) -> None:
        self.cm, self.comm, self.xp, self.batch = cm, comm, xp, batch
        self.handover = hand_over
        self.max_states, self.max_memory, self.progress = max_states, max_memory, progress
        self.error_successors = error_successors
        self.ns = NextStates(cm, error_successors=error_successors, xp=xp)
        self.W = self.ns.layout.n_words
        self.A = self.ns.n_actions
        self.visited = VisitedSet(self.W, key_bits=sum(self.ns.layout.bits), xp=xp)
        # Bits of a one-word key (its high bits are zero): a key and a rank relative to the
        # level travel as one word where both fit (see _packing).
        self.key_bits = sum(self.ns.layout.bits) if self.W == 1 else None
        # Who owns a key, the same for every level of the run: on the host one-word keys by
        # word_owners (two passes), else route.owner_of (the mix the device kernels compute).
        self.word_owners = self.W == 1 and not on_device(xp)
        # Per local id (the visited set's numbering) its global id: the first entries of a
        # buffer grown by doubling (a level appends; copying the whole map each level cost
        # each process its size times the depth). On the host with several processes int32
        # while the ids fit (widened past 2**31 - 1): the targets' answers read it as int32,
        # from a map of half the bytes, with no conversion.
        self.gid = xp.zeros(0, np.int32 if comm.size > 1 and not on_device(xp) else np.int64)
        self.gid_buf = self.gid
        # The states this process numbers and the rows it expands, level by level.
        self.kept = Kept(xp, self.ns.layout, states_dtype(cm), xp.asarray(self.ns.error_key),
                         self.ns.charge_table is not None)
        self.n = self.m = self.expanded = 0
        self.n_now = 1
        # Where each process's share of a level's sources starts, as fractions of the level
        # (the same on every process: updated from agreed counts, see _rebalanced).
        self.split = np.linspace(0.0, 1.0, comm.size + 1)
        self.pending_signal: int | None = None
        # An allocation failed (see _try): the search stops at the next agreement.
        self.oom = False
        self.seconds: dict[str, float] = {}
        self.phases = _Phases()
        # Bytes this process sent to others in the levels' exchanges (see _exchange).
        self.sent = 0
        # system sync: the steps numbered as one process numbers them.
        self.steps = StepNumbers()
        # On GPUs (P > 1): a level's states are unpacked on a side stream while its targets
        # travel back, and its rows are kept (sorted) there while the next level's keys
        # travel out (later_rows: the arguments of that Kept.add_rows, until then).
        self.side = SideWork(xp if comm.size > 1 else np)
        self.later_rows: tuple | None = None

    # ------------------------------------------------------------------ driver
    def run(self) -> StateGraph | None:
        t0 = _time.perf_counter()
        saved = _defer_signals(self)
        try:
            fkeys, fgid, ffirst = self._start()
            lo, hi, depth = 0, 1, -1
            while lo < hi:
                stop, fkeys, fgid, ffirst = self._level(fkeys, fgid, ffirst, lo, hi)
                lo, hi, depth = hi, self.n, depth + 1
                if self.progress is not None and self.comm.rank == 0:
                    self.progress(self.n, self.m, self.m / max(_time.perf_counter() - t0, 1e-9))
                if stop != _GO:
                    self._raise(stop, saved)
            if self.later_rows is not None:
                self._try(self.kept.add_rows, *self.later_rows)
                self.later_rows = None
            self.side.join()
            # An allocation that failed after the last level's agreement stops every
            # process here, before the hand-over (one int, agreed).
            if self.comm.allreduce(int(self.oom), "max"):
                self._raise(_OOM, saved)
            t1 = _time.perf_counter()
            self.seconds["search"] = t1 - t0
            self.seconds["sent"] = float(self.sent)
            self.seconds["phases"] = dict(self.phases.seconds)
            self.seconds["levels"] = [dict(lv) for lv in self.phases.levels]
            # From here on a failed allocation (joining the levels, the hand-over) is agreed
            # by every process at its next collective (runtime.guard): each raises
            # AgreedOutOfMemory with the search's counts.
            with agreed(self.comm, "handover",
                        known={"states": self.n, "transitions": self.m}) as comm:
                share = self._share(depth, comm)
                # The visited set, the id maps and the levels' buffers are let go (_share):
                # on a device their blocks go back from CuPy's pool, so that the hand-over's
                # arrays, of other sizes, find the memory whole.
                release_pool(self.xp)
                synchronize(self.xp)
                self.seconds["share"] = _time.perf_counter() - t1
                self.seconds["row_bytes"] = float(share.edge_bytes)
                graph = self.handover(share, comm, self.cm,
                                      charge_table=self.ns.charge_table,
                                      error_successors=self.error_successors,
                                      action_codes=self.steps.code_array() if self.ns.sync
                                      else None, t0=t0)
            self.seconds["gather"] = _time.perf_counter() - t1
            if self.pending_signal is not None:   # one came while the graph was gathered
                self._raise(_SIGNAL, saved)
        finally:
            _restore_signals(saved)
        return graph

    def _start(self):
        """The initial state, id 0: in the visited set of its key's owner, expanded (and
        recorded) by process 0, as every first id of a level's share is."""
        xp = self.xp
        key = xp.asarray(self.ns.initial_key)
        self.n = 1
        if self._owner(self.ns.initial_key) == self.comm.rank:
            self.visited.add(key)
            self.gid_buf, self.gid = _appended(xp, self.gid_buf, self.gid,
                                               xp.zeros(1, np.int64))
        if self.comm.rank != 0:
            self.kept.add_states(xp.zeros(0, np.int64), xp.zeros((0, self.W), _U),
                                 xp.zeros(0, np.int64), xp.zeros(0, np.int32))
            return xp.zeros((0, self.W), _U), xp.zeros(0, np.int64), 0
        fgid = xp.zeros(1, np.int64)
        self.kept.add_states(fgid, key, xp.asarray(np.array([-1])),
                             xp.asarray(np.array([-1], np.int32)))
        return key, fgid.copy(), 0

    def _level(self, fkeys, fgid, ffirst, lo, hi):
        """Expand one level (ids ``lo .. hi - 1``; this process's share ``fgid``, a run of
        consecutive ids from ``ffirst``): the new frontier (keys, ids, first id), and the
        agreed stop (``_GO`` to go on). Six collectives whatever P:
        the keys out (counts, then rows), the stop and every count of the level (one
        ``allreduce``), the smallest ranks out and their ids back, and the targets back."""
        comm, P, xp = self.comm, self.comm.size, self.xp
        status = _GO
        A = self.A
        self.phases.tick(None)
        if self.n * A >= 2**62:
            raise OverflowError(f"{self.n:,} states times {A:,} actions: ranks past 62 bits")
        got = self._try(self._expand, fkeys)
        # After a failed allocation this process goes on with no successors, so that the
        # others meet it in every collective; the stop is agreed at the level's end.
        local, act, keys, charges = got if got is not None else self._expand(fkeys[:0])
        src = local + ffirst   # (the frontier is a run of ids: no look-up)
        self.phases.tick("expand")
        if self.ns.sync:
            act = self.steps.number(comm, xp, self.ns.step_codes(), src, act)
            A = self.A = max(len(self.steps.codes), 1)
            if self.n * A >= 2**62:
                raise OverflowError(f"{self.n:,} states times {A:,} steps: ranks past 62 bits")
        rank = src * A + act
        pack = self._packing(lo, hi, A)
        if P > 1:
            if not self.word_owners:
                # Key and rank as one row of words, grouped by owner: one exchange.
                order, counts, send = routed(xp, keys, rank, P)
            else:
                order, counts = word_groups(keys[:, 0], P)
                if pack is not None:
                    # Key and rank in one word: half the bytes, one gather.
                    send = np.take(pack.pack(rank, keys), order)
                else:
                    send = xp.empty((keys.shape[0], 2), _U)
                    send[:, 0] = keys[order, 0]
                    send[:, 1] = rank[order].view(_U)
            if self.later_rows is not None:   # (the last level's, beside this exchange)
                self.side.run(self._try, self.kept.add_rows, *self.later_rows)
                self.later_rows = None
            self.phases.tick("route")
            recv, rcounts = self._exchange(send, counts)
            del send
            self.side.join()
            if pack is not None:
                rrank, rkeys = pack.unpack(recv)
            else:
                rkeys = recv[:, :self.W]
                rrank = xp.ascontiguousarray(recv[:, self.W]).view(np.int64)
            self.phases.tick("keys out")
        else:
            order, counts, rcounts = None, None, np.array([keys.shape[0]], np.int64)
            rkeys, rrank = keys, rank
        del keys, rank
        got = self._try(self.visited.add, rkeys, rrank)
        if got is None:   # (the level's results are dropped: it stops at its end)
            got = (None, xp.zeros(0, np.int64), xp.zeros((0, self.W), _U))
        ids, new_rank, new_keys = got
        del rkeys, rrank, got
        self.phases.tick("visited")
        # The stop and the counts, agreed by one allreduce (max), each process writing its
        # own places: the stop and the signal (where all write), its successors and expanded
        # states, and its row of the P x P matrix of step 3's routing counts, whose column
        # sums are the new states each process numbers (so that every process knows its
        # first id and the level's total, and step 3 needs no exchange of counts).
        status = max(status, self._local_stop())
        v = np.zeros(2 + 2 * P + P * P, np.int64)
        v[0], v[1] = status, self.pending_signal or 0
        v[2 + comm.rank], v[2 + P + comm.rank] = local.shape[0], fgid.shape[0]
        if P > 1:
            at = 2 + 2 * P + comm.rank * P
            v[at:at + P] = _share_counts(xp, new_rank, A, _share_bounds(lo, hi, self.split))
        else:
            v[2 + 2 * P] = new_rank.shape[0]
        self.phases.tick("route")
        v = comm.allreduce(v, "max")
        self.phases.tick("agree")
        route = v[2 + 2 * P:].reshape(P, P)
        per = route.sum(axis=0)
        if P > 1:
            self.split = _rebalanced(self.split, per)
        # 3. global ids of the new states: each smallest rank, with its key, to the process
        # owning its source's share of the level, sorted there (new_rank is sorted, so are
        # the destinations, and the ids come back in new_rank's order). That process
        # numbers a run of consecutive ids, records them and expands them in the next level:
        # so each process keeps one run of ids a level, of states and of rows, and the
        # hand-over copies runs (see handover.place_states).
        first = self.n + int(per[:comm.rank].sum())
        if P > 1:
            gsend, gcounts = route[comm.rank], route[:, comm.rank]
            if pack is not None:
                send = pack.pack(new_rank, new_keys)
            else:
                send = xp.empty((new_rank.shape[0], self.W + 1), _U)
                send[:, 0] = new_rank.view(_U)
                send[:, 1:] = new_keys
            del new_keys
            got, _ = self._exchange(send, gsend, gcounts)
            del send
            # P sorted runs, one per process: a stable sort merges them (NumPy's timsort
            # finds the runs; a device's radix sort takes them as they come). A packed word
            # sorts as its rank (the rank's bits above the key's; ranks are distinct).
            if pack is not None:
                mine = stable_argsort(xp, got)
            else:
                got_rank = xp.ascontiguousarray(got[:, 0]).view(np.int64)
                # On a device, the ranks less the level's first as 32 bits where they fit: a
                # radix sort of half the passes (the ranks are distinct: the order is the
                # same).
                if on_device(xp) and (hi - lo) * A < 2**32:
                    mine = stable_argsort(xp, (got_rank - lo * A).astype(np.uint32))
                else:
                    mine = stable_argsort(xp, got_rank)
            k = got.shape[0]
            numbered = xp.empty(k, np.int64)
            run_gid = first + xp.arange(k, dtype=np.int64)
            run_first = first
            numbered[mine] = run_gid
            if pack is not None:
                run_rank, run_keys = pack.unpack(got[mine])
            else:
                run_rank = got_rank[mine]
                run_keys = got[:, 1:][mine]
                del got_rank
            del got, mine
            new_gid, _ = self._exchange(numbered, gcounts, gsend)
            del numbered
        else:
            new_gid = self.n + xp.arange(new_rank.shape[0], dtype=np.int64)
            run_gid, run_rank, run_keys = new_gid, new_rank, new_keys
            run_first = self.n
        self.n_now = self.n + int(per.sum())
        if self.n_now >= 2**31 and self.gid.dtype != np.int64:
            self.gid_buf = self.gid_buf.astype(np.int64)
            self.gid = self.gid_buf[:self.gid.shape[0]]
        self.gid_buf, self.gid = _appended(xp, self.gid_buf, self.gid, new_gid)
        self.phases.tick("number")
        # (A failed allocation from here on is agreed at the next level's end, or before
        # the hand-over after the last level: the level's agreement is done.)
        self.side.run(self._keep_owned, run_gid, run_keys, run_rank, A)
        self.phases.tick("owned")
        # 4. every successor's id back to the process that expanded its source.
        if P > 1:
            # As int32 while the ids fit (half the bytes of the answer).
            if ids is None:
                tid = xp.zeros(int(rcounts.sum()), np.int32)
            else:
                tid = self.gid[ids]
                if self.n_now < 2**31:
                    tid = tid.astype(np.int32, copy=False)
            back, _ = self._exchange(tid, rcounts, counts)
            del tid
            target = xp.empty(back.shape[0], np.int64)
            target[order] = back
            del back, order
        else:
            target = self.gid[ids] if ids is not None else xp.zeros(local.shape[0], np.int64)
        del ids
        self.phases.tick("targets back")
        rows = (fgid, local, src - lo, act, target, charges, hi - lo, self.n_now, A)
        if self.side.stream is None:
            self._try(self.kept.add_rows, *rows)
        else:
            self.later_rows = rows
        self.phases.tick("rows")
        self.n = self.n_now
        self.m += int(v[2:2 + P].sum())
        self.expanded += int(v[2 + P:2 + 2 * P].sum())
        stop, signum = int(v[0]), int(v[1])
        if signum:
            self.pending_signal = self.pending_signal or signum
            stop = _SIGNAL
        if stop == _GO and self.max_states is not None and self.n > self.max_states:
            stop = _STATES
        # The new frontier: the run of ids this process numbered, in id order.
        return stop, run_keys, run_gid, run_first

    def _owner(self, key) -> int:
        """The process owning one key (``(1, W)``, on the host): as every level routes."""
        if self.word_owners:
            return int(word_owners(key[:, 0], self.comm.size)[0])
        return int(owner_of(key, self.comm.size)[0])

    def _packing(self, lo: int, hi: int, A: int):
        """How a successor's key and rank travel as one word in level ``lo .. hi - 1``
        (:class:`_Packed`), or None when they do not fit one (keys of several words, or a
        key's bits and the level's relative ranks past 64; on a device, where the routing
        kernels write the rows of key words and rank, :func:`.route.routed`). The same on
        every process: the level's bounds and ``A`` are agreed."""
        if self.key_bits is None or on_device(self.xp):
            return None
        rank_bits = bits((hi - lo) * A)
        if self.key_bits + rank_bits > 64:
            return None
        return _Packed(self.xp, self.key_bits, lo * A)

    def _keep_owned(self, run_gid, run_keys, run_rank, A: int) -> None:
        """The level's run of new states kept (:meth:`.kept.Kept.add_states`), their
        parents and parents' actions from their smallest ranks."""
        self._try(self.kept.add_states, run_gid, run_keys, run_rank // A,
                  (run_rank % A).astype(np.int32))

    def _exchange(self, a, counts, recv_counts=None):
        """:func:`~statespace.dist.handover.exchange` of an array of the search's module.
        Counts the bytes this process sends to others (``seconds['sent']`` once the levels
        are done)."""
        mine = int(counts[self.comm.rank]) if self.comm.size > 1 else int(a.shape[0])
        self.sent += (int(a.shape[0]) - mine) * (a.nbytes // max(int(a.shape[0]), 1))
        return exchange(self.comm, self.xp, a, counts, recv_counts)

    def _local_stop(self) -> int:
        if self.oom:
            return _OOM
        if self.max_memory is not None and current_rss() > self.max_memory:
            return _MEMORY
        return _GO

    def _try(self, fn, *args):
        """``fn(*args)``, or None when an allocation failed in it (the host's or the
        device's): recorded, for this level's or the next one's agreed stop. (Any other error
        goes on up.)"""
        try:
            return fn(*args)
        except Exception as exc:   # noqa: BLE001 - only a failed allocation
            if not (isinstance(exc, MemoryError) or is_out_of_memory(exc)):
                raise
        # (Out of the handler: the failed call's arrays, held by its frames, are freed.)
        self.oom = True
        return None

    def _expand(self, fkeys):
        """The successors of this process's frontier, a batch at a time: per successor its
        source's place in the frontier, action, key, and charges (None when constant)."""
        xp = self.xp
        parts = []
        for a in range(0, fkeys.shape[0], self.batch):
            s = self.ns.successors(fkeys[a:a + self.batch])
            # (Actions stay int32: ranks and keys widen them as they are computed.)
            parts.append((s.src + a if a else s.src, s.act, s.keys, s.charges))
        if not parts:
            ch = None if self.ns.charge_table is not None else \
                xp.zeros((0, len(self.cm.resources) + 1), np.int64)
            return (xp.zeros(0, np.int64), xp.zeros(0, np.int32), xp.zeros((0, self.W), _U),
                    ch)
        if len(parts) == 1:
            return parts[0]
        local = xp.concatenate([p[0] for p in parts])
        act = xp.concatenate([p[1] for p in parts])
        keys = xp.concatenate([p[2] for p in parts])
        charges = None if parts[0][3] is None else xp.concatenate([p[3] for p in parts])
        return local, act, keys, charges

    def _raise(self, stop: int, saved) -> None:
        counts = {"states": self.n, "transitions": self.m, "expanded": self.expanded}
        if stop == _SIGNAL:
            exc = _signal_stop(self.pending_signal, saved)
        elif stop == _STATES:
            exc = StateLimitExceeded(self.max_states, self.n)
        elif stop == _MEMORY:
            exc = MemoryLimitExceeded(self.max_memory, self.n)
        else:
            exc = OutOfMemory(self.max_memory, self.n)
        exc.counts = counts
        raise exc

    def _share(self, depth: int, comm: Comm) -> Share:
        """What this process found, for the hand-over: the visited set and the id map are
        let go first (the hand-over needs neither, and on a device their memory is what
        the gathered graph takes). ``comm``: the search's, guarded."""
        xp = self.xp
        self.visited = None
        self.gid = self.gid_buf = None
        release_pool(xp)   # (their blocks back from CuPy's pool before the rows are joined)
        return self.kept.share(comm, self.n, depth)


class _Packed:
    """A rank of the level and a one-word key as one uint64: the rank less the level's first
    (``base``, the level's first id times the actions) in the high bits, the key in the low
    ``key_bits``. Words sort as their ranks (ranks are distinct).

    >>> p = _Packed(np, 38, 1000)
    >>> w = p.pack(np.array([1003, 1000]), np.array([[5], [2**38 - 1]], np.uint64))
    >>> rank, keys = p.unpack(w)
    >>> rank.tolist(), keys.ravel().tolist() == [5, 2**38 - 1], bool(w[1] < w[0])
    ([1003, 1000], True, True)
    """

    def __init__(self, xp, key_bits: int, base: int) -> None:
        self.xp, self.base = xp, int(base)
        self.shift, self.mask = _U(key_bits), _U((1 << key_bits) - 1)

    def pack(self, rank, keys):
        """The words of ``rank`` (int64, at least ``base``) and ``keys`` (one word each)."""
        w = (rank - self.base).view(_U)
        w <<= self.shift
        w |= keys[:, 0]
        return w

    def unpack(self, w):
        """``(rank, keys)`` of words: int64 ranks, keys as ``(n, 1)`` uint64."""
        rank = (w >> self.shift).view(np.int64)
        rank += self.base
        return rank, (w & self.mask).reshape(-1, 1)


class _Phases:
    """(wall, CPU) seconds by phase of the levels, summed over the levels: :meth:`tick`
    adds the time since the last tick to a phase (``timings['phases']``), and its wall
    seconds to the current level's (``timings['levels']``)."""

    def __init__(self) -> None:
        self.seconds: dict[str, tuple[float, float]] = {}
        # Per level, its phases' wall seconds (``timings['levels']``).
        self.levels: list[dict[str, float]] = []
        self.last = (0.0, 0.0)

    def tick(self, phase: str | None) -> None:
        """The time since the last tick added to ``phase`` (None: the clock restarts, for
        a new level)."""
        now = (_time.perf_counter(), _time.process_time())
        if phase is None:
            self.levels.append({})
        else:
            was = self.seconds.get(phase, (0.0, 0.0))
            wall = now[0] - self.last[0]
            self.seconds[phase] = (was[0] + wall, was[1] + now[1] - self.last[1])
            level = self.levels[-1]
            level[phase] = level.get(phase, 0.0) + wall
        self.last = now


def _appended(xp, buf, cur, new):
    """``cur`` (the first entries of ``buf``) with ``new`` appended: ``(buf, view)``, the
    buffer grown by doubling when full (appending by concatenation copied it all each time).

    >>> buf, cur = _appended(np, np.zeros(0, np.int64), np.zeros(0, np.int64), np.arange(3))
    >>> buf, cur = _appended(np, buf, cur, np.arange(2))
    >>> cur.tolist(), buf.shape[0] >= 5
    ([0, 1, 2, 0, 1], True)
    """
    k, add = cur.shape[0], new.shape[0]
    if k + add > buf.shape[0]:
        grown = xp.empty(max(2 * buf.shape[0], k + add, 1024), cur.dtype)
        grown[:k] = cur
        buf = grown
    buf[k:k + add] = new
    return buf, buf[:k + add]


def _share_counts(xp, new_rank, A: int, bounds: list[int]) -> np.ndarray:
    """How many of a level's new states (their smallest ranks ``new_rank``, ascending) have
    their source in each process's share of the level (share ``q``: the sources
    ``bounds[q] .. bounds[q + 1] - 1``), on the host (int64). The ranks are sorted, so the
    counts are the distances between the shares' first ranks: ``P + 1`` searches, not a
    count of every rank.

    >>> _share_counts(np, np.array([0, 3, 5, 9, 10, 11]), 2, [0, 2, 4, 6]).tolist()
    [2, 1, 3]
    """
    first = np.array(bounds, np.int64) * A
    at = xp.searchsorted(new_rank, first if xp is np else xp.asarray(first))
    return np.diff(to_host(at)).astype(np.int64)


def _share_bounds(lo: int, hi: int, split) -> list[int]:
    """The first source of each process's share of a level's ids ``lo .. hi - 1``, then
    ``hi``: the fractions ``split`` (ascending, from 0 to 1) of the level, rounded down.
    Ascending whatever the fractions, so that lower sources go to lower processes.

    >>> _share_bounds(10, 16, [0.0, 0.5, 1.0]), _share_bounds(0, 7, [0.0, 0.3, 0.31, 1.0])
    ([10, 13, 16], [0, 2, 2, 7])
    """
    span = hi - lo
    inner = [lo + min(int(f * span), span) for f in split[1:-1]]
    return [lo] + inner + [hi]


def _rebalanced(split, per) -> np.ndarray:
    """The next level's share fractions, so that each process numbers (and then expands)
    about as many new states: the last level's new states per share (``per``) taken as
    spread evenly over its share, the fractions where their running sum crosses each
    ``q / P``, a fifth of the even split mixed in (no share shrinks to nothing). Ties go to
    the smallest rank, so equal shares give process 0 more (54 % of cs_10's states at
    P = 2). Computed from agreed counts: the same on every process.

    >>> _rebalanced(np.array([0.0, 0.5, 1.0]), np.array([60, 40])).round(3).tolist()
    [0.0, 0.433, 1.0]
    >>> _rebalanced(np.array([0.0, 0.5, 1.0]), np.array([0, 0])).tolist()
    [0.0, 0.5, 1.0]
    """
    P = per.shape[0]
    total = int(per.sum())
    if total == 0:
        return split
    done = np.concatenate([[0.0], np.cumsum(per) / total])
    # Fractions where each q / P of the new states is reached (done rises with the split).
    new = np.interp(np.linspace(0.0, 1.0, P + 1), done, split)
    new = 0.8 * new + 0.2 * np.linspace(0.0, 1.0, P + 1)
    new[0], new[-1] = 0.0, 1.0
    return new


def word_groups(words, size: int):
    """:func:`~statespace.dist.route.by_owner` of :func:`word_owners`: the order grouping
    one-word keys ``words`` by owner (stable) and how many each process owns. For two
    processes the owner is the hash's top bit, read as its sign: one pass fewer than the
    owners' shift, and one 1-byte mask negated where each owner took a comparison.

    >>> w = np.random.default_rng(5).integers(0, 2**63, 1000, dtype=np.uint64)
    >>> [all(np.array_equal(a, b) for a, b in zip(word_groups(w, p),
    ...                                           by_owner(np, word_owners(w, p), p)))
    ...  for p in (1, 2, 3, 4)]
    [True, True, True, True]
    """
    if size != 2:
        return by_owner(np, word_owners(words, size), size)
    with np.errstate(over="ignore"):
        high = (words * _GOLDEN).view(np.int64) < 0
    first, second = np.flatnonzero(~high), np.flatnonzero(high)
    return (np.concatenate([first, second]),
            np.array([first.shape[0], second.shape[0]], np.int64))


def word_owners(words, size: int):
    """The process owning each one-word key ``words`` (uint64, NumPy): the top bits of the
    key times an odd constant near 2**64 over the golden ratio (each depends on every bit of
    the key), reduced by a multiply and a shift when ``size`` is no power of two. Two passes
    where :func:`~statespace.dist.route.owner_of`'s mix takes six; any function serves as
    long as every process of a run uses the same one for every level.

    >>> keys = np.arange(3000, dtype=np.uint64)
    >>> [bool(np.bincount(word_owners(k, p), minlength=p).min() > 0.98 * 3000 / p)
    ...  for k in (keys, keys << np.uint64(40)) for p in (2, 3, 4)]
    [True, True, True, True, True, True]
    >>> word_owners(keys[:4], 1).tolist()
    [0, 0, 0, 0]
    """
    if size == 1:
        return np.zeros(words.shape[0], np.int64)
    with np.errstate(over="ignore"):
        h = words * _GOLDEN
    if size & (size - 1) == 0:
        h >>= _U(64 - (size - 1).bit_length())
    else:
        h >>= _U(32)
        h *= _U(size)   # (below 2**32 times size: no wrap)
        h >>= _U(32)
    return h.view(np.int64)


# ---------------------------------------------------------------------- signals
#: Signals a distributed search defers to the end of a level (see the module docstring).
_DEFERRED = ("SIGINT", "SIGTERM", "SIGALRM")


def _defer_signals(search: _Search) -> dict:
    """Record SIGINT, SIGTERM and SIGALRM (the ``--timeout`` clock) instead of acting on
    them; the handlers replaced, to act through them at the level's end."""
    saved: dict = {}

    def record(signum, frame):
        if search.pending_signal is None:
            search.pending_signal = signum

    try:
        for name in _DEFERRED:
            num = getattr(signal, name)
            saved[num] = signal.signal(num, record)
    except ValueError:   # not the main thread: signals stay as they were
        _restore_signals(saved)
        return {}
    return saved


def _restore_signals(saved: dict) -> None:
    for num, handler in saved.items():
        signal.signal(num, handler)


def _signal_stop(signum: int, saved: dict) -> RunStopped:
    """The stop the replaced handler of ``signum`` raises (the command's Interrupted or
    time limit), or an :class:`~dve.errors.Interrupted` when it raises none."""
    handler = saved.get(signum)
    if callable(handler):
        try:
            handler(signum, None)
        except RunStopped as exc:
            return exc
        except KeyboardInterrupt:
            pass
    return Interrupted(signum, signal.Signals(signum).name)
