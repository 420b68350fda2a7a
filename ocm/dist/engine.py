"""The optimal cycle engine across processes: trimming, multichain Howard, certificate, cycle.

Every process calls :func:`optimal_cycle_distributed` with its :class:`~ocm.dist.block.GraphBlock`
(SPMD over a :class:`runtime.comm.Comm`); every process returns the same
:class:`~ocm.result.CycleResult`, equal to ``ocm.optimal_cycle(..., per_scc=False)`` on the
whole graph: the same value, critical cycle, iterations and certificate. That one-process mode
is the comparable one because it restricts the graph by trimming (as here), not by SCCs: the
restricted graph, and so every policy, is the same.

Every array is of the communicator's module ``comm.xp`` (CuPy under
:class:`runtime.comm.NcclComm`: the graph stays on the GPUs; the calls the two spell
differently are :mod:`ocm.dist.ops`'s); only counts, the value classes and the critical cycle
reach the host. Costs and times may be palettes (:class:`ocm.primitives.Palette`: a row per
edge), read where they are needed.

Steps, following :mod:`ocm.howard`'s rules:

1. **Checks** of the arrays as :func:`ocm.optimal_cycle` makes them (integer charges,
   non-negative times, path sums within 2^62), agreed by every process; in ratio mode a
   **zero-time cycle** is sought by trimming the zero-time edges (below); when one exists, the
   zero-time edges that survive are gathered and the cycle is named as one process names it.
2. **Trimming**: repeatedly drop the vertices whose out-edges all lead to dropped vertices;
   the alive flags of remote targets come by a halo exchange (:class:`~ocm.dist.block.Halo`,
   index lists built once), and the processes agree to stop by an ``allreduce``. The kept
   vertices are renumbered in id order (each run of the block's layout keeps its kept
   vertices: one ``allgather`` of the kept counts per run), so the restricted graph is again
   held in runs, where its vertices were, and its ids are those of the one-process
   restriction. Every tie (the smallest representative, the critical cycle's) breaks on
   those global ids, never on a process's local order.
   With ``per_scc`` the SCCs are found by colouring first
   (:func:`ocm.dist.components.scc_labels`: work per round follows the frontier).
3. **Howard**: the first policy is each row's lowest edge of largest cost; per iteration the
   value determination runs by pointer doubling over the policy's functional graph (below),
   the values are ranked exactly (each process's distinct reduced fractions, ``allgather``-ed),
   and the improvement is per owner, with the targets' (rank, X) by the halo. Lowest edge id
   on ties, switch only on strict improvement: the policies are the one-process engine's.
4. **Certificate**: every edge checked by its owner (:mod:`ocm.certify`'s inequalities, exact
   integers), violations summed by ``allreduce``.
5. **Critical cycle**: the policy cycle of the top class with the smallest representative,
   gathered (one ``allgather`` of its few vertices), mapped back to the graph's ids and summed
   exactly.

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
``O(log depth)`` rounds. int64 sums cannot wrap: the checks of step 1 bound every path sum by
``(n + 1) * max |cost|`` (and times likewise) below 2^62; the scaled biases and the
certificate's terms are bounded before they are formed, and a bound that fails
stops the run with :class:`DistributedRangeError` (the one-process engine would go on in
Python ints; the exchanges here carry int64).
"""

from __future__ import annotations

import math
import time as _time
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from runtime.comm import Comm
from runtime.device import synchronize, to_host

from .. import primitives as P
from ..errors import ConvergenceError, InputError, NoCycleError, OcmError, ZeroTimeCycleError
from ..result import CycleResult
from .block import GraphBlock, Halo, fetch
from .collective import agree, count, fetch_parts
from .components import scc_labels, trim, zero_time_cycle
from .ops import best_edges_scatter, edge_groups, edge_rows, first_max_edges, group_rows
from .restrict import Restricted

__all__ = ["optimal_cycle_distributed", "DistributedRangeError", "Clock", "PHASES"]


#: The engine's phases, in order, as :func:`optimal_cycle_distributed` times them (``timings``):
#: the checks and the halo's index lists, the zero-time cycle's search (ratios), trimming, SCC
#: colouring forwards and backwards, the restricted graph, Howard's value determination (the
#: cycle vertices, their representatives, the path sums, the exact ranks) and improvement
#: (with the first policy), the certificate and the critical cycle.
PHASES = ("check", "zero_time_check", "trim", "scc_forward", "scc_backward", "restrict",
          "value_cycles", "value_representatives", "value_sums", "value_ranks", "improve",
          "certify", "cycle")


class Clock:
    """Wall seconds per phase of this process (:data:`PHASES`): :meth:`lap` ends a phase.

    On a device the clock waits for the device's queued work where a phase ends (one
    synchronize a lap), never per round: a round's exchanges and counts wait anyway.

    >>> c = Clock(np)
    >>> c.lap("trim"); c.lap("trim"); sorted(c.seconds)
    ['trim']
    """

    def __init__(self, xp: Any, on_lap: Callable[[str, float], None] | None = None) -> None:
        self.xp = xp
        self.on_lap = on_lap
        self.seconds: dict[str, float] = {}
        self.last = _time.perf_counter()

    def lap(self, phase: str) -> None:
        """Add the time since the last lap (its device work done) to ``phase``."""
        synchronize(self.xp)
        now = _time.perf_counter()
        self.seconds[phase] = self.seconds.get(phase, 0.0) + (now - self.last)
        if self.on_lap is not None:
            self.on_lap(phase, now - self.last)
        self.last = now

    def slowest(self, comm: Comm) -> dict[str, float]:
        """Every phase's seconds on the slowest process for it, in :data:`PHASES` order (one
        ``allgather``; the same on every process)."""
        out: dict[str, float] = {}
        for part in comm.allgather(self.seconds):
            for k, v in part.items():
                out[k] = max(out.get(k, 0.0), v)
        return {k: out[k] for k in sorted(out, key=lambda k: (PHASES + (k,)).index(k))}


class DistributedRangeError(OcmError):
    """A scaled bias or a certificate term could leave int64 across processes (the
    one-process engine computes those in Python ints; the exchanges carry int64)."""


def _check(block: GraphBlock, kind: str, mode: str, comm: Comm) -> tuple[int, int]:
    """The checks of :func:`ocm.optimal_cycle` on every block, agreed; the global bounds
    ``(max |cost|, max time)`` (time 1 for means)."""
    xp = comm.xp
    err = None
    if kind not in ("mean", "ratio"):
        err = InputError(f"unknown kind '{kind}': expected one of mean, ratio")
    elif mode not in ("max", "min"):
        err = InputError(f"unknown mode '{mode}': expected one of max, min")
    elif kind == "ratio" and block.time is None:
        err = InputError("the cycle ratio needs a 'time' array")
    agree(comm, err)
    c, t = block.cost, block.time
    err = None
    if c.shape[0] and _extreme(c, xp, "min") == -2**63:
        e = _global_edge(block, _first(c, -2**63, xp))
        err = InputError(f"'cost'[{e}] = -2**63 is out of range: costs must lie within "
                         "±(2**63 - 1)")
    elif t is not None and t.shape[0] and _extreme(t, xp, "min") < 0:
        low = _extreme(t, xp, "min")
        e = _first(t, low, xp)
        err = InputError(f"times must be non-negative integers: edge {_global_edge(block, e)} "
                         f"has time {low}")
    agree(comm, err)
    cmax = comm.allreduce(_extreme(c, xp, "absmax") if c.shape[0] else 0, "max")
    # (times given are checked and bounded for means too, as one process does)
    tmax = 1 if t is None else comm.allreduce(_extreme(t, xp, "max") if t.shape[0] else 0,
                                              "max")
    n = block.n
    if block.m and not P.fits_int64((n + 1) * cmax, (n + 1) * tmax):
        raise InputError(f"costs up to {cmax} (times up to {tmax}) on {n} vertices: sums "
                         "along a path could pass 2**62, beyond the engine's exact int64 "
                         "arithmetic")
    return cmax, tmax


def _global_edge(block: GraphBlock, e: int) -> int:
    """The global id of the block's edge ``e`` (a message's edge)."""
    return int(block.layout.global_edges(np.array([e], np.int64))[0])


def _used_values(a, xp: Any):
    """The values a per-edge array takes: itself, or a palette's rows that some edge reads
    (so that bounds and checks are those of the edges, not of unused rows)."""
    if not isinstance(a, P.Palette):
        return a
    # (a flag per row written by the edges, not a count: on a device a bincount's atomic
    # additions on a few rows serialise)
    used = xp.zeros(a.values.shape[0], dtype=bool)
    used[a.label] = True
    return a.values[xp.flatnonzero(used)]


def _extreme(a, xp: Any, which: str) -> int:
    """``min``, ``max`` or largest magnitude (``absmax``) of a non-empty per-edge array or
    palette."""
    v = _used_values(a, xp)
    if which == "absmax":
        return max(abs(int(v.min())), abs(int(v.max())))
    return int(v.min()) if which == "min" else int(v.max())


def _first(a, value: int, xp: Any) -> int:
    """The first edge whose value is ``value`` (one is)."""
    if isinstance(a, P.Palette):
        row = int(xp.flatnonzero(a.values == value)[0])
        return int(xp.flatnonzero(a.label == row)[0])
    return int(xp.flatnonzero(a == value)[0])


def _first_policy(R: Restricted, xp: Any) -> Any:
    """Howard's first policy: each row's lowest edge of largest cost, a group of rows at a
    time (its rows' edges whole: no combining across groups)."""
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


class _Policy:
    """The values of one policy on this block (see the module docstring)."""

    __slots__ = ("policy", "rep", "rank", "potential", "rank_num",
                 "rank_den", "reps", "rep_cost", "rep_time")


def _value_determination(comm: Comm, R: Restricted, policy, time_used: bool,
                         bounds: dict, rounds: dict, clock: Clock) -> _Policy:
    xp = comm.xp
    st = _Policy()
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
    clock.lap("value_cycles")
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
    clock.lap("value_representatives")
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
    clock.lap("value_sums")
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
    clock.lap("value_ranks")
    return st


def _best_edges_host(R: Restricted, time_used: bool, rank_ext, pot_ext, st: _Policy,
                     aux: dict):
    """Howard's improvement on NumPy: :func:`ocm.primitives.best_edges` a group of rows at
    a time (:func:`~ocm.dist.ops.edge_groups`; its per-edge constants cached per group in
    ``aux``), so that its temporaries are a group's."""
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


def _certificate(comm: Comm, R: Restricted, st: _Policy, cmax: int, tmax: int,
                 xmax: int, time_used: bool) -> int:
    """Violations of :mod:`ocm.certify`'s conditions over every edge (each by its owner) plus
    the class values' order, the same number on every process."""
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


def optimal_cycle_distributed(block: GraphBlock, comm: Comm, *, kind: str = "mean",
                              mode: str = "max", per_scc: bool = True,
                              max_iter: int | None = None,
                              rounds: dict | None = None,
                              on_lap: Callable[[str, float], None] | None = None
                              ) -> CycleResult:
    """The maximal or minimal cycle mean or ratio of a graph held in blocks (SPMD).

    Parameters
    ----------
    block : GraphBlock
        This process's rows (:func:`ocm.dist.split_graph` cuts a one-process graph).
    comm : runtime.comm.Comm
        Every process of the run calls this function with its own block.
    kind, mode, max_iter
        As for :func:`ocm.optimal_cycle`.
    per_scc : bool
        Restrict the graph to the edges inside strongly connected components (found by
        colouring across the processes), as :func:`ocm.optimal_cycle` does by default on
        NumPy; False: to the vertices that reach a cycle (trimming only), as its
        ``per_scc=False``. The per-SCC optima are not gathered (``scc_optima`` None).
    rounds : dict, optional
        Filled with the rounds of each phase (``trim``, ``scc_phases``, ``scc_forward``,
        ``scc_backward``, ``howard`` iterations, pointer ``doubling``, ``cycle_doubling``
        and ``path_sums`` rounds over all iterations): each round is one exchange and one
        ``allreduce``.
    on_lap : callable, optional
        Called as ``on_lap(phase, seconds)`` by this process each time a phase ends (a
        phase may end several times: per colouring phase, per Howard iteration), so that a
        run stopped before its answer still says where its time went.

    Returns
    -------
    CycleResult
        The same on every process, equal to ``ocm.optimal_cycle(..., per_scc=False)`` of
        the whole graph (value, cycle, cycle edges, iterations, certified); no per-SCC
        optima. Its ``timings``: the wall seconds of each phase of :data:`PHASES` on the
        slowest process for it (each phase's clock waits for the device where the phase
        ends), and ``total``, this process's.

    Raises
    ------
    NoCycleError, ZeroTimeCycleError, InputError, ConvergenceError
        As :func:`ocm.optimal_cycle`, on every process.
    DistributedRangeError
        A bias could leave int64 (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from runtime.comm import SelfComm
    >>> from ocm.dist import split_graph
    >>> b = split_graph(np.array([0, 1, 3, 4]), np.array([1, 1, 2, 0]),
    ...                 np.array([1, 2, 2, 6]), None, 0, 1)
    >>> r = optimal_cycle_distributed(b, SelfComm())
    >>> r.value, r.cycle, r.cycle_edges, r.certified
    (Fraction(3, 1), (0, 1, 2), (0, 2, 3), True)
    """
    t_start = _time.perf_counter()
    xp = comm.xp
    clock = Clock(xp, on_lap)
    rounds = {} if rounds is None else rounds
    cmax, tmax = _check(block, kind, mode, comm)
    time_used = kind == "ratio"
    halo = Halo(comm, block.layout, block.indices)
    clock.lap("check")
    if time_used:
        agree(comm, zero_time_cycle(block, comm, halo, rounds))
    clock.lap("zero_time_check")
    alive = trim(comm, block.indptr, halo, None, rounds)
    clock.lap("trim")
    if per_scc:
        label = scc_labels(comm, block.indptr, halo, alive, block.layout, rounds, clock.lap)
    else:
        label = xp.where(alive, 0, -1)
    work_cost = -block.cost if mode == "min" else block.cost
    R = Restricted(block, comm, halo, label, work_cost)
    clock.lap("restrict")
    if R.k == 0:
        m = block.m
        raise NoCycleError(f"the graph has no cycle ({block.n} vertices, {m} edge"
                           f"{'s' * (m != 1)}): every path ends in a vertex without successors")
    # (the block's halo, labels and flags go where the restriction made its own)
    del halo, label, alive
    aux: dict = {}
    aux: dict = {}
    policy = _first_policy(R, xp)
    if max_iter is None:
        max_iter = max(1000, 10 * R.k)
    # The bounds of the restricted graph's charges, as the one-process iteration takes them.
    cmax = comm.allreduce(_extreme(R.cost, xp, "absmax") if R.cost.shape[0] else 0, "max")
    tmax = comm.allreduce(_extreme(R.time, xp, "max") if R.time.shape[0] else 0, "max") \
        if time_used else 1
    bounds: dict = {}
    st = None
    it = 0
    while True:
        if it >= max_iter:
            raise ConvergenceError(it, f"Howard's iteration did not converge in {it} iterations")
        clock.lap("improve")   # (the first policy, the bounds, the last improvement)
        # (the last policy's values go before the next policy's are made)
        st = rank_ext = pot_ext = best_rank = best_val = best_edge = improve = None
        st = _value_determination(comm, R, policy, time_used, bounds, rounds, clock)
        it += 1
        amax = int(np.abs(st.rank_num).max())
        bmax = int(st.rank_den.max())
        if not P.fits_int64(bmax * cmax, amax * tmax, 2 * bounds["xmax"]):
            raise DistributedRangeError(
                "the improvement's terms could leave the exact int64 arithmetic of the "
                "distributed engine: run it as one process")
        rank_ext, pot_ext = R.halo.pull(st.rank, st.potential)
        if R.n_local and P.is_numpy(xp):
            best_rank, best_val, best_edge = _best_edges_host(R, time_used, rank_ext,
                                                              pot_ext, st, aux)
        elif R.n_local:
            best_rank, best_val, best_edge = best_edges_scatter(
                R.indptr, R.halo.target, R.cost, R.time if time_used else None, rank_ext,
                pot_ext, xp.asarray(st.rank_num), xp.asarray(st.rank_den), R.n_local, xp)
        if R.n_local:
            improve = (best_rank > st.rank) | ((best_rank == st.rank) &
                                               (best_val > st.potential))
        else:
            improve = best_edge = xp.zeros(0, dtype=np.int64)
        rounds["howard"] = rounds.get("howard", 0) + 1
        if count(comm, improve) == 0:
            break
        policy = xp.where(improve, best_edge, policy)
    del rank_ext, pot_ext, best_rank, best_val, best_edge, improve, aux
    clock.lap("improve")
    violations = _certificate(comm, R, st, cmax, tmax, bounds["xmax"], time_used)
    clock.lap("certify")
    # The critical cycle: the top class's policy cycle with the smallest representative.
    top = st.rank_num.shape[0] - 1
    mine = st.reps[st.rank[st.reps] == top]
    r = comm.allreduce(int(R.layout.to_global(mine, xp).min()) if mine.shape[0] else R.k,
                       "min")
    on = xp.flatnonzero(st.rep == r)
    e_loc = R.original_edges(comm, st.policy[on])
    h = to_host   # the cycle's few vertices come to the host
    rows = list(zip(h(R.layout.to_global(on, xp)).tolist(),
                    h(R.targets(st.policy[on])).tolist(), h(R.vertices(on)).tolist(),
                    h(block.layout.global_edges(e_loc, xp)).tolist(),
                    h(block.indices[e_loc]).tolist(), h(block.cost[e_loc]).tolist(),
                    (h(block.time[e_loc]) if time_used else np.ones(on.shape[0], np.int64))
                    .tolist()))
    step = {row[0]: row for row in (x for part in comm.allgather(rows) for x in part)}
    cyc, cyc_edges, c_sum, t_sum = [], [], 0, 0
    v = r
    while True:
        _, nxt, orig, e, target, c, t = step[v]
        cyc.append(orig)
        cyc_edges.append(e)
        c_sum += c
        t_sum += t
        v = nxt
        if v == r:
            break
    ok_walk = all(step_target == cyc[(i + 1) % len(cyc)] for i, step_target in
                  enumerate(step[x][4] for x in _order(step, r)))
    value = Fraction(c_sum, t_sum)
    top_value = Fraction(int(st.rank_num[top]), int(st.rank_den[top]))
    certified = violations == 0 and ok_walk and value == (-top_value if mode == "min"
                                                          else top_value)
    clock.lap("cycle")
    # Each phase on its slowest process (what the run waited for), then this process's total.
    timings = {k: v for k, v in clock.slowest(comm).items()}
    timings["total"] = _time.perf_counter() - t_start
    return CycleResult(value=value, cycle=tuple(cyc), cycle_edges=tuple(cyc_edges), kind=kind,
                       mode=mode, certified=bool(certified), iterations=it,
                       backend="cpu" if P.is_numpy(xp) else "gpu",
                       timings=timings, scc_optima=None, n_vertices=block.n,
                       n_edges=block.m)


def _order(step: dict, r: int) -> list:
    """The cycle's vertices (restricted ids) in policy order from ``r``."""
    out, v = [r], step[r][1]
    while v != r:
        out.append(v)
        v = step[v][1]
    return out
