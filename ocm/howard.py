"""Multichain Howard policy iteration for the maximal cycle mean / ratio, exact, over ``xp``.

The algorithm of Cochet-Terrasson, Cohen, Gaubert, McGettrick and Quadrat (1998) for max-plus
spectral elements, in the cycle-ratio form of Dasdan (2004), with every quantity kept as an exact
integer so that NumPy and CuPy follow the same sequence of policies and the fixed point is itself
the optimality certificate (:mod:`ocm.certify`).

A *policy* picks one out-edge ``policy[v]`` per vertex. Its graph is functional, so every vertex
reaches exactly one policy cycle ``C``. Per vertex the policy has

- a **value** ``eta(v) = sum cost(C) / sum time(C)`` (the cycle it reaches), kept as the
  reduced fraction ``a/b`` of that cycle and as a dense **rank** among the values present;
- a scaled **bias** ``X(v) = b * (sum cost) - a * (sum time)`` along the policy path from
  ``v`` to the representative ``r`` of ``C`` (its smallest vertex), with ``X(r) = 0``. This is
  ``b`` times the classic bias ``x(v) = cost - eta * time + x(succ v)``, so it is an integer.

Improvement (per vertex, all at once, the lexicographic rule of the multichain algorithm): move
to an out-edge towards a strictly better value class; failing that, within the same class, to an
edge with strictly larger ``b*cost - a*time + X(w)``. The fixed point is reached when no vertex
can improve; then for every edge ``u -> w``: ``rank(w) <= rank(u)``, and
``b*cost - a*time + X(w) <= X(u)`` when the ranks are equal, which is exactly the certificate.

Invariants and reasons
----------------------
- **Lowest edge index on ties, switch only on strict improvement.** A vertex keeps its edge
  unless another is strictly better, and among equally good edges takes the lowest id. The
  policy sequence is then a function of the graph alone, identical on NumPy and CuPy, and the
  iteration cannot cycle between equally good policies.
- **Biases renormalised at every iteration, per policy cycle.** ``X`` is recomputed from
  scratch with ``X(r) = 0`` at each cycle's smallest vertex. A cycle that survives an iteration
  keeps its representative and so its zero, which is the normalisation that makes the multichain
  iteration terminate (Cochet-Terrasson et al. keep the old bias at a surviving cycle). Zeroing
  per cycle, not per graph, is what lets one iteration hold many classes at once.
- **Integers only.** Cycle sums are int64 sums, values are reduced fractions ordered exactly
  (:func:`ocm.primitives.rank_fractions`) and biases are integers; when a bound says an int64
  could overflow, the biases switch to Python ints (object arrays, NumPy only).
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .errors import ConvergenceError, ZeroTimeCycleError

from . import primitives as P
from .ops import ops

__all__ = ["HowardState", "solve", "value_determination"]


@dataclass
class HowardState:
    """The policy and its exact values after :func:`solve` (arrays on the engine's ``xp``).

    Attributes
    ----------
    policy : int64 array, shape (n,)
        The chosen out-edge of every vertex.
    succ : int64 array, shape (n,)
        ``indices[policy]``.
    root : int64 array, shape (n,)
        Representative (smallest vertex) of the policy cycle each vertex reaches.
    rank : int64 array, shape (n,)
        Dense rank of every vertex's value.
    rank_num, rank_den : arrays, shape (n_ranks,)
        Reduced value ``rank_num[r] / rank_den[r]`` of rank ``r``, increasing.
    potential : int64 or object array, shape (n,)
        Scaled biases ``X``.
    cycle_cost, cycle_time : dict
        For every representative ``r``: the exact int sums of cost and time around its cycle.
    iterations : int
        Value determinations done.
    timings : dict
        Seconds spent in ``value`` (value determination) and ``improve`` (edge passes).
    """

    policy: Any
    succ: Any
    root: Any
    rank: Any
    rank_num: Any
    rank_den: Any
    potential: Any
    reps: Any
    rep_cost: Any
    rep_time: Any
    iterations: int = 0
    timings: dict = field(default_factory=dict)


def _absmax(a: Any, xp: Any) -> int:
    if isinstance(a, P.Palette):
        a = a.values   # (rows no edge uses are 0: see ocm._as_palette)
    if a.shape[0] == 0:
        return 0
    if a.dtype == object:
        return max(abs(int(a.max())), abs(int(a.min())))
    return int(xp.abs(a).max())


def value_determination(indptr: Any, indices: Any, cost: Any, time: Any | None, policy: Any,
                        xp: Any, exact_objects: bool = False) -> HowardState:
    """Values, ranks and scaled biases of a policy (see the module docstring).

    Parameters
    ----------
    indptr, indices, cost, time
        The graph (``time`` None for cycle means).
    policy : int64 array, shape (n,)
        An out-edge of every vertex.
    xp : module
    exact_objects : bool
        Compute biases on Python ints whatever the bounds say.

    Raises
    ------
    ZeroTimeCycleError
        A policy cycle has total time 0 (``cycle`` holds its vertices in this graph's ids).
    """
    n = policy.shape[0]
    succ = indices[policy].astype(xp.int64, copy=False)
    wc = cost[policy]
    wt = time[policy] if time is not None else xp.ones(n, dtype=xp.int64)
    root, is_rep, (cs, ts) = ops(xp).policy_sums(succ, [wc, wt], xp)
    reps = xp.flatnonzero(is_rep)
    # The path from succ(r) back to r covers every cycle edge but r's own (and is empty when
    # the cycle is a self-loop, where cs[r] = 0).
    cc = wc[reps] + cs[succ[reps]]
    tt = wt[reps] + ts[succ[reps]]
    del wc, wt, is_rep   # (the vertex arrays no longer read go before the next are made)
    zero = xp.flatnonzero(tt == 0)
    if zero.shape[0]:
        r = int(reps[int(zero[0])])
        cyc = [r]
        s = P.to_host(succ).tolist()
        v = s[r]
        while v != r:
            cyc.append(v)
            v = s[v]
        raise ZeroTimeCycleError(f"a cycle has total time 0, so its ratio is undefined: "
                                 f"vertices {cyc[:20]}{' ...' if len(cyc) > 20 else ''}",
                                 cycle=tuple(cyc))
    rrank, rnum, rden = ops(xp).rank_fractions(cc, tt, xp)
    rank_of = xp.zeros(n, dtype=xp.int64)
    rank_of[reps] = rrank
    rank = rank_of[root]
    del rank_of
    if exact_objects:
        wide = True
    elif not P.is_numpy(xp) and rden.shape[0] and n:
        # The four bounds reduced on the device and read back at once (one synchronisation).
        bd = P.to_host(xp.stack([xp.abs(x).max() for x in (rden, cs, rnum, ts)])).tolist()
        wide = not P.fits_int64(int(bd[0]) * int(bd[1]), int(bd[2]) * int(bd[3]))
    else:
        wide = not P.fits_int64(_absmax(rden, xp) * _absmax(cs, xp),
                                _absmax(rnum, xp) * _absmax(ts, xp))
    if wide:
        # Overflow guard: Python ints (NumPy object arrays) instead of int64.
        h = P.to_host
        pot = (h(rden[rank]).astype(object) * h(cs).astype(object)
               - h(rnum[rank]).astype(object) * h(ts).astype(object))
        pot = xp.asarray(pot) if P.is_numpy(xp) else pot
    else:
        # X = b * cs - a * ts, in place: two arrays of the vertices, not five.
        pot = rden[rank]
        pot *= cs
        del cs
        a_ts = rnum[rank]
        a_ts *= ts
        pot -= a_ts
        del a_ts
    return HowardState(policy=policy, succ=succ, root=root, rank=rank, rank_num=rnum,
                       rank_den=rden, potential=pot, reps=reps, rep_cost=cc, rep_time=tt)


def solve(indptr: Any, indices: Any, cost: Any, time: Any | None, *, xp: Any,
          policy: Any | None = None, max_iter: int | None = None,
          exact_objects: bool = False, row: Any | None = None) -> HowardState:
    """Run multichain Howard policy iteration to its fixed point (maximisation).

    Parameters
    ----------
    indptr, indices : int64 arrays
        A graph in which **every vertex has an out-edge** (trim sinks first).
    cost : int64 array, shape (m,)
    time : int64 array, shape (m,), or None
        Non-negative, no cycle of total time 0; None for the cycle mean (time 1 everywhere).
    xp : module
        ``numpy`` or ``cupy``; the arrays live there.
    policy : int64 array, optional
        Starting policy (default: the lowest-index out-edge of maximal cost).
    max_iter : int, optional
        Budget of value determinations (default ``max(1000, 10 * n)``: Howard needs few).
    exact_objects : bool
        Keep biases as Python ints throughout (used to resume after a failed certificate).
    row : int64 array, optional
        :func:`ocm.primitives.edge_rows` of ``indptr`` if already known.

    Returns
    -------
    HowardState
        At the fixed point: no vertex can strictly improve.

    Raises
    ------
    ZeroTimeCycleError
        A policy cycle of total time 0 (ratio only).
    ConvergenceError
        ``max_iter`` value determinations without reaching the fixed point.

    Examples
    --------
    Two self-loops (costs 1 and 3) joined by edges both ways: both vertices get value 3.

    >>> import numpy as np
    >>> indptr = np.array([0, 2, 4]); indices = np.array([0, 1, 0, 1])
    >>> st = solve(indptr, indices, np.array([1, 0, 0, 3]), None, xp=np)
    >>> st.rank_num[st.rank].tolist(), st.rank_den[st.rank].tolist(), st.policy.tolist()
    ([3, 3], [1, 1], [1, 3])
    """
    n = indptr.shape[0] - 1
    aux: dict = {}   # per-edge constants of the host's improvement, kept across iterations
    host = P.is_numpy(xp)
    if row is None and not host:
        row = ops(xp).edge_rows(indptr, xp)
    if policy is None:
        if isinstance(cost, P.Palette) and host:
            # The palette's values by rank (same order, small): the same first maximisers,
            # a block of rows at a time.
            _, vr = np.unique(cost.values, return_inverse=True)
            vr = vr.reshape(-1).astype(np.int64)
            label = cost.label
            policy = P.packed_argmax(indptr, lambda lo, hi: vr[label[lo:hi]], aux)
        else:
            key = P.dense(cost)
            if row is None:
                row = P.edge_rows(indptr, np)
            _, policy = ops(xp).segment_argmax(key, indptr, row, xp)
            del key
    if max_iter is None:
        max_iter = max(1000, 10 * n)
    t_value = t_improve = 0.0
    cmax = _absmax(cost, xp)
    tmax = _absmax(time, xp) if time is not None else 1
    it = 0
    while True:
        if it >= max_iter:
            raise ConvergenceError(it, f"Howard's iteration did not converge in {it} iterations")
        t0 = _time.perf_counter()
        st = value_determination(indptr, indices, cost, time, policy, xp, exact_objects)
        it += 1
        t1 = _time.perf_counter()
        t_value += t1 - t0
        pot, rnum, rden = st.potential, st.rank_num, st.rank_den
        if pot.dtype != object and not P.fits_int64(_absmax(rden, xp) * cmax,
                                                    _absmax(rnum, xp) * tmax,
                                                    2 * _absmax(pot, xp)):
            pot = P.to_host(pot).astype(object)
        if pot.dtype == object:
            rnum = P.to_host(rnum).astype(object)
            rden = P.to_host(rden).astype(object)
        if row is None and pot.dtype == object:   # the generic pass needs the edges' rows
            row = P.edge_rows(indptr, np)
        best_rank, best_val, best_edge = ops(xp).best_edges(indptr, indices, cost, time, row,
                                                      st.rank, pot, rnum, rden, xp, aux=aux)
        improve = (best_rank > st.rank) | ((best_rank == st.rank) & (best_val > pot))
        t_improve += _time.perf_counter() - t1
        if not bool(improve.any()):
            st.iterations = it
            st.timings = {"value": t_value, "improve": t_improve}
            return st
        policy = xp.where(improve, best_edge, policy)
        # Nothing of this policy's state is read again: its memory serves the next one.
        del st, pot, best_rank, best_val, best_edge, improve
