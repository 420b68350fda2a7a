"""The symmetry quotient as wrappers of a generator: every successor replaced by its canonical
form.

:class:`QuotientGenerator` wraps an :class:`~statespace.next_state.AsyncGenerator` or
:class:`~statespace.next_state.SyncGenerator`: the steps of members that repeat their
neighbour are left out, every successor is canonicalised
(:func:`statespace.canonical.canonicalize`), and ``system sync`` choices are made per run of
interchangeable members, state by state. :class:`SyncChoiceGenerator` makes the same ``system
sync`` steps for a whole chunk at once, through the inner generator's hooks
(:mod:`statespace.quotient` tells why the result is exact; :mod:`statespace.next_state.counted`
explores the same graph by counting where it can).
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np

from ..canonical import canonicalize, code_dtype, interchangeable, sort_codes_into
from ..symmetry import Symmetry
from .record import Successors

__all__ = ["QuotientGenerator", "SyncChoiceGenerator"]


#: Joint sync choices turned into successor states at a time (bounds the memory of a level).
_SYNC_BATCH = 1 << 14


class QuotientGenerator:
    """A generator over canonical states: the successors of ``inner``'s model, each
    replaced by its canonical form (see :mod:`statespace.quotient`).

    Two ways to avoid generating the steps of members that repeat their neighbour:

    - *swapped rows* (no property process, no rendezvous between two members): only the first
      member of each group moves in the chunk's own rows; for every other member ``p`` that is
      not interchangeable with ``p - 1`` the row is added once more with members 0 and ``p``
      swapped (keys renamed), where again only member 0 moves. Every step of ``p`` in a state
      is a step of member 0 in the swapped state, up to that transposition, which the
      canonical form forgets. The cost per chunk is then that of one member, not of ``n``.
    - otherwise, *skipping*: each member's transitions are evaluated, but not in the rows
      where it equals the member before it.
    """

    def __init__(self, inner, sym: Symmetry) -> None:
        cm = inner.cm
        self.inner, self.cm, self.sym = inner, cm, sym
        self.kind, self.layout, self.res = inner.kind, inner.layout, inner.res
        self.charge_table = inner.charge_table
        group_of = {p: gi for gi, g in enumerate(sym.groups) for p in g.processes}
        pairs = [(cm.transitions[a.transitions[0]].process,
                  cm.transitions[a.transitions[1]].process)
                 for a in cm.actions if a.kind == "rendezvous"]
        same_group = any(group_of.get(x, -1) >= 0 and group_of.get(x) == group_of.get(y, -2)
                         for x, y in pairs)
        two_members = any(x in group_of and y in group_of for x, y in pairs)
        # Skipping needs no rendezvous inside a group (the skipped member may be the partner);
        # swapping also needs none between groups and no property process.
        self.skip_ok = not same_group and cm.system == "async"
        self.swap_ok = not two_members and cm.property_process is None and cm.system == "async"
        self.position = {p: (gi, pos) for gi, g in enumerate(sym.groups)
                         for pos, p in enumerate(g.processes)}
        self.movers: frozenset[int] = frozenset()
        if self.swap_ok:
            # For each group: the action ids that move its member 0, and for each of those the
            # same action taken by member p instead.
            action_of = {a.transitions: i for i, a in enumerate(cm.actions)}
            self.lead_group = np.full(max(len(cm.actions), 1), -1, np.int64)
            self.relabel = []
            for gi, g in enumerate(sym.groups):
                lead = g.processes[0]
                local = {tid: j for j, tid in enumerate(cm.processes[lead].transitions)}
                acts = [i for i, a in enumerate(cm.actions)
                        if any(cm.transitions[t].process == lead for t in a.transitions)]
                table = np.zeros((g.size, len(cm.actions)), np.int64)
                for i in acts:
                    self.lead_group[i] = gi
                    trs = cm.actions[i].transitions
                    for pos, p in enumerate(g.processes):
                        tl = cm.processes[p].transitions
                        table[pos, i] = action_of[tuple(
                            tl[local[t]] if t in local else t for t in trs)]
                self.relabel.append(table)
            # Control states from which a member has a transition at all.
            self.active = []
            for g in sym.groups:
                lead = cm.processes[g.processes[0]]
                self.active.append(np.array(sorted({cm.transitions[t].src
                                                    for t in lead.transitions}), np.int64))
            self.movers = frozenset(g.processes[0] for g in sym.groups)

    def canon_keys(self, keys: np.ndarray) -> np.ndarray:
        """The keys of the canonical forms of the states ``keys``."""
        X = self.layout.unpack(keys, np, dtype=np.int64)
        return self.layout.pack(canonicalize(self.sym, X, copy=False), np)

    # ------------------------------------------------------------------ the interface
    #: The search hides the error state from this generator (as from the inner one).
    hides_error = True

    def at(self, xp):
        """This generator (the quotient is explored with NumPy whatever the search's
        module)."""
        return self

    def n_actions(self) -> int:
        """The inner generator's action ids."""
        return self.inner.n_actions()

    def action_codes(self):
        """The inner generator's step codes (None for ``system async``)."""
        return self.inner.action_codes()

    def mark(self) -> int:
        """The inner generator's :meth:`mark`."""
        return self.inner.mark()

    def rewind(self, mark: int) -> None:
        """The inner generator's :meth:`rewind`."""
        self.inner.rewind(mark)

    def initial_key(self):
        """The key of the canonical form of the initial state."""
        return self.canon_keys(self.inner.initial_key())

    def error_key(self):
        """The key of the error state."""
        return self.inner.error_key()

    def unpack(self, keys, xp):
        """The state matrix of ``keys`` (as the inner generator's)."""
        return self.inner.unpack(keys, xp)

    def successors(self, keys, X) -> Successors:
        """The steps of the chunk, each successor canonical (see the class docstring)."""
        if self.cm.system == "sync":
            return self._successors_sync(X, keys)
        return self._successors_async(X, keys)

    @property
    def still(self) -> frozenset:
        """The members that take no step of their own (swap mode: all but each group's
        member 0, whose steps the swapped rows make)."""
        if not self.movers:
            return frozenset()
        return frozenset(p for p in self.position if p not in self.movers)

    def _swapped_rows(self, X):
        """The rows to add: (state matrix, source row, group, member position) of each member
        that is not interchangeable with the one before it and has some transition."""
        red = interchangeable(self.sym, X)
        mats, rows_l, groups_l, pos_l = [], [], [], []
        for gi, g in enumerate(self.sym.groups):
            M = np.asarray(g.member_slots)
            pcs = X[M[:, 0]]                                    # (n, rows)
            want = np.isin(pcs, self.active[gi])
            for pos in range(1, g.size):
                want[pos] &= ~red[g.processes[pos]]
            want[0] = False
            ps, rows = np.nonzero(want)
            if rows.shape[0] == 0:
                continue
            Xe = np.take(X, rows, axis=1)   # C order, one copy (see SyncGenerator.step)
            cols = np.arange(rows.shape[0])
            for j in range(M.shape[1]):
                Xe[M[0, j], cols] = X[M[ps, j], rows]
                Xe[M[ps, j], cols] = X[M[0, j], rows]
            if g.key_slots:
                keys = np.asarray(g.keys, dtype=np.int64)
                k0, kp = keys[0], keys[ps]
                for j in g.key_slots:
                    v = X[j, rows].astype(np.int64)
                    Xe[j] = np.where(v == k0, kp, np.where(v == kp, k0, v))
            mats.append(Xe)
            rows_l.append(rows)
            groups_l.append(np.full(rows.shape[0], gi, np.int64))
            pos_l.append(ps)
        if not mats:
            return None
        return (np.concatenate(mats, axis=1), np.concatenate(rows_l),
                np.concatenate(groups_l), np.concatenate(pos_l))

    def _successors_async(self, X, keys):
        inner = self.inner
        if not self.swap_ok:
            # Computed on the rows as they are (the error state's are hidden as -1 already).
            skip = interchangeable(self.sym, X) if self.skip_ok else None
            out = inner.successors(keys, X, still=self.still, skip=skip)
            if len(out):
                out = out.replace(keys=self.canon_keys(out.keys))
            return out
        F = X.shape[1]
        extra = self._swapped_rows(X)
        if extra is not None:
            Xe, rows, grp, pos = extra
            X = np.concatenate([X, Xe.astype(X.dtype)], axis=1)
            keys = np.concatenate([keys, self.layout.pack(Xe, np)])
        out = inner.successors(keys, X, still=self.still)
        src, act, nkeys, err, costs, tim = (out.source, out.action, out.keys, out.error,
                                            out.costs, out.time)
        if extra is not None and src.shape[0]:
            ext = src >= F
            if ext.any():
                k = src[ext] - F
                a = act[ext].astype(np.int64)
                # A swapped row keeps only the steps of its group's member 0 (the others are the
                # original row's), renamed to the member that was swapped in.
                keep = self.lead_group[a] == grp[k]
                idx = np.flatnonzero(ext)
                drop = idx[~keep]
                idx, k, a = idx[keep], k[keep], a[keep]
                new_act = act.copy()
                new_src = src.copy()
                for gi, table in enumerate(self.relabel):
                    sel = grp[k] == gi
                    if sel.any():
                        new_act[idx[sel]] = table[pos[k[sel]], a[sel]]
                new_src[idx] = rows[k]
                alive = np.ones(src.shape[0], bool)
                alive[drop] = False
                src, act = new_src[alive], new_act[alive]
                nkeys, err = nkeys[alive], err[alive]
                if costs is not None:   # (None: constant charges, read from the action)
                    tim = tim[alive]
                    costs = {r: c[alive] for r, c in costs.items()}
        if src.shape[0]:
            nkeys = self.canon_keys(nkeys)
        return Successors(src, act, nkeys, err, costs, tim)

    # ------------------------------------------------------------------ system sync
    def _successors_sync(self, X, keys):
        """``system sync`` steps per class: in each state, the members of a run of
        interchangeable members (equal local vectors, nobody referring to them) choose their
        transitions as a multiset (``k + 1`` ways for ``k`` members and two branches, not
        ``2^k``); everyone else chooses one by one. The multiset's choices go to the run's
        members in order; any other assignment is the same state up to a permutation of the
        run, with the same (cost, time)."""
        cm = self.cm
        F = X.shape[1]
        procs = cm.system_processes
        rows_cache: dict = {}
        en: dict[int, np.ndarray] = {}
        er: dict[int, np.ndarray] = {}
        for p in procs:
            for tid in p.transitions:
                R, ge = self.inner.enabled(X, tid, rows_cache)
                m = np.zeros(F, bool)
                m[R] = True
                en[tid] = m
                if ge is not None:
                    e = np.zeros(F, bool)
                    e[R] = ge
                    er[tid] = e
        red = interchangeable(self.sym, X)
        col = {p.index: i for i, p in enumerate(procs)}
        prev_member = {g.processes[k]: g.processes[k - 1]
                       for g in self.sym.groups for k in range(1, g.size)}
        en_rows = {tid: m.tolist() for tid, m in en.items()}
        red_rows = {p: m.tolist() for p, m in red.items()}
        pc0 = X[0].tolist() if procs else []
        out_rows: list[int] = []
        out_choice: list[list[int]] = []
        parts: list[tuple] = []
        for r in range(F):
            if procs and pc0[r] < 0:
                continue   # the error state has no successors
            units: list[list] = []
            unit_of: dict[int, int] = {}
            for p in procs:
                prev = prev_member.get(p.index)
                if prev is not None and red_rows[p.index][r]:
                    u = unit_of[prev]
                    units[u][0].append(p.index)
                else:
                    u = len(units)
                    units.append([[p.index], p])
                unit_of[p.index] = u
            options = []
            for members, lead in units:
                js = [j for j, tid in enumerate(lead.transitions) if en_rows[tid][r]]
                if not js:
                    options = None
                    break
                options.append([(j,) for j in js] if len(members) == 1 else
                               list(itertools.combinations_with_replacement(js, len(members))))
            if options is None:
                continue
            for combo in itertools.product(*options):
                ch = [0] * len(procs)
                for (members, _), js in zip(units, combo):
                    for pi, j in zip(members, js):
                        ch[col[pi]] = cm.processes[pi].transitions[j]
                out_rows.append(r)
                out_choice.append(ch)
            if len(out_rows) >= _SYNC_BATCH:
                # Successors are built a batch at a time: a choice row and a state column per
                # successor would otherwise take memory in proportion to the whole level.
                parts.append(self._sync_batch(X, out_rows, out_choice, er))
                out_rows, out_choice = [], []
        if out_rows:
            parts.append(self._sync_batch(X, out_rows, out_choice, er))
        if not parts:
            e64 = np.zeros(0, np.int64)
            return Successors(e64, np.zeros(0, np.int32),
                              np.zeros((0, self.layout.n_words), np.uint64),
                              np.zeros(0, bool), {r: e64 for r in self.res}, e64)
        return Successors.join(parts)

    def _sync_batch(self, X, out_rows, out_choice, er):
        """Successor keys (canonical), step ids, faults, costs and times of the choices
        ``out_choice`` made in rows ``out_rows`` of ``X``."""
        procs = self.cm.system_processes
        rows = np.asarray(out_rows, np.int64)
        C = np.asarray(out_choice, np.int64).reshape(len(out_rows), len(procs))
        err = np.zeros(rows.shape[0], bool)
        for i, p in enumerate(procs):
            for tid in p.transitions:
                if tid in er:
                    sub = np.flatnonzero(C[:, i] == tid)
                    err[sub] |= er[tid][rows[sub]]
        Y, err, costs, tm = self.inner.step(X, rows, C, err)
        nk = self.canon_keys(self.layout.pack(Y, np))
        return Successors(rows, self.inner.number_steps(C), nk, err, costs, tm)


#: Members with at most this many enabled pairs each have their sort codes made in Python
#: (:meth:`SyncChoiceGenerator._canon_from_pairs`).
FEW_PAIRS = 16

#: The widest sort code :meth:`SyncChoiceGenerator._canon_from_pairs` packs (an int64's bits
#: less a sign bit and a spare).
_CODE_BITS = 62


class SyncChoiceGenerator(QuotientGenerator):
    """The ``system sync`` quotient with the joint choices made per class, for all the
    states of a chunk at once.

    A run of interchangeable members (equal local vectors, no key-holding slot referring to
    them: :func:`statespace.canonical.interchangeable`) chooses its transitions as a
    multiset: when ``k`` members have ``b`` enabled transitions, ``C(k + b - 1, k)`` steps
    (how many of the ``k`` take each branch), not ``b^k``. The steps are those of
    :meth:`SyncGenerator.successors <statespace.next_state.SyncGenerator.successors>`, the
    product built one process at a time over the whole chunk, where a member standing in the
    run of the member before it keeps only the choices numbered no lower than that member's
    (:meth:`_floor`): the non-decreasing assignments, one per multiset. Costs add up and
    the time is the maximum over the moving processes as there (:meth:`_step`), and every
    distinct step stays an edge of its own, so parallel edges keep their (cost, time).

    The steps, their order and so the graph are those of the sorting explorer's per-state
    loop (:class:`QuotientGenerator`'s: the multisets of
    ``itertools.combinations_with_replacement`` in product order, which is the order of the
    step codes), without its Python work per state: editor with four workers and 8 users,
    4.4 s -> 1.1 s of exploration. Successors are canonicalised as there, before they are packed.
    """

    def __init__(self, inner, sym: Symmetry) -> None:
        super().__init__(inner, sym)
        cm = inner.cm
        column = {p.index: i for i, p in enumerate(cm.system_processes)}
        #: process index -> the column of the member before it in its group.
        self.prev_column = {g.processes[k]: column[g.processes[k - 1]]
                            for g in sym.groups for k in range(1, g.size)}
        self.digit = inner.digits(np)   # each transition's place in its process
        self.red: dict[int, np.ndarray] = {}
        self.fusable: list[bool] | None = None   # (made when first needed)

    def successors(self, keys, X) -> Successors:
        """The inner generator's steps, one per multiset of the choices of interchangeable
        members (:meth:`_floor`), each successor canonical (:meth:`_step`)."""
        self.red = interchangeable(self.sym, X)
        try:
            return self.inner.successors(keys, X, floor=self._floor, step=self._step)
        finally:
            self.red = {}

    def _step(self, X, rows, C, err, pairs=None):
        # The successors canonicalised before they are packed (not packed, unpacked, sorted
        # and packed again). A group whose members' effects are their own (the explorer's
        # per-pair path) gets its members' sort codes from their pairs' local vectors, one
        # gather per member (:meth:`_canon_from_pairs`), not written into the steps and read
        # back column by column.
        if self.fusable is None and pairs is not None and rows.shape[0]:
            self.fusable = self._fusable()
        fused = [gi for gi, ok in enumerate(self.fusable) if ok] \
            if pairs is not None and rows.shape[0] else []
        skip = frozenset(p for gi in fused for p in self.sym.groups[gi].processes)
        Y, err, costs, tm = self.inner.step(X, rows, C, err, pairs, skip)
        rest = [g for gi, g in enumerate(self.sym.groups) if gi not in fused]
        for gi in fused:
            self._canon_from_pairs(self.sym.groups[gi], X, Y, pairs)
        if rest:
            canonicalize(dataclasses.replace(self.sym, groups=tuple(rest)), Y, copy=False)
        return Y, err, costs, tm

    def _fusable(self) -> list[bool]:
        """Per group: its members' effects read and write only their own variables, and a
        member's slots are its control state and its variables (no channel, no cell of an
        array indexed by keys)."""
        cm = self.cm
        local = self.inner.local()
        column = {p.index: i for i, p in enumerate(cm.system_processes)}
        got = []
        for g in self.sym.groups:
            ok = all(local[column[p]] for p in g.processes)
            for p, row in zip(g.processes, g.member_slots):
                proc = cm.processes[p]
                own = [proc.slot]
                for v in sorted((v for v in cm.variables.values()
                                 if v.owner == proc.name and not v.is_const),
                                key=lambda v: v.base):
                    own.extend(range(v.base, v.base + (v.size or 1)))
                ok = ok and list(row) == own
            got.append(ok)
        return got

    def _canon_from_pairs(self, g, X, Y, pairs) -> None:
        """Canonicalise group ``g`` of the steps ``Y`` (whose member slots were not written)
        from each member's enabled pairs: the local vector each pair leads to, packed into a
        sort code at the pairs (few), gathered by the pair each step took, sorted and decoded
        into ``Y`` (:func:`statespace.canonical.sort_codes_into`)."""
        cm = self.cm
        tables, taken = pairs
        column = {p.index: i for i, p in enumerate(cm.system_processes)}
        n, w = len(g.processes), len(g.member_slots[0])
        vecs = []          # per member: per column, the value each pair leads to
        for p, row in zip(g.processes, g.member_slots):
            c = column[p]
            t = tables[c]
            _, _, _, vals, dst = self.inner.pair_effects(X, t, cm.processes[p].transitions)
            vecs.append([dst] + [vals[s] if s in vals else X[s][t.row] for s in row[1:]])
        few = all(v[0].shape[0] <= FEW_PAIRS for v in vecs)
        if few:
            # A thin level's few pairs: their values as Python lists (two array reductions
            # per member and slot, and three passes each to pack, were most of the cost).
            vecs = [[c.tolist() for c in v] for v in vecs]
        fields, constant, bits = [], [], 0
        for j in range(w - 1, -1, -1):       # the last slot least significant
            if few:
                col = [x for v in vecs for x in v[j]]
                lo, hi = min(col), max(col)
            else:
                lo = min(int(v[j].min()) for v in vecs if v[j].shape[0])
                hi = max(int(v[j].max()) for v in vecs if v[j].shape[0])
            if hi > lo:
                width = (hi - lo).bit_length()
                fields.append((j, lo, bits, width))
                bits += width
            else:
                constant.append((j, lo))
        if bits + len(g.key_slots) > _CODE_BITS:
            # Too wide for one code: the members' slots written, then sorted as any group.
            for i, (p, row) in enumerate(zip(g.processes, g.member_slots)):
                for j, s in enumerate(row):
                    Y[s] = np.asarray(vecs[i][j])[taken[column[p]]]
            canonicalize(dataclasses.replace(self.sym, groups=(g,)), Y, copy=False)
            return
        dt = code_dtype(bits + len(g.key_slots))
        code = np.empty((n, Y.shape[1]), dt)
        for i, p in enumerate(g.processes):
            if few:
                v = vecs[i]
                at = np.array([sum((v[j][k] - lo) << shift for j, lo, shift, _ in fields)
                               for k in range(len(v[0]))], np.int64)
            else:
                at = np.zeros(vecs[i][0].shape[0], np.int64)
                for j, lo, shift, _ in fields:
                    at |= (vecs[i][j].astype(np.int64) - lo) << shift
            np.take(at.astype(dt), taken[column[p]], out=code[i])
        sort_codes_into(g, Y, code, fields, bits, constant)

    def _floor(self, p, rows, choice):
        c = self.prev_column.get(p.index)
        red = self.red.get(p.index)
        if c is None or red is None:
            return None
        return np.where(red[rows], self.digit[choice[c]], 0)
