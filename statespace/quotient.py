"""Exploration of the quotient graph: one canonical state per orbit of the symmetry groups.

The explorer of :mod:`statespace.explore` runs unchanged but for three points:

- the initial state and every successor are replaced by their canonical representative
  (:func:`statespace.symmetry.canonicalize`), so the visited set holds one state per orbit;
- a member that equals its neighbour in the canonical order, with neither referred to by a
  key-holding slot, takes no step of its own: the transposition of the two fixes the state and
  maps its steps onto the neighbour's, with equal (cost, time) and targets in the same orbit
  (skipped only when no rendezvous joins two members of one group, where that mapping would
  need both partners);
- every other edge is kept with the action that made it, so parallel edges between two classes
  keep their distinct (cost, time) labels.

The result is a :class:`~statespace.graph.StateGraph` over the classes: its cycles are the
images of the full graph's cycles and each of its cycles lifts to a cycle of the full graph
(:func:`lift_walk`), with the same totals per traversal, so the maximal and minimal cycle mean
and ratio are those of the full graph (docs/algorithms.md, "Symmetry reduction").

Examples
--------
>>> src = '''
... channel req;
... process Server { byte who; state idle, busy; init idle;
...     trans idle -> busy { sync req?who; cost 1; }, busy -> idle { effect who = 0; }; }
... process Client(key id) { state a, b; init a;
...     trans a -> b { sync req!id; }, b -> a { guard Server->who != id; cost 2; }; }
... for (k : 1 .. 4) { process Client(k); }
... system async;'''
>>> from dve import load_model
>>> q = build_quotient_graph(load_model(src))
>>> q.graph.n_states, q.full_size(), q.symmetry.describe()
(9, 48, 'Client: 4 instances (keys 1..4)')
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .explore import _Explorer, as_compiled
from .graph import StateGraph
from .model import CompiledModel
from .symmetry import NO_SYMMETRY, Symmetry, canonicalize, detect_symmetry, interchangeable

__all__ = ["Quotient", "build_quotient_graph", "lift_walk", "orbit_size"]


@dataclass(frozen=True, eq=False)
class Quotient:
    """A graph over orbit representatives and the symmetry it was built with.

    ``graph`` is the full graph itself when ``symmetry.reduces`` is false (nothing to reduce,
    or ``system sync``, for which ``symmetry.reason`` says why).
    """

    graph: StateGraph
    symmetry: Symmetry
    model: CompiledModel

    @property
    def reduced(self) -> bool:
        return self.symmetry.reduces

    def full_size(self) -> int:
        """The number of states of the full product: the sum of the orbits' sizes."""
        if not self.reduced:
            return self.graph.n_states
        return orbit_size(self.symmetry, self.graph.states.T, error=self.graph.error_state)


def orbit_size(sym: Symmetry, X: np.ndarray, error: int = -1) -> int:
    """The total number of states in the orbits of canonical states ``X`` (slots x rows): for
    each group, ``n!`` divided by the product of the factorials of the sizes of the runs of
    interchangeable members (each orbit's size is the index of its stabiliser)."""
    total = 0
    X = np.asarray(X).astype(np.int64)
    rows = X.shape[1]
    if rows == 0:
        return 0
    size = np.ones(rows, dtype=object)
    red = interchangeable(sym, X)
    for g in sym.groups:
        run = np.ones(rows, np.int64)
        div = np.ones(rows, dtype=object)
        for i in range(1, g.size):
            r = red[g.processes[i]]
            run = np.where(r, run + 1, 1)
            # Dividing by the run length at each extension gives run! in the end.
            div = div * np.where(r, run, 1).astype(object)
        size = size * (math.factorial(g.size) // div)
    if 0 <= error < rows:
        size[error] = 1
    total = int(sum(size.tolist()))
    return total


class _QuotientExplorer(_Explorer):
    def __init__(self, cm, sym: Symmetry, *args) -> None:
        super().__init__(cm, *args)
        self.sym = sym
        # Skipping a member that equals its neighbour is exact unless a rendezvous joins two
        # members of one group (then the skipped one may be the needed partner).
        group_of = {p: gi for gi, g in enumerate(sym.groups) for p in g.processes}
        self.skip_ok = not any(
            a.kind == "rendezvous"
            and group_of.get(cm.transitions[a.transitions[0]].process, -1) >= 0
            and group_of.get(cm.transitions[a.transitions[0]].process)
            == group_of.get(cm.transitions[a.transitions[1]].process, -2)
            for a in cm.actions)
        self.skip: dict[int, np.ndarray] = {}
        self.init_key = self._canon_keys(self.init_key)

    def _canon_keys(self, keys: np.ndarray) -> np.ndarray:
        X = self.layout.unpack(keys, np, dtype=np.int64)
        return self.layout.pack(canonicalize(self.sym, X), np)

    def _enabled(self, X, F, rows_cache, allowed, tid):
        r, gerr = super()._enabled(X, F, rows_cache, allowed, tid)
        mask = self.skip.get(self.cm.transitions[tid].process)
        if mask is not None and r.shape[0]:
            keep = ~mask[r]
            if not keep.all():
                r = r[keep]
                gerr = gerr[keep] if gerr is not None else None
        return r, gerr

    def _successors_async(self, X, keys):
        if self.skip_ok:
            # Computed on the rows as they are (the error state's are hidden as -1 already).
            self.skip = interchangeable(self.sym, X)
        out = super()._successors_async(X, keys)
        self.skip = {}
        src, act, nkeys, err, costs, tim = out
        if src.shape[0]:
            nkeys = self._canon_keys(nkeys)
        return src, act, nkeys, err, costs, tim


def build_quotient_graph(model, *, symmetry: Symmetry | None = None,
                         property: bool = True,
                         max_states: int | None = None, max_memory: int | None = None,
                         progress: Callable[[int, int, float], None] | None = None,
                         chunk_size: int = 1 << 17) -> Quotient:
    """Explore one representative per orbit (see the module docstring).

    Parameters
    ----------
    model : CompiledModel or dve.syntax.Model
        As for :func:`statespace.build_state_graph`.
    symmetry : Symmetry, optional
        The groups to reduce; :func:`~statespace.symmetry.detect_symmetry` by default.
        :data:`~statespace.symmetry.NO_SYMMETRY` explores the full graph.
    property, max_states, max_memory, progress, chunk_size
        As for :func:`statespace.build_state_graph`.

    Returns
    -------
    Quotient
        The graph over canonical states (its ``states`` are the representatives), with the
        symmetry used. A ``system sync`` model is explored in full, with the reason.
    """
    cm = as_compiled(model, property=property)
    sym = detect_symmetry(cm) if symmetry is None else symmetry
    if sym.reduces and cm.system == "sync":
        sym = Symmetry((), sym.refused, "system sync: the quotient is explored for "
                       "'system async' only so far; the full product was explored")
    if not sym.reduces:
        ex = _Explorer(cm, np, chunk_size, max_states, max_memory, progress, False)
    else:
        ex = _QuotientExplorer(cm, sym, np, chunk_size, max_states, max_memory, progress,
                               False)
    return Quotient(ex.run(), sym, cm)


def _apply_perm(sym: Symmetry, X: np.ndarray, perms) -> np.ndarray:
    """States ``X`` (slots x rows) with each group's members moved: member ``perms[g][p]``'s
    local vector goes to position ``p`` and its key is renamed to ``keys[p]`` (the inverse of
    what :func:`canonicalize` reports)."""
    Y = np.array(X, copy=True)
    for g, order in zip(sym.groups, perms):
        M = np.asarray(g.member_slots)
        order = np.asarray(order)
        for p in range(g.size):
            Y[M[p]] = X[M[order[p]]]
        ren = {g.keys[order[p]]: g.keys[p] for p in range(g.size)}
        for j in g.key_slots:
            Y[j] = [ren.get(int(v), int(v)) for v in X[j]]
    return Y


def lift_walk(q: Quotient, edges) -> tuple[list[np.ndarray], list[int], int]:
    """A run of the full model following a cycle of the quotient, repeated until it closes.

    Parameters
    ----------
    q : Quotient
    edges : sequence of int
        Edge ids of ``q.graph`` forming a cycle (edge ``i`` ends where edge ``i + 1`` starts).

    Returns
    -------
    states : list of ndarray
        Concrete state vectors ``s_0, ..., s_L`` of the full model with ``s_L == s_0``; ``s_0``
        is the representative of the cycle's first class.
    actions : list of int
        The model's action ids of the ``L`` steps (``system async``), with real instances.
    repeats : int
        How many times the quotient cycle was walked: the order of the permutation relating
        the end of one walk to its start (``L = repeats * len(edges)``).

    Notes
    -----
    The run is at ``π·rep`` while the quotient walk is at ``rep`` (``π·X`` puts member
    ``π[p]`` of ``X`` at position ``p``, renaming its key). An edge ``rep --a--> t`` with
    ``canon(t) = o·t`` is taken by the run as ``π(a)``, reaching ``π·t = (o⁻¹[π])·canon(t)``.
    Invariance of the model under the group makes each such step a step of the full model with
    the edge's (cost, time).
    """
    g = q.graph
    cm = q.model
    edges = [int(e) for e in edges]
    srcs = [int(np.searchsorted(g.indptr, e, side="right") - 1) for e in edges]
    if not q.reduced:
        states = [g.states[s].astype(np.int64) for s in srcs]
        states.append(g.states[srcs[0]].astype(np.int64))
        return states, [int(g.action[e]) for e in edges], 1
    sym = q.symmetry
    ex = _Explorer(cm, np, 1, None, None, None, False)
    where = {}   # transition id -> (group, member position, index within the process)
    table = []   # group -> position -> transition ids
    for gi, gr in enumerate(sym.groups):
        table.append([cm.processes[p].transitions for p in gr.processes])
        for pos, p in enumerate(gr.processes):
            for j, tid in enumerate(cm.processes[p].transitions):
                where[tid] = (gi, pos, j)
    action_of = {a.transitions + ((a.property,) if a.property is not None else ()): i
                 for i, a in enumerate(cm.actions)}
    start = g.states[srcs[0]].astype(np.int64)
    cur = start.copy()
    perm = [np.arange(gr.size) for gr in sym.groups]
    states, acts = [cur.copy()], []
    for rounds in range(1, _MAX_ROUNDS + 1):
        for e, s in zip(edges, srcs):
            a = int(g.action[e])
            t = _successor(ex, g.states[s].astype(np.int64), a, cm)
            inv = [np.argsort(p) for p in perm]

            def mapped(tid):
                w = where.get(tid)
                if w is None:
                    return tid
                gi, pos, j = w
                return table[gi][int(inv[gi][pos])][j]

            acts.append(action_of[tuple(mapped(tid) for tid in cm.action_transitions(a))])
            cur = _apply_perm(sym, t.reshape(-1, 1), perm)[:, 0]
            _, orders = canonicalize(sym, t.reshape(-1, 1), return_perm=True)
            perm = [np.argsort(o[:, 0])[p] for p, o in zip(perm, orders)]
            states.append(cur.copy())
        if np.array_equal(cur, start):
            return states, acts, rounds
    raise AssertionError("the lifted walk did not close")


#: A permutation of n members has order at most Landau's g(n) (g(100) is about 2.3e5 walks).
_MAX_ROUNDS = 1 << 20


def _successor(ex: _Explorer, rep: np.ndarray, action: int, cm: CompiledModel) -> np.ndarray:
    """The concrete successor of state ``rep`` by ``action`` (full semantics, one row)."""
    X = rep.reshape(-1, 1).astype(np.int32)
    keys = ex.layout.pack(X, np)
    src, act, nkeys, err, costs, tim = ex._successors_async(X.copy(), keys)
    hit = np.flatnonzero(act == action)
    if hit.shape[0] == 0:
        raise AssertionError(f"action {action} is not enabled in the representative")
    if err[hit[0]]:
        return np.asarray(cm.error_state, np.int64)
    return ex.layout.unpack(nkeys[hit[:1]], np, dtype=np.int64)[:, 0]
