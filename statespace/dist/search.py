"""Level-synchronous breadth-first search over several processes, with the one-process ids.

Every state is owned by one process, ``owner_of(key) = mix(key) mod P``. Level by level:

1. each process expands the states of the level it owns (its frontier, in id order) and
   gives every successor its *rank*, ``source id * A + action`` (``A`` actions; for ``system
   sync`` the step ids, numbered as one process numbers them, see :meth:`_Search._number_steps`):
   unique per successor, and the order in which the one-process search discovers them;
2. each successor's key and rank go to the key's owner (one ``alltoallv``), which looks the
   keys up in its own visited set: a key first seen in this level is new, with the smallest
   rank of its occurrences;
3. the new states are numbered exactly as one process numbers them. The one-process explorer
   gives new states the next ids in order of their smallest rank (expanding states in id order
   and numbering by first (source, action) occurrence is FIFO breadth-first search, whatever
   its chunks), so the ids of level ``L + 1`` are ``n`` (the states before it) plus the
   position of each new state's smallest rank among all of the level's. Each rank goes to the
   process owning its source's share of the level's id range (ranks of lower sources to lower
   processes), which sorts what it received; the counts (the matrix of who sends how many
   ranks to whom, in the level's one ``allreduce``, which also agrees the stop) give its first
   id, and the ids go back the way the ranks came;
4. the owners send each successor's id back to the process that expanded its source, which
   sorts its edges by (source, target, action): the CSR rows stay with their source's owner.

Stops are agreed: a state or memory limit, a signal or the ``--timeout`` clock (recorded, not
raised, while the search runs) and an allocation failure are shared by the level's
``allreduce`` (once its successors are looked up) and acted on at the level's end, so that
every process stops at the same level with the same counts (no process is left waiting in a
collective). At the end the graph is gathered to process 0, where
it is assembled exactly as one process assembles it (the cycle engine runs there).
"""

from __future__ import annotations

import signal
import time as _time
from collections.abc import Callable

import numpy as np

from runtime.comm import Comm
from runtime.errors import (Interrupted, MemoryLimitExceeded, OutOfMemory, RunStopped,
                            StateLimitExceeded)
from runtime.device import to_host
from runtime.memory import current_rss

from ..explore import as_compiled
from ..graph import Palette, StateGraph, charge_dtype, derived, lazy_graph
from ..quotient import Quotient
from ..symmetry import Symmetry
from ..store import VisitedSet
from ..model import states_dtype
from .successors import NextStates

__all__ = ["explore_distributed", "distributed_quotient", "owner_of"]

_U = np.uint64
#: States expanded per call of the successor function (bounds its temporaries).
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


def owner_of(keys: np.ndarray, size: int) -> np.ndarray:
    """The process owning each packed key (rows of uint64 words): a 64-bit mix of the words
    modulo ``size``, so that owners are balanced whatever the keys' structure.

    >>> import numpy as np
    >>> keys = np.arange(1000, dtype=np.uint64).reshape(-1, 1)
    >>> counts = np.bincount(owner_of(keys, 4), minlength=4)
    >>> int(counts.sum()), bool(counts.min() > 200)
    (1000, True)
    """
    h = np.zeros(keys.shape[0], _U)
    with np.errstate(over="ignore"):
        for w in range(keys.shape[1]):
            x = keys[:, w] ^ h
            x = x * _U(0xBF58476D1CE4E5B9)
            x ^= x >> _U(31)
            x = x * _U(0x94D049BB133111EB)
            x ^= x >> _U(29)
            h = x
    return (h % _U(size)).astype(np.int64)


def explore_distributed(model, comm: Comm, *, property: bool = True,
                        max_states: int | None = None, max_memory: int | None = None,
                        progress: Callable[[int, int, float], None] | None = None,
                        error_successors: bool = False,
                        timings: dict | None = None) -> StateGraph | None:
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
        over the processes) and ``gather`` (the graph to process 0 and assembled there); and
        ``sent``, the bytes it sent to other processes during the levels.

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
    search = _Search(cm, comm, max_states, max_memory, progress, error_successors)
    graph = search.run()
    if timings is not None:
        timings.update(search.seconds)
    return graph


class _Search:
    """One process's share of the search (see the module docstring)."""

    def __init__(self, cm, comm, max_states, max_memory, progress, error_successors) -> None:
        self.cm, self.comm = cm, comm
        self.max_states, self.max_memory, self.progress = max_states, max_memory, progress
        self.error_successors = error_successors
        self.ns = NextStates(cm, error_successors=error_successors)
        self.W = self.ns.layout.n_words
        self.A = self.ns.n_actions
        self.visited = VisitedSet(self.W, key_bits=sum(self.ns.layout.bits))
        # Per local id (the visited set's numbering) its global id.
        self.gid = np.zeros(0, np.int64)
        # Owned states by level: ids, states, parents and parent actions (see _owned).
        self.own: list[tuple] = []
        # Expanded states by level: their ids, out-degrees, and their edges in CSR order
        # (target id, action, charges or None).
        self.rows: list[tuple] = []
        self.n = self.m = self.expanded = 0
        self.n_now = 1
        self.error_gid = -1
        self.sdtype = states_dtype(cm)
        self.pending_signal: int | None = None
        self.seconds: dict[str, float] = {}
        # Bytes this process sent to others in the levels' exchanges (see _exchange).
        self.sent = 0
        # system sync: the step codes by global id, their ids, and this process's step ids
        # mapped to the global ones (-1: not yet).
        self.codes: list[int] = []
        self.code_id: dict[int, int] = {}
        self.to_global = np.zeros(0, np.int64)

    # ------------------------------------------------------------------ driver
    def run(self) -> StateGraph | None:
        t0 = _time.perf_counter()
        saved = _defer_signals(self)
        try:
            fkeys, fgid = self._start()
            lo, hi, depth = 0, 1, -1
            while lo < hi:
                stop, fkeys, fgid = self._level(fkeys, fgid, lo, hi)
                lo, hi, depth = hi, self.n, depth + 1
                if self.progress is not None and self.comm.rank == 0:
                    self.progress(self.n, self.m, self.m / max(_time.perf_counter() - t0, 1e-9))
                if stop != _GO:
                    self._raise(stop, saved)
            t1 = _time.perf_counter()
            self.seconds["search"] = t1 - t0
            self.seconds["sent"] = float(self.sent)
            graph = self._gather(t0, depth)
            self.seconds["gather"] = _time.perf_counter() - t1
            if self.pending_signal is not None:   # one came while the graph was gathered
                self._raise(_SIGNAL, saved)
        finally:
            _restore_signals(saved)
        return graph

    def _start(self):
        key = self.ns.initial_key
        self.n = 1
        if owner_of(key, self.comm.size)[0] != self.comm.rank:
            self.own.append(self._owned(np.zeros(0, np.int64), np.zeros((0, self.W), _U),
                                        np.zeros(0, np.int64), np.zeros(0, np.int32)))
            return np.zeros((0, self.W), _U), np.zeros(0, np.int64)
        self.visited.add(key)
        self.gid = np.zeros(1, np.int64)
        self.own.append(self._owned(self.gid.copy(), key, np.array([-1], np.int64),
                                    np.array([-1], np.int32)))
        return key, self.gid.copy()

    def _owned(self, ids, keys, parent, parent_action):
        """A level's owned states as gathered: ids, states (unpacked here, in parallel),
        parent and parent action."""
        states = np.ascontiguousarray(self.ns.layout.unpack(keys, np).T).astype(self.sdtype)
        err = np.flatnonzero((keys == self.ns.error_key[0]).all(axis=1))
        if err.shape[0]:
            self.error_gid = int(ids[err[0]])
        return ids, states, parent, parent_action

    def _level(self, fkeys, fgid, lo, hi):
        """Expand one level (ids ``lo .. hi - 1``; this process's share ``fgid``): the new
        frontier, and the agreed stop (``_GO`` to go on). Six collectives whatever P:
        the keys out (counts, then rows), the stop and every count of the level (one
        ``allreduce``), the smallest ranks out and their ids back, and the targets back."""
        comm, P = self.comm, self.comm.size
        status = _GO
        A = self.A
        if self.n * A >= 2**62:
            raise OverflowError(f"{self.n:,} states times {A:,} actions: ranks past 62 bits")
        try:
            local, act, keys, charges = self._expand(fkeys)
        except MemoryError:
            # This process goes on with no successors, so that the others meet it in every
            # collective; the stop is agreed at the level's end.
            status = _OOM
            local, act, keys, charges = self._expand(fkeys[:0])
        src = fgid[local]
        if self.ns.sync:
            act = self._number_steps(src, act)
            A = self.A = max(len(self.codes), 1)
            if self.n * A >= 2**62:
                raise OverflowError(f"{self.n:,} states times {A:,} steps: ranks past 62 bits")
        rank = src * A + act
        if P > 1:
            owner = owner_of(keys, P)
            # A stable sort of small integers is a radix sort: linear.
            order = np.argsort(owner.astype(np.int16), kind="stable")
            counts = np.bincount(owner, minlength=P)
            del owner
            # Key and rank as one row of words: one exchange.
            send = np.empty((keys.shape[0], self.W + 1), _U)
            send[:, :self.W] = keys[order]
            send[:, self.W] = rank[order].view(_U)
            recv, rcounts = self._exchange(send, counts)
            del send
            rkeys = recv[:, :self.W]
            rrank = np.ascontiguousarray(recv[:, self.W]).view(np.int64)
        else:
            order, counts, rcounts = None, None, np.array([keys.shape[0]], np.int64)
            rkeys, rrank = keys, rank
        del keys, rank
        ids, new_rank, new_keys = self.visited.add(rkeys, rrank)
        del rkeys, rrank
        # The stop and the counts, agreed by one allreduce (max), each process writing its
        # own places: the stop and the signal (where all write), its successors and expanded
        # states, and its row of the P x P matrix of step 3's routing counts, whose column
        # sums are the new states each process numbers (so that every process knows its
        # first id and the level's total, and step 3 needs no exchange of counts).
        status = max(status, self._local_stop())
        dest = ((new_rank // A - lo) * P) // (hi - lo) if P > 1 else None
        v = np.zeros(2 + 2 * P + P * P, np.int64)
        v[0], v[1] = status, self.pending_signal or 0
        v[2 + comm.rank], v[2 + P + comm.rank] = local.shape[0], fgid.shape[0]
        if P > 1:
            at = 2 + 2 * P + comm.rank * P
            v[at:at + P] = np.bincount(dest, minlength=P)
        else:
            v[2 + 2 * P] = new_rank.shape[0]
        v = comm.allreduce(v, "max")
        route = v[2 + 2 * P:].reshape(P, P)
        per = route.sum(axis=0)
        # 3. global ids of the new states: each smallest rank to the process owning its
        # source's share of the level, sorted there (new_rank is sorted, so are the
        # destinations, and the ids come back in new_rank's order).
        if P > 1:
            gsend, gcounts = route[comm.rank], route[:, comm.rank]
            got, _ = self._exchange(new_rank, gsend, gcounts)
            mine = np.argsort(got)
            first = self.n + int(per[:comm.rank].sum())
            numbered = np.empty(got.shape[0], np.int64)
            numbered[mine] = first + np.arange(got.shape[0], dtype=np.int64)
            new_gid, _ = self._exchange(numbered, gcounts, gsend)
        else:
            new_gid = self.n + np.arange(new_rank.shape[0], dtype=np.int64)
        self.n_now = self.n + int(per.sum())
        self.gid = np.concatenate([self.gid, new_gid])
        # 4. every successor's id back to the process that expanded its source.
        if P > 1:
            # As int32 while the ids fit (half the bytes of the answer).
            tid = self.gid[ids].astype(np.int32) if self.n_now < 2**31 else self.gid[ids]
            back, _ = self._exchange(tid, rcounts, counts)
            del tid
            target = np.empty(back.shape[0], np.int64)
            target[order] = back
            del back
        else:
            target = self.gid[ids]
        del ids
        self._keep_rows(fgid, local, src - lo, act, target, charges, hi - lo)
        self.own.append(self._owned(new_gid, new_keys, new_rank // A,
                                    (new_rank % A).astype(np.int32)))
        self.n = self.n_now
        self.m += int(v[2:2 + P].sum())
        self.expanded += int(v[2 + P:2 + 2 * P].sum())
        stop, signum = int(v[0]), int(v[1])
        if signum:
            self.pending_signal = self.pending_signal or signum
            stop = _SIGNAL
        if stop == _GO and self.max_states is not None and self.n > self.max_states:
            stop = _STATES
        # The new frontier in id order (new_gid ascends: ids follow the smallest ranks).
        return stop, new_keys, new_gid

    def _exchange(self, a, counts, recv_counts=None):
        """``comm.alltoallv`` of a host array: through the device where the communicator is
        NCCL's (its arrays are CuPy's), the answer back on the host. Counts the bytes this
        process sends to others (``seconds['sent']`` once the levels are done)."""
        mine = int(counts[self.comm.rank]) if self.comm.size > 1 else int(a.shape[0])
        self.sent += (int(a.shape[0]) - mine) * (a.nbytes // max(int(a.shape[0]), 1))
        if self.comm.xp is np:
            return self.comm.alltoallv(a, counts, recv_counts)
        got, rcounts = self.comm.alltoallv(self.comm.xp.asarray(a), counts, recv_counts)
        return to_host(got), rcounts

    def _number_steps(self, src, act):
        """``system sync``: global step ids for this level's steps (one ``allgather``). The
        one-process explorer numbers a new step code when first met, and meets steps in
        (source, code) order: so this level's new codes take the next ids in the order of
        (smallest source id among their steps, code), whichever process met them."""
        codes = self.ns.step_codes()
        grown = np.full(len(codes), -1, np.int64)
        grown[:self.to_global.shape[0]] = self.to_global
        self.to_global = grown
        proposals = []
        if act.shape[0]:
            order = np.lexsort((src, act))
            a_sorted = act[order]
            first = np.flatnonzero(np.r_[True, a_sorted[1:] != a_sorted[:-1]])
            for i, s in zip(a_sorted[first].tolist(), src[order][first].tolist()):
                if self.to_global[i] < 0 and codes[i] not in self.code_id:
                    proposals.append((codes[i], s))
        best: dict[int, int] = {}
        for part in self.comm.allgather(proposals):
            for code, s in part:
                best[code] = min(s, best.get(code, s))
        for code, _ in sorted(best.items(), key=lambda kv: (kv[1], kv[0])):
            self.code_id[code] = len(self.codes)
            self.codes.append(code)
        unknown = np.flatnonzero(self.to_global < 0)
        for i in unknown.tolist():
            if codes[i] in self.code_id:
                self.to_global[i] = self.code_id[codes[i]]
        return self.to_global[act]

    def _local_stop(self) -> int:
        if self.max_memory is not None and current_rss() > self.max_memory:
            return _MEMORY
        return _GO

    def _expand(self, fkeys):
        """The successors of this process's frontier, a batch at a time: per successor its
        source's place in the frontier, action, key, and charges (None when constant)."""
        parts = []
        for a in range(0, fkeys.shape[0], BATCH):
            s = self.ns.successors(fkeys[a:a + BATCH])
            parts.append((s.src + a, s.act.astype(np.int64), s.keys, s.charges))
        if not parts:
            e = np.zeros(0, np.int64)
            ch = None if self.ns.charge_table is not None else \
                np.zeros((0, len(self.cm.resources) + 1), np.int64)
            return e, e, np.zeros((0, self.W), _U), ch
        if len(parts) == 1:
            return parts[0]
        local = np.concatenate([p[0] for p in parts])
        act = np.concatenate([p[1] for p in parts])
        keys = np.concatenate([p[2] for p in parts])
        charges = None if parts[0][3] is None else np.concatenate([p[3] for p in parts])
        return local, act, keys, charges

    def _keep_rows(self, fgid, local, rel, act, target, charges, span) -> None:
        """The level's edges in CSR order: by (source, target, action), a unique key, sorted
        as one int64 where it fits (``rel``: the sources' ids less the level's first)."""
        deg = np.bincount(local, minlength=fgid.shape[0]) if local.shape[0] else \
            np.zeros(fgid.shape[0], np.int64)
        n, A = self.n_now, self.A
        tdt = np.int32 if n < 2**31 else np.int64
        if span * n * A < 2**62:
            key = (rel * n + target) * A + act
            if charges is None:
                key.sort()
                tgt, a = (key // A) % n, key % A
            else:
                order = np.argsort(key)
                tgt, a, charges = target[order], act[order], charges[order]
        else:
            order = np.lexsort((act, target, rel))
            tgt, a = target[order], act[order]
            charges = None if charges is None else charges[order]
        self.rows.append((fgid, deg, tgt.astype(tdt), a.astype(np.int32), charges))

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

    # ------------------------------------------------------------------ the graph
    def _gather(self, t0: float, depth: int) -> StateGraph | None:
        """Everything to process 0, assembled there as :func:`build_state_graph` does.

        With several processes, each sends process 0 its states and CSR rows with their ids
        (one exchange per array, the counts exchanged once), and process 0 puts them in id
        order (:func:`_place_states`, :func:`_place_rows`): each array crosses once. (Placing
        the shares in parallel first, then concatenating at process 0, crossed every array
        twice and cost more than process 0's placing saved.)"""
        comm = self.comm
        error_id = int(comm.allreduce(self.error_gid, "max"))
        own_ids = _join([o[0] for o in self.own])
        own = [_join([o[j] for o in self.own]) for j in range(1, 4)]
        rows = [_join([r[j] for r in self.rows]) for j in range(4)]
        charges = None if self.ns.charge_table is not None else \
            _join([r[4] for r in self.rows])
        self.own = self.rows = []
        if comm.size == 1:   # one process: its states and rows are in id order already
            states, parent, par_action = own
            deg, tgt, act = rows[1:]
        else:
            to0 = np.zeros(comm.size, np.int64)

            def gather(a, known=None):
                to0[0] = a.shape[0]
                return self._exchange(a, to0, known)

            ids, n_own = gather(own_ids)
            states, parent, par_action = (_place_states(gather(a, n_own)[0], ids, self.n)
                                          for a in own)
            del ids
            rid, n_rows = gather(rows[0])
            rdeg = gather(rows[1], n_rows)[0]
            edges = [rows[2], rows[3]] + ([] if charges is None else [charges])
            del rows
            got, n_edges = gather(edges[0])
            got = [got] + [gather(a, n_edges)[0] for a in edges[1:]]
            del edges
            placed = _place_rows(rid, rdeg, self.n, got)
            del got
            deg, tgt, act = placed[0], placed[1], placed[2]
            charges = placed[3] if charges is not None else None
        if comm.rank != 0:
            return None
        return self._assemble(states, parent, par_action, deg, tgt, act, charges, error_id,
                              t0, depth)

    def _assemble(self, states, parent, par_action, deg, tgt, act, charges, error_id, t0,
                  depth):
        cm, n = self.cm, self.n
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(deg, out=indptr[1:])
        idx_dtype = np.int32 if n < 2**31 else np.int64
        indices = tgt.astype(idx_dtype, copy=False)
        action = act.astype(np.int32, copy=False)
        palette, charge = self._palette(action, indices, error_id, charges)
        dead = np.flatnonzero(deg == 0)
        if error_id >= 0:
            dead = dead[dead != error_id]
        big = {"indices": indices, "action": action, "charge": charge,
               "costs": derived(), "time": derived(), "states": states,
               "parent": parent, "parent_action": par_action}
        return lazy_graph(big, indptr=indptr, deadlocks=dead.astype(np.int64),
                          error_state=error_id, depth=depth, complete=True,
                          error_successors=self.error_successors,
                          action_codes=_code_array(self.codes) if self.ns.sync else None,
                          n_expanded=n, model=cm, name=cm.name,
                          seconds=_time.perf_counter() - t0, on_device=None, palette=palette)

    def _palette(self, action, indices, error_id, charges):
        """The graph's palette and per-edge rows, as the one-process explorer numbers them:
        with constant charges the actions' rows and the row of zeros, sorted; otherwise the
        distinct rows met, sorted. Edges into the error state charge zeros."""
        res = self.cm.resources
        k = len(res)
        into_err = indices == error_id if error_id >= 0 else np.zeros(indices.shape[0], bool)
        if self.ns.charge_table is not None:
            ct, tt = self.ns.charge_table
            per_action = [tuple(int(v) for v in ct[:, a]) + (int(tt[a]),)
                          for a in range(tt.shape[0])]
            zero = (0,) * (k + 1)
            rows = sorted(set(per_action) | {zero})
            number = {r: j for j, r in enumerate(rows)}
            act_row = np.array([number[r] for r in per_action], charge_dtype(len(rows)))
            charge = act_row[action]
            charge[into_err] = number[zero]
            table = np.array(rows, np.int64).reshape(len(rows), k + 1)
        else:
            charges = charges.copy()
            charges[into_err] = 0
            if charges.shape[0]:
                table, inv = np.unique(charges, axis=0, return_inverse=True)
                # Rows in Python's tuple order (lexicographic on the signed values).
                order = sorted(range(table.shape[0]), key=lambda j: tuple(table[j].tolist()))
                remap = np.empty(table.shape[0], np.int64)
                remap[order] = np.arange(table.shape[0])
                table = table[order]
                charge = remap[inv.reshape(-1)].astype(charge_dtype(table.shape[0]))
            else:
                table = np.zeros((0, k + 1), np.int64)
                charge = np.zeros(0, np.uint8)
        palette = Palette({r: np.ascontiguousarray(table[:, j]) for j, r in enumerate(res)},
                          np.ascontiguousarray(table[:, k]))
        return palette, charge


def _place_states(got: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """Rows ``got`` of the states with ids ``ids`` (every id of ``0 .. n - 1`` once, on
    process 0; none elsewhere) in id order.

    >>> import numpy as np
    >>> _place_states(np.array([[30], [10], [20]]), np.array([2, 0, 1]), 3).ravel().tolist()
    [10, 20, 30]
    """
    if ids.shape[0] == 0:
        return got
    out = np.empty((n,) + got.shape[1:], got.dtype)
    out[ids] = got
    return out


def _place_rows(rid: np.ndarray, deg: np.ndarray, n: int, edges: list) -> list:
    """CSR rows received as whole rows (sources ``rid`` with out-degrees ``deg``, each row's
    edges together and in order in every array of ``edges``) in id order: the out-degree of
    each of ``0 .. n - 1`` and each array of ``edges`` in CSR order. Elsewhere than process 0
    (nothing received) the arrays as they are.

    >>> import numpy as np
    >>> deg, tgt = _place_rows(np.array([1, 0]), np.array([1, 2]), 2,
    ...                        [np.array([7, 8, 9])])
    >>> deg.tolist(), tgt.tolist()
    ([2, 1], [8, 9, 7])
    """
    if rid.shape[0] == 0:
        return [deg] + list(edges)
    out_deg = np.zeros(n, np.int64)
    out_deg[rid] = deg
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(out_deg, out=ptr[1:])
    start = np.zeros(deg.shape[0], np.int64)
    np.cumsum(deg[:-1], out=start[1:])
    # Edge j of the received order goes to its row's first place plus its offset in the row.
    spot = np.repeat(ptr[rid] - start, deg)
    spot += np.arange(spot.shape[0], dtype=np.int64)
    placed = [out_deg]
    for a in edges:
        d = np.empty_like(a)
        d[spot] = a
        placed.append(d)
    return placed


def _join(parts: list) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _code_array(codes: list[int]) -> np.ndarray:
    """A graph's ``action_codes``: int64 while every code fits, else Python integers (as the
    one-process explorer gives them)."""
    if all(c < 2**63 for c in codes):
        return np.array(codes, np.int64)
    return np.array(codes, dtype=object)


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
