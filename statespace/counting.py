"""The quotient explored by counting: a class as counts of local states, not a sorted vector.

:class:`CountedExplorer` explores the same graph as the quotient explorer of
:mod:`statespace.quotient` (same classes, same representatives, same edges and labels), but a
class costs it the number of *distinct* local vectors of its members, not their number. In a
canonical state (:func:`statespace.symmetry.canonicalize`) the members of a group that no
key-holding slot refers to come first, sorted by local vector, then the referred ones. So the
canonical state is fixed by

- the slots outside the groups (key values as the canonical state holds them);
- per group, the *window*: the local vectors of the referred members, in canonical order (at
  most one per key-holding slot);
- per group, how many unreferred members hold each local vector (the *counts*).

That is the compact key kept in the visited set. To expand a class, a narrow state matrix is
built for each *mover*: the first member of each run of equal unreferred local vectors and each
referred member, swapped to position 0 as the swap mode of the quotient explorer does. Only the
slots outside the groups, position 0 and the window are filled in: nothing else can be read. A
process outside the groups has no name for an instance and no key literal (no family of
transitions), so it reaches members only through key values it holds, i.e. referred members; a
member reads its own slots and what others hold. A successor's class is then the counts
minus the mover plus what position 0 and the window hold after the step: ``O(distinct local
vectors + window)`` per successor where the sorted vector costs ``O(n log n)``.

Where these conditions do not hold (``system sync``, a property process, committed states, a
rendezvous between two members, families of transitions, local vectors wider than 62 bits),
:func:`counted_plan` returns ``None`` and the quotient explorer does the work. A ``system
sync`` model goes to :class:`SyncChoiceExplorer`, which makes the joint choices of
interchangeable members per class (how many take each branch) for a whole chunk at once. When a class has
more distinct local vectors than the layout counts, :class:`CountingOverflow` is raised and the
caller starts over with a wider layout.

Examples
--------
>>> from dve import load_model
>>> from statespace.quotient import build_quotient_graph
>>> src = '''
... channel req;
... process Server { byte who; state idle, busy; init idle;
...     trans idle -> busy { sync req?who; cost 1; }, busy -> idle { effect who = 0; }; }
... process Client(key id) { state a, b; init a;
...     trans a -> b { sync req!id; }, b -> a { guard Server->who != id; cost 2; }; }
... for (k : 1 .. 40) { process Client(k); }
... system async;'''
>>> q = build_quotient_graph(load_model(src))
>>> q.graph.n_states, q.counted, q.full_size() == 21 * 2**40
(81, True, True)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from .explore import Explorer
from .model import CompiledModel
from .quotient_explorer import QuotientExplorer
from .store import KeyLayout, VisitedSet
from .symmetry import Symmetry, canonicalize, code_dtype, interchangeable, sort_codes_into

__all__ = ["CountedExplorer", "CountingOverflow", "Counts", "SyncChoiceExplorer", "counted_plan",
           "counted_orbit_total", "explore_counted"]

#: Distinct local vectors per group that the first layout counts (four times more on
#: each overflow).
FIRST_WIDTH = 8
#: The widest layout tried before giving up on counting.
MAX_WIDTH = 256
#: Classes' representatives are kept in full in the graph up to this many bytes.
FULL_STATES_BYTES = 1 << 28


class CountingOverflow(Exception):
    """A class has more distinct local vectors in a group than the layout counts."""


class _NotCountable(Exception):
    """The model is not one :func:`counted_plan` accepts."""


class _Untracked(Exception):
    """A step touched a member outside position 0 and the window (cannot happen when the
    conditions of :func:`counted_plan` hold; checked, not assumed)."""


def counted_plan(ex: QuotientExplorer) -> dict | None:
    """Whether the quotient of ``ex`` can be explored by counting, and the layout facts it
    needs; ``None`` when it cannot (see the module docstring)."""
    cm, sym = ex.cm, ex.sym
    if (cm.system != "async" or not ex.swap_ok or ex.gen.has_commit or sym.families
            or not sym.groups or ex.error_successors):
        return None
    groups = []
    for g in sym.groups:
        M = np.asarray(g.member_slots)
        lo = np.array([cm.slots[s].lo for s in M[0]], np.int64)
        hi = np.array([cm.slots[s].hi for s in M[0]], np.int64)
        for row in M[1:]:
            if (np.array([cm.slots[s].lo for s in row]) != lo).any() or \
                    (np.array([cm.slots[s].hi for s in row]) != hi).any():
                return None
        bits = np.array([max(1, int(h - l).bit_length()) for l, h in zip(lo, hi)], np.int64)
        if bits.sum() + len(g.key_slots) > 62:
            return None
        # Slot 0 of the local vector most significant: codes sort as canonicalize sorts.
        off = np.concatenate([np.cumsum(bits[::-1])[::-1][1:], [0]]).astype(np.int64)
        groups.append({"M": M, "lo": lo, "bits": bits, "off": off,
                       "cbits": int(bits.sum()), "R": len(g.key_slots),
                       "keys": np.asarray(g.keys, np.int64)})
    member = {int(s) for G in groups for s in G["M"].ravel()}
    nm = [j for j in range(cm.n_slots) if j not in member]
    return {"groups": groups, "nm": nm}


class CountedExplorer(QuotientExplorer):
    """The quotient explorer with classes kept as counts (see the module docstring)."""

    def __init__(self, cm: CompiledModel, sym: Symmetry, width: int, *args) -> None:
        super().__init__(cm, sym, *args)
        plan = counted_plan(self)
        if plan is None:
            raise _NotCountable()
        self.plan = plan
        self.width = width
        self.err_pc = -1          # the error state is recognised by its key (_successors_async)
        gs = plan["groups"]
        self.nm = np.asarray(plan["nm"], np.int64)
        lo = [cm.slots[j].lo for j in plan["nm"]]
        hi = [cm.slots[j].hi for j in plan["nm"]]
        self.win_at, self.cnt_at = [], []
        for g, G in zip(sym.groups, gs):
            self.win_at.append(len(lo))
            lo += [0] * G["R"]
            hi += [(1 << G["cbits"])] * G["R"]            # code + 1; 0: no member there
            self.cnt_at.append(len(lo))
            lo += [0] * width
            hi += [g.size] * width
        self.full_layout = self.layout
        self.layout = KeyLayout.from_bounds(lo, hi)
        self.W = self.layout.n_words
        self.visited = VisitedSet(self.W, key_bits=sum(self.layout.bits))
        # Interned local vectors: per group, the codes by id, and id by code.
        self.codes: list[list[int]] = [[] for _ in gs]
        self.ids: list[dict[int, int]] = [{} for _ in gs]
        self.nm_index = {int(j): i for i, j in enumerate(plan["nm"])}
        self.owner = {}          # member slot -> (group, position, column)
        for gi, G in enumerate(gs):
            for pos, row in enumerate(G["M"]):
                for col, s in enumerate(row):
                    self.owner[int(s)] = (gi, pos, col)
        # The processes whose transitions are tried: those outside the groups and each
        # group's member 0 (the others move through the movers' rows).
        self.lead_of = {g.processes[0]: gi for gi, g in enumerate(sym.groups)}
        members = {p for g in sym.groups for p in g.processes}
        self.acting = [p for p in cm.system_processes
                       if p.index not in members or p.index in self.lead_of]
        X0 = np.array(cm.initial, np.int64).reshape(-1, 1)
        self.init_key = self.layout.pack(self._compact_of_full(X0), np)
        self.err_key = self.layout.pack(
            self._compact_of_full(np.array(cm.error_state, np.int64).reshape(-1, 1)), np)

    # ------------------------------------------------------------------ codes
    def _intern(self, gi: int, codes: np.ndarray) -> np.ndarray:
        """Ids of local-vector codes of group ``gi`` (new codes get the next ids)."""
        if codes.shape[0] == 0:
            return np.zeros(0, np.int64)
        uniq, inv = np.unique(codes, return_inverse=True)
        table = self.ids[gi]
        out = np.empty(uniq.shape[0], np.int64)
        for k, c in enumerate(uniq.tolist()):
            i = table.get(c)
            if i is None:
                i = table[c] = len(self.codes[gi])
                self.codes[gi].append(c)
                if i >= self.width:
                    raise CountingOverflow(self.width)
            out[k] = i
        return out[inv.reshape(-1)]

    def _code(self, gi: int, V: np.ndarray) -> np.ndarray:
        """Codes of local vectors ``V`` (columns x rows)."""
        G = self.plan["groups"][gi]
        c = np.zeros(V.shape[1], np.int64)
        for col in range(V.shape[0]):
            c |= (V[col].astype(np.int64) - G["lo"][col]) << G["off"][col]
        return c

    def _vector(self, gi: int, codes: np.ndarray) -> np.ndarray:
        """Local vectors (columns x rows) of ``codes``."""
        G = self.plan["groups"][gi]
        out = np.empty((len(G["lo"]), codes.shape[0]), np.int64)
        for col in range(len(G["lo"])):
            out[col] = ((codes >> G["off"][col]) & ((1 << int(G["bits"][col])) - 1)) \
                + G["lo"][col]
        return out

    # ------------------------------------------------------------------ full <-> compact
    def _compact_of_full(self, X: np.ndarray) -> np.ndarray:
        """Compact columns of full states ``X`` (slots x rows; canonicalised here)."""
        Y = canonicalize(self.sym, X)
        k = Y.shape[1]
        C = np.zeros((len(self.layout.bits), k), np.int64)
        C[:len(self.nm)] = Y[self.nm]
        for gi, (g, G) in enumerate(zip(self.sym.groups, self.plan["groups"])):
            M, n = G["M"], g.size
            held = np.zeros((n, k), bool)
            for j in g.key_slots:
                held |= Y[j][None, :] == G["keys"][:, None]
            for r in range(k):
                codes = self._code(gi, Y[M.T, r])
                nref = int(held[:, r].sum())
                assert not held[: n - nref, r].any()
                win = codes[n - nref:]
                C[self.win_at[gi]: self.win_at[gi] + nref, r] = win + 1
                ids = self._intern(gi, codes[: n - nref])
                C[self.cnt_at[gi]: self.cnt_at[gi] + self.width, r] = \
                    np.bincount(ids, minlength=self.width)[: self.width]
        return C

    # ------------------------------------------------------------------ the driver's hooks
    def _record_new(self, keys, parent, parent_action, level) -> None:
        C = self.layout.unpack(keys, np, dtype=np.int64)
        self.pending.append((keys, C))
        self.states.append(np.ascontiguousarray(C.T))
        self.parent.append(parent)
        self.parent_action.append(parent_action)
        self.level.append(level)
        self.bytes_out += self.states[-1].nbytes + parent.nbytes + parent_action.nbytes + \
            level.nbytes
        self.n_recorded += keys.shape[0]

    def _finish(self, complete: bool):
        n = self.n_recorded if complete else self.mark[0]
        compact = np.concatenate(self.states) if self.states else \
            np.zeros((0, len(self.layout.bits)), np.int64)
        compact = compact[:n]
        groups = []
        for gi, (g, G) in enumerate(zip(self.sym.groups, self.plan["groups"])):
            groups.append({**G, "codes": np.asarray(self.codes[gi], np.int64), "n": g.size,
                           "win_at": self.win_at[gi], "cnt_at": self.cnt_at[gi]})
        small = n * self.cm.n_slots * np.dtype(self.sdtype).itemsize <= FULL_STATES_BYTES
        self.counts = Counts(compact, tuple(groups), self.nm, self.width, self.cm.n_slots,
                             np.dtype(self.sdtype), self.error_id if self.error_id < n else -1)
        # The graph's states: the representatives in full when they fit FULL_STATES_BYTES;
        # beyond, rows of no slot (Quotient.representatives materialises the ones asked for).
        # A broadcast zero (no memory) stands in while the driver assembles the graph.
        self.states = [self.counts.states() if small else
                       np.broadcast_to(np.zeros((1, 1), self.sdtype), (n, self.cm.n_slots))]
        g = super()._finish(complete)
        if not small:
            g = g.replace(states=np.zeros((n, 0), self.sdtype))   # (costs stay compact)
        return g

    # ------------------------------------------------------------------ successors
    def _successors_async(self, C, keys):
        F = C.shape[1]
        gs = self.plan["groups"]
        live = ~(keys == self.err_key[0]).all(axis=1)      # the error state: no successors
        states = np.flatnonzero(live)
        # Per group: counts (F x V) in code order, window codes (F x R, -1 absent), r.
        info = []
        for gi, (g, G) in enumerate(zip(self.sym.groups, gs)):
            codes = np.asarray(self.codes[gi], np.int64)
            order = np.argsort(codes, kind="stable")
            V = len(codes)
            cnt = C[self.cnt_at[gi]: self.cnt_at[gi] + V].T                    # by id
            win = C[self.win_at[gi]: self.win_at[gi] + G["R"]].T - 1
            r = (win >= 0).sum(axis=1)
            free = g.size - r
            # Position of the first member of each run (by id), and of position 0's member.
            cum = np.zeros((F, V), np.int64)
            if V:
                cum[:, order] = np.cumsum(cnt[:, order], axis=1) - cnt[:, order]
            first_id = np.full(F, -1, np.int64)
            if V:
                pres = cnt[:, order] > 0
                has = pres.any(axis=1)
                first_id[has] = order[np.argmax(pres[has], axis=1)]
            info.append({"cnt": cnt, "win": win, "r": r, "free": free, "cum": cum,
                         "first": first_id, "codes": codes, "order": order})
        # Rows: the state, the group whose mover is swapped to position 0 (-1: the base row,
        # position 0's own member in every group), and the mover's position.
        row_state = [states]
        row_group = [np.full(states.shape[0], -1, np.int64)]
        row_pos = [np.zeros(states.shape[0], np.int64)]
        for gi, I in enumerate(info):
            cnt, first = I["cnt"], I["first"]
            s_, u_ = np.nonzero(cnt[states] > 0)
            s_ = states[s_]
            keep = u_ != first[s_]
            s_, u_ = s_[keep], u_[keep]
            row_state.append(s_)
            row_group.append(np.full(s_.shape[0], gi, np.int64))
            row_pos.append(I["cum"][s_, u_])
            s2, i2 = np.nonzero(I["win"][states] >= 0)
            s2 = states[s2]
            pos = I["free"][s2] + i2
            keep = pos != 0
            row_state.append(s2[keep])
            row_group.append(np.full(int(keep.sum()), gi, np.int64))
            row_pos.append(pos[keep])
        rs = np.concatenate(row_state)
        rg = np.concatenate(row_group)
        rp = np.concatenate(row_pos)
        m = rs.shape[0]
        X, T, base_cnt = self._rows(C, info, rs, rg, rp)
        return self._steps(X, T, base_cnt, info, rs, rg, rp, m)

    def _tracked(self, info, rs):
        """Per group: the positions tracked in each row (position 0, then the window's
        positions ``free + i``), as an (rows x (1 + R)) matrix with -1 where none."""
        out = []
        for gi, (I, G) in enumerate(zip(info, self.plan["groups"])):
            R = G["R"]
            t = np.full((rs.shape[0], 1 + R), -1, np.int64)
            t[:, 0] = 0
            if R:
                i = np.arange(R)[None, :]
                pos = I["free"][rs][:, None] + i
                t[:, 1:] = np.where(i < I["r"][rs][:, None], pos, -1)
                # position 0 may itself be a window position (every member referred)
                t[:, 1:][t[:, 1:] == 0] = -1
            out.append(t)
        return out

    def _rows(self, C, info, rs, rg, rp):
        """The narrow state matrix of each row (slots outside the groups, position 0 and the
        window filled in), the tracked values ``T`` (the same, as virtual slots: outside
        slots, then per group position 0's and each window entry's columns) and the counts
        of the untracked members."""
        cm = self.cm
        m = rs.shape[0]
        gs = self.plan["groups"]
        X = np.zeros((cm.n_slots, m), np.int32)
        nmv = C[: len(self.nm)][:, rs]
        tpos = self._tracked(info, rs)
        base_cnt = []
        vparts = []
        for gi, (g, G, I) in enumerate(zip(self.sym.groups, gs, info)):
            M, R = G["M"], G["R"]
            mine = rg == gi
            win = I["win"][rs]                                   # (m, R) codes or -1
            first = I["first"][rs]
            codes_by_id = I["codes"]
            pos0_code = np.where(first >= 0, codes_by_id[np.maximum(first, 0)]
                                 if codes_by_id.shape[0] else 0, win[:, 0] if R else -1)
            pos0_free = first >= 0
            # The mover (group gi rows): the member at rp, swapped with position 0.
            mover_code = pos0_code.copy()
            mover_free = pos0_free.copy()
            cnt = I["cnt"][rs].copy()
            if mine.any():
                free_n = I["free"][rs]
                is_win = mine & (rp >= free_n)
                is_run = mine & ~is_win
                # an unreferred run: its code is the one whose run starts at rp
                if is_run.any():
                    k = np.flatnonzero(is_run)
                    cum = I["cum"][rs[k]]
                    hit = (cum == rp[k][:, None]) & (I["cnt"][rs[k]] > 0)
                    mover_code[k] = codes_by_id[np.argmax(hit, axis=1)]
                    mover_free[k] = True
                if is_win.any():
                    k = np.flatnonzero(is_win)
                    mover_code[k] = win[k, rp[k] - free_n[k]]
                    mover_free[k] = False
            # Untracked counts: the unreferred members minus those at tracked positions.
            if codes_by_id.shape[0]:
                # The interned codes are distinct: their sort order maps a code to its id.
                lut_ids = I["order"]
                lut_codes = codes_by_id[lut_ids]

                def idx(c):
                    return lut_ids[np.searchsorted(lut_codes, c)]
                k = np.flatnonzero(mover_free)
                np.subtract.at(cnt, (k, idx(mover_code[k])), 1)
                # a referred mover's swap puts position 0's unreferred member in the window
                k = np.flatnonzero(mine & ~mover_free & pos0_free)
                np.subtract.at(cnt, (k, idx(pos0_code[k])), 1)
            base_cnt.append(cnt)
            # Fill in position 0 and the window.
            V0 = self._vector(gi, np.maximum(mover_code, 0))
            for col in range(M.shape[1]):
                X[M[0, col]] = V0[col]
            wv = np.full((m, R), -1, np.int64)
            if R:
                wv[:] = win
                k = np.flatnonzero(mine & ~mover_free)
                if k.shape[0]:
                    wv[k, rp[k] - I["free"][rs[k]]] = pos0_code[k]
            vparts.append(V0)
            for i in range(R):
                # Every row's window entry i goes to T; only the tracked ones into X.
                Vi = self._vector(gi, np.maximum(wv[:, i], 0))
                vparts.append(Vi)
                ok = (tpos[gi][:, 1 + i] >= 0)
                if ok.any():
                    rows = np.flatnonzero(ok)
                    for col in range(M.shape[1]):
                        X[M[tpos[gi][ok, 1 + i], col], rows] = Vi[col, ok]
            # Key slots: the swap renames key k0 <-> k_rp in the mover's group.
            if mine.any() and g.key_slots:
                k0 = G["keys"][0]
                # rp is a position of the row's own group: rows of another (maybe larger)
                # group have no key here (masked by ``mine`` below).
                kp = G["keys"][np.where(mine, rp, 0)]
                for j in g.key_slots:
                    jj = self.nm_index[j]
                    v = nmv[jj]
                    nmv[jj] = np.where(mine & (v == k0), kp,
                                       np.where(mine & (v == kp) & (rp != 0), k0, v))
        X[self.nm] = nmv
        # Tracked values: outside slots, then per group [position 0 cols, window i cols...].
        T = [nmv.astype(np.int64)] + vparts
        return X, np.concatenate(T, axis=0), base_cnt

    def _vslot(self, gi: int, entry: int, col: int) -> int:
        """Row of ``T`` holding column ``col`` of tracked entry ``entry`` (0: position 0,
        1 + i: window entry i) of group ``gi``."""
        at = len(self.nm)
        for h, G in enumerate(self.plan["groups"]):
            w = len(G["lo"])
            if h == gi:
                return at + entry * w + col
            at += (1 + G["R"]) * w
        raise IndexError(gi)

    def _steps(self, X, T, base_cnt, info, rs, rg, rp, m):
        """Every step of every row, with its successor's compact key."""
        cm = self.cm
        rows_cache: dict = {}
        tr = self.gen.tr
        G_, live, full = tr.live(
            X, self.acting, lambda tid: self._enabled_rows(X, m, rows_cache, tid, rg))
        out_src, out_act, out_err, out_time, out_T, out_row = [], [], [], [], [], []
        out_cost = [[] for _ in self.res]
        for tid in live:
            for ai, a in self.gen.actions_of[tid]:
                gi = self.lead_group[ai]
                R, gerr = tr.action_rows(G_, full, a)
                # A mover's row keeps only the steps of its group's lead (the others are the
                # base row's).
                own = (rg[R] == -1) | (rg[R] == gi)
                if not own.all():
                    R = R[own]
                    gerr = None if gerr is None else gerr[own]
                if R.shape[0] == 0:
                    continue
                writes, eerr = tr.ev.effect(a.transitions)(X, R)
                costs, tm, cerr = tr.charge_action(a, X, R)
                moves = [(cm.processes[t.process].slot, t.dst)
                         for t in (cm.transitions[tid] for tid in a.transitions[::-1])]
                err = tr.step_faults(a, R, gerr, eerr, cerr)
                Tn = np.take(T, R, axis=1)   # C order, one copy (see Explorer._step_sync)
                for j, vals in writes:
                    self._write(Tn, X, R, j, vals, info, rs)
                for slot, dst in moves:
                    self._write(Tn, X, R, slot, np.full(R.shape[0], dst, np.int64), info, rs)
                out_T.append(Tn)
                out_row.append(R)
                act = np.full(R.shape[0], ai, np.int64)
                if gi >= 0:
                    # Rows of another mover than position 0's: the action of that member.
                    moved = rg[R] == gi
                    if moved.any():
                        act[moved] = self.relabel[gi][rp[R[moved]], ai]
                out_src.append(rs[R])
                out_act.append(act.astype(np.int32))
                out_err.append(err)
                for lst, c in zip(out_cost, costs):
                    lst.append(c)
                out_time.append(tm)
        if not out_src:
            return _tuple(tr.collect([], [], [], [], out_cost, [],
                                     charges=self.charge_table is None))
        # The successors' compact keys, all of the chunk's steps at once.
        R = np.concatenate(out_row)
        Tn = np.concatenate(out_T, axis=1)
        err = np.concatenate(out_err)
        ok = np.flatnonzero(~err)
        nk = np.zeros((R.shape[0], self.W), np.uint64)
        if ok.shape[0]:
            Rk = R[ok]
            nk[ok] = self._compact_keys(Tn[:, ok], [c[Rk] for c in base_cnt], info, rs[Rk])
        return _tuple(tr.collect(out_src, out_act, [nk], out_err, out_cost, out_time,
                                 charges=self.charge_table is None))

    def _enabled_rows(self, X, m, rows_cache, tid, rg):
        """Rows where ``tid`` is enabled: a lead member's transitions only in the base rows
        and in the rows of its own group's movers (:meth:`_steps` keeps only those steps
        there); the other processes' in every row."""
        R, gerr = self.gen.tr.enabled(X, tid, rows_cache)
        if R.shape[0] == 0:
            return R, gerr
        proc = self.cm.transitions[tid].process
        gi = self.lead_of.get(proc)
        if gi is None:
            return R, gerr          # outside the groups: every row (a partner, maybe)
        keep = (rg[R] == -1) | (rg[R] == gi)
        if not keep.all():
            R = R[keep]
            gerr = gerr[keep] if gerr is not None else None
        return R, gerr

    def _write(self, Tn, X, R, j, vals, info, rs):
        """Apply a write of slot ``j`` (rows ``R``) to the tracked values ``Tn``."""
        jj = self.nm_index.get(j)
        if jj is not None:
            Tn[jj] = vals
            return
        gi, pos, col = self.owner[j]
        if pos == 0:
            Tn[self._vslot(gi, 0, col)] = vals
            return
        free = info[gi]["free"][rs[R]]
        i = pos - free
        R_g = self.plan["groups"][gi]["R"]
        inwin = (i >= 0) & (i < info[gi]["r"][rs[R]])
        vals = np.broadcast_to(np.asarray(vals, np.int64), (R.shape[0],))
        for e in range(R_g):
            sel = inwin & (i == e)
            if sel.any():
                Tn[self._vslot(gi, 1 + e, col), sel] = vals[sel]
        if (~inwin).any() and (vals[~inwin] != X[j, R[~inwin]]).any():
            raise _Untracked(f"a step writes slot {j} of an untracked member")

    def _compact_keys(self, Tn, base_cnt, info, src_states):
        """Compact keys of the successors whose tracked values are ``Tn``."""
        k = Tn.shape[1]
        C = np.zeros((len(self.layout.bits), k), np.int64)
        nmv = Tn[: len(self.nm)].copy()
        tpos = self._tracked(info, src_states)
        for gi, (g, G) in enumerate(zip(self.sym.groups, self.plan["groups"])):
            R, w, n = G["R"], len(G["lo"]), g.size
            # Tracked entries: position 0 and the window (their positions and keys).
            E = 1 + R
            pos = tpos[gi]
            present = pos >= 0
            codes = np.zeros((k, E), np.int64)
            for e in range(E):
                base = self._vslot(gi, e, 0)
                codes[:, e] = self._code(gi, Tn[base: base + w])
            key_of = np.where(present, G["keys"][np.maximum(pos, 0)], -1)
            # Held pattern of each entry: bit per key slot, key_slots[0] most significant.
            pat = np.zeros((k, E), np.int64)
            ks = list(g.key_slots)
            for b, j in enumerate(ks):
                v = nmv[self.nm_index[j]]
                hit = (v[:, None] == key_of) & present
                is_key = np.isin(v, G["keys"])
                if (is_key & ~hit.any(axis=1)).any():
                    raise _Untracked("a key slot holds the key of an untracked member")
                pat |= hit.astype(np.int64) << (len(ks) - 1 - b)
            # Unreferred tracked members go back to the counts.
            back = present & (pat == 0)
            cnt = base_cnt[gi]
            wide = np.zeros((k, self.width), np.int64)
            wide[:, : cnt.shape[1]] = cnt
            rr, ee = np.nonzero(back)
            if rr.shape[0]:
                np.add.at(wide, (rr, self._intern(gi, codes[rr, ee])), 1)
            C[self.cnt_at[gi]: self.cnt_at[gi] + self.width] = wide.T
            # Referred ones, sorted by (pattern, code): the window, at positions n - r'...
            refd = present & (pat > 0)
            r2 = refd.sum(axis=1)
            sk = np.where(refd, pat * (np.int64(1) << np.int64(G["cbits"])) + codes,
                          np.iinfo(np.int64).max)
            order = np.argsort(sk, axis=1, kind="stable")
            rank = np.empty_like(order)
            np.put_along_axis(rank, order, np.arange(E)[None, :].repeat(k, 0), axis=1)
            for e in range(min(R, E)):
                col = np.take_along_axis(codes, order[:, e:e + 1], axis=1)[:, 0]
                C[self.win_at[gi] + e] = np.where(e < r2, col + 1, 0)
            # Key values: the member at entry e becomes position n - r' + rank.
            newkey = G["keys"][np.clip(n - r2[:, None] + rank, 0, n - 1)]
            for j in ks:
                jj = self.nm_index[j]
                v = nmv[jj]
                hit = (v[:, None] == key_of) & refd
                has = hit.any(axis=1)
                e = np.argmax(hit, axis=1)
                nmv[jj] = np.where(has, newkey[np.arange(k), e], v)
        C[: len(self.nm)] = nmv
        return self.layout.pack(C, np)


#: The widest sort code :meth:`SyncChoiceExplorer._canon_from_pairs` packs (an int64's bits
#: less a sign bit and a spare).
_CODE_BITS = 62


class SyncChoiceExplorer(QuotientExplorer):
    """The ``system sync`` quotient explorer with the joint choices made per class, for all
    the states of a chunk at once.

    A run of interchangeable members (equal local vectors, no key-holding slot referring to
    them: :func:`statespace.symmetry.interchangeable`) chooses its transitions as a
    multiset: when ``k`` members have ``b`` enabled transitions, ``C(k + b - 1, k)`` steps
    (how many of the ``k`` take each branch), not ``b^k``. The steps are those of
    :meth:`Explorer._successors_sync <statespace.explore.Explorer._successors_sync>`, the
    product built one process at a time over the whole chunk, where a member standing in the
    run of the member before it keeps only the choices numbered no lower than that member's
    (:meth:`_sync_floor`): the non-decreasing assignments, one per multiset. Costs add up and
    the time is the maximum over the moving processes as there (``_step_sync``), and every
    distinct step stays an edge of its own, so parallel edges keep their (cost, time).

    The steps, their order and so the graph are those of the sorting explorer's per-state
    loop (:meth:`QuotientExplorer._successors_sync`: the multisets of
    ``itertools.combinations_with_replacement`` in product order, which is the order of the
    step codes), without its Python work per state: editor with four workers and 8 users,
    4.4 s -> 1.1 s of exploration. Successors are canonicalised as there, before they are packed.
    """

    def __init__(self, cm: CompiledModel, sym: Symmetry, *args) -> None:
        super().__init__(cm, sym, *args)
        column = {p.index: i for i, p in enumerate(cm.system_processes)}
        #: process index -> the column of the member before it in its group.
        self.prev_column = {g.processes[k]: column[g.processes[k - 1]]
                            for g in sym.groups for k in range(1, g.size)}
        self.digit = self.gen.digits(np)   # each transition's place in its process
        self.red: dict[int, np.ndarray] = {}

    def _successors_sync(self, X, keys):
        self.red = interchangeable(self.sym, X)
        try:
            return Explorer._successors_sync(self, X, keys)
        finally:
            self.red = {}

    def _step_sync(self, X, rows, C, err, pairs=None):
        # The successors canonicalised before they are packed (not packed, unpacked, sorted
        # and packed again). A group whose members' effects are their own (the explorer's
        # per-pair path) gets its members' sort codes from their pairs' local vectors, one
        # gather per member (:meth:`_canon_from_pairs`), not written into the steps and read
        # back column by column.
        fused = [gi for gi, ok in enumerate(self._fusable()) if ok] \
            if pairs is not None and rows.shape[0] else []
        skip = frozenset(p for gi in fused for p in self.sym.groups[gi].processes)
        Y, err, costs, tm = super()._step_sync(X, rows, C, err, pairs, skip)
        rest = [g for gi, g in enumerate(self.sym.groups) if gi not in fused]
        for gi in fused:
            self._canon_from_pairs(self.sym.groups[gi], X, Y, pairs)
        if rest:
            canonicalize(dataclasses.replace(self.sym, groups=tuple(rest)), Y, copy=False)
        return Y, err, costs, tm

    def _fusable(self) -> list[bool]:
        """Per group: its members' effects read and write only their own variables, and a
        member's slots are its control state and its variables (no channel, no cell of an
        array indexed by keys); made once."""
        got = self.__dict__.get("_fusable_flags")
        if got is None:
            cm = self.cm
            local = self.gen.local()
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
            self._fusable_flags = got
        return got

    def _canon_from_pairs(self, g, X, Y, pairs) -> None:
        """Canonicalise group ``g`` of the steps ``Y`` (whose member slots were not written)
        from each member's enabled pairs: the local vector each pair leads to, packed into a
        sort code at the pairs (few), gathered by the pair each step took, sorted and decoded
        into ``Y`` (:func:`statespace.symmetry.sort_codes_into`)."""
        cm = self.cm
        tables, taken = pairs
        column = {p.index: i for i, p in enumerate(cm.system_processes)}
        n, w = len(g.processes), len(g.member_slots[0])
        vecs = []          # per member: per column, the value each pair leads to
        for p, row in zip(g.processes, g.member_slots):
            c = column[p]
            t = tables[c]
            _, _, _, vals, dst = self.gen.pair_effects(X, t, cm.processes[p].transitions)
            vecs.append([dst] + [vals[s] if s in vals else X[s][t.row] for s in row[1:]])
        fields, constant, bits = [], [], 0
        for j in range(w - 1, -1, -1):       # the last slot least significant
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
                    Y[s] = vecs[i][j][taken[column[p]]]
            canonicalize(dataclasses.replace(self.sym, groups=(g,)), Y, copy=False)
            return
        dt = code_dtype(bits + len(g.key_slots))
        code = np.empty((n, Y.shape[1]), dt)
        for i, p in enumerate(g.processes):
            at = np.zeros(vecs[i][0].shape[0], np.int64)
            for j, lo, shift, _ in fields:
                at |= (vecs[i][j].astype(np.int64) - lo) << shift
            np.take(at.astype(dt), taken[column[p]], out=code[i])
        sort_codes_into(g, Y, code, fields, bits, constant)

    def _sync_floor(self, p, rows, choice):
        c = self.prev_column.get(p.index)
        red = self.red.get(p.index)
        if c is None or red is None:
            return None
        return np.where(red[rows], self.digit[choice[c]], 0)


@dataclass(frozen=True, eq=False)
class Counts:
    """The classes of a counted exploration, compactly: per class, the slots outside the
    groups, each group's window (code + 1 of each referred member, 0 for none) and counts
    (how many unreferred members hold each interned local vector). :meth:`states` gives the
    canonical representatives in full."""

    compact: np.ndarray          # classes x compact slots (int64)
    groups: tuple                # per group: M, lo, bits, off, R, codes, n, win_at, cnt_at
    nm: np.ndarray               # the slots outside the groups
    width: int                   # interned local vectors counted per group
    n_slots: int
    dtype: np.dtype
    error: int = -1

    def counts(self, gi: int) -> np.ndarray:
        """Classes x local vectors (by interned id): group ``gi``'s unreferred members."""
        G = self.groups[gi]
        return self.compact[:, G["cnt_at"]: G["cnt_at"] + self.width]

    def states(self, ids=None) -> np.ndarray:
        """The canonical full states (rows x slots) of classes ``ids`` (all by default)."""
        C = self.compact if ids is None else self.compact[np.asarray(ids, np.int64)]
        k = C.shape[0]
        out = np.zeros((k, self.n_slots), self.dtype)
        out[:, self.nm] = C[:, : len(self.nm)].astype(self.dtype)
        for G in self.groups:
            M, n, codes = G["M"], G["n"], G["codes"]
            order = np.argsort(codes, kind="stable")
            cnt = C[:, G["cnt_at"]: G["cnt_at"] + len(codes)][:, order]       # (k, V)
            win = C[:, G["win_at"]: G["win_at"] + G["R"]]                       # (k, R)
            vals = np.concatenate([np.broadcast_to(codes[order], cnt.shape), win - 1], axis=1)
            reps = np.concatenate([cnt, (win > 0).astype(np.int64)], axis=1)
            # The narrowest integer type for the codes (np.repeat moves fewer bytes).
            ct = np.min_scalar_type(max(int(codes.max(initial=0)), 1))
            vals = np.maximum(vals, 0).astype(ct)
            cols = []
            for col in range(M.shape[1]):
                c = M[:, col]
                # A column of consecutive slots is written as a slice, not a gather.
                cols.append(slice(int(c[0]), int(c[-1]) + 1) if n > 1 and
                            (np.diff(c) == 1).all() else c)
            step = max(1, (1 << 23) // max(n, 1))
            for a in range(0, k, step):
                b = min(k, a + step)
                # Each class's codes in canonical order: the runs, then the window.
                seq = np.repeat(vals[a:b].ravel(), reps[a:b].ravel()).reshape(b - a, n)
                for col, where in enumerate(cols):
                    if M.shape[1] == 1 and G["lo"][0] == 0:
                        out[a:b, where] = seq          # the code is the value
                        continue
                    v = ((seq.astype(np.int64) >> G["off"][col])
                         & ((1 << int(G["bits"][col])) - 1)) + G["lo"][col]
                    out[a:b, where] = v.astype(self.dtype)
        return out


def explore_counted(cm: CompiledModel, sym: Symmetry, args: tuple):
    """The quotient graph explored by counting and its :class:`Counts`, or ``None`` when the
    model is not one :func:`counted_plan` accepts (or a step reaches a member the window does
    not hold: checked while exploring). A ``system sync`` model gets the graph of
    :class:`SyncChoiceExplorer` and no counts. ``args`` are the explorer's ``(xp, chunk_size,
    max_states, max_memory, progress, error_successors)``."""
    if cm.system == "sync":
        return SyncChoiceExplorer(cm, sym, *args).run(), None
    if cm.property_process is not None or sym.families:
        return None           # (checked again by counted_plan; this spares building one)
    width = FIRST_WIDTH
    while True:
        try:
            ex = CountedExplorer(cm, sym, width, *args)
            g = ex.run()
        except _NotCountable:
            return None
        except CountingOverflow:
            if width >= MAX_WIDTH:
                return None
            width *= 4
            continue
        except _Untracked:
            return None
        return g, ex.counts


def counted_orbit_total(sym: Symmetry, counts: Counts) -> int:
    """The number of states of the full product: for each class, the product over groups of
    ``n! / prod(count!)`` (each referred member is alone in its run). The size depends only on
    the multiset of each group's counts, so it is computed once per distinct multiset."""
    k = counts.compact.shape[0]
    if k == 0:
        return 0
    keep = np.ones(k, bool)
    total = 0
    if 0 <= counts.error < k:
        keep[counts.error] = False
        total += 1
    parts = []
    for gi, g in enumerate(sym.groups):
        c = -np.sort(-counts.counts(gi)[keep], axis=1)        # each row descending
        c = c[:, c.any(axis=0)] if c.shape[0] else c
        parts.append(c)
    sig = np.concatenate(parts, axis=1) if parts else np.zeros((int(keep.sum()), 0), np.int64)
    base = max(g.size for g in sym.groups) + 1
    if sig.shape[1] == 0:
        uniq, mult = np.zeros((1, 0), np.int64), np.array([sig.shape[0]])
    elif sig.shape[1] * math.log2(base) < 62:
        # One int64 per row (mixed radix) sorts far faster than rows.
        code = np.zeros(sig.shape[0], np.int64)
        for j in range(sig.shape[1]):
            code = code * base + sig[:, j]
        _, first, mult = np.unique(code, return_index=True, return_counts=True)
        uniq = sig[first]
    else:
        uniq, mult = np.unique(sig, axis=0, return_counts=True)
    fact = [1]
    for i in range(1, base):
        fact.append(fact[-1] * i)
    widths = [p.shape[1] for p in parts]
    starts = np.concatenate([[0], np.cumsum(widths)]).astype(int).tolist()
    for row, m in zip(uniq.tolist(), mult.tolist()):
        size = 1
        for gi, g in enumerate(sym.groups):
            den = 1
            for c in row[starts[gi]:starts[gi + 1]]:
                if c > 1:
                    den *= fact[c]
            size *= fact[g.size] // den
        total += m * size
    return total


def _tuple(s) -> tuple:
    return s.source, s.action, s.keys, s.error, s.costs, s.time
