"""The breadth-first search: chunks of states expanded in id order, successors numbered.

:class:`BreadthFirstSearch` takes any next-state generator (:mod:`statespace.next_state`) and
expands the states it finds in id order, ``chunk_size`` at a time. The successors of a chunk
are ranked by (source, action), numbered exactly against the visited set
(:class:`~statespace.store.VisitedSet`: new states get the next ids in order of first
occurrence: this is where a state is numbered), and their edges sorted by (target, action)
within each source. Expanding states in id order while numbering new states by first (source,
action) occurrence *is* breadth-first search with a FIFO queue, so the numbering does not
depend on the chunk size: two searches of one model give identical arrays.

Around the loop: the limits (states, memory: a stop keeps the graph up to the last chunk
boundary), progress, and the device placement (:mod:`statespace.search.placement`). The
search never looks inside a step: it only asks the generator for successors.
"""

from __future__ import annotations

import time as _time
from collections.abc import Callable

import numpy as np

from runtime.arrays import any_true, count_values, lexsort, on_device
from runtime.device import to_host
from runtime.errors import (MemoryLimitExceeded, OutOfMemory, RunStopped, StateLimitExceeded,
                            StepLimitExceeded)
from runtime.memory import current_rss, peak_rss

from ..graph import StateGraph
from ..model import states_dtype
from ..store import VisitedSet
from .builder import GraphBuilder, trim
from .placement import Placement, out_of_device_memory

__all__ = ["BreadthFirstSearch", "DEVICE_CHUNK", "HOST_CHUNK"]

#: States expanded per batch on the host: the arrays of a batch stay within the caches' reach
#: and memory grows in small steps.
HOST_CHUNK = 1 << 17
#: States expanded per batch on a GPU: each array operation is a kernel launch (microseconds
#: whatever its size), so a batch must hold millions of successors to keep the device busy.
DEVICE_CHUNK = 1 << 21


class BreadthFirstSearch:
    """The breadth-first search of one generator's state space (see the module docstring).

    Parameters
    ----------
    gen : generator
        A next-state generator (:mod:`statespace.next_state`) on NumPy; the search takes its
        other modules' views with ``gen.at(xp)``.
    xp : module
        NumPy, or a device module (CuPy): the search starts on the host and moves to the
        device at the first large chunk (:class:`~statespace.search.placement.Placement`).
    chunk_size, max_states, max_memory, progress, error_successors, on_device_full
        As for :func:`statespace.build_state_graph`.

    Examples
    --------
    >>> from dve import load_model
    >>> from statespace import compile_model
    >>> from statespace.next_state import generator_for
    >>> gen = generator_for(compile_model(load_model(
    ...     "byte x; process P { state a; init a; trans a -> a { guard x < 3; "
    ...     "effect x = x + 1; }; } system async;")))
    >>> g = BreadthFirstSearch(gen).run()
    >>> g.n_states, g.n_edges, g.states[:, 1].tolist()
    (4, 3, [0, 1, 2, 3])
    """

    def __init__(self, gen, xp=np, chunk_size: int | None = None,
                 max_states: int | None = None, max_memory: int | None = None,
                 progress: Callable[[int, int, float], None] | None = None,
                 error_successors: bool = False, *, on_device_full: str = "host") -> None:
        cm = gen.cm
        self.placement = Placement(xp if on_device(xp) else None, on_device_full)
        if chunk_size is None:
            chunk_size = DEVICE_CHUNK if on_device(xp) else HOST_CHUNK
        # The search starts on the host (see Placement.should_move).
        self.cm, self.gen, self.xp = cm, gen, np
        self.error_successors = error_successors
        self.chunk_size = max(1, int(chunk_size))
        self.max_states, self.max_memory, self.progress = max_states, max_memory, progress
        self.layout = gen.layout
        self.W = self.layout.n_words
        self.visited = VisitedSet(self.W, key_bits=sum(self.layout.bits), xp=np)
        self.res = cm.resources
        self.sdtype = states_dtype(cm)
        self.init_key = gen.initial_key()
        self.err_key = gen.error_key()
        # The control state of process 0 that marks the error state, hidden from the
        # generator (X[0] == -1: no steps); -1 when the error state is expanded like any
        # other (legacy BEEM counting) or the generator leaves it alone itself.
        self.err_pc = (cm.error_state[0] if cm.slots and not error_successors
                       and gen.hides_error else -1)
        self.builder = GraphBuilder(cm, gen, self.sdtype, error_successors)
        self.chunk_peak = 0

    # ------------------------------------------------------------------ driver
    def run(self) -> StateGraph:
        """Search to the end (or a limit) and assemble the graph.

        Raises
        ------
        runtime.errors.ExplorationLimit
            A limit or a stop, with the graph up to the last chunk boundary (``partial``).
        """
        t0 = _time.perf_counter()
        self.t0 = t0
        self.n_expanded = 0
        b = self.builder
        # What a partial graph may contain: the counts at the last chunk boundary. A stop in
        # the middle of a chunk (a signal, the timeout, an allocation failure) only appended
        # to the output lists since then, so cutting them back to these counts is consistent.
        self.mark = (0, 0, 0)
        try:
            self.visited.add(self.init_key)
            b.record_new(self.init_key, np.array([-1], np.int64), np.array([-1], np.int32),
                         np.array([0], np.int32))
            last_progress = t0
            while self.n_expanded < self.visited.n:
                self.mark = (self.visited.n, b.n_edges, self.n_expanded)
                if self.max_memory is not None and self.memory_needed() > self.max_memory:
                    raise MemoryLimitExceeded(self.max_memory, self.visited.n,
                                              partial=self.partial())
                k = min(self.chunk_size, self.visited.n - self.n_expanded)
                if self.placement.should_move(self, k):
                    self.placement.move(self)
                elif on_device(self.xp):
                    self.placement.fits(self, False)
                if on_device(self.xp):
                    self.chunk_on_device(k)
                else:
                    self.chunk(k)
                self.n_expanded += k
                now = _time.perf_counter()
                if self.progress is not None and now - last_progress > 0.2:
                    last_progress = now
                    self.progress(self.visited.n, b.n_edges,
                                  b.n_edges / max(now - t0, 1e-9))
                if self.max_states is not None and self.visited.n > self.max_states:
                    self.mark = (self.visited.n, b.n_edges, self.n_expanded)
                    raise StateLimitExceeded(self.max_states, self.visited.n,
                                             partial=self.partial())
            # Every state is expanded: a stop while the graph is assembled keeps all of it.
            self.mark = (b.n_recorded, b.n_edges, self.n_expanded)
            return b.finish(self.mark + (True,), t0)
        except RunStopped as exc:
            if exc.partial is None:
                exc.partial = self.partial()
                exc.counts = self.counts_of(exc.partial)
            raise
        except StepLimitExceeded as exc:
            exc.n_explored = self.mark[0]
            exc.partial = self.partial()
            raise
        except MemoryError:
            part = self.partial()
            exc = OutOfMemory(self.max_memory, self.mark[0], partial=part)
            exc.counts = self.counts_of(part)
            raise exc from None

    def chunk(self, k: int) -> None:
        """Expand the next ``k`` pending states (the run loop's step)."""
        keys, X = self.builder.take_pending(k)
        rss0 = current_rss() if self.max_memory is not None else 0
        self.expand(keys, X, self.n_expanded)
        if self.max_memory is not None:
            # The chunk's temporaries: the growth of the peak over the RSS it
            # started from (the peak only tells when it was exceeded).
            self.chunk_peak = max(self.chunk_peak, peak_rss() - rss0)

    def chunk_on_device(self, k: int) -> None:
        """:meth:`chunk` on the device. A failed device allocation leaves the chunk half
        done: back to the boundary, and the chunk again on the host (or a clean stop)."""
        snap = self.snapshot()
        if out_of_device_memory(self.chunk, k):
            self.restore(snap)
            del snap
            self.placement.full(self, "an allocation on the GPU failed")
            self.chunk(k)
        # Otherwise the snapshot goes now: its lists hold every piece of the outputs, and
        # kept past the last chunk they would keep each piece alive while the graph is
        # assembled (twice the graph's edges on the device at that moment).

    def snapshot(self):
        """What a chunk changes, as it is at the boundary."""
        return (self.builder.snapshot(), self.visited.snapshot(), self.gen.mark())

    def restore(self, snap) -> None:
        """Back to the chunk boundary of :meth:`snapshot` (after a failed allocation)."""
        built, visited, gen_mark = snap
        self.builder.restore(built)
        self.visited.restore(visited)
        self.gen.rewind(gen_mark)

    def partial(self) -> StateGraph | None:
        """The graph up to the last chunk boundary (``complete`` false), or None when even
        that cannot be allocated. The frontier and the visited set are dropped first: a
        stopped run needs neither, and their memory may be what is missing."""
        self.builder.pending = []
        self.visited = None
        trim()
        try:
            return self.builder.finish(self.mark + (False,), self.t0)
        except MemoryError:
            return None

    def counts_of(self, graph) -> dict[str, int]:
        """The counts a stop reports: the partial graph's, else the last boundary's."""
        if graph is not None:
            return {"states": graph.n_states, "transitions": graph.n_edges,
                    "expanded": graph.n_expanded}
        mark = self.mark
        return {"states": mark[0], "transitions": mark[1], "expanded": mark[2]}

    # ------------------------------------------------------------------ memory
    def memory_needed(self) -> int:
        """The process's memory at its highest if one more chunk is expanded and the graph is
        then assembled: what it holds now, the next chunk's arrays (the largest chunk's
        temporaries seen so far, at least a per-successor estimate), the visited set's next
        merge, and what the assembly allocates on top of the output lists."""
        n, m = self.visited.n, self.builder.n_edges
        est_chunk, grow, merge = self.step_bytes()
        # The assembly: indptr, degrees and deadlocks (24 bytes per state), and each output
        # list concatenated into one array, one at a time: the largest array twice at the
        # peak. (Only because the assembly hands the freed pieces back with malloc_trim: glibc
        # keeps them otherwise, and assembling 1.7 M states and 5.7 M edges of BEEM bakery.7
        # took the RSS from 350 to 514 MB instead of down to about 210.)
        largest = max(n * self.cm.n_slots * _itemsize(self.sdtype), 8 * m, 1)
        fin = 24 * n + largest
        return current_rss() + max(self.chunk_peak, est_chunk) + grow + max(merge, fin)

    def step_bytes(self) -> tuple[int, int, int]:
        """Estimated bytes of the next chunk: its temporaries (a per-successor estimate), what
        it adds to the outputs and the frontier, and the visited set's next merge."""
        n, m = self.visited.n, self.builder.n_edges
        per_state_edges = m / max(self.n_expanded, 1)
        k = min(self.chunk_size, max(n - self.n_expanded, 1))
        succ = int(k * max(per_state_edges, 1.0)) + 1
        W = self.W
        # per successor: source, action, key, rank, id, sort keys, costs, time, masks ...
        est_chunk = succ * (64 + 16 * W + 8 * len(self.res))
        new_states = int(succ * min(1.0, n / max(m, 1)))
        grow = new_states * (16 + 8 * W + self.cm.n_slots * (4 + _itemsize(self.sdtype)))
        grow += succ * 16   # target, action, palette row (at most 8, 4 and 4 bytes)
        # A merge of the visited set's runs: the merged run (16 bytes per state) beside the old
        # ones, with the positions and a mask (store._merge; at most 25 bytes per state).
        merge = 25 * (n + new_states) + self.visited.merge_bytes(new_states)
        return est_chunk, grow, merge

    # ------------------------------------------------------------------ one chunk
    def successors(self, keys, X):
        """The generator's successors of the chunk, from the kernel, the host or the
        current module (see :class:`~statespace.search.placement.Placement`)."""
        xp = self.xp
        kernel = self.placement.kernel
        # The generated kernel costs a chunk two launches and one wait whatever its size, so
        # it takes every chunk on the device, small ones too; the array form's thousands of
        # launches are worth it only for large chunks (``device_min_rows``), and smaller ones
        # are computed on the host.
        if kernel is not None and on_device(xp):
            return kernel.successors(keys, X), True
        if on_device(xp) and keys.shape[0] < self.placement.device_min_rows:
            out = self.gen.at(np).successors(to_host(keys), to_host(X))
            return out.to(xp), False
        return self.gen.at(xp).successors(keys, X), False

    def expand(self, keys: np.ndarray, X: np.ndarray, base: int) -> None:
        """Expand one chunk (states ``base`` on): number its successors, record its edges."""
        cm, xp, b = self.cm, self.xp, self.builder
        F = keys.shape[0]
        if self.err_pc >= 0:
            bad = X[0] == self.err_pc
            if any_true(xp, bad):
                # The error state has no successors: hide it from every transition.
                for p in cm.processes:
                    X[p.slot][bad] = -1
        out, by_kernel = self.successors(keys, X)
        src, act, nkeys, err, costs, tim = (out.source, out.action, out.keys, out.error,
                                            out.costs, out.time)
        m = src.shape[0]
        if not m:
            b.add_chunk(xp.zeros(F, np.int64))
            return
        if not by_kernel:   # the kernel writes the error key itself
            nkeys[err] = self.err_key[0]
        A = max(self.gen.n_actions(), 1)
        # rank = (source, action) in mixed radix: unique per successor, and its order is
        # the discovery order of breadth-first search.
        rank = src * A + act
        ids, new_rank, new_keys = self.visited.add(nkeys, rank)
        if b.error_id < 0 and any_true(xp, err):
            b.error_id = int(ids[xp.flatnonzero(err)[0]])
        if new_rank.shape[0]:
            par = new_rank // A + base
            lvl_parent = b.level_of(par)
            b.record_new(new_keys, par, (new_rank % A).astype(np.int32),
                         (lvl_parent + 1).astype(np.int32))
        # Edges sorted by (source, target, action): one unstable sort on a unique key.
        n_now = self.visited.n
        if F * n_now * A < 2**62 and b.charge_table is not None:
            # Costs and times depend on the action alone: sort the key's values and read
            # target and action back from it (a value sort is faster than an argsort).
            # (Built and taken apart in place: a temporary of a large chunk is fresh pages.)
            key2 = src * n_now
            key2 += ids
            key2 *= A
            key2 += act
            key2.sort()
            act_s = key2 % A
            key2 //= A
            key2 %= n_now
            idx = key2
            chg = b.act_charge[act_s]
        else:
            if F * n_now * A < 2**62:
                order2 = xp.argsort((src * n_now + ids) * A + act)
            else:
                order2 = lexsort(xp, (act, ids, src))
            idx, act_s = ids[order2], act[order2]
            if b.act_charge is not None:
                chg = b.act_charge[act_s]
            else:
                costs_s = {r: costs[r][order2] for r in self.res}
                tim_s = tim[order2]
                chg = None
        if b.error_id >= 0:
            # A faulting step's charge is no value (it may be the fault itself, an
            # overflow): every edge into the error state costs 0 and takes time 0.
            into_err = idx == b.error_id
            if any_true(xp, into_err):
                if chg is not None:
                    chg[into_err] = b.zero_charge
                else:
                    for r in self.res:
                        costs_s[r][into_err] = 0
                    tim_s[into_err] = 0
        if chg is None:
            chg = b.palette_ids(costs_s, tim_s)
        if self.visited.n < 2**31:
            idx = idx.astype(np.int32)
        b.add_chunk(count_values(xp, src, F), (idx, act_s, chg))


def _itemsize(dtype) -> int:
    return np.dtype(dtype).itemsize
