"""One model's transitions evaluated over a matrix of states: the pieces every generator uses.

:class:`Transitions` holds what depends on the compiled model alone (the evaluator of guards,
effects and charges, the transitions by source state, the key layout) and answers, for a state
matrix ``X`` (slots x rows): in which rows a transition is enabled (:meth:`Transitions.enabled`),
what it charges there (:meth:`Transitions.charge`) and the keys of the states it leads to
(:meth:`Transitions.apply`). The generators of :mod:`statespace.next_state` put these together
into steps; nothing here numbers states or knows a search.
"""

from __future__ import annotations

import numpy as np

from runtime.arrays import add_slot_change, scatter_add, stable_argsort

from ..evaluate import Evaluator, Fault, add_costs
from ..model import CompiledModel
from ..store import KeyLayout
from .record import Successors

__all__ = ["Transitions"]

_U = np.uint64
_EMPTY = np.zeros(0, np.int64)
#: A guard is evaluated row by row (in Python) when it has more operations than this many times
#: the number of rows: one array operation per operator costs a few microseconds even on a
#: handful of rows, which for BEEM plc's guards of thousands of operators dominates.
SCALAR_ROW_OPS = 64
#: A process whose transitions leave at most this many control states finds each one's rows
#: by a comparison (cached per chunk); one with more groups the chunk's rows by state once.
FEW_SOURCES = 8
#: A host chunk's rows in some control state are evaluated row by row when they are at most
#: this many (:meth:`Transitions.few_rows_guard`).
SCALAR_ROWS = 4


class Transitions:
    """The transitions of one compiled model, evaluated over state matrices of array module
    ``xp`` (NumPy or CuPy).

    Parameters
    ----------
    cm : CompiledModel
    xp : module
        The array module of the state matrices (default NumPy).
    lazy : bool
        Generate each guard and effect when first used (a run that steps a few rows uses a
        handful of transitions) instead of all at once.

    Examples
    --------
    >>> from dve import load_model
    >>> from statespace import compile_model
    >>> cm = compile_model(load_model("process P { state a, b; init a; "
    ...     "trans a -> b { cost 2; time 3; }; } system async;"))
    >>> tr = Transitions(cm)
    >>> tr.constant_charge(0)
    ((2,), 3)
    >>> tr.at(np) is tr
    True
    """

    def __init__(self, cm: CompiledModel, xp=np, *, lazy: bool = False, shared=None) -> None:
        self.cm, self.xp = cm, xp
        self.lazy = lazy
        self.ev = Evaluator(cm, xp) if lazy else Evaluator(cm, xp).prepare()
        if shared is None:
            const = [self.ev.constant_charge(t.id) for t in cm.transitions]
            by_src: dict[tuple[int, int], list[int]] = {}
            for t in cm.transitions:
                by_src.setdefault((t.process, t.src), []).append(t.id)
            sources = [sorted({cm.transitions[i].src for i in p.transitions})
                       for p in cm.processes]
            n_src = [len(x) for x in sources]
            # Transitions enabled wherever their process is in their source state: no guard
            # clause, no buffered channel (their rows need no guard evaluated).
            free = frozenset(t.id for t in cm.transitions if not t.node.guard
                             and t.sync_kind not in ("bsend", "brecv"))
            shared = {"const": const, "by_src": by_src, "n_src": n_src, "sources": sources,
                      "layout": KeyLayout.for_model(cm), "views": {}, "unguarded": free}
        #: The tables every array module's view shares (see :meth:`at`).
        self.shared = shared
        self.const_charge = shared["const"]
        #: Transitions by (process, source state), ascending.
        self.by_src = shared["by_src"]
        #: Per process: how many distinct source states its transitions have.
        self.n_src = shared["n_src"]
        #: Per process: the source states of its transitions, ascending.
        self.sources = shared["sources"]
        self.layout: KeyLayout = shared["layout"]
        #: Transitions without a guard (nor a buffered channel's condition).
        self.unguarded = shared["unguarded"]
        self.res = cm.resources
        #: Guards too deeply nested for the scalar form (evaluated as arrays).
        self.array_only: set[int] = set()
        shared["views"].setdefault(xp, self)

    def at(self, xp) -> Transitions:
        """These transitions over arrays of module ``xp``: the same tables, an evaluator of
        that module (made once, all guards and effects at once)."""
        got = self.shared["views"].get(xp)
        if got is None:
            got = Transitions(self.cm, xp, lazy=False, shared=self.shared)
        return got

    def constant_charge(self, tid: int):
        """``(costs by resource, time)`` of transition ``tid`` when they are constants, else
        None."""
        return self.const_charge[tid]

    def enabled(self, X, tid, cache=None, allowed=None):
        """The rows of ``X`` where transition ``tid`` is enabled (ascending) and their guard
        faults (a mask over those rows, or None for none).

        ``cache`` (a dict, one per state matrix) keeps the rows of each control state between
        calls on the same ``X``; ``allowed`` (process index -> row mask) restricts processes
        to some rows (committed states).

        Examples
        --------
        >>> from dve import load_model
        >>> from statespace import compile_model
        >>> cm = compile_model(load_model("byte x; process P { state a; init a; "
        ...     "trans a -> a { guard x < 2; effect x = x + 1; }; } system async;"))
        >>> tr = Transitions(cm)
        >>> X = np.array([[0, 0, 0], [0, 5, 1]])   # slots x rows: P's state, x
        >>> rows, faults = tr.enabled(X, 0)
        >>> rows.tolist(), faults
        ([0, 2], None)
        """
        rows_cache = {} if cache is None else cache
        xp = self.xp
        t = self.cm.transitions[tid]
        p = self.cm.processes[t.process]
        if self.n_src[t.process] > FEW_SOURCES:
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
                r = m.nonzero()[0]   # (a 1-D mask: flatnonzero's wrappers cost more here)
                rows_cache[key] = r
        if r.shape[0] == 0:
            return (_EMPTY if xp is np else xp.zeros(0, np.int64)), None
        if tid in self.unguarded:
            return r, None   # (the guard would be all true, without fault)
        buffered = t.sync_kind in ("bsend", "brecv")
        if (r.shape[0] <= SCALAR_ROWS and xp is np and not buffered
                and tid not in self.array_only):
            got = self.few_rows_guard(tid, X, r, rows_cache)
            if got is not None:
                return got
        if r.shape[0] * SCALAR_ROW_OPS < self.ev.guard_size.get(tid, 0) and not buffered:
            en, gerr = self.scalar_guard(tid, X, r)
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

    def few_rows_guard(self, tid, X, r, cache):
        """:meth:`enabled`'s answer for the few rows ``r`` of a host chunk, by the scalar
        guard row by row: the rows where it holds or faults, and the faults (or None). A
        thin level (one or two states a chunk) asks dozens of guards per state, each of a
        handful of operators: one array operation per operator over one row cost about ten
        times what one Python expression over the row costs. None when the guard has no
        scalar form (nested too deeply)."""
        f = self.scalar_guard_of(tid)
        if f is None:
            return None
        # The chunk's rows as lists, made once per chunk (the cache lives as long as X).
        lists = cache.get("row lists")
        if lists is None:
            lists = cache["row lists"] = X.T.tolist() if X.shape[1] <= SCALAR_ROWS else {}
        keep, faults = [], None
        for k, i in enumerate(r.tolist()):
            row = lists[i] if isinstance(lists, list) else lists.get(i)
            if row is None:
                row = lists[i] = X[:, i].tolist()
            try:
                if f(row):
                    keep.append(k)
            except Fault:
                keep.append(k)
                faults = faults if faults is not None else set()
                faults.add(k)
        if len(keep) < r.shape[0]:
            r = r[keep]
        if faults is None:
            return r, None
        return r, np.array([k in faults for k in keep], bool)

    def scalar_guard_of(self, tid: int):
        """The scalar form of transition ``tid``'s guard (:meth:`Evaluator.scalar_guard
        <statespace.evaluate.Evaluator.scalar_guard>`), or None when it has none: nested
        deeper than Python's parser takes (the transition is evaluated as arrays from then
        on).

        >>> from dve import load_model
        >>> from statespace import compile_model
        >>> tr = Transitions(compile_model(load_model("byte x; process P { state a; init a; "
        ...     "trans a -> a { guard x < 2; effect x = x + 1; }; } system async;")))
        >>> f = tr.scalar_guard_of(0)
        >>> f([0, 1]), f([0, 5])
        (1, 0)
        """
        if tid in self.array_only:
            return None
        try:
            return self.ev.scalar_guard(tid)
        except (SyntaxError, RecursionError, MemoryError):
            self.array_only.add(tid)
            return None

    def scalar_guard(self, tid, X, r):
        """The guard of a few rows one at a time (huge guards only; same results as the
        array version: enabled where true or faulty)."""
        array_only = self.array_only
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

    def move_deltas(self, a) -> list[tuple[int, np.uint64]]:
        """The control-state changes of action ``a``'s moving processes as additions to
        the key's words: per word the sum of its moves' changes (modulo 2**64), words whose
        changes cancel left out. Made once per action (a step of a rendezvous added two
        constants to one word, and built its list of moves, at every chunk).

        >>> from dve import load_model
        >>> from statespace import compile_model
        >>> cm = compile_model(load_model("process P { state a, b; init a; "
        ...     "trans a -> b {}; } system async;"))
        >>> tr = Transitions(cm)
        >>> [(w, int(d) == 1 << tr.layout.shift[0]) for w, d in tr.move_deltas(cm.actions[0])]
        [(0, True)]
        """
        # (By the action's transitions: its moves are theirs.)
        cache = self.shared.setdefault("move deltas", {})
        got = cache.get(a.transitions)
        if got is None:
            lay = self.layout
            by_word: dict[int, int] = {}
            for tid in a.transitions[::-1]:
                t = self.cm.transitions[tid]
                slot = self.cm.processes[t.process].slot
                w = int(lay.word[slot])
                by_word[w] = (by_word.get(w, 0) + ((t.dst - t.src) << int(lay.shift[slot]))) \
                    % (1 << 64)
            got = [(w, _U(d)) for w, d in sorted(by_word.items()) if d]
            cache[a.transitions] = got
        return got

    def apply(self, keys, X, R, writes, moves=(), *, deltas=None):
        """Successor keys of rows ``R``: the source key plus each written slot's change and
        each moving process's control-state change (``moves``: ``(slot, src, dst)``; or
        ``deltas``, :meth:`move_deltas`'s additions to words)."""
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
        for w, d in deltas or ():
            nk[:, w] += d
        return nk

    def charge(self, tid, X, R):
        """Costs (one array per resource), time and faults (or None) of transition ``tid``
        in rows ``R`` of ``X``."""
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

    def live(self, X, procs, enabled):
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
            # A process of few source states: each one's rows are found by one comparison
            # anyway (see enabled), an absent state's empty, so all of them are asked; with
            # many, only those some row is in.
            states = (self.sources[p.index] if self.n_src[p.index] <= FEW_SOURCES
                      and F > SCALAR_ROWS else self.present_states(X, p))
            for s_ in states:
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

    def present_states(self, X, p) -> list[int]:
        """The control states of process ``p`` that some row of ``X`` is in, ascending (-1,
        the error state hidden from the generator, included when present).

        On the host by a count of each state (``bincount``, linear): a sort-based
        ``unique`` per process and chunk was a fixed cost of about 60 us per process on a
        chunk of ten thousand rows, which the distributed search pays once per level (40
        levels at cs_10). On a device the ``unique`` stays (a count by atomic additions on a
        handful of counters serialises).

        >>> from dve import load_model
        >>> from statespace import compile_model
        >>> cm = compile_model(load_model("process P { state a, b, c; init a; "
        ...     "trans a -> b {}; } system async;"))
        >>> Transitions(cm).present_states(np.array([[2, 0, 2, -1]]), cm.processes[0])
        [-1, 0, 2]
        """
        xp = self.xp
        pc = X[p.slot]
        if xp is np and pc.shape[0] <= SCALAR_ROWS:
            return sorted(set(pc.tolist()))   # (a thin level's rows: in Python)
        if xp is not np:
            return xp.unique(pc).tolist()
        # Control states are -1 .. len(states) - 1 (see ProcessInfo): shifted by one.
        counts = np.bincount(pc + 1, minlength=len(p.states) + 1)
        return (np.flatnonzero(counts) - 1).tolist()

    def action_rows(self, G, full, a):
        """The rows where action ``a`` (local or rendezvous) is enabled and their guard
        faults (or None), from :meth:`live`'s ``G`` and ``full``."""
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

    def charge_action(self, a, X, R):
        """Costs, time and faults of action ``a`` in rows ``R``: a rendezvous's costs add
        up (an overflow is a fault) and its time is the larger of the partners'."""
        if a.kind == "local":
            return self.charge(a.transitions[0], X, R)
        s, q = a.transitions
        cs, ts, ce1 = self.charge(s, X, R)
        cq, tq, ce2 = self.charge(q, X, R)
        costs, ovf = add_costs(cs, cq)
        return costs, self.xp.maximum(ts, tq), _or(_or(ce1, ce2), ovf)

    def step_faults(self, a, R, *faults, none: bool = False):
        """Which of the steps of action ``a`` in rows ``R`` fault: any of ``faults`` (masks
        or None), or all of them for an action into the error state. With ``none``, None
        where no step faults (no mask made)."""
        if a.error:
            return self.xp.ones(R.shape[0], bool)
        err = None
        for f in faults:
            err = _or(err, f)
        if err is None and not none:
            return self.xp.zeros(R.shape[0], bool)
        return err

    def shift_pc(self, nk, slot, src, dst):
        """``nk`` (a fresh array, changed in place) with the control state in ``slot`` moved
        from ``src`` to ``dst``."""
        if dst != src:
            lay = self.layout
            d = (int(dst) - int(src)) << lay.shift[slot]
            nk[:, lay.word[slot]] += _U(d % (1 << 64))
        return nk

    def collect(self, out_src, out_act, out_key, out_err, out_cost, out_time, charges=True):
        """The pieces of a chunk's successors joined into one :class:`Successors`; without
        ``charges`` (constant charges, read from the action) no costs and times."""
        xp = self.xp
        if not out_src:
            e64 = xp.zeros(0, np.int64)
            return Successors(e64, xp.zeros(0, np.int32), xp.zeros((0, self.layout.n_words), _U),
                              xp.zeros(0, bool), {r: e64 for r in self.res}, e64)
        src = xp.concatenate(out_src).astype(np.int64, copy=False)
        act = _joined_actions(xp, out_act)
        if not charges:
            # Constant charges (see _charge_table): _expand reads each edge's palette row
            # from its action, and needs no costs.
            costs = tim = None
        else:
            costs = {r: xp.concatenate(c).astype(np.int64, copy=False)
                     for r, c in zip(self.res, out_cost)}
            tim = xp.concatenate(out_time).astype(np.int64, copy=False)
        err = _joined_faults(xp, out_err, [r.shape[0] for r in out_src])
        return Successors(src, act, xp.concatenate(out_key), err, costs, tim)


def _joined_actions(xp, parts):
    """The pieces' actions as one int32 column: each piece an array, or ``(action,
    count)`` for ``count`` steps of one action (one repeat for the chunk, not a ``full``
    per action).

    >>> _joined_actions(np, [(3, 2), (5, 1)]).tolist(), _joined_actions(np, [np.array([4])])
    ([3, 3, 5], array([4], dtype=int32))
    """
    if isinstance(parts[0], tuple):
        acts = np.array([a for a, _ in parts], np.int32)
        return xp.repeat(xp.asarray(acts), [k for _, k in parts])
    return xp.concatenate(parts).astype(np.int32, copy=False)


def _joined_faults(xp, parts, sizes):
    """The pieces' fault masks as one: a piece None stands for ``sizes[i]`` rows of no
    fault (its mask is never made).

    >>> _joined_faults(np, [None, np.array([True]), None], [2, 1, 1]).tolist()
    [False, False, True, False]
    """
    if all(p is not None for p in parts):
        return xp.concatenate(parts)
    out = xp.zeros(sum(sizes), bool)
    at = 0
    for p, k in zip(parts, sizes):
        if p is not None:
            out[at:at + k] = p
        at += k
    return out


def _or(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a | b


def as_mask(e, k, xp=np):
    """``e``, a mask of ``k`` rows, or all false for None.

    >>> as_mask(None, 2).tolist()
    [False, False]
    """
    return xp.zeros(k, bool) if e is None else e
