"""Renamings of interchangeable processes: the one place a state or a step is renamed.

A symmetry's groups (:mod:`statespace.symmetry`) hold instances of one template that the model
cannot tell apart. A *renaming* ``pi`` (per group, an order of its members) maps a state ``s``
to ``pi.s``: member ``pi[g][p]``'s local vector moves to position ``p`` and its key, wherever
a key-holding slot holds it, becomes the key of ``p``. The model is invariant under renamings,
so every step ``s -> t`` has the image ``pi.s -> pi.t`` with the same cost and time; a walk
that closes up to a renaming, repeated through the renaming's powers, is a cycle of the model
(:func:`statespace.quotient.lift_walk` lifts the walks of a quotient graph this way;
:class:`scenarios.simulate.Lift` the walks of a simulation).

Examples
--------
>>> import numpy as np
>>> from dve import load_model
>>> from statespace import compile_model
>>> from statespace.symmetry import detect_symmetry
>>> cm = compile_model(load_model('''
... byte last;
... process C(key id) { state a, b; init a; trans a -> b { effect last = id; }; }
... for (k : 1 .. 3) { process C(k); }
... system async;'''))
>>> sym = detect_symmetry(cm)
>>> X = np.array([[1, 0, 0, 1]]).T      # C_1 in b and last = 1 (slots C_1, C_2, C_3, last)
>>> Y = apply_renaming(sym, X, [np.array([2, 1, 0])])
>>> Y[:, 0].tolist(), renaming_order([np.array([2, 1, 0])])
([0, 0, 1, 3], 2)
>>> pi = renaming_between(sym, X[:, 0], Y[:, 0])     # one renaming that does it
>>> apply_renaming(sym, X, pi)[:, 0].tolist() == Y[:, 0].tolist()
True
"""

from __future__ import annotations

import numpy as np

from .model import CompiledModel
from .canonical import canonicalize
from .symmetry import Symmetry, transition_image

__all__ = ["ChoiceRenaming", "apply_renaming", "renaming_between", "renaming_order"]


def apply_renaming(sym: Symmetry, X: np.ndarray, perm) -> np.ndarray:
    """``perm.X``: in each column of ``X`` (slots x states), member ``perm[g][p]`` of each
    group moved to position ``p``, its key renamed to the key of ``p`` wherever a key-holding
    slot holds it (the inverse of what :func:`~statespace.canonical.canonicalize` reports)."""
    Y = np.array(X, copy=True)
    for g, order in zip(sym.groups, perm):
        M = np.asarray(g.member_slots)
        order = np.asarray(order)
        Y[M] = X[M[order]]
        keys = np.asarray(g.keys, np.int64)
        to = keys[np.argsort(order)]                 # key of member q -> the key of its place
        by_value = np.argsort(keys, kind="stable")
        sorted_keys = keys[by_value]
        ks = list(g.key_slots)
        if ks:
            # Y, not X: a slot may hold keys of several groups (disjoint), each renamed once.
            # The group's key-holding slots (distinct) all at once: a state of a rendered
            # scenario file has eight admission slots, renamed at every step of a lifted walk.
            v = Y[ks].astype(np.int64)
            at = np.minimum(np.searchsorted(sorted_keys, v), len(keys) - 1)
            hit = sorted_keys[at] == v
            v[hit] = to[by_value[at[hit]]]
            Y[ks] = v
    return Y


def renaming_between(sym: Symmetry, a: np.ndarray, b: np.ndarray):
    """The renaming ``pi`` with ``b == pi.a`` for two states (slot vectors) of one orbit, or
    None when they are not (checked)."""
    X = np.stack([np.asarray(a, np.int64), np.asarray(b, np.int64)], axis=1)
    _, orders = canonicalize(sym, X, return_perm=True)
    # o_a.a == o_b.b, and applying o then o' is applying o[o']: b = (o_a[o_b^-1]).a.
    pi = [o[:, 0][np.argsort(o[:, 1])] for o in orders]
    if not np.array_equal(apply_renaming(sym, X[:, :1], pi)[:, 0], X[:, 1]):
        return None
    return pi


def renaming_order(pi) -> int:
    """The order of a renaming: the lcm of its cycles' lengths over the groups."""
    out = 1
    for p in pi:
        seen = np.zeros(len(p), bool)
        for s in range(len(p)):
            n, x = 0, s
            while not seen[x]:
                seen[x] = True
                x, n = int(p[x]), n + 1
            if n:
                out = out * n // np.gcd(out, n)
    return int(out)


class ChoiceRenaming:
    """``system sync`` choices renamed: the transition each process takes, under a renaming.

    Raises
    ------
    ValueError
        When the members of a group have different numbers of transitions.
    """

    def __init__(self, cm: CompiledModel, sym: Symmetry) -> None:
        self.cm, self.sym = cm, sym
        T = len(cm.transitions)
        # Per transition of a member: its group, member position and index in the member's
        # list (members of a group are instances of one template: equal lists).
        self.group = np.full(T, -1, np.int64)
        self.pos = np.zeros(T, np.int64)
        self.j = np.zeros(T, np.int64)
        self.table: list[np.ndarray] = []
        for gi, g in enumerate(sym.groups):
            rows = [cm.processes[p].transitions for p in g.processes]
            if len({len(x) for x in rows}) != 1:
                raise ValueError("members with different transition counts")
            self.table.append(np.array(rows, np.int64))
            for pos, ts in enumerate(rows):
                for j, tid in enumerate(ts):
                    self.group[tid], self.pos[tid], self.j[tid] = gi, pos, j
        column = {p.index: i for i, p in enumerate(cm.system_processes)}
        self.column = np.array([column.get(t.process, -1) for t in cm.transitions], np.int64)

    def rename(self, C: np.ndarray, perm, images: dict) -> np.ndarray:
        """The choices (steps x processes) ``C`` renamed by ``perm``: member ``q``'s
        transition taken by the member ``perm`` moves it to, in that member's column; the
        other processes' transitions mapped to their images (memoised in ``images``, one
        dict per ``perm``: rewriting a transition's syntax is slow)."""
        sym, cm = self.sym, self.cm
        inv = [np.argsort(np.asarray(p)) for p in perm]
        ren = {g.template: {g.keys[q]: g.keys[int(inv[gi][q])] for q in range(g.size)}
               for gi, g in enumerate(sym.groups)}
        flat = C.ravel()
        new = flat.copy()
        gr = self.group[flat]
        for gi in range(len(sym.groups)):
            m = gr == gi
            new[m] = self.table[gi][inv[gi][self.pos[flat[m]]], self.j[flat[m]]]
        other = np.flatnonzero(gr < 0)
        if other.shape[0]:
            tids, where = np.unique(flat[other], return_inverse=True)
            for tid in tids.tolist():
                if tid not in images:
                    images[tid] = transition_image(cm, sym, tid, ren)
            new[other] = np.array([images[t] for t in tids.tolist()], np.int64)[where]
        out = np.full(C.shape, -1, np.int64)
        rows = np.repeat(np.arange(C.shape[0]), C.shape[1])
        out[rows, self.column[new]] = new
        if (out < 0).any():
            raise AssertionError("a renamed step lost a process's transition")
        return out
