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

from dve import arith, syntax
from runtime.device import (DeviceFallbackWarning, device_free_bytes, is_out_of_memory,
                            release_pool, to_host)
from runtime.errors import (MemoryLimitExceeded, OutOfMemory, RunStopped, StateLimitExceeded,
                            StepLimitExceeded)
from runtime.memory import current_rss, peak_rss

from .compiler import compile_model
from .evaluate import INT, Evaluator, Fault, add_costs
from .graph import Palette, StateGraph, charge_dtype, derived, lazy_graph
from .kernel import SuccessorKernel
from .model import CompiledModel
from .device import (add_slot_change, any_true, count_values, lexsort, module_of, on_device,
                     scatter_add, stable_argsort)
from .store import KeyLayout, VisitedSet

__all__ = ["build_state_graph", "as_compiled", "Explorer"]

_U = np.uint64
_EMPTY = np.zeros(0, np.int64)
#: A guard is evaluated row by row (in Python) when it has more operations than this many times
#: the number of rows: one array operation per operator costs a few microseconds even on a
#: handful of rows, which for BEEM plc's guards of thousands of operators dominates.
_SCALAR_ROW_OPS = 64


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
        self.ev = Evaluator(cm, xp) if lazy else Evaluator(cm, xp).prepare()
        self.const_charge = [self.ev.constant_charge(t.id) for t in cm.transitions]
        # Transitions by (process, source state); system actions by their first transition
        # (with a property process: the system step's index and the action of its first
        # pairing), both in ascending order.
        self.by_src: dict[tuple[int, int], list[int]] = {}
        for t in cm.transitions:
            self.by_src.setdefault((t.process, t.src), []).append(t.id)
        self.actions_of: dict[int, list] = {t.id: [] for t in cm.transitions}
        if cm.system == "async":
            nq = (len(cm.processes[cm.property_process].transitions)
                  if cm.property_process is not None else 0)
            n_sys = (len(cm.actions) - nq) // nq if nq else len(cm.actions)
            for i in range(n_sys):
                a = cm.actions[i * nq] if nq else cm.actions[i]
                self.actions_of[a.transitions[0]].append((i, a))
        # Per process: how many distinct source states its transitions have.
        self.n_src = [len({cm.transitions[i].src for i in p.transitions}) for p in cm.processes]
        self.layout = KeyLayout.for_model(cm)
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
        self.has_commit = any(p.commit for p in cm.system_processes)
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
        self.charge_table = self._charge_table()
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
        # system sync: the step codes numbered so far (Python ints, by id), and their index:
        # the codes as sorted keys (see _code_keys) with their ids.
        self.sync_codes: list[int] = []
        self.sync_index: tuple[np.ndarray, np.ndarray] | None = None
        self.sync_word, self.sync_word_radix = _sync_words(cm.system_processes)
        #: The model's generated successor kernel, once on a device (when in its scope).
        self.kernel: SuccessorKernel | None = None

    def _charge_table(self):
        """Per-action costs and time when every transition charges constants (async models
        without a property process), else None: ``(costs[resource][action], time[action])``.
        Same rules as the per-edge computation: a rendezvous charges the sum of the costs and
        the maximum of the times."""
        cm = self.cm
        if cm.system != "async" or cm.property_process is not None or not cm.actions:
            return None
        if any(c is None for c in self.const_charge):
            return None
        costs = np.zeros((len(self.res), len(cm.actions)), np.int64)
        tim = np.zeros(len(cm.actions), np.int64)
        for a_id, a in enumerate(cm.actions):
            parts = [self.const_charge[t] for t in a.transitions]
            for k in range(len(self.res)):
                total = sum(p[0][k] for p in parts)
                if not arith.INT64[0] <= total <= arith.INT64[1]:
                    return None  # the per-edge path marks the overflowing step as a fault
                costs[k, a_id] = total
            tim[a_id] = max(p[1] for p in parts)
        return costs, tim

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
            A = max(self.cm.n_actions if self.cm.system == "async" else len(self.sync_codes), 1)
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
        self._host_ev, self.ev = self.ev, Evaluator(self.cm, xp).prepare()
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
            self.kernel = SuccessorKernel.for_model(self.cm, charges=self.charge_table is None)
        if self.kernel is not None:
            try:
                self.kernel.function(xp)   # compiled now, once
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
        self.ev = getattr(self, "_host_ev", self.ev)   # none when the move failed at once
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
                self.error_id, self.bytes_out, len(self.sync_codes))

    def _restore(self, snap) -> None:
        """Back to the chunk boundary of :meth:`_snapshot` (after a failed allocation)."""
        (lists, n_rows, self.pending, (runs, n, keys), self.n_edges, self.n_recorded,
         self.error_id, self.bytes_out, n_codes) = snap
        for name, lst in lists.items():
            setattr(self, name, lst)
        # Rows numbered by the failed chunk are forgotten (a dict keeps insertion order).
        self.palette_rows = dict(list(self.palette_rows.items())[:n_rows])
        self.visited.runs, self.visited.n, self.visited._keys = runs, n, keys
        if self.sync_index is not None:
            keys, ids = self.sync_index
            keep = ids < n_codes
            self.sync_index = (keys[keep], ids[keep])
        del self.sync_codes[n_codes:]

    def _successors_on_host(self, X, keys):
        """:meth:`_successors_async` / :meth:`_successors_sync` of a small chunk computed with
        NumPy on host copies of ``X`` and ``keys``; the results are moved to the device."""
        xp, ev = self.xp, self.ev
        self.xp, self.ev = np, self._host_ev
        try:
            Xh, kh = to_host(X), to_host(keys)
            if self.cm.system == "sync":
                out = self._successors_sync(Xh, kh)
            else:
                out = self._successors_async(Xh, kh)
        finally:
            self.xp, self.ev = xp, ev
        src, act, nkeys, err, costs, tim = out
        if costs is not None:
            costs, tim = {r: xp.asarray(c) for r, c in costs.items()}, xp.asarray(tim)
        return xp.asarray(src), xp.asarray(act), xp.asarray(nkeys), xp.asarray(err), costs, tim

    def _level_of(self, ids: np.ndarray) -> np.ndarray:
        if len(self.level) > 1:
            self.level = [self.xp.concatenate(self.level)]
        return self.level[0][ids]

    # ------------------------------------------------------------------ async
    def _enabled(self, X, F, rows_cache, allowed, tid):
        """Rows (of the chunk) where transition ``tid`` is enabled, and their guard faults."""
        xp = self.xp
        t = self.cm.transitions[tid]
        p = self.cm.processes[t.process]
        if self.n_src[t.process] > 8:
            groups = rows_cache.get(t.process)
            if groups is None:
                # Many source states: the chunk's rows grouped by this process's control state
                # in one pass (a stable sort keeps each group's rows ascending).
                pc = X[p.slot]
                if allowed is not None:
                    pc = xp.where(allowed[t.process], pc, -1)
                order = stable_argsort(xp, pc)
                # Bounds of the states present only: work in the chunk's rows, not in the
                # process's states (a chain of 16,000 states, one per level, was quadratic).
                vals, starts = xp.unique(pc[order], return_index=True)
                ends = xp.append(starts[1:], pc.shape[0])
                groups = (order, dict(zip(vals.tolist(), zip(starts.tolist(), ends.tolist()))))
                rows_cache[t.process] = groups
            order, bounds = groups
            lo, hi = bounds.get(t.src, (0, 0))
            r = order[lo:hi]
        else:
            key = (t.process, t.src)
            r = rows_cache.get(key)
            if r is None:
                m = X[p.slot] == t.src
                if allowed is not None:
                    m &= allowed[t.process]
                r = xp.flatnonzero(m)
                rows_cache[key] = r
        if r.shape[0] == 0:
            return (_EMPTY if xp is np else xp.zeros(0, np.int64)), None
        if (r.shape[0] * _SCALAR_ROW_OPS < self.ev.guard_size.get(tid, 0)
                and t.sync_kind not in ("bsend", "brecv")):
            en, gerr = self._scalar_guard(tid, X, r)
        else:
            en, gerr = self.ev.guard(tid)(X, r)
        # (On a device the test would cost a synchronisation of its own.)
        if xp is not np or not en.all():
            sel = xp.flatnonzero(en)
            r = r[sel]
            gerr = gerr[sel] if gerr is not None else None
        if gerr is not None and not gerr.any():
            gerr = None
        return r, gerr

    def _scalar_guard(self, tid, X, r):
        """The guard of a few rows one at a time (huge guards only; same results as the
        array version: enabled where true or faulty)."""
        array_only = self.__dict__.setdefault("_array_only_guards", set())
        if tid not in array_only:
            try:
                f = self.ev.scalar_guard(tid)
            except (SyntaxError, RecursionError, MemoryError):
                # Nested deeper than Python's parser takes (a sum of 1,000 terms is 1,000
                # nested calls in the scalar form); the array form, flat temporaries, is not.
                array_only.add(tid)
        if tid in array_only:
            return self.ev.guard(tid)(X, r)
        en = np.zeros(r.shape[0], bool)
        err = None
        for k, row in enumerate(X[:, r].T.tolist()):
            try:
                en[k] = f(row) != 0
            except Fault:
                en[k] = True
                if err is None:
                    err = np.zeros(r.shape[0], bool)
                err[k] = True
        xp = self.xp
        return xp.asarray(en), (None if err is None else xp.asarray(err))

    def _apply(self, keys, X, R, writes, moves):
        """Successor keys of rows ``R``: the source key plus each written slot's change and
        each moving process's control-state change."""
        lay, xp = self.layout, self.xp
        nk = keys[R]   # a copy: R is an index array
        for base, vals in getattr(writes, "blocks", ()):
            # A whole array (written through a computed index): one pass per block of cells.
            w, d = lay.block_change(base, vals, X[base:base + vals.shape[0]][:, R], xp)
            nk[:, w:w + d.shape[1]] += d
        if getattr(writes, "blocks", None):
            writes = writes.scalars
        if len(writes) > 32:
            # Many slots written (an array cell at a computed index writes every cell): all
            # changes in one NumPy pass; a pass per slot made b[16000] take 32 s for 201 states.
            word, shift, _, _ = lay.arrays(xp)
            J = xp.asarray(np.fromiter((j for j, _ in writes), np.intp, len(writes)))
            new = xp.empty((len(writes), R.shape[0]), np.int64)
            for k, (_, vals) in enumerate(writes):
                new[k] = vals
            d = (new - X[J[:, None], R].astype(np.int64)).astype(_U) << shift[J][:, None]
            acc = xp.zeros((lay.n_words, R.shape[0]), _U)
            scatter_add(xp, acc, word[J], d)  # modular uint64 sums: slots share a word
            nk += acc.T
            writes = ()
        for j, vals in writes:
            add_slot_change(xp, nk[:, lay.word[j]], vals, X[j][R], lay.shift[j])
        for slot, src, dst in moves:
            if dst != src:
                # Modular uint64 arithmetic: adding 2**64 - d subtracts d exactly.
                nk[:, lay.word[slot]] += _U(((dst - src) << lay.shift[slot]) % (1 << 64))
        return nk

    def _charge(self, tid, X, R):
        xp = self.xp
        k = R.shape[0]
        const = self.const_charge[tid]
        if const is not None:
            costs, tm = const
            return [xp.full(k, c, np.int64) for c in costs], xp.full(k, tm, np.int64), None
        costs, tm, err = self.ev.charge(tid)(X, R)
        return ([xp.full(k, c, np.int64) if isinstance(c, int) else c.astype(np.int64)
                 for c in costs],
                xp.full(k, tm, np.int64) if isinstance(tm, int) else tm.astype(np.int64), err)

    def _live_transitions(self, X, procs, enabled):
        """Where the transitions of ``procs`` are enabled in the states ``X``: ``(G, live,
        full)`` with ``G[tid] = enabled(tid)`` (rows, guard faults or None) for each
        transition leaving a control state some row is in (small frontiers touch few of
        them), ``live`` those enabled in some row, ascending, and ``full(tid)`` the same as
        masks over all rows (made on demand, once per transition)."""
        xp = self.xp
        F = X.shape[1]
        G: dict[int, tuple] = {}
        live: list[int] = []
        for p in procs:
            for s_ in xp.unique(X[p.slot]).tolist():
                for tid in self.by_src.get((p.index, s_), ()):
                    G[tid] = g = enabled(tid)
                    if g[0].shape[0]:
                        live.append(tid)
        live.sort()
        masks: dict[int, tuple] = {}

        def full(tid):
            if tid not in masks:
                R, ge = G[tid]
                en = xp.zeros(F, bool)
                en[R] = True
                er = None
                if ge is not None:
                    er = xp.zeros(F, bool)
                    er[R] = ge
                masks[tid] = (en, er)
            return masks[tid]

        return G, live, full

    def _action_rows(self, G, full, a):
        """The rows where action ``a`` (local or rendezvous) is enabled and their guard
        faults (or None), from :meth:`_live_transitions`'s ``G`` and ``full``."""
        if a.kind == "local":
            return G[a.transitions[0]]
        s, q = a.transitions
        Rs, ers = G[s]
        if q not in G or G[q][0].shape[0] == 0:
            return Rs[:0], None
        # Rows where both partners are enabled: the sender's rows, filtered through the
        # receiver's full-length mask (O(|Rs|) per pair, not O(chunk)).
        enq, erq = full(q)
        sel = enq[Rs]
        R = Rs[sel]
        gerr = None if ers is None else ers[sel]
        if erq is not None:
            gerr = erq[R] if gerr is None else gerr | erq[R]
        return R, gerr

    def _charge_action(self, a, X, R):
        """Costs, time and faults of action ``a`` in rows ``R``: a rendezvous's costs add
        up (an overflow is a fault) and its time is the larger of the partners'."""
        if a.kind == "local":
            return self._charge(a.transitions[0], X, R)
        s, q = a.transitions
        cs, ts, ce1 = self._charge(s, X, R)
        cq, tq, ce2 = self._charge(q, X, R)
        costs, ovf = add_costs(cs, cq)
        return costs, self.xp.maximum(ts, tq), _or(_or(ce1, ce2), ovf)

    def _step_faults(self, a, R, *faults):
        """Which of the steps of action ``a`` in rows ``R`` fault: any of ``faults`` (masks
        or None), or all of them for an action into the error state."""
        if a.error:
            return self.xp.ones(R.shape[0], bool)
        err = None
        for f in faults:
            err = _or(err, f)
        return self.xp.zeros(R.shape[0], bool) if err is None else err

    def _successors_async(self, X, keys):
        cm, xp = self.cm, self.xp
        F = X.shape[1]
        allowed = None
        if self.has_commit:
            com = {p.index: xp.isin(X[p.slot], xp.asarray(sorted(p.commit)))
                   for p in cm.system_processes}
            anyc = xp.zeros(F, bool)
            for v in com.values():
                anyc |= v
            if anyc.any():
                allowed = {i: (~anyc) | v for i, v in com.items()}
        rows_cache: dict = {}
        G, live, full = self._live_transitions(
            X, cm.system_processes,
            lambda tid: self._enabled(X, F, rows_cache, allowed, tid))

        prop = cm.property_process
        if prop is not None:
            pp = cm.processes[prop]
            PG = [self._enabled(X, F, rows_cache, None, q) for q in pp.transitions]
            pen, perr = [], []
            for R, ge in PG:
                en = xp.zeros(F, bool)
                en[R] = True
                pen.append(en)
                er = xp.zeros(F, bool)
                if ge is not None:
                    er[R] = ge
                perr.append(er)
            has_sys = xp.zeros(F, bool)
            nq = len(pp.transitions)

        out_src, out_act, out_key, out_err, out_time = [], [], [], [], []
        out_cost = [[] for _ in self.res]

        def emit(R, a, nk, err, costs, tm):
            out_src.append(R)
            out_act.append(xp.full(R.shape[0], a, np.int32))
            out_key.append(nk)
            out_err.append(err)
            for lst, c in zip(out_cost, costs):
                lst.append(c)
            out_time.append(tm)

        if prop is not None:
            n_sys = (len(cm.actions) - nq) // nq if nq else 0
        # System actions in ascending id: those led by a live transition (actions are numbered
        # by their first transition), so emission order is action order.
        sys_list = [x for tid in live for x in self.actions_of[tid]]
        for ai, a in sys_list:
            R, gerr = self._action_rows(G, full, a)
            if R.shape[0] == 0:
                continue
            writes, eerr = self.ev.effect(a.transitions)(X, R)
            # With a charge table, _collect reads every edge's charge from its action.
            costs, tm, cerr = (self._charge_action(a, X, R) if self.charge_table is None
                               else ((), None, None))
            moves = [(cm.processes[t.process].slot, t.src, t.dst)
                     for t in (cm.transitions[tid] for tid in a.transitions[::-1])]
            err = self._step_faults(a, R, gerr, eerr, cerr)
            nk = self._apply(keys, X, R, writes, moves)
            if prop is None:
                emit(R, ai, nk, err, costs, tm)
                continue
            has_sys[R] = True
            for qi, qid in enumerate(pp.transitions):
                sel = xp.flatnonzero(pen[qi][R])
                if sel.shape[0] == 0:
                    continue
                Rq = R[sel]
                qt = cm.transitions[qid]
                nkq = self._shift_pc(nk[sel], pp.slot, qt.src, qt.dst)
                pc_, pt_, pe_ = self._charge(qid, X, Rq) if qt.node.costs or qt.time is not None \
                    else (None, None, None)
                cst = [c[sel] for c in costs]
                tmq = tm[sel]
                ovf = None
                if pc_ is not None:
                    cst, ovf = add_costs(cst, pc_)
                    if qt.time is not None:
                        tmq = xp.maximum(tmq, pt_)
                emit(Rq, ai * nq + qi, nkq, err[sel] | perr[qi][Rq] | _z(pe_, Rq.shape[0], xp)
                     | _z(ovf, Rq.shape[0], xp), cst, tmq)
        if prop is not None:
            # The property process moves alone where the system has no step.
            for qi, qid in enumerate(pp.transitions):
                Rq = xp.flatnonzero(pen[qi] & ~has_sys)
                if Rq.shape[0] == 0:
                    continue
                qt = cm.transitions[qid]
                nkq = self._shift_pc(keys[Rq], pp.slot, qt.src, qt.dst)
                cst, tmq, pe_ = self._charge(qid, X, Rq)
                emit(Rq, n_sys * nq + qi, nkq, perr[qi][Rq] | _z(pe_, Rq.shape[0], xp), cst, tmq)
        return self._collect(out_src, out_act, out_key, out_err, out_cost, out_time)

    def _successors_kernel(self, X, keys):
        """:meth:`_successors_async` by the model's kernel: the same successors, in (source,
        action) order rather than by action (:meth:`_expand` sorts them either way)."""
        # Constant charges (see _charge_table): the kernel computes none, and _expand reads
        # every edge's palette row from its action.
        return self.kernel.successors(self.xp, X, keys)

    def _shift_pc(self, nk, slot, src, dst):
        # ``nk`` is always a fresh array here (a fancy-indexed copy).
        if dst != src:
            lay = self.layout
            d = (int(dst) - int(src)) << lay.shift[slot]
            nk[:, lay.word[slot]] += _U(d % (1 << 64))
        return nk

    def _collect(self, out_src, out_act, out_key, out_err, out_cost, out_time):
        xp = self.xp
        if not out_src:
            e64 = xp.zeros(0, np.int64)
            return (e64, xp.zeros(0, np.int32), xp.zeros((0, self.W), _U), xp.zeros(0, bool),
                    {r: e64 for r in self.res}, e64)
        src = xp.concatenate(out_src).astype(np.int64, copy=False)
        act = xp.concatenate(out_act)
        if self.charge_table is not None:
            # Constant charges (see _charge_table): _expand reads each edge's palette row
            # from its action, and needs no costs.
            costs = tim = None
        else:
            costs = {r: xp.concatenate(c).astype(np.int64, copy=False)
                     for r, c in zip(self.res, out_cost)}
            tim = xp.concatenate(out_time).astype(np.int64, copy=False)
        return src, act, xp.concatenate(out_key), xp.concatenate(out_err), costs, tim

    # ------------------------------------------------------------------ sync
    def _successors_sync(self, X, keys):
        cm, xp = self.cm, self.xp
        F = X.shape[1]
        procs = cm.system_processes
        rows_cache: dict = {}
        rows = xp.arange(F, dtype=np.int64)
        rows = rows[X[0] >= 0] if procs else rows
        err = xp.zeros(rows.shape[0], bool)
        # The partial steps form a tree, one level per process: ``[parent, tid]``, the partial
        # each extends (an index into the level before) and the transition it chose. Each
        # partial's children are made in the order of their transitions (a process's enabled
        # (row, transition) pairs sorted by row, then transition), and the rows start
        # ascending, so the steps come out in (source row, step code) order, the order
        # _intern_sync needs, without a sort. The choices are read back through the tree
        # once, at the end (re-indexing every earlier column at every process made the
        # product quadratic in the processes).
        levels: list[list] = []
        tables: list[_SyncPairs] = []
        for p in procs:
            pairs = self._sync_pairs(X, F, rows_cache, p.transitions)
            floor = (self._sync_floor(p, rows, _Choices(levels, tables)) if rows.shape[0]
                     else None)
            # Row r's pairs are pairs.start[r]:pairs.start[r + 1].
            lo, hi = pairs.start[rows], pairs.start[rows + 1]
            if floor is not None:
                # Only transitions numbered ``floor`` or higher: the row's first such pair.
                up = xp.flatnonzero(floor > 0)
                lo[up] = pairs.first_at(rows[up], floor[up])
            parent, off = _fan_out(xp, hi - lo)
            pidx = lo[parent] + off
            rows, err = rows[parent], err[parent]
            if pairs.fault is not None:
                err |= pairs.fault[pidx]
            levels.append([parent, pidx])
            tables.append(pairs)
        # Every process chose (a process with no enabled transition left no steps).
        n = rows.shape[0]
        L = len(procs)
        # The pair each process took in each step, and the choices by process, each column
        # contiguous (_step_sync reads them column by column): the transpose of a
        # (processes x steps) array.
        C = xp.zeros((L, n), np.int64).T
        taken: list = [None] * L
        idx = None
        for k in range(len(levels) - 1, -1, -1):
            parent, pidx = levels[k]
            taken[k] = pidx if idx is None else pidx[idx]
            C[:, k] = tables[k].tid[taken[k]]
            idx = parent if idx is None else parent[idx]
        code = self._sync_code_words(C)
        Y, err, costs, tm = self._step_sync(X, rows, C, err, (tables, taken))
        nk = self.layout.pack(Y, xp)
        # Step codes are interned on the host (a sorted index of the codes met so far).
        return rows, xp.asarray(self._intern_sync(to_host(code))), nk, err, costs, tm

    def _sync_pairs(self, X, F, rows_cache, ts) -> _SyncPairs:
        """The (row, transition) pairs of the chunk where the transitions ``ts`` of one
        process are enabled, sorted by row, then by the transition's place in ``ts``
        (:class:`_SyncPairs`)."""
        xp = self.xp
        T = len(ts)
        found = []
        for d, tid in enumerate(ts):
            R, ge = self._enabled(X, F, rows_cache, None, tid)
            if R.shape[0]:
                found.append((d, R, ge))
        faulty = any(ge is not None for _, _, ge in found)
        if found and F * T <= _PAIR_MATRIX:
            # A (rows x transitions) mask read in row-major order: the pairs sorted.
            en = xp.zeros((F, T), bool)
            fe = xp.zeros((F, T), bool) if faulty else None
            count = xp.zeros(F, np.int64)
            for d, R, ge in found:
                en[R, d] = True
                count[R] += 1      # (R: distinct rows)
                if ge is not None:
                    fe[R, d] = ge
            flat = xp.flatnonzero(en)
            prow = flat // T
            place = flat - prow * T
            fault = fe.ravel()[flat] if faulty else None
            start = xp.zeros(F + 1, np.int64)
            xp.cumsum(count, out=start[1:])
        elif found:
            prow = xp.concatenate([R for _, R, _ in found])
            place = xp.concatenate([xp.full(R.shape[0], d, np.int64) for d, R, _ in found])
            fault = (xp.concatenate([ge if ge is not None else xp.zeros(R.shape[0], bool)
                                     for _, R, ge in found]) if faulty else None)
            order = stable_argsort(xp, prow)
            prow, place = prow[order], place[order]
            fault = fault[order] if faulty else None
        else:
            prow = place = xp.zeros(0, np.int64)
            fault = None
        if not (found and F * T <= _PAIR_MATRIX):
            start = xp.searchsorted(prow, xp.arange(F + 1))
        tid = xp.asarray(np.asarray(ts, np.int64))[place] if T else place
        return _SyncPairs(prow, place, tid, fault, start, max(T, 1))

    def _sync_floor(self, p, rows, choice):
        """The lowest place among its transitions that process ``p`` may choose in each of the
        partial ``system sync`` steps so far (``choice``: a column of transition ids per
        process so far, ``rows``: their source rows), or ``None`` for no bound. A hook for
        explorers that generate fewer steps (:mod:`statespace.counting`: one per multiset of
        interchangeable members' choices, a member choosing no lower than the one before)."""
        return None

    def _step_sync(self, X, rows, C, err, pairs=None, unwritten=frozenset()):
        """The successors of rows ``rows`` of ``X`` when process ``i`` takes transition
        ``C[:, i]``: the states (slots x steps), faults, costs by resource and times (the
        explorer's rules: costs add up, the time is the maximum, effects run process by
        process, two transitions assigning one global variable go to the error state).

        With ``pairs`` (``(tables, taken)``: each process's :class:`_SyncPairs` and the pair
        each step took), a process whose effects read and write only its own variables
        (:meth:`_sync_local`) gets its writes, charges and faults computed once per enabled
        (row, transition) pair and gathered into the steps: what it writes cannot depend on
        what the processes before it wrote in the same step; for those in ``unwritten``
        (process indices) only the charges and faults: the caller writes their slots from
        :meth:`_pair_effects`. Others take the grouping below."""
        cm, xp = self.cm, self.xp
        procs = cm.system_processes
        M = rows.shape[0]
        # take(): in C order (X[:, rows] leaves it transposed, and copying that is 10x slower)
        Y = xp.take(X, rows, axis=1)
        costs = [xp.zeros(M, np.int64) for _ in self.res]
        tm = xp.zeros(M, np.int64)
        writers: dict[str, np.ndarray] = {}
        # Per process, in process order: either ``("pairs", i, table)`` or the (transition,
        # the rows that chose it, ascending) of each transition chosen, a process's rows
        # grouped in one stable sort of its digits, not one pass over all rows per transition.
        plan = []
        digit = self._digits(xp)
        local = self._sync_local()
        for i, p in enumerate(procs):
            ts = p.transitions
            if M == 0:
                continue
            if pairs is not None and local[i]:
                plan.append((p, "pairs", self._pair_effects(X, pairs[0][i], ts),
                             pairs[1][i]))
                continue
            if len(ts) == 1:
                plan.append((p, "rows", [(ts[0], xp.arange(M))], None))
                continue
            d = digit[C[:, i]]
            order = stable_argsort(xp, d.astype(np.int16 if len(ts) < 2**15 else np.int32))
            bounds = xp.searchsorted(d[order], xp.arange(len(ts) + 1)).tolist()
            plan.append((p, "rows", [(tid, order[bounds[k]:bounds[k + 1]])
                                     for k, tid in enumerate(ts) if bounds[k + 1] > bounds[k]],
                         None))
        for p, how, what, taken in plan:
            if how == "pairs":
                pc, pt, pf, _, _ = what
                summed, ovf = add_costs(costs, [c[taken] for c in pc])
                costs = list(summed)
                tm = xp.maximum(tm, pt[taken])
                if ovf is not None:
                    err |= ovf
                if pf is not None:
                    err |= pf[taken]
                continue
            for tid, sub in what:
                t = cm.transitions[tid]
                for w in t.writes:
                    if "." not in w:
                        cnt = writers.setdefault(w, xp.zeros(M, np.int32))
                        cnt[sub] += 1
                c, ti, ce = self._charge(tid, X, rows[sub])
                summed, ovf = add_costs([acc[sub] for acc in costs], c)
                for acc, v in zip(costs, summed):
                    acc[sub] = v
                if ovf is not None:
                    ce = ovf if ce is None else ce | ovf
                tm[sub] = xp.maximum(tm[sub], ti)
                if ce is not None:
                    err[sub] |= ce
        for p, how, what, taken in plan:
            if how == "pairs":
                if p.index in unwritten:
                    continue
                _, _, _, vals, dst = what
                for j, v in vals.items():
                    Y[j] = v[taken]
                Y[p.slot] = dst[taken]
                continue
            for tid, sub in what:
                t = cm.transitions[tid]
                writes, eerr = self.ev.effect((tid,))(Y, sub)
                for base, v in getattr(writes, "blocks", ()):
                    Y[base:base + v.shape[0], sub] = v
                for j, v in getattr(writes, "scalars", writes):
                    Y[j][sub] = v
                Y[p.slot][sub] = t.dst
                if eerr is not None:
                    err[sub] |= eerr
        for cnt in writers.values():
            err |= cnt >= 2
        return Y, err, {r: c for r, c in zip(self.res, costs)}, tm

    def _pair_effects(self, X, table: _SyncPairs, ts):
        """Per enabled pair of a :meth:`_sync_local` process: costs by resource, time,
        faults (guard, charge and effect; or None), the values of the slots its transitions
        write (slot -> values; the old value where a pair's transition leaves it) and the
        control state it goes to."""
        got = table.memo.get("effects")
        if got is not None:
            return got
        got = table.memo["effects"] = self._pair_effects_of(X, table, ts)
        return got

    def _pair_effects_of(self, X, table: _SyncPairs, ts):
        xp = self.xp
        P = table.row.shape[0]
        pc = [xp.zeros(P, np.int64) for _ in self.res]
        pt = xp.zeros(P, np.int64)
        pf = table.fault.copy() if table.fault is not None else None
        vals: dict[int, object] = {}
        dst = xp.zeros(P, X.dtype)
        for d, tid in enumerate(ts):
            sel = xp.flatnonzero(table.place == d)
            if sel.shape[0] == 0:
                continue
            R = table.row[sel]
            t = self.cm.transitions[tid]
            c, ti, ce = self._charge(tid, X, R)
            for acc, v in zip(pc, c):
                acc[sel] = v
            pt[sel] = ti
            writes, eerr = self.ev.effect((tid,))(X, R)
            out = []
            for base, v in getattr(writes, "blocks", ()):
                out.extend((base + i, v[i]) for i in range(v.shape[0]))
            out.extend(getattr(writes, "scalars", writes))
            for j, v in out:
                if j not in vals:
                    vals[j] = X[j][table.row]   # a copy: left alone where not written
                vals[j][sel] = v
            dst[sel] = t.dst
            for f in (ce, eerr):
                if f is not None:
                    if pf is None:
                        pf = xp.zeros(P, bool)
                    pf[sel] |= f
        return pc, pt, pf, vals, dst

    def _sync_local(self) -> list[bool]:
        """Per system process: whether its effects read only its own variables and
        constants and write only its own variables (then a ``system sync`` step's other
        processes cannot change what they read or write; made once)."""
        got = self.__dict__.get("_sync_local_flags")
        if got is None:
            got = [_reads_own_only(self.cm, p) for p in self.cm.system_processes]
            self._sync_local_flags = got
        return got

    def _sync_code_words(self, C) -> np.ndarray:
        """The step codes of choice rows ``C`` (one transition id per system process) as the
        words :meth:`_intern_sync` takes (arrays of ``C``'s module)."""
        xp = module_of(C)
        digit = self._digits(xp)
        C = xp.asarray(C, np.int64)
        code = xp.zeros((C.shape[0], len(self.sync_word_radix)), np.int64)
        words: dict[int, object] = {}
        for i, (p, word) in enumerate(zip(self.cm.system_processes, self.sync_word)):
            # Each word built as one contiguous column, then written once.
            d = digit[C[:, i]]
            w = words.get(word)
            words[word] = d if w is None else w * max(1, len(p.transitions)) + d
        for word, w in words.items():
            code[:, word] = w
        return code

    def _digits(self, xp):
        """Each transition's place among its process's transitions (its digit in step
        codes), as an array of ``xp``; made once per module."""
        cache = self.__dict__.setdefault("_digit_of", {})
        if xp not in cache:
            digit = np.zeros(max(len(self.cm.transitions), 1), np.int64)
            for p in self.cm.system_processes:
                digit[np.asarray(p.transitions, np.int64)] = np.arange(len(p.transitions))
            cache[xp] = xp.asarray(digit)
        return cache[xp]

    def _intern_sync(self, code: np.ndarray) -> np.ndarray:
        """Action ids of ``system sync`` steps given as code words ``(rows, n_words)``: the
        step codes numbered densely in the order first met, so ids fit int32 however many
        processes there are. The caller gives the steps in (source row, code) order, so a new
        code's id depends only on the first (source state, code) that takes it: the same ids
        whatever the chunk size, as breadth-first numbering needs (new states are numbered
        by (source, action)).

        The words are compared as rows (lexicographic order of the words, the first most
        significant, is the order of the codes) and looked up in :attr:`sync_index`, the codes
        met so far as sorted keys (:func:`_code_keys`); only new codes are turned into Python
        integers, the form ``action_codes`` and :meth:`CompiledModel.sync_choice` use.

        Raises
        ------
        runtime.errors.StepLimitExceeded
            When the chunk brings the number of distinct steps past :data:`MAX_SYNC_STEPS`
            (the ids of the edges are int32); :meth:`run` attaches the graph found so far.
        """
        if code.shape[1] == 1:
            uniq, first, inv = np.unique(code[:, 0], return_index=True, return_inverse=True)
            uniq = uniq[:, None]
        else:
            uniq, first, inv = _unique_rows(code)
        keys = _code_keys(uniq)   # sorted, as uniq is
        ids = np.empty(keys.shape[0], np.int64)
        found = np.zeros(keys.shape[0], bool)
        known, known_ids = self.sync_index if self.sync_index is not None else (keys[:0], ids[:0])
        if known.shape[0]:
            pos = np.minimum(np.searchsorted(known, keys), known.shape[0] - 1)
            found = known[pos] == keys
            ids[found] = known_ids[pos[found]]
        # New codes take the next ids in the order of their first step in the chunk.
        new = np.flatnonzero(~found)
        new = new[np.argsort(first[new], kind="stable")]
        if len(self.sync_codes) + new.shape[0] > MAX_SYNC_STEPS:
            raise StepLimitExceeded(MAX_SYNC_STEPS, self.mark[0])
        ids[new] = len(self.sync_codes) + np.arange(new.shape[0])
        self.sync_codes.extend(_code_values(uniq[new], self.sync_word_radix))
        # Into the index, each where it sorts (new[] by key order: ascending positions).
        by_key = np.sort(np.flatnonzero(~found))
        at = np.searchsorted(known, keys[by_key])
        self.sync_index = (np.insert(known, at, keys[by_key]),
                           np.insert(known_ids, at, ids[by_key]))
        return ids[inv.reshape(-1)].astype(np.int32)

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
                      action_codes=(_code_array(self.sync_codes)
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
MAX_SYNC_STEPS = 2**31 - 1
#: A word of a ``system sync`` step code holds digits while their radices' product is below
#: this (the word, an int64, then takes ``word * radix + digit`` for any digit without wrapping).
SYNC_WORD_LIMIT = 2**62


def _code_keys(words: np.ndarray) -> np.ndarray:
    """Step codes given as rows of int64 words (non-negative, the first most significant) as
    one key each that NumPy sorts and searches in the codes' order: the word itself for one
    word, else the words' big-endian bytes (their byte order is their numeric order).

    >>> w = np.array([[1, 256], [1, 2], [0, 7]])
    >>> np.argsort(_code_keys(w), kind="stable").tolist()
    [2, 1, 0]
    """
    if words.shape[1] == 1:
        return np.ascontiguousarray(words[:, 0])
    return np.ascontiguousarray(words.astype(">i8")).view(f"S{8 * words.shape[1]}").ravel()


def _code_values(words: np.ndarray, radix) -> list[int]:
    """The step codes (Python ints) of rows of words in the radices of :func:`_sync_words`.

    >>> _code_values(np.array([[2, 3], [0, 1]]), (10**18, 5))
    [13, 1]
    """
    if words.shape[1] == 1:
        return words[:, 0].tolist()
    v = words[:, 0].astype(object)
    for w in range(1, words.shape[1]):
        v = v * radix[w] + words[:, w].astype(object)
    return v.tolist()


def _unique_rows(a: np.ndarray):
    """``numpy.unique(a, axis=0, return_index=True, return_inverse=True)`` for an int64
    matrix, by one lexicographic sort of its columns (the first most significant) rather
    than NumPy's sort of the rows as opaque records, several times slower.

    >>> a = np.array([[1, 5], [0, 7], [1, 5], [0, 2]])
    >>> [x.tolist() for x in _unique_rows(a)] == [x.tolist() for x in
    ...     np.unique(a, axis=0, return_index=True, return_inverse=True)]
    True
    """
    n = a.shape[0]
    if n == 0:
        return a[:0], np.zeros(0, np.int64), np.zeros(0, np.int64)
    order = np.lexsort(a.T[::-1])   # stable: equal rows keep their order
    s = a[order]
    flag = np.empty(n, bool)
    flag[0] = True
    np.any(s[1:] != s[:-1], axis=1, out=flag[1:])
    starts = np.flatnonzero(flag)
    inv = np.empty(n, np.int64)
    inv[order] = np.cumsum(flag) - 1
    return s[starts], order[starts], inv


def _reads_own_only(cm: CompiledModel, p) -> bool:
    """Whether the effects of process ``p`` assign only its own variables and read only its
    own variables, constants and literals (no other process's variable or control state, no
    global variable)."""
    own = f"{p.name}."

    def var(name):
        v = cm.variables.get(own + name)
        return v if v is not None else cm.variables.get(name)

    def ok(e) -> bool:
        if isinstance(e, (syntax.IntLit, syntax.BoolLit)):
            return True
        if isinstance(e, (syntax.Name, syntax.Index)):
            v = var(e.name)
            if v is None or not (v.is_const or v.owner == p.name):
                return False
            return not isinstance(e, syntax.Index) or ok(e.index)
        if isinstance(e, syntax.Unary):
            return ok(e.operand)
        if isinstance(e, syntax.Binary):
            return ok(e.left) and ok(e.right)
        return False          # another process's variable or state, a macro, ...

    for tid in p.transitions:
        for a in cm.transitions[tid].node.effects:
            v = var(a.target.name)
            if v is None or v.is_const or v.owner != p.name or not ok(a.value):
                return False
            if isinstance(a.target, syntax.Index) and not ok(a.target.index):
                return False
    return True


def _fan_out(xp, counts):
    """For ``counts[i]`` children of each parent ``i``: each child's parent and its place
    among its parent's children, parents in order (``numpy.repeat`` of the parents' indices;
    CuPy's takes no array of counts, so there by a search of the running totals).

    >>> [a.tolist() for a in _fan_out(np, np.array([2, 0, 3]))]
    [[0, 0, 2, 2, 2], [0, 1, 0, 1, 2]]
    """
    counts = counts.astype(np.int64, copy=False)
    ends = xp.cumsum(counts)
    total = int(ends[-1]) if counts.shape[0] else 0
    if xp is np:
        parent = np.repeat(np.arange(counts.shape[0]), counts)
    else:
        parent = xp.searchsorted(ends, xp.arange(total), side="right")
    return parent, xp.arange(total) - (ends - counts)[parent]


class _Choices:
    """The transition each process chose, for the partial ``system sync`` steps so far,
    column by column (``choices[j]``, ``choices[-1]``) read through
    :meth:`Explorer._successors_sync`'s tree of partial steps (``levels``: ``[parent, pair
    index]`` per process; ``tables``: each process's :class:`_SyncPairs`)."""

    def __init__(self, levels: list, tables: list) -> None:
        self.levels, self.tables = levels, tables

    def __len__(self) -> int:
        return len(self.levels)

    def __getitem__(self, j: int):
        levels = self.levels
        j = range(len(levels))[j]
        idx = None
        for k in range(len(levels) - 1, j, -1):
            sel = levels[k][0]
            idx = sel if idx is None else sel[idx]
        pidx = levels[j][1]
        return self.tables[j].tid[pidx if idx is None else pidx[idx]]


#: The largest (rows x transitions) mask :meth:`Explorer._sync_pairs` sorts pairs with; past
#: it, a stable sort of the pairs' rows.
_PAIR_MATRIX = 1 << 25


@dataclass(frozen=True, eq=False)
class _SyncPairs:
    """One process's enabled (row, transition) pairs in a chunk, sorted by row, then place:
    ``row``, ``place`` (the transition's place in the process), ``tid``, ``fault`` (guard
    faults, or None), and ``start`` (``F + 1`` entries: row ``r``'s pairs are
    ``start[r]:start[r + 1]``); ``T`` the process's transitions (at least 1)."""

    row: object
    place: object
    tid: object
    fault: object
    start: object
    T: int
    #: What :meth:`Explorer._pair_effects` computed for these pairs (made once).
    memo: dict = field(default_factory=dict)

    def first_at(self, rows, floor):
        """The first pair of each of ``rows`` whose place is ``floor`` or more."""
        xp = module_of(rows)
        return xp.searchsorted(self.row * self.T + self.place, rows * self.T + floor)


def _sync_words(procs) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """How ``system sync`` step codes are held in int64 words: the word of each process, and
    each word's radix (the product of its processes' radices, below 2**62).

    A step code is a mixed-radix number, one digit per process (its transition's index in the
    process, the first process most significant); consecutive processes share a word while the
    product of their radices stays below :data:`SYNC_WORD_LIMIT`, so every digit tuple has one
    word tuple and the lexicographic order of the word tuples is the order of the codes.

    >>> class P:
    ...     def __init__(self, n): self.transitions = range(n)
    >>> _sync_words([P(3), P(1 << 40), P(1 << 30), P(0)])
    ((0, 0, 1, 1), (3298534883328, 1073741824))
    """
    word, radix, w = [], [], 1
    for p in procs:
        r = max(1, len(p.transitions))
        if not radix or w * r >= SYNC_WORD_LIMIT:
            radix.append(1)
            w = 1
        w *= r
        radix[-1] = w
        word.append(len(radix) - 1)
    return tuple(word), tuple(radix) if radix else (1,)


def _code_array(codes: list[int]) -> np.ndarray:
    """``action_codes`` of a sync graph: int64 while every code fits, else Python integers."""
    if all(c < 2**63 for c in codes):
        return np.array(codes, np.int64)
    return np.array(codes, dtype=object)


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


def _or(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def _z(e, k, xp=np):
    return xp.zeros(k, bool) if e is None else e
