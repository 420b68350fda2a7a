"""Breadth-first generation of the reachable state graph, a whole frontier at a time.

States are expanded in id order in chunks of up to ``chunk_size`` states. For each chunk every
transition's guard is evaluated as array operations over the states whose process is in the
transition's source state; the enabled rows of every action (single transition, rendezvous
pair, product with a property transition, or ``system sync`` tuple) get their effects applied
and their successor keys computed (the key of the source plus the change of each written slot).
The successors of the chunk are put in (source, action) order, numbered exactly against the
visited set (:class:`~statespace.store.VisitedSet`: new states get the next ids in order of
first occurrence), and their edges are sorted by (target, action) within each source.

Because expanding states in id order while numbering new states by first (source, action)
occurrence *is* breadth-first search with a FIFO queue, the numbering does not depend on the
chunk size: two builds of one model give identical arrays.

On a GPU, the successors of a ``system async`` chunk come from one kernel generated for the
model (:mod:`statespace.kernel`) where the model is in its scope: the same successors in
(source, action) order, numbered and sorted by the same code afterwards.
"""

from __future__ import annotations

import os
import time as _time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from dve import syntax
from runtime.device import (DeviceFallbackWarning, device_free_bytes, is_out_of_memory,
                            release_pool, to_host)
from runtime.errors import (MemoryLimitExceeded, OutOfMemory, RunStopped, StateLimitExceeded,
                            StepLimitExceeded)
from runtime.memory import current_rss, peak_rss

from .compiler import compile_model
from .evaluate import INT
from .graph import Palette, StateGraph, charge_dtype, derived, lazy_graph
from .kernel import SuccessorKernel
from .model import CompiledModel
from .device import any_true, count_values, lexsort, module_of, on_device
from .next_state import AsyncGenerator, KernelGenerator, Successors, SyncGenerator
from .store import VisitedSet

__all__ = ["build_state_graph", "as_compiled", "Explorer"]



def as_compiled(model: CompiledModel | syntax.Model, *, property: bool = True) -> CompiledModel:
    """``model`` compiled: itself when it already is, else :func:`compile_model` of it.

    The explorers take models, never text or paths: :func:`dve.load_model` is the one place
    where text becomes a model, and it checks what it reads.

    Raises
    ------
    TypeError
        For anything but a :class:`CompiledModel` or a :class:`dve.syntax.Model` (text, a path).

    Examples
    --------
    >>> from dve import load_model
    >>> as_compiled(load_model("process P { state a; init a; } system async;")).initial
    (0,)
    >>> as_compiled("m.dve")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: expected a model (...), got str: read text or a file with dve.load_model
    """
    if isinstance(model, CompiledModel):
        return model
    if isinstance(model, syntax.Model):
        return compile_model(model, property=property)
    raise TypeError(f"expected a model (dve.syntax.Model or CompiledModel), got "
                    f"{type(model).__name__}: read text or a file with dve.load_model")


def build_state_graph(model: CompiledModel | syntax.Model, *, property: bool = True,
                      max_states: int | None = None, max_memory: int | None = None,
                      progress: Callable[[int, int, float], None] | None = None,
                      chunk_size: int | None = None, error_successors: bool = False,
                      xp=np, on_device_full: str = "host") -> StateGraph:
    """Explore the reachable state space of a model into a :class:`StateGraph`.

    Parameters
    ----------
    model : CompiledModel or dve.syntax.Model
        A compiled model, or a checked model from :func:`dve.load_model` (which reads text
        and files and applies ``-D`` values).
    property : bool
        Explore the product with the property process of ``system async property P``
        (default); false leaves the property process out.
    max_states : int, optional
        Stop once more states than this have been found.
    max_memory : int, optional
        Stop once the arrays of the exploration take more bytes than this.
    progress : callable, optional
        Called as ``progress(n_states, n_edges, edges_per_second)`` after each chunk.
    error_successors : bool
        False (default): the error state has no successors (DiVinE's generator since 2008,
        and what the analysis needs). True: expand it like any state, as the generator that
        produced BEEM's published counts did: the error state is all zeros with process 0 in
        a control state that has no transitions, so the other processes move on from their
        first declared states (BEEM ``anderson.1``: 347 039 states this way, 347 037 without).
    chunk_size : int, optional
        States expanded per batch (memory versus per-batch overhead; no effect on the result).
        Default :data:`HOST_CHUNK` with NumPy, :data:`DEVICE_CHUNK` with CuPy.
    xp : module
        The array module the exploration runs on: NumPy (default), or CuPy to explore on a
        GPU: it starts on the host and moves to the device at the first chunk of
        :attr:`Explorer.device_min_rows` states; from then on the frontier, the visited set and
        the edges stay on the device, guards and effects run there for chunks of that many
        states (smaller ones on the host), and the finished graph is copied to the host once.
        Both give identical graphs.
    on_device_full : {'host', 'stop'}
        With a device module: what happens when the device's free memory is less than the
        next step needs (checked before the hand-over and before each chunk on the device),
        or an allocation on it fails: ``'host'`` (default) continues on the host from the last
        chunk boundary (the same graph) with a :class:`~runtime.device.DeviceFallbackWarning`;
        ``'stop'`` raises :class:`runtime.errors.OutOfMemory` with the graph found so far.

    Returns
    -------
    StateGraph

    Raises
    ------
    runtime.errors.StateLimitExceeded, runtime.errors.MemoryLimitExceeded
        When a limit is reached; ``partial`` holds the graph found so far (``complete`` false).
        :class:`~runtime.errors.OutOfMemory` (a MemoryLimitExceeded) with ``device`` true: the
        device was full and ``on_device_full`` is ``'stop'``.
    dve.errors.EvaluationError
        When the model does not compile (an initial value out of its type's range, ...).
    TypeError
        When ``model`` is text or a path (see :func:`as_compiled`).

    Examples
    --------
    >>> from dve import load_model
    >>> g = build_state_graph(load_model('''
    ... channel c;
    ... process P { byte v; state a, b; init a; trans a -> b { sync c!7; cost 2; time 3; }; }
    ... process Q { byte w; state a, b; init a; trans a -> b { sync c?w; cost 1; time 1; }; }
    ... system async;'''))
    >>> g.n_states, g.n_edges, g.cost().tolist(), g.time.tolist()
    (2, 1, [3], [3])
    >>> from statespace import decode_state
    >>> decode_state(g, 1)
    {'P': 'b', 'Q': 'b', 'P.v': 0, 'Q.w': 7}
    """
    cm = as_compiled(model, property=property)
    return Explorer(cm, xp, chunk_size, max_states, max_memory, progress,
                    error_successors, on_device_full=on_device_full).run()



#: States expanded per batch on the host: the arrays of a batch stay within the caches' reach
#: and memory grows in small steps.
HOST_CHUNK = 1 << 17
#: States expanded per batch on a GPU: each array operation is a kernel launch (microseconds
#: whatever its size), so a batch must hold millions of successors to keep the device busy.
DEVICE_CHUNK = 1 << 21


def _states_dtype(cm: CompiledModel):
    lo = min((s.lo for s in cm.slots), default=0)
    hi = max((s.hi for s in cm.slots), default=0)
    for dt in (np.uint8, np.int8, np.uint16, np.int16, np.int32):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return dt
    return np.int64


class Explorer:
    """The breadth-first explorer of one compiled model (see the module docstring);
    :func:`build_state_graph` runs one, :mod:`statespace.quotient` extends it."""

    def __init__(self, cm, xp, chunk_size, max_states, max_memory, progress,
                 error_successors=False, *, on_device_full: str = "host",
                 lazy: bool = False) -> None:
        if on_device_full not in ("host", "stop"):
            raise ValueError(f"on_device_full must be 'host' or 'stop', not {on_device_full!r}")
        self.error_successors = error_successors
        self.on_device_full = on_device_full
        # With a device module, exploration starts on the host and moves to the device
        # (:meth:`_to_device`) at the first chunk of ``device_min_rows`` states or more: a
        # model whose frontier stays small never pays the device's fixed cost per chunk.
        self.device_xp = xp if on_device(xp) else None
        if chunk_size is None:
            chunk_size = DEVICE_CHUNK if on_device(xp) else HOST_CHUNK
        xp = np if self.device_xp is not None else xp
        self.cm, self.xp = cm, xp
        self.chunk_size = max(1, int(chunk_size))
        self.max_states, self.max_memory, self.progress = max_states, max_memory, progress
        # lazy: each function is generated when first called (one that steps a few rows of
        # a run uses a handful of transitions, and compiling all of them costs more).
        self.gen = (SyncGenerator if cm.system == "sync" else AsyncGenerator)(cm, xp, lazy=lazy)
        self.layout = self.gen.layout
        self.W = self.layout.n_words
        self.visited = VisitedSet(self.W, key_bits=sum(self.layout.bits), xp=xp)
        self.res = cm.resources
        self.sdtype = _states_dtype(cm)
        X0 = np.array(cm.initial, dtype=INT).reshape(-1, 1)
        self.init_key = self.layout.pack(X0, np)
        self.err_key = self.layout.pack(np.array(cm.error_state, dtype=INT).reshape(-1, 1), np)
        # The control state of process 0 that marks the error state; -1 when the error state is
        # expanded like any other (legacy BEEM counting).
        self.err_pc = cm.error_state[0] if cm.slots and not error_successors else -1
        # Outputs, appended per chunk (concatenated at the end, one array at a time).
        self.out_idx: list = []
        self.out_act: list = []
        self.out_charge: list = []   # per edge its palette row (see _charges)
        self.out_deg: list = []
        self.states: list = []
        self.parent: list = []
        self.parent_action: list = []
        self.level: list = []
        # (keys, state matrix) of discovered states not yet expanded, in id order.
        self.pending: list = []
        self.n_edges = 0
        self.n_recorded = 0
        self.error_id = -1
        self.bytes_out = 0
        self.charge_table = self.gen.charge_table
        self.charge_host = self.charge_table   # the charge table on the host, always
        # The graph is compact (statespace.graph): per edge the row of its (costs, time) in a
        # palette. With constant charges the palette is known now: the distinct rows of the
        # actions' charges and the row of zeros (edges into the error state), in ascending
        # order, ``act_charge`` the row of each action. Otherwise rows are numbered as they are
        # met (``palette_rows``: row -> provisional number), and sorted once at the end.
        self.palette_rows: dict[tuple, int] = {}
        self.act_charge = self.zero_charge = None
        if self.charge_table is not None:
            ct, tt = self.charge_table
            per_action = [tuple(int(v) for v in ct[:, a]) + (int(tt[a]),)
                          for a in range(tt.shape[0])]
            zero = (0,) * (len(self.res) + 1)
            rows = sorted(set(per_action) | {zero})
            self.palette_rows = {r: j for j, r in enumerate(rows)}
            self.act_charge = np.array([self.palette_rows[r] for r in per_action],
                                       charge_dtype(len(rows)))
            self.act_charge_host = self.act_charge
            self.zero_charge = self.palette_rows[zero]
        #: The generator by the model's generated kernel, once on a device (when in its scope).
        self.kernel: KernelGenerator | None = None

    # ------------------------------------------------------------------ driver
    def run(self) -> StateGraph:
        t0 = _time.perf_counter()
        self.t0 = t0
        self.n_expanded = 0
        xp = self.xp
        # What a partial graph may contain: the counts at the last chunk boundary. A stop in
        # the middle of a chunk (a signal, the timeout, an allocation failure) only appended
        # to the output lists since then, so cutting them back to these counts is consistent.
        self.mark = (0, 0, 0)
        try:
            self.visited.add(self.init_key)
            self._record_new(self.init_key, xp.array([-1], np.int64), xp.array([-1], np.int32),
                             xp.array([0], np.int32))
            last_progress = t0
            while self.n_expanded < self.visited.n:
                self.mark = (self.visited.n, self.n_edges, self.n_expanded)
                if self.max_memory is not None and self._memory_needed() > self.max_memory:
                    raise MemoryLimitExceeded(self.max_memory, self.visited.n,
                                              partial=self._partial())
                k = min(self.chunk_size, self.visited.n - self.n_expanded)
                if (self.device_xp is not None and self.xp is np
                        and k >= self.device_min_rows and self._device_fits(True)):
                    self._move_to_device()
                elif on_device(self.xp):
                    self._device_fits(False)
                if on_device(self.xp):
                    # A failed device allocation leaves the chunk half done: back to the
                    # boundary, and the chunk again on the host (or a clean stop).
                    snap, failed = self._snapshot(), False
                    try:
                        self._chunk(k)
                    except Exception as exc:   # noqa: BLE001 - only the device's OOM
                        if not is_out_of_memory(exc):
                            raise
                        failed = True
                    # Outside the handler: the failed chunk's device arrays, held by the
                    # exception's frames, are freed by now.
                    if failed:
                        self._restore(snap)
                        del snap
                        self._device_full("an allocation on the GPU failed")
                        self._chunk(k)
                    else:
                        # The snapshot's lists hold every piece of the outputs: kept past the
                        # last chunk, they would keep each piece alive while _finish joins
                        # them (twice the graph's edges on the device at that moment).
                        del snap
                else:
                    self._chunk(k)
                self.n_expanded += k
                now = _time.perf_counter()
                if self.progress is not None and now - last_progress > 0.2:
                    last_progress = now
                    self.progress(self.visited.n, self.n_edges,
                                  self.n_edges / max(now - t0, 1e-9))
                if self.max_states is not None and self.visited.n > self.max_states:
                    self.mark = (self.visited.n, self.n_edges, self.n_expanded)
                    raise StateLimitExceeded(self.max_states, self.visited.n,
                                             partial=self._partial())
            # Every state is expanded: a stop while the graph is assembled keeps all of it.
            self.mark = (self.n_recorded, self.n_edges, self.n_expanded)
            return self._finish(True)
        except RunStopped as exc:
            if exc.partial is None:
                exc.partial = self._partial()
                exc.counts = _counts(exc.partial, self.mark)
            raise
        except StepLimitExceeded as exc:
            exc.n_explored = self.mark[0]
            exc.partial = self._partial()
            raise
        except MemoryError:
            part = self._partial()
            exc = OutOfMemory(self.max_memory, self.mark[0], partial=part)
            exc.counts = _counts(part, self.mark)
            raise exc from None

    def _chunk(self, k: int) -> None:
        """Expand the next ``k`` pending states (the run loop's step)."""
        keys, X = self._take_pending(k)
        rss0 = current_rss() if self.max_memory is not None else 0
        self._expand(keys, X, self.n_expanded)
        if self.max_memory is not None:
            # The chunk's temporaries: the growth of the peak over the RSS it
            # started from (the peak only tells when it was exceeded).
            self.chunk_peak = max(self.chunk_peak, peak_rss() - rss0)

    def _partial(self) -> StateGraph | None:
        """The graph up to the last chunk boundary (``complete`` false), or None when even
        that cannot be allocated. The frontier and the visited set are dropped first: a
        stopped run needs neither, and their memory may be what is missing."""
        self.pending = []
        self.visited = None
        _trim()
        try:
            return self._finish(False)
        except MemoryError:
            return None

    chunk_peak = 0

    def _memory_needed(self) -> int:
        """The process's memory at its highest if one more chunk is expanded and the graph is
        then assembled: what it holds now, the next chunk's arrays (the largest chunk's
        temporaries seen so far, at least a per-successor estimate), the visited set's next
        merge, and what :meth:`_finish` allocates on top of the output lists."""
        n, m = self.visited.n, self.n_edges
        est_chunk, grow, merge = self._step_bytes()
        # _finish: indptr, degrees and deadlocks (24 bytes per state), and each output list
        # concatenated into one array, one at a time: the largest array twice at the peak.
        # (Only because _finish hands the freed pieces back with malloc_trim: glibc keeps them
        # otherwise, and assembling 1.7 M states and 5.7 M edges of BEEM bakery.7 took the RSS
        # from 350 to 514 MB instead of down to about 210.)
        largest = max(n * self.cm.n_slots * _itemsize(self.sdtype), 8 * m, 1)
        fin = 24 * n + largest
        return current_rss() + max(self.chunk_peak, est_chunk) + grow + max(merge, fin)

    def _step_bytes(self) -> tuple[int, int, int]:
        """Estimated bytes of the next chunk: its temporaries (a per-successor estimate), what
        it adds to the outputs and the frontier, and the visited set's next merge."""
        n, m = self.visited.n, self.n_edges
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
        merge = 25 * (n + new_states)
        if self.visited._keys is not None and n + new_states > self.visited._keys.shape[0]:
            merge += 2 * self.visited._keys.nbytes
        return est_chunk, grow, merge

    def _take_pending(self, k: int):
        """The next ``k`` discovered states to expand: their keys and state matrix."""
        xp = self.xp
        parts, got = [], 0
        while got < k:
            keys, X = self.pending[0]
            need = k - got
            if keys.shape[0] <= need:
                parts.append(self.pending.pop(0))
                got += keys.shape[0]
            else:
                parts.append((keys[:need], X[:, :need]))
                self.pending[0] = (keys[need:], X[:, need:])
                got += need
        if len(parts) == 1:
            return parts[0][0], xp.ascontiguousarray(parts[0][1])
        return (xp.concatenate([p[0] for p in parts]),
                xp.concatenate([p[1] for p in parts], axis=1))

    def _record_new(self, keys, parent, parent_action, level) -> None:
        xp = self.xp
        X = self.layout.unpack(keys, xp)
        self.pending.append((keys, X))
        st = xp.ascontiguousarray(X.T).astype(self.sdtype)
        self.states.append(st)
        self.parent.append(parent)
        self.parent_action.append(parent_action)
        self.level.append(level)
        self.bytes_out += st.nbytes + parent.nbytes + parent_action.nbytes + level.nbytes
        self.n_recorded += keys.shape[0]

    # ------------------------------------------------------------------ one chunk
    def _expand(self, keys: np.ndarray, X: np.ndarray, base: int) -> None:
        cm, xp = self.cm, self.xp
        F = keys.shape[0]
        if self.err_pc >= 0:
            bad = X[0] == self.err_pc
            if any_true(xp, bad):
                # The error state has no successors: hide it from every transition.
                for p in cm.processes:
                    X[p.slot][bad] = -1
        # The generated kernel costs a chunk two launches and one wait whatever its size, so
        # it takes every chunk on the device, small ones too; the array form's thousands of
        # launches are worth it only for large chunks (``device_min_rows``), and smaller ones
        # are computed on the host.
        by_kernel = self.kernel is not None and on_device(xp) and cm.system == "async"
        if by_kernel:
            out = self._successors_kernel(X, keys)
        elif on_device(xp) and F < self.device_min_rows:
            out = self._successors_on_host(X, keys)
        elif cm.system == "sync":
            out = self._successors_sync(X, keys)
        else:
            out = self._successors_async(X, keys)
        src, act, nkeys, err, costs, tim = out
        m = src.shape[0]
        if m:
            if not by_kernel:   # the kernel writes the error key itself
                nkeys[err] = self.err_key[0]
            A = max(self.gen.n_actions(), 1)
            # rank = (source, action) in mixed radix: unique per successor, and its order is
            # the discovery order of breadth-first search.
            rank = src * A + act
            ids, new_rank, new_keys = self.visited.add(nkeys, rank)
            if self.error_id < 0 and any_true(xp, err):
                self.error_id = int(ids[xp.flatnonzero(err)[0]])
            if new_rank.shape[0]:
                par = new_rank // A + base
                lvl_parent = self._level_of(par)
                self._record_new(new_keys, par, (new_rank % A).astype(np.int32),
                                 (lvl_parent + 1).astype(np.int32))
            # Edges sorted by (source, target, action): one unstable sort on a unique key.
            n_now = self.visited.n
            if F * n_now * A < 2**62 and self.charge_table is not None:
                # Costs and times depend on the action alone: sort the key's values and read
                # target and action back from it (a value sort is faster than an argsort).
                key2 = (src * n_now + ids) * A + act
                key2.sort()
                act_s = key2 % A
                idx = (key2 // A) % n_now
                chg = self.act_charge[act_s]
            else:
                if F * n_now * A < 2**62:
                    order2 = xp.argsort((src * n_now + ids) * A + act)
                else:
                    order2 = lexsort(xp, (act, ids, src))
                idx, act_s = ids[order2], act[order2]
                if self.act_charge is not None:
                    chg = self.act_charge[act_s]
                else:
                    costs_s = {r: costs[r][order2] for r in self.res}
                    tim_s = tim[order2]
                    chg = None
            if self.error_id >= 0:
                # A faulting step's charge is no value (it may be the fault itself, an
                # overflow): every edge into the error state costs 0 and takes time 0.
                into_err = idx == self.error_id
                if any_true(xp, into_err):
                    if chg is not None:
                        chg[into_err] = self.zero_charge
                    else:
                        for r in self.res:
                            costs_s[r][into_err] = 0
                        tim_s[into_err] = 0
            if chg is None:
                chg = self._palette_ids(costs_s, tim_s)
            if self.visited.n < 2**31:
                idx = idx.astype(np.int32)
            self.out_idx.append(idx)
            self.out_act.append(act_s.astype(np.int32))
            self.out_charge.append(chg)
            self.bytes_out += idx.nbytes + 4 * m + chg.nbytes
            deg = count_values(xp, src, F)
        else:
            deg = xp.zeros(F, np.int64)
        self.out_deg.append(deg)
        self.n_edges += m

    def _palette_ids(self, costs: dict, tim):
        """The provisional palette rows (int32, on the module of ``tim``) of edges charging
        ``costs`` (by resource) and ``tim``, numbering rows not met before (``palette_rows``;
        :meth:`_finish` sorts them). Computed on the host: a chunk's distinct rows are few."""
        xp = module_of(tim)
        cols = [to_host(costs[r]) for r in self.res] + [to_host(tim)]
        if cols[0].shape[0] == 0:
            return xp.zeros(0, np.int32)
        rows, inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
        known = self.palette_rows
        ids = np.array([known.setdefault(tuple(r), len(known)) for r in rows.tolist()],
                       np.int32)
        out = ids[inv.reshape(-1)]
        return out if xp is np else xp.asarray(out)

    #: On a device, the successors of ``system async`` models come from one generated kernel
    #: (:mod:`statespace.kernel`) where the model is in its scope; False: the array form.
    #: (The environment variable ``DVECOST_KERNEL=off`` does the same, for measurements.)
    use_kernel = True

    #: With a device module: exploration moves to the device at the first chunk of this many
    #: states. Without the generated kernel, later chunks of fewer states get their
    #: successors computed on the host (the same code over NumPy; the visited set and the
    #: outputs stay on the device): the array form costs the device a fixed few thousand
    #: kernel launches and synchronisations a chunk whatever its size, more than the host
    #: takes for a small frontier. The kernel takes every chunk on the device (measured on
    #: cs_10's last 15 chunks, of 1 to 15,540 states: 7-18 ms each on the host path).
    device_min_rows = 1 << 14

    def _to_device(self) -> None:
        """Move the exploration's state to the device module: the visited set, the frontier,
        the levels, the keys and tables ``_expand`` reads; outputs recorded so far stay on
        the host (:meth:`_finish` joins host and device pieces)."""
        xp = self.device_xp
        self.gen.at(xp)   # the device's evaluator, made now
        self.xp = xp
        vs = self.visited
        vs.xp = xp
        vs.runs = [(xp.asarray(h), xp.asarray(i)) for h, i in vs.runs]
        if vs._keys is not None:
            vs._keys = xp.asarray(vs._keys)
        self.pending = [(xp.asarray(k), xp.asarray(X)) for k, X in self.pending]
        self.level = [xp.asarray(_join(self.level))] if self.level else []
        self.init_key, self.err_key = xp.asarray(self.init_key), xp.asarray(self.err_key)
        if self.charge_table is not None:
            self.charge_table = (xp.asarray(self.charge_table[0]),
                                 xp.asarray(self.charge_table[1]))
            self.act_charge = xp.asarray(self.act_charge_host)
        if (self.use_kernel and hasattr(xp, "RawModule")
                and os.environ.get("DVECOST_KERNEL", "on") != "off"):
            kernel = SuccessorKernel.for_model(self.cm, charges=self.charge_table is None)
            if kernel is not None:
                self.kernel = KernelGenerator(self.gen, kernel, xp)
        if self.kernel is not None:
            try:
                self.kernel.compile()   # compiled now, once
            except Exception as exc:   # noqa: BLE001 - the array form computes the same
                if is_out_of_memory(exc):
                    raise
                self.kernel = None
                warnings.warn(f"{self.cm.name}: the generated successor kernel did not "
                              f"compile ({type(exc).__name__}: {str(exc)[:200]}); exploring "
                              "with array operations instead", DeviceFallbackWarning,
                              stacklevel=2)

    #: The lists of arrays that grow chunk by chunk (besides ``pending``).
    _GROWING = ("out_idx", "out_act", "out_charge", "out_deg", "states", "parent",
                "parent_action", "level")

    def _move_to_device(self) -> None:
        """:meth:`_to_device`; when an allocation there fails, :meth:`_device_full` (what was
        moved comes back to the host, or the run stops)."""
        failed = False
        try:
            self._to_device()
        except Exception as exc:   # noqa: BLE001 - only the device's OOM
            if not is_out_of_memory(exc):
                raise
            failed = True
        if failed:
            self._device_full("an allocation on the GPU failed")

    def _device_fits(self, moving: bool) -> bool:
        """Whether the next step fits in the device's free memory (:meth:`_step_bytes`, plus
        with ``moving`` the visited set, frontier and levels copied over at the hand-over).
        When it does not, :meth:`_device_full` decides (host or stop) and this returns False.
        A module that cannot tell its free memory always fits."""
        free = device_free_bytes(self.device_xp)
        if free is None:
            return True
        need = sum(self._step_bytes())
        if moving:
            need += self.visited.nbytes + sum(k.nbytes + X.nbytes for k, X in self.pending)
            need += sum(a.nbytes for a in self.level)
        if need <= free:
            return True
        self._device_full(f"the GPU has {_mib(free)} free, the next step needs about "
                          f"{_mib(need)}")
        return False

    def _device_full(self, why: str) -> None:
        """The device is full at a chunk boundary: continue on the host (``on_device_full``
        'host', with a warning) or raise :class:`OutOfMemory` with the graph so far."""
        if on_device(self.xp) or on_device(self.visited.xp):   # (also half moved)
            self._to_host()
        self.device_xp = None   # never back to the device
        if self.on_device_full == "host":
            warnings.warn(f"{why} at {self.mark[0]:,} states; exploration continues on the "
                          "CPU (--backend gpu stops instead)", DeviceFallbackWarning,
                          stacklevel=2)
            return
        exc = OutOfMemory(None, self.mark[0], partial=self._partial())
        exc.device, exc.why = True, why
        exc.counts = _counts(exc.partial, self.mark)
        raise exc

    def _to_host(self) -> None:
        """:meth:`_to_device` undone: everything the exploration holds copied to the host, the
        host evaluator and tables back; the device's pool emptied."""
        dev = self.device_xp
        vs = self.visited
        vs.xp = np
        vs.runs = [(to_host(h), to_host(i)) for h, i in vs.runs]
        if vs._keys is not None:
            vs._keys = to_host(vs._keys)
        self.pending = [(to_host(k), to_host(X)) for k, X in self.pending]
        for name in self._GROWING:
            setattr(self, name, [to_host(a) for a in getattr(self, name)])
        self.init_key, self.err_key = to_host(self.init_key), to_host(self.err_key)
        self.charge_table = self.charge_host
        if self.act_charge is not None:
            self.act_charge = self.act_charge_host
        self.xp = np
        release_pool(dev)

    def _snapshot(self):
        """What a chunk changes, as it is at the boundary (lists copied, arrays shared: a
        chunk appends new arrays and replaces the visited set's runs, never writes into
        what is there below ``visited.n``)."""
        vs = self.visited
        return ({name: list(getattr(self, name)) for name in self._GROWING},
                len(self.palette_rows), list(self.pending),
                (list(vs.runs), vs.n, vs._keys), self.n_edges, self.n_recorded,
                self.error_id, self.bytes_out,
                self.gen.numbering.mark() if self.cm.system == "sync" else 0)

    def _restore(self, snap) -> None:
        """Back to the chunk boundary of :meth:`_snapshot` (after a failed allocation)."""
        (lists, n_rows, self.pending, (runs, n, keys), self.n_edges, self.n_recorded,
         self.error_id, self.bytes_out, n_codes) = snap
        for name, lst in lists.items():
            setattr(self, name, lst)
        # Rows numbered by the failed chunk are forgotten (a dict keeps insertion order).
        self.palette_rows = dict(list(self.palette_rows.items())[:n_rows])
        self.visited.runs, self.visited.n, self.visited._keys = runs, n, keys
        if self.cm.system == "sync":
            self.gen.numbering.rewind(n_codes)

    def _successors_on_host(self, X, keys):
        """:meth:`_successors_async` / :meth:`_successors_sync` of a small chunk computed with
        NumPy on host copies of ``X`` and ``keys``; the results are moved to the device."""
        xp = self.xp
        self.xp = np
        try:
            Xh, kh = to_host(X), to_host(keys)
            if self.cm.system == "sync":
                out = self._successors_sync(Xh, kh)
            else:
                out = self._successors_async(Xh, kh)
        finally:
            self.xp = xp
        return _tuple(Successors(*out).to(xp))

    def _level_of(self, ids: np.ndarray) -> np.ndarray:
        if len(self.level) > 1:
            self.level = [self.xp.concatenate(self.level)]
        return self.level[0][ids]

    # ------------------------------------------------------------------ async
    # ------------------------------------------------------------------ successors
    # The successors come from the model's generator (statespace.next_state); these hooks
    # hand a chunk to it on the explorer's current array module.
    def _gen(self):
        return self.gen.at(self.xp)

    def _enabled(self, X, F, rows_cache, allowed, tid):
        return self.gen.at(self.xp).tr.enabled(X, tid, rows_cache, allowed)

    def _successors_async(self, X, keys, still=frozenset(), skip=None):
        return _tuple(self._gen().successors(keys, X, still=still, skip=skip))

    def _successors_kernel(self, X, keys):
        """:meth:`_successors_async` by the model's kernel: the same successors, in (source,
        action) order rather than by action (:meth:`_expand` sorts them either way)."""
        return _tuple(self.kernel.successors(keys, X))

    def _successors_sync(self, X, keys):
        return _tuple(self._gen().successors(keys, X, floor=self._sync_floor,
                                             step=self._step_sync))

    def _sync_floor(self, p, rows, choice):
        """A hook for explorers that generate fewer ``system sync`` steps (see
        :meth:`SyncGenerator.successors <statespace.next_state.SyncGenerator.successors>`)."""
        return None

    def _step_sync(self, X, rows, C, err, pairs=None, unwritten=frozenset()):
        return tuple(self._gen().step(X, rows, C, err, pairs, unwritten))

    def _intern_choices(self, C) -> np.ndarray:
        """Dense step ids of choice rows (one transition id per system process)."""
        return self.gen.number_steps(C)

    # ------------------------------------------------------------------ the graph
    def _finish(self, complete: bool) -> StateGraph:
        # A complete graph has everything; a partial one what the last chunk boundary had.
        n, m, expanded = ((self.n_recorded, self.n_edges, self.n_expanded) if complete
                          else self.mark)
        # The graph is assembled on the host, each piece computed on a device copied once.
        if on_device(self.xp):
            # The pool's cached blocks (the chunks' temporaries) back to the device first: the
            # joined arrays are the largest allocations of the run.
            release_pool(self.xp)
        deg = _join(self.out_deg) if self.out_deg else np.zeros(0, np.int64)
        self.out_deg = [deg]
        # The degrees of the expanded states (the first ``expanded`` chunks' worth).
        deg = to_host(deg[:expanded])
        full_deg = np.zeros(n, np.int64)
        full_deg[:deg.shape[0]] = deg
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(full_deg, out=indptr[1:])
        del full_deg

        kept: dict = {}   # the edge arrays still on the device, by name

        def cat(lst, dtype, k, keep=None):
            """The pieces of ``lst`` as one array of ``k`` entries of ``dtype``: on the
            device when they are there (kept under ``keep`` for the cycle engine)."""
            if not lst:
                return np.zeros(0, dtype)
            a = _join(lst, up=on_device(self.xp))
            lst[:] = [a]
            if isinstance(a, np.ndarray):
                _trim()
            else:
                a = a[:k].astype(dtype, copy=False)   # converted there: one copy at most
                if keep is not None:
                    kept[keep] = a
                return a
            return a[:k].astype(dtype, copy=False)

        idx_dtype = np.int32 if n < 2**31 else np.int64
        palette, charge = self._palette(cat(self.out_charge, self._charge_dtype(), m))
        if not isinstance(charge, np.ndarray):
            kept["charge"] = charge
        big = {"indices": cat(self.out_idx, idx_dtype, m, "indices"),
               "action": cat(self.out_act, np.int32, m), "charge": charge,
               "costs": derived(), "time": derived(),
               "states": cat(self.states, self.sdtype, n).reshape(n, self.cm.n_slots),
               "parent": cat(self.parent, np.int64, n),
               "parent_action": cat(self.parent_action, np.int32, n)}
        level = cat(self.level, np.int32, n)
        depth = int(level.max()) if n else 0
        del level
        on_dev = None
        if complete and len(kept) == 2:
            xp = module_of(kept["indices"])
            on_dev = (xp.asarray(indptr), kept["indices"], kept["charge"])
        # Deadlocks are expanded states without successors; in a partial graph the states
        # not expanded yet are unknown, not deadlocks.
        dead = np.flatnonzero(deg == 0)
        error_id = self.error_id if self.error_id < n else -1
        if error_id >= 0:
            dead = dead[dead != error_id]
        fields = dict(indptr=indptr, deadlocks=dead.astype(np.int64), error_state=error_id,
                      depth=depth, complete=complete, error_successors=self.error_successors,
                      action_codes=(self.gen.action_codes()
                                    if self.cm.system == "sync" else None),
                      n_expanded=expanded, model=self.cm, name=self.cm.name,
                      seconds=_time.perf_counter() - self.t0, on_device=on_dev,
                      palette=palette)
        if complete and on_device(self.xp):
            # Finished on the device: the arrays stay there and each comes to the host when
            # first read (statespace.graph.lazy_graph), so that a caller reading the answer
            # and a few runs (dvecost analyze) copies none of them. The pieces just joined
            # go back to the device for the cycle engine.
            release_pool(self.xp)
            return lazy_graph(big, **fields)
        # Otherwise on the host, one copy from the device per array.
        return lazy_graph({k: (v if isinstance(v, str) else to_host(v)) for k, v in big.items()},
                          **fields)

    def _charge_dtype(self):
        """The dtype of the palette rows recorded per edge: the final one with constant
        charges, int32 while rows are still being numbered."""
        return np.int32 if self.act_charge is None else self.act_charge_host.dtype

    def _palette(self, charge):
        """The graph's :class:`~statespace.graph.Palette` and its ``charge`` array (any array
        module) from the rows recorded per edge: with constant charges the palette as
        numbered at the start (sorted already); otherwise the rows met, sorted, and the
        provisional numbers mapped to the sorted ones (a gather from a table of one entry
        per row), so that the palette does not depend on the order rows were met in (a
        CPU and a GPU build give identical arrays)."""
        rows = list(self.palette_rows)
        k = len(self.res)
        table = np.array(rows, np.int64).reshape(len(rows), k + 1)
        if self.act_charge is None and rows:
            order = sorted(range(len(rows)), key=rows.__getitem__)
            table = table[order]
            remap = np.empty(len(rows), charge_dtype(len(rows)))
            remap[order] = np.arange(len(rows))
            xp = module_of(charge)
            charge = (xp.asarray(remap) if xp is not np else remap)[charge]
        elif not rows:
            charge = charge.astype(np.uint8)
        palette = Palette({r: np.ascontiguousarray(table[:, j]) for j, r in enumerate(self.res)},
                          np.ascontiguousarray(table[:, k]))
        return palette, charge


#: The most distinct ``system sync`` steps one exploration numbers (edge labels are int32).
def _join(pieces: list, up: bool = False):
    """The pieces as one array: of their module when they share one (NumPy, or CuPy on the
    device); when some are host and some device arrays, on the host, or with ``up`` on the
    device (the host pieces of the first chunks, before the hand-over, are the small ones:
    they go up, and the whole array comes down in one copy, not one per device piece)."""
    if len(pieces) == 1:
        return pieces[0]
    on_host = [isinstance(a, np.ndarray) for a in pieces]
    if all(on_host):
        return np.concatenate(pieces)
    if not any(on_host):
        return module_of(pieces[0]).concatenate(pieces)
    if up:
        xp = module_of(pieces[on_host.index(False)])
        try:
            return xp.concatenate([xp.asarray(a) for a in pieces])
        except Exception as exc:   # noqa: BLE001 - only the device's OOM: join on the host
            if not is_out_of_memory(exc):
                raise
    return np.concatenate([to_host(a) for a in pieces])


def _trim() -> None:
    """Hand the memory of freed pieces back to the system (glibc keeps it otherwise)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def _itemsize(dtype) -> int:
    return np.dtype(dtype).itemsize


def _counts(graph, mark) -> dict[str, int]:
    if graph is not None:
        return {"states": graph.n_states, "transitions": graph.n_edges,
                "expanded": graph.n_expanded}
    return {"states": mark[0], "transitions": mark[1], "expanded": mark[2]}


def _tuple(s: Successors) -> tuple:
    return s.source, s.action, s.keys, s.error, s.costs, s.time
