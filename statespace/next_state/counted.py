"""The quotient explored by counting: a class as counts of local states, not a sorted vector.

:class:`CountedGenerator` makes the same graph as the quotient generator
(:class:`~statespace.next_state.QuotientGenerator`, :mod:`statespace.quotient`: same classes,
same representatives, same edges and labels), but a class costs it the number of *distinct* local vectors of its members, not their number. In a
canonical state (:func:`statespace.canonical.canonicalize`) the members of a group that no
key-holding slot refers to come first, sorted by local vector, then the referred ones. So the
canonical state is fixed by

- the slots outside the groups (key values as the canonical state holds them);
- per group, the *window*: the local vectors of the referred members, in canonical order (at
  most one per key-holding slot);
- per group, how many unreferred members hold each local vector (the *counts*).

That is the compact key kept in the visited set. To expand a class, a narrow state matrix is
built for each *mover*: the first member of each run of equal unreferred local vectors and each
referred member, swapped to position 0 as the swap mode of the quotient generator does. Only the
slots outside the groups, position 0 and the window are filled in: nothing else can be read. A
process outside the groups has no name for an instance and no key literal (no family of
transitions), so it reaches members only through key values it holds, i.e. referred members; a
member reads its own slots and what others hold. A successor's class is then the counts
minus the mover plus what position 0 and the window hold after the step: ``O(distinct local
vectors + window)`` per successor where the sorted vector costs ``O(n log n)``.

Where these conditions do not hold (``system sync``, a property process, committed states, a
rendezvous between two members, families of transitions, local vectors wider than 62 bits),
:func:`counted_plan` returns ``None`` and the quotient generator does the work. A ``system
sync`` model goes to :class:`~statespace.next_state.SyncChoiceGenerator`, which makes the
joint choices of interchangeable members per class (how many take each branch) for a whole
chunk at once. When a class has more distinct local vectors than the layout counts,
:class:`CountingOverflow` is raised and the caller starts over with a wider layout.

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

from dataclasses import dataclass

import numpy as np

from ..model import CompiledModel, states_dtype
from ..store import KeyLayout
from ..canonical import canonicalize
from ..symmetry import Symmetry
from .record import Successors
from .symmetric import QuotientGenerator

__all__ = ["CountLayout", "CountedGenerator", "Counts", "CountingOverflow", "FULL_STATES_BYTES",
           "NotCountable", "Untracked", "counted_plan"]

#: Classes' representatives are kept in full in the graph up to this many bytes.
FULL_STATES_BYTES = 1 << 28


class CountingOverflow(Exception):
    """A class has more distinct local vectors in a group than the layout counts."""


class NotCountable(Exception):
    """The model is not one :func:`counted_plan` accepts."""


class Untracked(Exception):
    """A step touched a member outside position 0 and the window (cannot happen when the
    conditions of :func:`counted_plan` hold; checked, not assumed)."""



def counted_plan(q: QuotientGenerator, error_successors: bool = False) -> dict | None:
    """Whether the quotient ``q`` can be explored by counting, and the layout facts it
    needs; ``None`` when it cannot (see the module docstring)."""
    cm, sym = q.cm, q.sym
    if (cm.system != "async" or not q.swap_ok or q.inner.has_commit or sym.families
            or not sym.groups or error_successors):
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


class CountLayout:
    """The compact form of a class (see the module docstring): the slots outside the groups,
    each group's window and counts, packed by a :class:`~statespace.store.KeyLayout` of
    their own; the interned local vectors of each group, and the conversions from full
    states (:meth:`compact_of_full`) and from a step's tracked values
    (:meth:`compact_keys`)."""

    def __init__(self, cm: CompiledModel, sym: Symmetry, plan: dict, width: int) -> None:
        self.cm, self.sym, self.plan, self.width = cm, sym, plan, width
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
        self.layout = KeyLayout.from_bounds(lo, hi)
        # Interned local vectors: per group, the codes by id, and id by code.
        self.codes: list[list[int]] = [[] for _ in gs]
        self.ids: list[dict[int, int]] = [{} for _ in gs]
        self.nm_index = {int(j): i for i, j in enumerate(plan["nm"])}
        self.owner = {}          # member slot -> (group, position, column)
        for gi, G in enumerate(gs):
            for pos, row in enumerate(G["M"]):
                for col, s in enumerate(row):
                    self.owner[int(s)] = (gi, pos, col)

    # ------------------------------------------------------------------ codes
    def intern(self, gi: int, codes: np.ndarray) -> np.ndarray:
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

    def code(self, gi: int, V: np.ndarray) -> np.ndarray:
        """Codes of local vectors ``V`` (columns x rows)."""
        G = self.plan["groups"][gi]
        c = np.zeros(V.shape[1], np.int64)
        for col in range(V.shape[0]):
            c |= (V[col].astype(np.int64) - G["lo"][col]) << G["off"][col]
        return c

    def vector(self, gi: int, codes: np.ndarray) -> np.ndarray:
        """Local vectors (columns x rows) of ``codes``."""
        G = self.plan["groups"][gi]
        out = np.empty((len(G["lo"]), codes.shape[0]), np.int64)
        for col in range(len(G["lo"])):
            out[col] = ((codes >> G["off"][col]) & ((1 << int(G["bits"][col])) - 1)) \
                + G["lo"][col]
        return out

    # ------------------------------------------------------------------ full <-> compact
    def compact_of_full(self, X: np.ndarray) -> np.ndarray:
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
                codes = self.code(gi, Y[M.T, r])
                nref = int(held[:, r].sum())
                assert not held[: n - nref, r].any()
                win = codes[n - nref:]
                C[self.win_at[gi]: self.win_at[gi] + nref, r] = win + 1
                ids = self.intern(gi, codes[: n - nref])
                C[self.cnt_at[gi]: self.cnt_at[gi] + self.width, r] = \
                    np.bincount(ids, minlength=self.width)[: self.width]
        return C

    def tracked(self, info, rs):
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
    def vslot(self, gi: int, entry: int, col: int) -> int:
        """Row of ``T`` holding column ``col`` of tracked entry ``entry`` (0: position 0,
        1 + i: window entry i) of group ``gi``."""
        at = len(self.nm)
        for h, G in enumerate(self.plan["groups"]):
            w = len(G["lo"])
            if h == gi:
                return at + entry * w + col
            at += (1 + G["R"]) * w
        raise IndexError(gi)
    def compact_keys(self, Tn, base_cnt, info, src_states):
        """Compact keys of the successors whose tracked values are ``Tn``."""
        k = Tn.shape[1]
        C = np.zeros((len(self.layout.bits), k), np.int64)
        nmv = Tn[: len(self.nm)].copy()
        tpos = self.tracked(info, src_states)
        for gi, (g, G) in enumerate(zip(self.sym.groups, self.plan["groups"])):
            R, w, n = G["R"], len(G["lo"]), g.size
            # Tracked entries: position 0 and the window (their positions and keys).
            E = 1 + R
            pos = tpos[gi]
            present = pos >= 0
            codes = np.zeros((k, E), np.int64)
            for e in range(E):
                base = self.vslot(gi, e, 0)
                codes[:, e] = self.code(gi, Tn[base: base + w])
            key_of = np.where(present, G["keys"][np.maximum(pos, 0)], -1)
            # Held pattern of each entry: bit per key slot, key_slots[0] most significant.
            pat = np.zeros((k, E), np.int64)
            ks = list(g.key_slots)
            for b, j in enumerate(ks):
                v = nmv[self.nm_index[j]]
                hit = (v[:, None] == key_of) & present
                is_key = np.isin(v, G["keys"])
                if (is_key & ~hit.any(axis=1)).any():
                    raise Untracked("a key slot holds the key of an untracked member")
                pat |= hit.astype(np.int64) << (len(ks) - 1 - b)
            # Unreferred tracked members go back to the counts.
            back = present & (pat == 0)
            cnt = base_cnt[gi]
            wide = np.zeros((k, self.width), np.int64)
            wide[:, : cnt.shape[1]] = cnt
            rr, ee = np.nonzero(back)
            if rr.shape[0]:
                np.add.at(wide, (rr, self.intern(gi, codes[rr, ee])), 1)
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


class CountedGenerator:
    """The quotient with classes kept as counts (see the module docstring): a wrapper of a
    :class:`~statespace.next_state.QuotientGenerator` in swap mode, whose inner
    :class:`~statespace.next_state.AsyncGenerator` evaluates the movers' transitions.

    Raises
    ------
    NotCountable
        When the quotient is not one :func:`counted_plan` accepts.
    """

    def __init__(self, q: QuotientGenerator, width: int,
                 error_successors: bool = False) -> None:
        plan = counted_plan(q, error_successors)
        if plan is None:
            raise NotCountable()
        cm, sym = q.cm, q.sym
        self.q, self.inner, self.cm, self.sym = q, q.inner, cm, sym
        self.kind, self.res, self.charge_table = q.kind, q.res, q.charge_table
        self.relabel, self.lead_group = q.relabel, q.lead_group
        self.cl = cl = CountLayout(cm, sym, plan, width)
        self.layout = cl.layout
        self.full_layout = q.layout
        # The layout's tables, under the names the steps read them by (shared, not copied:
        # the interned codes grow as the search goes).
        self.plan, self.width, self.nm, self.nm_index = plan, width, cl.nm, cl.nm_index
        self.owner, self.win_at, self.cnt_at, self.codes = cl.owner, cl.win_at, cl.cnt_at, \
            cl.codes
        # The processes whose transitions are tried: those outside the groups and each
        # group's member 0 (the others move through the movers' rows).
        self.lead_of = {g.processes[0]: gi for gi, g in enumerate(sym.groups)}
        members = {p for g in sym.groups for p in g.processes}
        self.acting = [p for p in cm.system_processes
                       if p.index not in members or p.index in self.lead_of]
        X0 = np.array(cm.initial, np.int64).reshape(-1, 1)
        self.init_key = self.layout.pack(cl.compact_of_full(X0), np)
        self.err_key = self.layout.pack(
            cl.compact_of_full(np.array(cm.error_state, np.int64).reshape(-1, 1)), np)
        self.counts: Counts | None = None

    # ------------------------------------------------------------------ the interface
    #: The error state is recognised by its key (:meth:`successors`), not hidden.
    hides_error = False
    #: The search keeps the compact matrices as they are (int64).
    state_dtype = np.int64

    def at(self, xp):
        """This generator (counting runs with NumPy)."""
        return self

    def n_actions(self) -> int:
        """The model's action ids."""
        return self.inner.n_actions()

    def action_codes(self):
        """None (``system async`` only)."""
        return None

    def mark(self) -> int:
        """0: the interned codes only grow (a chunk undone leaves unused ones)."""
        return 0

    def rewind(self, mark: int) -> None:
        """Nothing to undo."""

    def initial_key(self):
        """The compact key of the initial state's class."""
        return self.init_key

    def error_key(self):
        """The compact key of the error state."""
        return self.err_key

    def unpack(self, keys, xp):
        """The compact matrix (compact slots x classes, int64) of ``keys``."""
        return self.layout.unpack(keys, np, dtype=np.int64)

    def graph_states(self, compact, error_id: int):
        """The graph's states from the classes' compact rows (:class:`Counts`, kept in
        :attr:`counts`): the representatives in full when they fit
        :data:`FULL_STATES_BYTES`, and None; beyond, rows of no slot for the graph (the
        second value; :meth:`Quotient.representatives
        <statespace.quotient.Quotient.representatives>` materialises the ones asked for)
        and a broadcast zero (no memory) while the graph is assembled."""
        cm, n = self.cm, compact.shape[0]
        groups = []
        for gi, (g, G) in enumerate(zip(self.sym.groups, self.plan["groups"])):
            groups.append({**G, "codes": np.asarray(self.codes[gi], np.int64), "n": g.size,
                           "win_at": self.win_at[gi], "cnt_at": self.cnt_at[gi]})
        sdtype = states_dtype(cm)
        small = n * cm.n_slots * np.dtype(sdtype).itemsize <= FULL_STATES_BYTES
        self.counts = Counts(compact, tuple(groups), self.nm, self.width, cm.n_slots,
                             np.dtype(sdtype), error_id)
        if small:
            return self.counts.states(), None
        return (np.broadcast_to(np.zeros((1, 1), sdtype), (n, cm.n_slots)),
                np.zeros((n, 0), sdtype))

    # ------------------------------------------------------------------ successors
    def successors(self, keys, C) -> Successors:
        """The steps of the classes ``keys`` (compact keys; ``C`` the compact matrix):
        every mover's steps, each successor's compact key computed from what the step
        changed."""
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
        tpos = self.cl.tracked(info, rs)
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
            V0 = self.cl.vector(gi, np.maximum(mover_code, 0))
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
                Vi = self.cl.vector(gi, np.maximum(wv[:, i], 0))
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
    def _steps(self, X, T, base_cnt, info, rs, rg, rp, m):
        """Every step of every row, with its successor's compact key."""
        cm = self.cm
        rows_cache: dict = {}
        tr = self.inner.tr
        G_, live, full = tr.live(
            X, self.acting, lambda tid: self._enabled_rows(X, m, rows_cache, tid, rg))
        out_src, out_act, out_err, out_time, out_T, out_row = [], [], [], [], [], []
        out_cost = [[] for _ in self.res]
        for tid in live:
            for ai, a in self.inner.actions_of[tid]:
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
                Tn = np.take(T, R, axis=1)   # C order, one copy (see SyncGenerator.step)
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
            return tr.collect([], [], [], [], out_cost, [], charges=self.charge_table is None)
        # The successors' compact keys, all of the chunk's steps at once.
        R = np.concatenate(out_row)
        Tn = np.concatenate(out_T, axis=1)
        err = np.concatenate(out_err)
        ok = np.flatnonzero(~err)
        nk = np.zeros((R.shape[0], self.layout.n_words), np.uint64)
        if ok.shape[0]:
            Rk = R[ok]
            nk[ok] = self.cl.compact_keys(Tn[:, ok], [c[Rk] for c in base_cnt], info, rs[Rk])
        return tr.collect(out_src, out_act, [nk], out_err, out_cost, out_time,
                          charges=self.charge_table is None)

    def _enabled_rows(self, X, m, rows_cache, tid, rg):
        """Rows where ``tid`` is enabled: a lead member's transitions only in the base rows
        and in the rows of its own group's movers (:meth:`_steps` keeps only those steps
        there); the other processes' in every row."""
        R, gerr = self.inner.tr.enabled(X, tid, rows_cache)
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
            Tn[self.cl.vslot(gi, 0, col)] = vals
            return
        free = info[gi]["free"][rs[R]]
        i = pos - free
        R_g = self.plan["groups"][gi]["R"]
        inwin = (i >= 0) & (i < info[gi]["r"][rs[R]])
        vals = np.broadcast_to(np.asarray(vals, np.int64), (R.shape[0],))
        for e in range(R_g):
            sel = inwin & (i == e)
            if sel.any():
                Tn[self.cl.vslot(gi, 1 + e, col), sel] = vals[sel]
        if (~inwin).any() and (vals[~inwin] != X[j, R[~inwin]]).any():
            raise Untracked(f"a step writes slot {j} of an untracked member")
