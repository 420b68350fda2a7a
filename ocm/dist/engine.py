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

Steps, following :mod:`ocm.howard`'s rules, each in its module:

1. **Checks** of the arrays as :func:`ocm.optimal_cycle` makes them (integer charges,
   non-negative times, path sums within 2^62), agreed by every process (here); in ratio mode
   a **zero-time cycle** is sought by trimming the zero-time edges; when one exists, the
   zero-time edges that survive are gathered and the cycle is named as one process names it
   (:func:`ocm.dist.components.zero_time_cycle`).
2. **Trimming** (:mod:`ocm.dist.components`): repeatedly drop the vertices whose out-edges all
   lead to dropped vertices; the alive flags of remote targets come by a halo exchange
   (:class:`~ocm.dist.block.Halo`, index lists built once), and the processes agree to stop
   by an ``allreduce``. With ``per_scc`` the SCCs are found by colouring first
   (:func:`ocm.dist.components.scc_labels`: work per round follows the frontier).
   The **restricted graph** (:class:`ocm.dist.restrict.Restricted`): the kept vertices are
   renumbered in id order (each run of the block's layout keeps its kept vertices: one
   ``allgather`` of the kept counts per run), so the restricted graph is again held in runs,
   where its vertices were, and its ids are those of the one-process restriction. Every tie
   (the smallest representative, the critical cycle's) breaks on those global ids, never on
   a process's local order.
3. **Howard** (:mod:`ocm.dist.policy`): the first policy is each row's lowest edge of largest
   cost; per iteration the value determination runs by pointer doubling over the policy's
   functional graph, the values are ranked exactly (each process's distinct reduced
   fractions, ``allgather``-ed), and the improvement is per owner, with the targets' (rank,
   X) by the halo. Lowest edge id on ties, switch only on strict improvement: the policies
   are the one-process engine's. int64 sums cannot wrap (the checks of step 1); a scaled
   bias or a term that could stops the run with :class:`DistributedRangeError`.
4. **Certificate** (:func:`ocm.dist.policy.certificate`): every edge checked by its owner
   (:mod:`ocm.certify`'s inequalities, exact integers), violations summed by ``allreduce``.
5. **Critical cycle** (here): the policy cycle of the top class with the smallest
   representative, gathered (one ``allgather`` of its few vertices), mapped back to the
   graph's ids and summed exactly.

Errors the stages find are agreed (every process raises them together). A failed allocation
on one process is agreed too: the engine runs in a region of :func:`runtime.guard.agreed`, its
collectives through the guarded communicator, so every process raises
:class:`runtime.errors.AgreedOutOfMemory` at the same collective with the graph's counts and
the phase (:class:`Clock` names each as it begins).

The stages share the collectives of :mod:`ocm.dist.collective` (counts, errors agreed by
every process, fetches in parts). Imports run one way: ``engine`` imports ``components``,
``restrict`` and ``policy`` (which imports ``restrict``), each of them ``collective``,
``block`` and ``ops``; none imports ``engine``.
"""

from __future__ import annotations

import time as _time
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from runtime.comm import Comm
from runtime.device import synchronize, to_host
from runtime.guard import agreed, set_phase

from .. import primitives as P
from ..errors import ConvergenceError, InputError, NoCycleError
from ..result import CycleResult
from .block import GraphBlock, Halo
from .collective import agree, count
from .components import scc_labels, trim, zero_time_cycle
from .ops import best_edges_scatter
from .policy import (DistributedRangeError, best_edges_host, certificate, first_policy,
                     value_determination)
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

#: The phase that follows one that ends (:meth:`Clock.lap`), as the processes' guarded
#: communicator names it (:func:`runtime.guard.set_phase`: what an agreed failure reports).
#: Where two may follow (a colouring phase or the restriction after ``scc_backward``; another
#: iteration or the certificate after ``improve``), the engine names the other itself.
_NEXT = {"check": "zero_time_check", "zero_time_check": "trim", "trim": "scc_forward",
         "scc_forward": "scc_backward", "scc_backward": "scc_forward", "restrict": "improve",
         "improve": "value_cycles", "value_cycles": "value_representatives",
         "value_representatives": "value_sums", "value_sums": "value_ranks",
         "value_ranks": "improve", "certify": "cycle"}


class Clock:
    """Wall seconds per phase of this process (:data:`PHASES`): :meth:`lap` ends a phase.

    On a device the clock waits for the device's queued work where a phase ends (one
    synchronize a lap), never per round: a round's exchanges and counts wait anyway.

    >>> c = Clock(np)
    >>> c.lap("trim"); c.lap("trim"); sorted(c.seconds)
    ['trim']
    """

    def __init__(self, xp: Any, on_lap: Callable[[str, float], None] | None = None,
                 comm: Comm | None = None) -> None:
        self.xp = xp
        self.on_lap = on_lap
        self.comm = comm
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
        if self.comm is not None and phase in _NEXT:
            set_phase(self.comm, _NEXT[phase])

    def slowest(self, comm: Comm) -> dict[str, float]:
        """Every phase's seconds on the slowest process for it, in :data:`PHASES` order (one
        ``allgather``; the same on every process)."""
        out: dict[str, float] = {}
        for part in comm.allgather(self.seconds):
            for k, v in part.items():
                out[k] = max(out.get(k, 0.0), v)
        return {k: out[k] for k in sorted(out, key=lambda k: (PHASES + (k,)).index(k))}


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
        A bias could leave int64 (see :mod:`ocm.dist.policy`).

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
    # A failed allocation on one process is agreed by every process at its next collective
    # (runtime.guard): each raises AgreedOutOfMemory with the graph's counts and the phase.
    with agreed(comm, "check", known={"states": block.n, "transitions": block.m}) as comm:
        return _solve(block, comm, kind, mode, per_scc, max_iter, rounds, on_lap)


def _solve(block: GraphBlock, comm: Comm, kind: str, mode: str, per_scc: bool,
           max_iter: int | None, rounds: dict | None, on_lap) -> CycleResult:
    """:func:`optimal_cycle_distributed`'s steps (``comm`` guarded where it is several
    processes': every collective through it)."""
    t_start = _time.perf_counter()
    xp = comm.xp
    clock = Clock(xp, on_lap, comm)
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
        set_phase(comm, "restrict")
        label = xp.where(alive, 0, -1)
    work_cost = -block.cost if mode == "min" else block.cost
    set_phase(comm, "restrict")
    R = Restricted(block, comm, halo, label, work_cost)
    clock.lap("restrict")
    if R.k == 0:
        m = block.m
        raise NoCycleError(f"the graph has no cycle ({block.n} vertices, {m} edge"
                           f"{'s' * (m != 1)}): every path ends in a vertex without successors")
    # (the block's halo, labels and flags go where the restriction made its own)
    del halo, label, alive
    aux: dict = {}
    policy = first_policy(R, xp)
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
        st = value_determination(comm, R, policy, time_used, bounds, rounds, clock.lap)
        it += 1
        amax = int(np.abs(st.rank_num).max())
        bmax = int(st.rank_den.max())
        if not P.fits_int64(bmax * cmax, amax * tmax, 2 * bounds["xmax"]):
            raise DistributedRangeError(
                "the improvement's terms could leave the exact int64 arithmetic of the "
                "distributed engine: run it as one process")
        rank_ext, pot_ext = R.halo.pull(st.rank, st.potential)
        if R.n_local and P.is_numpy(xp):
            best_rank, best_val, best_edge = best_edges_host(R, time_used, rank_ext,
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
    set_phase(comm, "certify")
    violations = certificate(comm, R, st, cmax, tmax, bounds["xmax"], time_used)
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
