"""The next-state generator of ``system sync`` models, and the numbering of their steps.

A ``system sync`` step is one enabled transition of every system process, taken together:
effects run process by process, costs add up, the time is the maximum, and two transitions
assigning one global variable make the step a fault. :class:`SyncGenerator` builds the steps
of a whole chunk as a product, one process at a time (:meth:`SyncGenerator.successors`), and
makes the states of given choices (:meth:`SyncGenerator.step`: what a simulator or the lifting
of a walk uses). Each distinct step gets a dense id in the order first met
(:class:`StepNumbering`), so that action ids fit 32 bits however many processes there are.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dve import syntax
from runtime.arrays import module_of, stable_argsort
from runtime.device import to_host
from runtime.errors import StepLimitExceeded

from ..evaluate import add_costs
from ..model import CompiledModel
from .base import ModelGenerator
from .few_rows import few_pairs, present_states
from .record import Successors, SyncStep
from .transitions import SCALAR_ROWS, Transitions

__all__ = ["MAX_SYNC_STEPS", "StepNumbering", "SyncGenerator", "SyncPairs", "reads_own_only"]


class SyncGenerator(ModelGenerator):
    """The successors of ``system sync`` states, computed as array operations over a chunk.

    Parameters
    ----------
    cm : CompiledModel
        A ``system sync`` model.
    xp, lazy, transitions
        As for :class:`~statespace.next_state.ModelGenerator`.

    Attributes
    ----------
    numbering : StepNumbering
        The step codes numbered so far (shared by every view of :meth:`at`).
    charge_table : None
        Charges are never constants of a step id here.
    """

    kind = "sync"
    charge_table = None

    def __init__(self, cm: CompiledModel, xp=np, *, lazy: bool = False,
                 transitions: Transitions | None = None) -> None:
        super().__init__(cm, xp, lazy=lazy, transitions=transitions)
        #: Tables made once for all views (digits, per-process locality).
        self.shared = self.tr.shared
        self.numbering = StepNumbering(cm.system_processes)

    def n_actions(self) -> int:
        """The number of step ids given so far (the radix of (source, action) ranks)."""
        return len(self.numbering.codes)

    def mark(self) -> int:
        """How many step ids are given (a search's chunk boundary, for :meth:`rewind`)."""
        return self.numbering.mark()

    def rewind(self, mark: int) -> None:
        """Forget the step ids given after :meth:`mark` (a chunk undone)."""
        self.numbering.rewind(mark)

    def step_codes(self) -> list[int]:
        """The code of each step id (one digit per system process, the first most
        significant: :meth:`CompiledModel.sync_choice <statespace.CompiledModel.sync_choice>`
        reads it)."""
        return self.numbering.codes

    def action_codes(self) -> np.ndarray:
        """:meth:`step_codes` as a graph's ``action_codes``: int64 while every code fits,
        else Python integers."""
        return _code_array(self.numbering.codes)

    def number_steps(self, C) -> np.ndarray:
        """Dense step ids (int32) of choice rows ``C`` (one transition id per system process,
        host arrays), numbering codes not met before (:class:`StepNumbering`)."""
        return self.numbering.number(self.code_words(C))

    def successors(self, keys, X, *, floor=None, step=None) -> Successors:
        """Every ``system sync`` step of every state of the chunk (``keys``: states x words,
        ``X``: slots x states), in (source row, step code) order, with dense step ids
        (:meth:`number_steps`). A step is one enabled transition of every system process; a
        state where some process has none has no steps, nor has a state whose process 0 is
        in control state -1.

        ``floor(p, rows, choices)`` (optional) bounds the transitions process ``p`` may choose
        in each partial step (the lowest place among its transitions, or None for no bound;
        ``choices[j]``: the transition process ``j`` chose); ``step`` (optional, the
        signature of :meth:`step`) makes the steps' states instead of :meth:`step`. Both are
        how a wrapper makes fewer steps (:class:`~statespace.next_state.SyncChoiceGenerator`).

        Examples
        --------
        >>> from dve import load_model
        >>> from statespace import compile_model
        >>> gen = SyncGenerator(compile_model(load_model('''
        ... process P { state a, b; init a; trans a -> b { cost 1; }, a -> a { cost 2; }; }
        ... process Q { state c; init c; trans c -> c { time 3; }; }
        ... system sync;''')))
        >>> X = np.array([[0], [0]])
        >>> s = gen.successors(gen.layout.pack(X, np), X)
        >>> s.action.tolist(), s.costs["cost"].tolist(), s.time.tolist(), gen.step_codes()
        ([0, 1], [1, 2], [3, 3], [0, 1])
        """
        cm, xp = self.cm, self.xp
        make_step = self.step if step is None else step
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
        # StepNumbering.number needs, without a sort. The choices are read back through the tree
        # once, at the end (re-indexing every earlier column at every process made the
        # product quadratic in the processes).
        levels: list[list] = []
        tables: list[SyncPairs] = []
        for p in procs:
            pairs = self.pairs(X, F, rows_cache, p.transitions)
            floor_ = (floor(p, rows, _Choices(levels, tables))
                      if floor is not None and rows.shape[0] else None)
            # Row r's pairs are pairs.start[r]:pairs.start[r + 1].
            lo, hi = pairs.start[rows], pairs.start[rows + 1]
            if floor_ is not None:
                # Only transitions numbered ``floor`` or higher: the row's first such pair.
                up = xp.flatnonzero(floor_ > 0)
                lo[up] = pairs.first_at(rows[up], floor_[up])
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
        # contiguous (:meth:`step` reads them column by column): the transpose of a
        # (processes x steps) array.
        C = xp.zeros((L, n), np.int64).T
        taken: list = [None] * L
        idx = None
        for k in range(len(levels) - 1, -1, -1):
            parent, pidx = levels[k]
            taken[k] = pidx if idx is None else pidx[idx]
            C[:, k] = tables[k].tid[taken[k]]
            idx = parent if idx is None else parent[idx]
        code = self.code_words(C)
        Y, err, costs, tm = make_step(X, rows, C, err, (tables, taken))
        nk = self.layout.pack(Y, xp)
        # Step codes are interned on the host (a sorted index of the codes met so far).
        return Successors(rows, xp.asarray(self.numbering.number(to_host(code))), nk, err,
                          costs, tm)

    def pairs(self, X, F, rows_cache, ts) -> SyncPairs:
        """The (row, transition) pairs of the chunk where the transitions ``ts`` of one
        process are enabled, sorted by row, then by the transition's place in ``ts``
        (:class:`SyncPairs`)."""
        xp = self.xp
        T = len(ts)
        if F <= SCALAR_ROWS and xp is np and T:
            got = few_pairs(self.cm, self.tr, self.shared, X, F, rows_cache, ts)
            if got is not None:
                return SyncPairs(*got, max(T, 1))
        found = []
        # A small host chunk asks only the transitions leaving a control state some row is in
        # (a chunk of one or two states asked each of a process's dozens of transitions).
        present = (present_states(self.cm, X, ts)
                   if ts and F <= FEW_ROWS and xp is np else None)
        trans = self.cm.transitions
        for d, tid in enumerate(ts):
            if present is not None and trans[tid].src not in present:
                continue   # no row is in its source state: enabled nowhere
            R, ge = self.tr.enabled(X, tid, rows_cache)
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
        return SyncPairs(prow, place, tid, fault, start, max(T, 1))

    def step(self, X, rows, C, err, pairs=None, unwritten=frozenset()) -> SyncStep:
        """The successors of rows ``rows`` of ``X`` when process ``i`` takes transition
        ``C[:, i]``: the states (slots x steps), faults, costs by resource and times (the
        explorer's rules: costs add up, the time is the maximum, effects run process by
        process, two transitions assigning one global variable go to the error state).

        With ``pairs`` (``(tables, taken)``: each process's :class:`SyncPairs` and the pair
        each step took), a process whose effects read and write only its own variables
        (:meth:`local`) gets its writes, charges and faults computed once per enabled
        (row, transition) pair and gathered into the steps: what it writes cannot depend on
        what the processes before it wrote in the same step; for those in ``unwritten``
        (process indices) only the charges and faults: the caller writes their slots from
        :meth:`pair_effects`. Others take the grouping below."""
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
        digit = self.digits(xp)
        local = self.local()
        for i, p in enumerate(procs):
            ts = p.transitions
            if M == 0:
                continue
            if pairs is not None and local[i]:
                plan.append((p, "pairs", self.pair_effects(X, pairs[0][i], ts),
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
                c, ti, ce = self.tr.charge(tid, X, rows[sub])
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
                writes, eerr = self.tr.ev.effect((tid,))(Y, sub)
                for base, v in getattr(writes, "blocks", ()):
                    Y[base:base + v.shape[0], sub] = v
                for j, v in getattr(writes, "scalars", writes):
                    Y[j][sub] = v
                Y[p.slot][sub] = t.dst
                if eerr is not None:
                    err[sub] |= eerr
        for cnt in writers.values():
            err |= cnt >= 2
        return SyncStep(Y, err, {r: c for r, c in zip(self.res, costs)}, tm)

    def pair_effects(self, X, table: SyncPairs, ts):
        """Per enabled pair of a :meth:`local` process: costs by resource, time,
        faults (guard, charge and effect; or None), the values of the slots its transitions
        write (slot -> values; the old value where a pair's transition leaves it) and the
        control state it goes to."""
        got = table.memo.get("effects")
        if got is not None:
            return got
        got = table.memo["effects"] = self._pair_effects_of(X, table, ts)
        return got

    def _pair_effects_of(self, X, table: SyncPairs, ts):
        xp = self.xp
        P = table.row.shape[0]
        pc = [xp.zeros(P, np.int64) for _ in self.res]
        pt = xp.zeros(P, np.int64)
        pf = table.fault.copy() if table.fault is not None else None
        vals: dict[int, object] = {}
        dst = xp.zeros(P, X.dtype)
        # The places taken by some pair (the others select nothing): all of them on a device
        # or for many pairs, else read off the few pairs (a thin level has one or two).
        places = (range(len(ts)) if xp is not np or P > FEW_ROWS
                  else sorted(set(table.place.tolist())))
        for d in places:
            tid = ts[d]
            if len(places) == 1 and xp is np:
                # One transition for every pair (a thin level's usual case): all of them.
                sel, R = slice(None), table.row
            else:
                sel = xp.flatnonzero(table.place == d)
                if sel.shape[0] == 0:
                    continue
                R = table.row[sel]
            t = self.cm.transitions[tid]
            c, ti, ce = self.tr.charge(tid, X, R)
            for acc, v in zip(pc, c):
                acc[sel] = v
            pt[sel] = ti
            writes, eerr = self.tr.ev.effect((tid,))(X, R)
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

    def local(self) -> list[bool]:
        """Per system process: whether its effects read only its own variables and
        constants and write only its own variables (then a ``system sync`` step's other
        processes cannot change what they read or write; made once)."""
        got = self.shared.get("local")
        if got is None:
            got = [reads_own_only(self.cm, p) for p in self.cm.system_processes]
            self.shared["local"] = got
        return got

    def code_words(self, C) -> np.ndarray:
        """The step codes of choice rows ``C`` (one transition id per system process) as the
        words :meth:`StepNumbering.number` takes (arrays of ``C``'s module)."""
        xp = module_of(C)
        digit = self.digits(xp)
        C = xp.asarray(C, np.int64)
        code = xp.zeros((C.shape[0], len(self.numbering.radix)), np.int64)
        words: dict[int, object] = {}
        for i, (p, word) in enumerate(zip(self.cm.system_processes, self.numbering.word)):
            # Each word built as one contiguous column, then written once.
            d = digit[C[:, i]]
            w = words.get(word)
            words[word] = d if w is None else w * max(1, len(p.transitions)) + d
        for word, w in words.items():
            code[:, word] = w
        return code

    def digits(self, xp):
        """Each transition's place among its process's transitions (its digit in step
        codes), as an array of ``xp``; made once per module."""
        cache = self.shared.setdefault("digits", {})
        if xp not in cache:
            digit = np.zeros(max(len(self.cm.transitions), 1), np.int64)
            for p in self.cm.system_processes:
                digit[np.asarray(p.transitions, np.int64)] = np.arange(len(p.transitions))
            cache[xp] = xp.asarray(digit)
        return cache[xp]


class StepNumbering:
    """The ``system sync`` step codes numbered so far: ``codes`` (Python ints, by id) and
    ``index``, the codes as sorted keys with their ids (see :func:`_code_keys`).

    >>> class P:
    ...     def __init__(self, n): self.transitions = range(n)
    >>> s = StepNumbering([P(2), P(3)])
    >>> s.number(np.array([[5], [1], [5]])).tolist(), s.codes
    ([0, 1, 0], [5, 1])
    >>> n = s.mark(); _ = s.number(np.array([[4]])); s.rewind(n); s.codes
    [5, 1]
    """

    def __init__(self, procs) -> None:
        self.codes: list[int] = []
        self.index: tuple[np.ndarray, np.ndarray] | None = None
        self.word, self.radix = _sync_words(procs)
        #: The code words met so far -> their ids (:meth:`number_few`; None until needed).
        self.lookup: dict[tuple, int] | None = None
        #: How many of the last codes :meth:`number_few` numbered are not in :attr:`index`.
        self.pending = 0

    def mark(self) -> int:
        """How many codes are numbered (for :meth:`rewind`)."""
        return len(self.codes)

    def rewind(self, n: int) -> None:
        """Forget the codes numbered after :meth:`mark` said ``n`` (a chunk undone)."""
        self.sync_index()
        if self.index is not None:
            keys, ids = self.index
            keep = ids < n
            self.index = (keys[keep], ids[keep])
        if self.lookup is not None:
            for c in self.codes[n:]:
                del self.lookup[self.words_of(c)]
        del self.codes[n:]

    def number(self, code: np.ndarray) -> np.ndarray:
        """Action ids of ``system sync`` steps given as code words ``(rows, n_words)``: the
        step codes numbered densely in the order first met, so ids fit int32 however many
        processes there are. The caller gives the steps in (source row, code) order, so a new
        code's id depends only on the first (source state, code) that takes it: the same ids
        whatever the chunk size, as breadth-first numbering needs (new states are numbered
        by (source, action)).

        The words are compared as rows (lexicographic order of the words, the first most
        significant, is the order of the codes) and looked up in :attr:`index`, the codes
        met so far as sorted keys (:func:`_code_keys`); only new codes are turned into Python
        integers, the form ``action_codes`` and :meth:`CompiledModel.sync_choice` use.

        Raises
        ------
        runtime.errors.StepLimitExceeded
            When the chunk brings the number of distinct steps past :data:`MAX_SYNC_STEPS`
            (the ids of the edges are int32); the search attaches the graph found so far.
        """
        if code.shape[0] <= FEW_CODES:
            return self.number_few(code)
        self.sync_index()
        if code.shape[1] == 1:
            uniq, first, inv = np.unique(code[:, 0], return_index=True, return_inverse=True)
            uniq = uniq[:, None]
        else:
            uniq, first, inv = _unique_rows(code)
        keys = _code_keys(uniq)   # sorted, as uniq is
        ids = np.empty(keys.shape[0], np.int64)
        found = np.zeros(keys.shape[0], bool)
        known, known_ids = self.index if self.index is not None else (keys[:0], ids[:0])
        if known.shape[0]:
            pos = np.minimum(np.searchsorted(known, keys), known.shape[0] - 1)
            found = known[pos] == keys
            ids[found] = known_ids[pos[found]]
        # New codes take the next ids in the order of their first step in the chunk.
        new = np.flatnonzero(~found)
        new = new[np.argsort(first[new], kind="stable")]
        if len(self.codes) + new.shape[0] > MAX_SYNC_STEPS:
            raise StepLimitExceeded(MAX_SYNC_STEPS, 0)
        ids[new] = len(self.codes) + np.arange(new.shape[0])
        self.codes.extend(_code_values(uniq[new], self.radix))
        # Into the index, each where it sorts (new[] by key order: ascending positions).
        by_key = np.sort(np.flatnonzero(~found))
        at = np.searchsorted(known, keys[by_key])
        self.index = (np.insert(known, at, keys[by_key]),
                      np.insert(known_ids, at, ids[by_key]))
        if self.lookup is not None:
            for i in np.flatnonzero(~found)[np.argsort(ids[~found], kind="stable")].tolist():
                self.lookup[tuple(uniq[i].tolist())] = int(ids[i])
        return ids[inv.reshape(-1)].astype(np.int32)

    def number_few(self, code: np.ndarray) -> np.ndarray:
        """:meth:`number` of a few steps (a thin level's), by a dictionary of the code words
        met so far (made when first needed): new codes take the next ids in the order of
        their first step, as there; :attr:`index` takes them when a larger chunk comes."""
        lookup = self.lookup
        if lookup is None:
            lookup = self.lookup = {}
            for i, c in enumerate(self.codes):
                lookup[self.words_of(c)] = i
        out = []
        fresh: dict[tuple, int] = {}   # (insertion order: ids ascending)
        base = len(self.codes)
        for w in map(tuple, code.tolist()):
            i = lookup.get(w)
            if i is None:
                i = fresh.get(w)
                if i is None:
                    i = fresh[w] = base + len(fresh)
            out.append(i)
        if fresh:
            if base + len(fresh) > MAX_SYNC_STEPS:
                raise StepLimitExceeded(MAX_SYNC_STEPS, 0)
            lookup.update(fresh)
            self.codes.extend(_code_values(np.array(list(fresh), np.int64).reshape(
                len(fresh), -1), self.radix))
            self.pending += len(fresh)
        return np.array(out, np.int32)

    def sync_index(self) -> None:
        """:attr:`index` brought up to date with the codes :meth:`number_few` numbered."""
        if not self.pending:
            return
        n = len(self.codes)
        words = np.array([self.words_of(c) for c in self.codes[n - self.pending:]],
                         np.int64).reshape(self.pending, -1)
        keys = _code_keys(words)
        ids = np.arange(n - self.pending, n, dtype=np.int64)
        known, known_ids = self.index if self.index is not None else (keys[:0], ids[:0])
        order = np.argsort(keys, kind="stable")
        at = np.searchsorted(known, keys[order])
        self.index = (np.insert(known, at, keys[order]), np.insert(known_ids, at, ids[order]))
        self.pending = 0

    def words_of(self, code: int) -> tuple:
        """The words (a tuple of ints) of step code ``code`` (:func:`_sync_words`).

        >>> class P:
        ...     def __init__(self, n): self.transitions = range(n)
        >>> StepNumbering([P(3), P(1 << 61), P(5)]).words_of((2 * (1 << 61) + 7) * 5 + 4)
        (2, 7, 4)
        """
        out = []
        for r in reversed(self.radix[1:]):
            code, w = divmod(code, r)
            out.append(w)
        out.append(code)
        return tuple(reversed(out))


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



def reads_own_only(cm: CompiledModel, p) -> bool:
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
    if xp is np and counts.shape[0] <= SCALAR_ROWS:
        # A thin level's few parents: the same two arrays from lists.
        parent, off = [], []
        for i, c in enumerate(counts.tolist()):
            parent.extend([i] * c)
            off.extend(range(c))
        return np.array(parent, np.int64), np.array(off, np.int64)
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
    :meth:`SyncGenerator.successors`'s tree of partial steps (``levels``: ``[parent, pair
    index]`` per process; ``tables``: each process's :class:`SyncPairs`)."""

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


#: At most this many steps are numbered by :meth:`StepNumbering.number_few`.
FEW_CODES = 64

#: Chunks of at most this many rows on the host look up the control states present
#: (:func:`~statespace.next_state.few_rows.present_states`) before they ask for the rows of
#: each transition.
FEW_ROWS = 256

#: The largest (rows x transitions) mask :meth:`SyncGenerator.pairs` sorts pairs with; past
#: it, a stable sort of the pairs' rows.
_PAIR_MATRIX = 1 << 25


@dataclass(frozen=True, eq=False)
class SyncPairs:
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
    #: What :meth:`SyncGenerator.pair_effects` computed for these pairs (made once).
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
