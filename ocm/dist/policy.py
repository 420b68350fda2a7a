"""Howard's iteration on the restricted graph across processes: policies, their values, the
improvement and the certificate.

The first policy (:func:`first_policy`) is each row's lowest edge of largest cost; per
iteration :func:`value_determination` finds the policy's cycles, their representatives and
the path sums to them by pointer doubling over the policy's functional graph (below), and
ranks the cycles' values exactly (each process's distinct reduced fractions,
``allgather``-ed); the improvement is per owner, with the targets' (rank, X) by the halo
(:func:`best_edges_host` on NumPy, :func:`ocm.dist.ops.best_edges_scatter` on a device).
Lowest edge id on ties, switch only on strict improvement: the policies are the one-process
engine's. :func:`certificate` checks every edge by its owner (:mod:`ocm.certify`'s
inequalities, exact integers).

Value determination by pointer doubling
---------------------------------------
For the policy's successor ``s`` (global ids), ``J_0 = s`` and ``J_{k+1} = J_k[J_k]``; each
round asks the owner of ``J_k(v)`` for ``J_k`` there (two ``alltoallv``), so the owners see the
image ``I_k`` of ``J_k`` at no cost. ``I_{k+1} = J_k(I_k)`` lies in ``I_k``, and once the two
have the same size ``J_k`` maps ``I_k`` onto itself, so every later image, the last of which
is the set of vertices on cycles, is ``I_k``: the rounds stop there (about log2 of the longest
tail, not log2 n). On those vertices alone, ``M_k(v)`` the smallest of ``v, s(v), ...,
s^(2^k - 1)(v)`` doubles (``M_{k+1} = min(M_k, M_k[J_k])``) to the smallest vertex of each
cycle, the representative. Cutting each cycle there gives a forest; path sums to the roots
double the same way (``S += S[J]``, ``J = J[J]``) until every jump reaches a root,
``O(log depth)`` rounds. int64 sums cannot wrap: the engine's checks (its step 1, in
:mod:`ocm.dist.engine`) bound every path sum by
``(n + 1) * max |cost|`` (and times likewise) below 2^62; the scaled biases and the
certificate's terms are bounded before they are formed, and a bound that fails
stops the run with :class:`DistributedRangeError` (the one-process engine would go on in
Python ints; the exchanges here carry int64).

Examples
--------
The cycles 0 <-> 1 (mean 3/2) and 1 -> 2 -> 1 (mean 4). Row 1's edges cost 2 (to 0) and 3 (to
2): the first policy takes its edge 2, and is optimal (its one cycle, of mean 4, has
representative 1; each row's best edge is its policy's; the certificate holds). A policy
through the lower cycle fails the certificate:

>>> import numpy as np
>>> from runtime.comm import SelfComm
>>> from ocm.dist import split_graph
>>> from ocm.dist.block import Halo
>>> from ocm.dist.restrict import Restricted
>>> b = split_graph(np.array([0, 1, 3, 4]), np.array([1, 0, 2, 1]), np.array([1, 2, 3, 5]),
...                 None, 0, 1)
>>> comm = SelfComm()
>>> R = Restricted(b, comm, Halo(comm, b.layout, b.indices), np.zeros(3, np.int64), b.cost)
>>> policy = first_policy(R, np)
>>> policy.tolist()
[0, 2, 3]
>>> bounds = {}
>>> st = value_determination(comm, R, policy, False, bounds, {}, print)
value_cycles
value_representatives
value_sums
value_ranks
>>> st.rep.tolist(), st.reps.tolist(), st.rep_cost.tolist(), st.rep_time.tolist()
([-1, 1, 1], [1], [8], [2])
>>> st.rank.tolist(), st.rank_num.tolist(), st.rank_den.tolist()
([0, 0, 0], [4], [1])
>>> rank_ext, pot_ext = R.halo.pull(st.rank, st.potential)
>>> best_edges_host(R, False, rank_ext, pot_ext, st, {})[2].tolist()
[0, 2, 3]
>>> certificate(comm, R, st, 5, 1, bounds["xmax"], False)
0
>>> st = value_determination(comm, R, np.array([0, 1, 3]), False, bounds, {}, len)
>>> certificate(comm, R, st, 5, 1, bounds["xmax"], False) > 0
True
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from runtime.comm import Comm
from runtime.device import to_host

from .. import primitives as P
from ..errors import OcmError, ZeroTimeCycleError
from .block import fetch
from .collective import agree, count, fetch_parts
from .ops import edge_groups, edge_rows, first_max_edges, group_rows
from .restrict import Restricted

__all__ = ["DistributedRangeError", "Policy", "first_policy", "value_determination",
           "best_edges_host", "certificate"]


class DistributedRangeError(OcmError):
    """A scaled bias or a certificate term could leave int64 across processes (the
    one-process engine computes those in Python ints; the exchanges carry int64)."""


def first_policy(R: Restricted, xp: Any) -> Any:
    """Howard's first policy: each row's lowest edge of largest cost, a group of rows at a
    time (its rows' edges whole: no combining across groups).

    See the module's example.
    """
    policy = xp.empty(R.n_local, np.int64)
    for g, e in edge_groups(R.indptr, xp):
        ip = R.indptr[g.start:g.stop + 1] - e.start
        cost = P.dense(P.subset(R.cost, e))
        if P.is_numpy(xp):
            pol = P.segment_argmax(cost, ip, edge_rows(ip, xp), np)[1]
        else:
            pol = first_max_edges(cost, edge_rows(ip, xp), g.stop - g.start, xp)[1]
        policy[g] = pol + e.start
        del cost, pol
    return policy


class Policy:
    """The values of one policy on this block (see the module docstring), as
    :func:`value_determination` leaves them: ``policy`` (each row's edge), ``rep`` (each
    vertex's cycle representative, -1 off the cycles), ``rank`` (each vertex's value class),
    ``potential`` (its bias ``X``, scaled by its class's denominator), ``rank_num`` and
    ``rank_den`` (the classes' values, ascending, on the host), ``reps`` (the local
    representatives) with their cycles' sums ``rep_cost`` and ``rep_time``."""

    __slots__ = ("policy", "rep", "rank", "potential", "rank_num",
                 "rank_den", "reps", "rep_cost", "rep_time")


def value_determination(comm: Comm, R: Restricted, policy, time_used: bool,
                        bounds: dict, rounds: dict, lap: Callable[[str], None]) -> Policy:
    """The values of ``policy`` (each row's edge, restricted ids) on every process: its
    cycles, their representatives, the path sums to them, the exact ranks of the cycles'
    values and the biases (see the module docstring). Collective.

    Parameters
    ----------
    comm : runtime.comm.Comm
        Every process calls it with its share ``R`` and its rows' policy.
    R : Restricted
        This process's share of the restricted graph.
    policy : array
        Each local row's edge (local edge ids of ``R``).
    time_used : bool
        Ratios (``R.time``) rather than means (a time of 1 an edge).
    bounds : dict
        Receives ``xmax``, the largest bias's magnitude over every process.
    rounds : dict
        Counts the ``doubling``, ``cycle_doubling`` and ``path_sums`` rounds.
    lap : callable
        ``lap(phase)`` where each part ends (``value_cycles``, ``value_representatives``,
        ``value_sums``, ``value_ranks``: the engine's clock).

    Returns
    -------
    Policy

    Raises
    ------
    ZeroTimeCycleError
        A policy cycle has total time 0 (on every process).
    DistributedRangeError
        A scaled bias could leave int64.

    Examples
    --------
    In the module's docstring (a policy's cycles, representatives, sums and ranks).
    """
    xp = comm.xp
    st = Policy()
    k = R.n_local
    gid = R.layout.global_ids(xp)                 # the restricted ids, in local order
    succ = R.targets(policy)
    wc = R.cost[policy]
    wt = R.time[policy] if time_used else xp.ones(k, dtype=np.int64)
    # The vertices on cycles: J = s^(2^r) doubled (J <- J[J]) while its image shrinks. Each
    # round's fetch sends every J(v) to its owner, so the owners see the image I_r of J_r
    # at no cost; I_{r+1} = J_r(I_r) is a subset of I_r, and once they have the same size
    # J_r maps I_r onto itself, so every later image (the last of which is the set of cycle
    # vertices) is I_r: about log2(longest tail) rounds, not log2(n).
    jump = succ             # (replaced, never changed in place, by each round)
    size = -1
    while True:
        rounds["doubling"] = rounds.get("doubling", 0) + 1
        on = xp.zeros(k, dtype=bool)
        jump = fetch_parts(comm, R.layout, jump, jump, seen=on)[0]
        now = count(comm, on)
        if now == size:
            break
        size = now
    del jump
    lap("value_cycles")
    # Representatives: on the cycle vertices only (each cycle lies in them), doubling with
    # a running minimum until the window 2^r covers the longest cycle (at most ``size``).
    cyc = xp.flatnonzero(on)
    low = gid.copy()
    jump = succ.astype(np.int64)
    for _ in range(max(1, math.ceil(math.log2(max(size, 2))))):
        rounds["cycle_doubling"] = rounds.get("cycle_doubling", 0) + 1
        low_j, jump_j = fetch_parts(comm, R.layout, jump[cyc], low, jump)
        low[cyc] = xp.minimum(low[cyc], low_j)
        jump[cyc] = jump_j
        del low_j, jump_j
    rep = xp.where(on, low, -1)
    del on, low, jump, cyc
    lap("value_representatives")
    # Path sums to the roots: S += S[J], J = J[J] while J is not a root. (Each array goes as
    # soon as it has served: a vertex's int64 arrays are about 1 byte a transition each.)
    is_root = rep == gid
    J = xp.where(is_root, gid, succ)
    del gid
    cs = xp.where(is_root, 0, wc)
    ts = xp.where(is_root, 0, wt)
    reps = xp.flatnonzero(is_root)
    act = xp.flatnonzero(~is_root)
    rep_c, rep_t = wc[reps], wt[reps]
    del is_root, wc, wt
    while comm.allreduce(int(act.shape[0]), "max") > 0:
        rounds["path_sums"] = rounds.get("path_sums", 0) + 1
        ja = J[act]
        c_j, t_j, jj = fetch_parts(comm, R.layout, ja, cs, ts, J)
        moving = jj != ja          # J is not yet a root: double
        a = act[moving]
        cs[a] += c_j[moving]
        ts[a] += t_j[moving]
        J[a] = jj[moving]
        act = a
        # (this round's answers go before the next round's come)
        del ja, c_j, t_j, jj, moving, a
    root = J
    del J, act
    lap("value_sums")
    c_s, t_s = fetch(comm, R.layout, succ[reps], cs, ts)
    cc = rep_c + c_s
    tt = rep_t + t_s
    del c_s, t_s, rep_c, rep_t
    err = None
    zero = xp.flatnonzero(tt == 0)
    if zero.shape[0]:
        err = ZeroTimeCycleError("a cycle has total time 0, so its ratio is undefined: "
                                 f"vertices {to_host(R.vertices(reps[zero[:1]])).tolist()}")
    agree(comm, err)
    # Exact ranks: each process's distinct reduced fractions, gathered and ranked together
    # (one per policy cycle: a few, on the host).
    if reps.shape[0]:
        lrank, lnum, lden = (to_host(x) for x in P.rank_fractions(cc, tt, np))
    else:
        lrank = lnum = lden = np.zeros(0, np.int64)
    allv = comm.allgather((lnum, lden))
    an = np.concatenate([np.asarray(v[0], np.int64) for v in allv])
    ad = np.concatenate([np.asarray(v[1], np.int64) for v in allv])
    grank, rnum, rden = (to_host(x) for x in P.rank_fractions(an, ad, np))
    # This process's fractions are its slice of the gathered ones: their global ranks.
    first = sum(int(v[0].shape[0]) for v in allv[:comm.rank])
    to_global = grank[first:first + lnum.shape[0]]
    rep_rank = xp.full(k, -1, dtype=np.int64)
    if reps.shape[0]:
        rep_rank[reps] = xp.asarray(to_global[lrank])
    rank = fetch_parts(comm, R.layout, root, rep_rank)[0]
    del root, rep_rank
    # X = b * cs - a * ts, int64 only where the bound proves it.
    csm = comm.allreduce(int(xp.abs(cs).max()) if k else 0, "max")
    tsm = comm.allreduce(int(xp.abs(ts).max()) if k else 0, "max")
    amax = int(np.abs(rnum).max()) if rnum.shape[0] else 0
    bmax = int(rden.max()) if rden.shape[0] else 0
    if not P.fits_int64(bmax * csm, amax * tsm):
        raise DistributedRangeError(
            f"scaled biases up to {bmax} * {csm} + {amax} * {tsm} leave the exact int64 "
            "arithmetic of the distributed engine: run it as one process")
    rnum_x, rden_x = xp.asarray(rnum), xp.asarray(rden)
    pot = rden_x[rank] * cs
    del cs
    pot -= rnum_x[rank] * ts
    del ts
    bounds["xmax"] = comm.allreduce(int(xp.abs(pot).max()) if k else 0, "max")
    st.policy, st.rep, st.rank = policy, rep, rank
    st.potential, st.rank_num, st.rank_den = pot, rnum, rden
    st.reps, st.rep_cost, st.rep_time = reps, cc, tt
    lap("value_ranks")
    return st


def best_edges_host(R: Restricted, time_used: bool, rank_ext, pot_ext, st: Policy,
                     aux: dict):
    """Howard's improvement on NumPy: :func:`ocm.primitives.best_edges` a group of rows at
    a time (:func:`~ocm.dist.ops.edge_groups`; its per-edge constants cached per group in
    ``aux``), so that its temporaries are a group's. Returns each row's best ``(rank,
    value, edge)``.

    See the module's example.
    """
    k = R.n_local
    best_rank = np.empty(k, np.int64)
    best_val = np.empty(k, np.int64)
    best_edge = np.empty(k, np.int64)
    if "groups" not in aux:
        aux["groups"] = edge_groups(R.indptr, np)
    for i, (g, sl) in enumerate(aux["groups"]):
        br, bv, be = P.best_edges(
            R.indptr[g.start:g.stop + 1] - sl.start, R.halo.target[sl],
            P.subset(R.cost, sl), P.subset(R.time, sl) if time_used else None, None,
            rank_ext, pot_ext, st.rank_num, st.rank_den, np, aux=aux.setdefault(i, {}))
        best_rank[g], best_val[g], best_edge[g] = br, bv, be + sl.start
        del br, bv, be
    return best_rank, best_val, best_edge


def certificate(comm: Comm, R: Restricted, st: Policy, cmax: int, tmax: int,
                 xmax: int, time_used: bool) -> int:
    """Violations of :mod:`ocm.certify`'s conditions over every edge (each by its owner) plus
    the class values' order, the same number on every process. ``cmax`` and ``tmax`` bound
    the charges' magnitudes and ``xmax`` the biases' (``bounds["xmax"]`` of
    :func:`value_determination`): where their terms fit int64 the check runs in int64, else
    in Python ints on the host.

    See the module's example.
    """
    xp = comm.xp
    a = st.rank_num.astype(object)       # (host: one entry per value class)
    b = st.rank_den.astype(object)
    order_bad = int(np.count_nonzero(~(a[:-1] * b[1:] < a[1:] * b[:-1]))) if a.shape[0] > 1 \
        else 0
    order_bad += int(np.any(b <= 0))
    rank_ext, pot_ext = R.halo.pull(st.rank, st.potential)
    tgt = R.halo.target
    amax = int(np.abs(st.rank_num).max()) if st.rank_num.shape[0] else 0
    bmax = int(st.rank_den.max()) if st.rank_den.shape[0] else 0
    exact64 = P.fits_int64(bmax * cmax, amax * tmax, 2 * xmax)
    num, den = xp.asarray(st.rank_num), xp.asarray(st.rank_den)
    bad = 0
    # (a group of rows at a time, their edges' rows made by a scan: a group's temporaries)
    for rows, sl in edge_groups(R.indptr, xp):
        s_, t_ = group_rows(R.indptr, rows, sl, xp), tgt[sl]
        ru, rw = rank_ext[s_], rank_ext[t_]
        bad += int(xp.count_nonzero(rw > ru))
        same = rw == ru
        cost = P.dense(P.subset(R.cost, sl))
        t = P.dense(P.subset(R.time, sl)) if time_used else 1
        if exact64:
            lhs = den[ru] * cost - num[ru] * t + pot_ext[t_]
            bad += int(xp.count_nonzero(same & (lhs > pot_ext[s_])))
        else:   # Python ints, on this slice's edges (on the host)
            h = to_host
            ru_h = h(ru)
            tt = h(t).astype(object) if time_used else 1
            po = h(pot_ext).astype(object)
            lhs = b[ru_h] * h(cost).astype(object) - a[ru_h] * tt + po[h(t_)]
            bad += int(np.count_nonzero(h(same) & (lhs > po[h(s_)]).astype(bool)))
    return comm.allreduce(bad) + order_bad
