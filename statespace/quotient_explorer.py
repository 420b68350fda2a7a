"""The explorer of the quotient by sorting: every successor replaced by its canonical form.

:class:`QuotientExplorer` is :class:`~statespace.explore.Explorer` with each successor
canonicalised (:func:`statespace.symmetry.canonicalize`), the steps of members that repeat
their neighbour left out, and ``system sync`` choices made per run of interchangeable members
(:mod:`statespace.quotient` tells why the result is exact;
:mod:`statespace.counting` explores the same graph by counting where it can).
"""

from __future__ import annotations

import itertools

import numpy as np

from .explore import Explorer
from .symmetry import Symmetry, canonicalize, interchangeable

__all__ = ["QuotientExplorer"]


#: Joint sync choices turned into successor states at a time (bounds the memory of a level).
_SYNC_BATCH = 1 << 14


class QuotientExplorer(Explorer):
    """The explorer over canonical states (see :mod:`statespace.quotient`).

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

    def __init__(self, cm, sym: Symmetry, *args, **kwargs) -> None:
        super().__init__(cm, *args, **kwargs)
        self.sym = sym
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
        self.skip: dict[int, np.ndarray] = {}
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
        self.init_key = self._canon_keys(self.init_key)

    def _canon_keys(self, keys: np.ndarray) -> np.ndarray:
        X = self.layout.unpack(keys, np, dtype=np.int64)
        return self.layout.pack(canonicalize(self.sym, X, copy=False), np)

    def _enabled(self, X, F, rows_cache, allowed, tid):
        proc = self.cm.transitions[tid].process
        if self.movers and proc in self.position and proc not in self.movers:
            return np.zeros(0, np.int64), None
        r, gerr = super()._enabled(X, F, rows_cache, allowed, tid)
        mask = self.skip.get(proc)
        if mask is not None and r.shape[0]:
            keep = ~mask[r]
            if not keep.all():
                r = r[keep]
                gerr = gerr[keep] if gerr is not None else None
        return r, gerr

    def _still(self) -> frozenset:
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
            Xe = np.take(X, rows, axis=1)   # C order, one copy (see Explorer._step_sync)
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
        if not self.swap_ok:
            if self.skip_ok:
                # Computed on the rows as they are (the error state's are hidden as -1 already).
                self.skip = interchangeable(self.sym, X)
            out = super()._successors_async(X, keys, self._still(), self.skip)
            self.skip = {}
            src, act, nkeys, err, costs, tim = out
            if src.shape[0]:
                nkeys = self._canon_keys(nkeys)
            return src, act, nkeys, err, costs, tim
        F = X.shape[1]
        extra = self._swapped_rows(X)
        if extra is not None:
            Xe, rows, grp, pos = extra
            X = np.concatenate([X, Xe.astype(X.dtype)], axis=1)
            keys = np.concatenate([keys, self.layout.pack(Xe, np)])
        src, act, nkeys, err, costs, tim = super()._successors_async(X, keys, self._still())
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
            nkeys = self._canon_keys(nkeys)
        return src, act, nkeys, err, costs, tim

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
                R, ge = Explorer._enabled(self, X, F, rows_cache, None, tid)
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
            return (e64, np.zeros(0, np.int32), np.zeros((0, self.W), np.uint64),
                    np.zeros(0, bool), {r: e64 for r in self.res}, e64)
        if len(parts) == 1:
            return parts[0]
        return (np.concatenate([q[0] for q in parts]), np.concatenate([q[1] for q in parts]),
                np.concatenate([q[2] for q in parts]), np.concatenate([q[3] for q in parts]),
                {r: np.concatenate([q[4][r] for q in parts]) for r in self.res},
                np.concatenate([q[5] for q in parts]))

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
        Y, err, costs, tm = self._step_sync(X, rows, C, err)
        nk = self._canon_keys(self.layout.pack(Y, np))
        return rows, self._intern_choices(C), nk, err, costs, tm
