"""Saturating runs planned directly: a short periodic run of full ticks, found by an integer
program over the scenarios' count rings.

A system saturates its server when some infinite run keeps every worker busy on every tick.
Such a run of the count model of :mod:`scenarios.schedule` (how many clients of each scenario
stand at each tick node of its ring) is, after a prefix, a cycle of *full* ticks. The count
model has a handful of nodes per scenario whatever the number of clients, so a cycle of it is
searched for with an integer program (:func:`scipy.optimize.milp`, HiGHS) whose size grows
with the scenarios, their phases and the horizon, never with the clients:

- ``n[s, v, t]``: the clients of scenario ``s`` at node ``v`` at the start of tick ``t``,
  ``0 <= t <= H``; at ``t = 0`` all at their ring's first node (the model's initial state);
- ``a[s, v, t]``: how many of those at a ``wait`` node the server admits on tick ``t``;
- the ring moves: every client at a ``free`` or ``busy`` node moves on, a waiting one moves
  on when admitted and stays otherwise;
- the server's rule: on each tick it admits ``min(A, W - busy, waiting)`` (the rendering's
  admission steps must admit while a desk, a worker and a waiting client are there), written
  with three binaries per tick;
- one binary ``p[j]`` per candidate start of the period: every tick from ``j`` on is full
  (``busy + admitted = W``) and the counts at ``H`` equal those at ``j``.

A solution is a run of the count model from its initial state whose ticks ``j .. H - 1`` are
full and whose state at ``H`` is that of ``j`` up to a renaming of the clients of each
scenario. Nothing here is a result: :func:`admissions` turns the plan into which client the
server admits on each tick, and :func:`scenarios.bounds.find_witness` follows that on the
model itself (its ``plans`` rows), checking every step and lifting the walk that closes up
to a renaming into a concrete cycle.

Examples
--------
Seven clients whose two requests must interlock to keep two workers busy:

>>> from scenarios import Scenario, Server, System, Think, Request
>>> pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
>>> plan = plan_cycle(System({pair: 7}, server=Server(workers=2, admissions=2)),
...                   horizons=(32,))
>>> plan.period >= 1 and plan.start + plan.period == plan.horizon
True
>>> full = [plan.served(t) for t in range(plan.start, plan.horizon)]
>>> full == [2] * plan.period
True
"""

from __future__ import annotations

import time as _time
from fractions import Fraction
from dataclasses import dataclass

import numpy as np

from .dsl import System
from .closeflow import closing_flows
from .rows import ConstraintRows
from .schedule import tick_ring

__all__ = ["CyclePlan", "count_cycle", "plan_cycle", "plan_split", "plan_tracked", "walk_plan",
           "walked_run", "admissions", "HORIZONS", "TRACK_PERIODS", "TRACK_PERIOD_SECONDS",
           "TRACK_ROWS", "TRACK_TICKS", "TRACK_ROUNDS", "renaming_order", "track_cycle"]

#: The horizons :func:`plan_cycle` tries in turn (ticks from the initial state to the end of
#: the period); the period starts at least :data:`MIN_PREFIX` ticks in.
HORIZONS = (16, 24, 32, 44, 56, 72)
#: The period's first tick is at least this (the clients all start in one phase: a full tick
#: needs them spread, which takes a few ticks).
MIN_PREFIX = 1


@dataclass(frozen=True)
class CyclePlan:
    """A run of the count model: ``counts[t]`` per tick ``0 .. horizon``, ticks ``start ..
    horizon - 1`` full, ``counts[horizon] == counts[start]``.

    Attributes
    ----------
    kinds : tuple of tuple of str
        Per scenario, its ring's node kinds (:class:`scenarios.schedule.TickRing`).
    counts : numpy.ndarray
        ``(horizon + 1, nodes)``: clients per node (the scenarios' rings one after the other).
    admitted : numpy.ndarray
        ``(horizon, nodes)``: admitted per ``wait`` node and tick (0 elsewhere).
    start, horizon : int
        The period is ticks ``start .. horizon - 1``.
    workers : int
    seconds : float
        Time spent in the solver.
    """

    kinds: tuple[tuple[str, ...], ...]
    counts: np.ndarray
    admitted: np.ndarray
    start: int
    horizon: int
    workers: int
    seconds: float

    @property
    def period(self) -> int:
        """Ticks of the cycle."""
        return self.horizon - self.start

    def served(self, t: int) -> int:
        """Workers busy on tick ``t``: clients at ``busy`` nodes plus those admitted."""
        flat = [k for ks in self.kinds for k in ks]
        busy = sum(int(self.counts[t, i]) for i, k in enumerate(flat) if k == "busy")
        return busy + int(self.admitted[t].sum())


def _rings(system: System):
    rings = [tick_ring(sc) for sc, _ in system.counts]
    if system.server is None or system.server.admissions < 2 or None in rings:
        return None
    return rings


class _Counts:
    """The count model's rings as one graph of nodes, and the integer programs over it."""

    def __init__(self, system: System, rings) -> None:
        self.W, self.A = system.server.workers, system.server.admissions
        self.kinds = [ring.kind for ring in rings]
        self.flat = [k for ks in self.kinds for k in ks]
        self.succ: list[int] = []
        self.first: list[int] = []
        self.group: list[int] = []
        for g, ks in enumerate(self.kinds):
            base = len(self.succ)
            self.first.append(base)
            self.succ += [base + (i + 1) % len(ks) for i in range(len(ks))]
            self.group += [g] * len(ks)
        self.V = len(self.flat)
        self.counts = [k for _, k in system.counts]
        self.N = sum(self.counts)
        self.waits = [v for v in range(self.V) if self.flat[v] == "wait"]
        self.busys = [v for v in range(self.V) if self.flat[v] == "busy"]

    def solve(self, ticks: int, *, starts: list[tuple[int, int]] | None,
              time_limit: float, targets: np.ndarray | None = None,
              initial: np.ndarray | None = None, cost: np.ndarray | None = None,
              waits_least: dict[int, int] | None = None, extra=None):
        """One integer program over ``ticks`` ticks of the count model.

        ``starts=None``: a cycle alone (the counts at tick 0 free but for each scenario's
        total, every tick full, the counts at ``ticks`` those at 0). Else a run from the
        initial state, the server's rule on every tick, and a cycle ``(j, P)`` of
        ``starts`` (one binary each): ticks ``j .. j + P - 1`` full, the counts at
        ``j + P <= ticks`` those at ``j``. Returns ``(counts, admitted, (j, P))``, ``None``
        where there is none, ``False`` where the time ran out first. ``cost`` (a cycle
        alone): a price per count then admission variable, which only steers which cycle
        comes out: the solver stops at its first solution; ``waits_least`` (a cycle alone):
        per scenario, the fewest ticks its clients wait in a round in all; ``extra(add,
        n_of, a_of, nvar)``: adds rows (and variables from ``nvar`` on), returns the count."""
        from scipy.optimize import Bounds, milp

        V, W, A, N = self.V, self.W, self.A, self.N
        waits, busys, flat, succ = self.waits, self.busys, self.flat, self.succ
        cyclic = starts is None and targets is None
        widx = {v: i for i, v in enumerate(waits)}
        n_t = ticks if cyclic else ticks + 1
        nv, na = n_t * V, ticks * len(waits)
        nz = 0 if cyclic else 3 * ticks
        if targets is not None:
            starts = []
        nvar = nv + na + nz + (0 if cyclic else len(starts)) + (
            0 if targets is None else len(targets))

        def n_of(t, v):
            return (t % ticks if cyclic else t) * V + v

        def a_of(t, w):
            return nv + t * len(waits) + widx[w]

        def z_of(t, i):
            return nv + na + 3 * t + i

        def p_of(i):
            return nv + na + nz + i

        def y_of(r):
            return nv + na + nz + r

        cons = ConstraintRows()
        add = cons.add

        for t in range(ticks):
            for v in range(V):             # the ring moves
                u = succ[v]
                terms = [(n_of(t + 1, u), 1.0),
                         (a_of(t, v), -1.0) if flat[v] == "wait" else (n_of(t, v), -1.0)]
                if flat[u] == "wait":
                    terms += [(n_of(t, u), -1.0), (a_of(t, u), 1.0)]
                add(terms, 0, 0)
            for w in waits:
                add([(a_of(t, w), 1.0), (n_of(t, w), -1.0)], -np.inf, 0)
            k = [(a_of(t, w), 1.0) for w in waits]
            b = [(n_of(t, v), 1.0) for v in busys]
            add(k, -np.inf, A)
            if cyclic:
                add(k + b, W, W)
                continue
            add(k + b, -np.inf, W)
            # The server's rule, k = min(A, W - busy, waiting): k is at most each (above),
            # and at least one of them, chosen by a binary: z0 the admissions run out (only
            # where A < W: else W - busy <= A comes first), z1 the workers, z2 the waiting.
            wt = [(n_of(t, w), -1.0) for w in waits]
            if A < W:
                add(k + [(z_of(t, 0), -A)], 0, np.inf)
            else:
                add([(z_of(t, 0), 1.0)], 0, 0)
            add(k + b + [(z_of(t, 1), -W)], 0, np.inf)
            add(k + wt + [(z_of(t, 2), -N)], -N, np.inf)
            add([(z_of(t, i), 1.0) for i in range(3)], 1, np.inf)
            # full on the period's ticks
            on = [i for i, (j, P) in enumerate(starts) if j <= t < j + P]
            if on:
                add(k + b + [(p_of(i), -W) for i in on], 0, np.inf)
        lb = np.zeros(nvar)
        ub = np.full(nvar, float(N))
        ub[nv + na:] = 1.0
        if cyclic:
            for g, cnt in enumerate(self.counts):
                add([(n_of(0, v), 1.0) for v in range(V) if self.group[v] == g], cnt, cnt)
            for g, least in (waits_least or {}).items():
                # (scenario g's clients wait at least `least` ticks a round in all)
                ws = [w for w in waits if self.group[w] == g]
                add([(n_of(t, w), 1.0) for t in range(ticks) for w in ws]
                    + [(a_of(t, w), -1.0) for t in range(ticks) for w in ws], least, np.inf)
        else:
            if initial is None:
                initial = np.zeros(V, np.int64)
                for g, cnt in enumerate(self.counts):
                    initial[self.first[g]] = cnt
            lb[:V] = ub[:V] = np.asarray(initial, float)
            if targets is not None:
                add([(y_of(r), 1.0) for r in range(len(targets))], 1, 1)
                for v in range(V):
                    add([(n_of(ticks, v), 1.0)] + [(y_of(r), -float(targets[r][v]))
                                                   for r in range(len(targets))], 0, 0)
            else:
                add([(p_of(i), 1.0) for i in range(len(starts))], 1, 1)
            for i, (j, P) in enumerate(starts):
                for v in range(V):
                    add([(n_of(j + P, v), 1.0), (n_of(j, v), -1.0), (p_of(i), N)],
                        -np.inf, N)
                    add([(n_of(j + P, v), 1.0), (n_of(j, v), -1.0), (p_of(i), -N)],
                        -N, np.inf)
        if extra is not None:               # (more variables and rows: a cycle alone)
            more = extra(add, n_of, a_of, nvar)
            lb, ub = np.r_[lb, np.zeros(more - nvar)], np.r_[ub, np.full(more - nvar, N)]
            nvar = more
        options = {"time_limit": max(0.2, time_limit), "disp": False}
        c = np.zeros(nvar)
        if cost is not None:
            c[:nv + na] = cost
            options["mip_rel_gap"] = 1e9          # (any solution: the price only steers it)
        res = milp(c, constraints=cons.constraint(nvar),
                   integrality=np.ones(nvar), bounds=Bounds(lb, ub), options=options)
        if res.x is None:
            # (2: proved infeasible; 1: out of time, undecided)
            return None if res.status == 2 else False
        x = np.rint(res.x).astype(np.int64)
        counts = x[:nv].reshape(n_t, V)
        adm = np.zeros((ticks, V), np.int64)
        for t in range(ticks):
            for w in waits:
                adm[t, w] = x[a_of(t, w)]
        if targets is not None:
            got = next(r for r in range(len(targets)) if x[y_of(r)] == 1)
            return counts, adm, got
        got = (0, ticks) if cyclic else next(
            jp for i, jp in enumerate(starts) if x[p_of(i)] == 1)
        return counts, adm, got


def count_cycle(system: System, period: int, *, time_limit: float = 5.0, seed: int | None = None,
                rounds: int | None = None, extra=None):
    """A cycle of ``period`` full ticks of the count model alone (:func:`plan_split`'s first
    part): ``(counts, admitted)`` per tick of the cycle (``period x nodes``), ``None`` where
    there is none (proved), ``False`` where ``time_limit`` ran out or the count model does not
    describe ``system``. ``seed``: a random price on the program's variables, so that seeds
    give different cycles (``None``: the solver's first). ``rounds``: only cycles whose
    waiting lets every client come home after that many rounds (each scenario's ``n``
    clients on a ring of ``T`` ticks wait ``n (rounds x period mod T) / rounds`` ticks a
    round or more: :func:`scenarios.closing.closing_candidates`). ``extra(add, n_of, a_of,
    nvar)``: more rows over the counts ``n_of(t, v)`` and admissions ``a_of(t, w)`` (and
    variables numbered from ``nvar``; it returns how many there are then)."""
    rings = _rings(system)
    if rings is None:
        return False
    model = _Counts(system, rings)
    cost = None if seed is None else np.random.default_rng(seed).normal(
        size=period * (model.V + len(model.waits)))
    least = None if rounds is None else {
        g: -(-n * (rounds * period % len(ks)) // rounds)
        for g, (ks, n) in enumerate(zip(model.kinds, model.counts))}
    got = model.solve(period, starts=None, time_limit=time_limit, cost=cost,
                      waits_least=least, extra=extra)
    return got if not got else (got[0], got[1])


def plan_cycle(system: System, *, horizons=HORIZONS, time_limit: float = 30.0
               ) -> CyclePlan | None:
    """A run of the count model of ``system`` that ends in a cycle of full ticks, or ``None``
    where none was found within ``time_limit`` seconds (or the count model does not describe
    the system: :func:`scenarios.schedule.describes`).

    For each horizon ``H`` of ``horizons`` in turn, one program looks for a run from the
    initial state of ``H`` ticks whose ticks ``j .. H - 1`` are full and whose counts at
    ``H`` are those at ``j``, for any ``j >= MIN_PREFIX`` (the server's
    rule needs binaries: this takes longer). ``None`` proves nothing: a longer horizon or
    more time may find one.
    """
    rings = _rings(system)
    if rings is None:
        return None
    model = _Counts(system, rings)
    t0 = _time.perf_counter()
    t_end = t0 + time_limit
    for H in horizons:
        starts = [(j, H - j) for j in range(MIN_PREFIX, H)]
        left = t_end - _time.perf_counter()
        if left <= 0.2:
            return None
        got = model.solve(H, starts=starts, time_limit=left)
        if not got:
            continue
        counts, adm, (j, P) = got
        return CyclePlan(tuple(tuple(ks) for ks in model.kinds), counts[:j + P + 1],
                         adm[:j + P], j, j + P, model.W, _time.perf_counter() - t0)
    return None


def plan_split(system: System, *, periods=range(1, 25), horizons=(8, 16, 24, 32),
               time_limit: float = 30.0) -> CyclePlan | None:
    """A run of the count model of ``system`` that ends in a cycle of full ticks, found in
    two parts: first a cycle alone (the counts at its start free but for each scenario's
    total: a program without the server's rule, whose ticks are all full), for each period
    of ``periods`` in turn until one has one; then a run from the initial state, under the
    server's rule, of ``H`` ticks (``H`` of ``horizons`` in turn) whose counts at ``H`` are
    those of one of the cycle's ticks (one binary per tick of the cycle: the end is a choice
    among known vectors, which the solver propagates well). ``None`` where either part finds
    nothing within ``time_limit`` seconds in all, or no run reaches the cycle found: another
    cycle may be reachable, so ``None`` proves nothing.

    A full tick obeys the server's rule whatever the counts (it admits ``W - busy``, at most
    ``A`` and at most the waiting, so the smallest of the three), so the cycle needs no
    binaries; the run to it does, but its end is pinned.

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
    >>> plan = plan_split(System({pair: 7}, server=Server(workers=2, admissions=2)))
    >>> [plan.served(t) for t in range(plan.start, plan.horizon)] == [2] * plan.period
    True
    """
    rings = _rings(system)
    if rings is None:
        return None
    model = _Counts(system, rings)
    t0 = _time.perf_counter()

    def left() -> float:
        return time_limit - (_time.perf_counter() - t0)

    for P in periods:
        if left() <= 0.2:
            return None
        cyc = model.solve(P, starts=None, time_limit=left())
        if cyc:
            break
    else:
        return None
    ring = cyc[0]                                    # counts at the cycle's ticks 0 .. P - 1
    for H in horizons:
        if left() <= 0.2:
            return None
        got = model.solve(H, starts=[], time_limit=left(), targets=ring)
        if not got:
            continue
        counts, adm, r = got
        # the prefix, then the cycle turned to start at its tick r
        turn = [(r + k) % P for k in range(P)]
        rows = [counts[t] for t in range(H + 1)] + [ring[(x + 1) % P] for x in turn]
        moves = [adm[t] for t in range(H)] + [cyc[1][x] for x in turn]
        return CyclePlan(tuple(tuple(ks) for ks in model.kinds), np.stack(rows),
                         np.stack(moves), H, H + P, model.W, _time.perf_counter() - t0)
    return None


#: :func:`plan_tracked`: the periods its cycle program tries in turn, the seconds each may
#: take, the rows of the tracking walk (fallback orders times phase offsets) and its ticks.
TRACK_PERIODS = range(1, 31)
TRACK_PERIOD_SECONDS = 5.0
TRACK_ROWS = 4096
TRACK_TICKS = 400
#: :func:`plan_tracked` tries its cycle gone round up to this many times in the plan (its
#: ``rounds``). More rounds give the clients' aims and
#: :func:`scenarios.closeflow.closing_flows` room to bring every client home (the editor's farm
#: at 39 users closes exactly after 10 rounds of 11 ticks, at 38 after 21 of 16; the counting
#: argument of docs/algorithms.md allows no cycle under 72 ticks there) but cost seconds where
#: none closes (at 37: 7 s become 17 s for nothing).
TRACK_ROUNDS = 4


def plan_tracked(system: System, *, periods=TRACK_PERIODS, time_limit: float = 30.0,
                 rows: int = TRACK_ROWS, ticks: int = TRACK_TICKS, seed: int = 0,
                 tries: int = 2, rounds: int = TRACK_ROUNDS) -> CyclePlan | None:
    """A run of the count model of ``system`` that ends in a cycle of full ticks: a cycle
    alone first (:func:`plan_split`'s first part, no binaries), then a prefix to it found by
    *tracking* it on the count model, not by an integer program.

    The cycle ``C_0 .. C_{P-1}`` comes with its admissions ``a_0 .. a_{P-1}`` per ``wait``
    node. From the initial state, each row of a walk of the count model follows the server's
    rule (it admits ``min(A, W - busy, waiting)`` on every tick), choosing whom as the cycle
    would: on tick ``t`` the admissions ``a_{(t + o) mod P}`` of its phase offset ``o`` where
    clients wait there, the slots left by a fixed order of the ``wait`` nodes (seeded, one per
    row). The rows differ in their offset and order; the first row whose counts equal one of
    the cycle's ``C_i`` has reached it, and from there the cycle's own admissions keep every
    tick full. For each period ``P`` of ``periods`` in turn (each program at most
    :data:`TRACK_PERIOD_SECONDS`) until ``tries`` cycles are found that some row reaches
    within ``ticks``, or ``time_limit`` seconds have passed; ``None`` where none was found
    (which proves nothing).

    The model follows the plan's clients (:func:`admissions`); where they come back to their
    nodes only up to a renaming after the period, its run is the period repeated through the
    renaming's order. So each cycle is also tried gone round ``L <= rounds`` times
    (while ``time_limit`` lasts), and
    the plan kept is the one whose run is shortest: prefix plus ``L P`` times the order
    (:func:`renaming_order`). Nothing here is a result: the plan is followed on the model
    and checked there.

    Six clients who each ask for 3 ticks of service and then 1 on two workers:

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> burst = Scenario("burst", [Request("load", 3), Request("ack", 1), Think(1)])
    >>> plan = plan_tracked(System({burst: 6}, server=Server(workers=2, admissions=2)))
    >>> [plan.served(t) for t in range(plan.start, plan.horizon)] == [2] * plan.period
    True

    It does not always find one where one exists (the tracking may never meet the cycle):
    the search then goes on to the other planners.
    """
    rings = _rings(system)
    if rings is None:
        return None
    model = _Counts(system, rings)
    t0 = _time.perf_counter()
    best = None
    found = 0
    for P in periods:
        left = time_limit - (_time.perf_counter() - t0)
        if left <= 0.2 or found >= tries:
            break
        cyc = model.solve(P, starts=None, time_limit=min(left, TRACK_PERIOD_SECONDS))
        if not cyc:
            continue
        ring, moves = cyc[0], cyc[1]
        got = _track(model, ring, moves, rows=rows, ticks=ticks, seed=seed)
        if got is None:
            continue
        found += 1
        counts, adm, i = got
        H = len(adm)
        # The count model's cycle, gone round L times: the clients' renaming over the
        # period (whom admissions() admits) may close in fewer rounds of the model's walk.
        for L in range(1, rounds + 1):
            if L > 1 and _time.perf_counter() - t0 > time_limit:
                break
            if best is not None and best[0] <= H + L * P:
                break                 # (no longer round can beat the best plan's run)
            turn = [(i + k) % P for k in range(L * P)]
            rows_ = [counts[t] for t in range(H + 1)] + [ring[(x + 1) % P] for x in turn]
            moved = [adm[t] for t in range(H)] + [moves[x] for x in turn]
            plan = CyclePlan(tuple(tuple(ks) for ks in model.kinds), np.stack(rows_),
                             np.stack(moved).reshape(-1, model.V), H, H + L * P, model.W,
                             _time.perf_counter() - t0)
            ticks_in_all = H + L * P * renaming_order(system, plan)
            if best is None or ticks_in_all < best[0]:
                best = (ticks_in_all, plan)
            if ticks_in_all == H + L * P:
                break
    return None if best is None else best[1]


def renaming_order(system: System, plan: CyclePlan, chosen=None) -> int:
    """How many times the model goes round ``plan``'s period, its clients admitted as
    :func:`admissions` (or ``chosen``) says, before every client is back at its own ring node:
    the order of the renaming that maps where the clients stand at the period's start to
    where they stand at its end (clients at one node matched to themselves first). 1: the
    model's walk closes exactly, with nothing to lift."""
    from math import lcm

    chosen = admissions(system, plan) if chosen is None else chosen
    node: list[int] = []
    base = 0
    for ks, (_, cnt) in zip(plan.kinds, system.counts):
        node += [base] * cnt
        base += len(ks)
    flat = [k for ks in plan.kinds for k in ks]
    succ: list[int] = []
    for ks in plan.kinds:
        b = len(succ)
        succ += [b + (i + 1) % len(ks) for i in range(len(ks))]
    at_start = None
    for t in range(plan.horizon):
        if t == plan.start:
            at_start = list(node)
        go = set(chosen[t])
        node = [succ[v] if flat[v] != "wait" or c in go else v for c, v in enumerate(node)]
    if at_start is None:
        at_start = list(node)
    # sigma[c]: the client whose place at the start client c holds at the end.
    sigma = [-1] * len(node)
    free: dict[int, list[int]] = {}
    for c, v in enumerate(at_start):
        if node[c] == v:
            sigma[c] = c
        else:
            free.setdefault(v, []).append(c)
    for c, v in enumerate(node):
        if sigma[c] < 0:
            sigma[c] = free[v].pop()
    order, seen = 1, [False] * len(sigma)
    for c in range(len(sigma)):
        n = 0
        while not seen[c]:
            seen[c] = True
            c = sigma[c]
            n += 1
        order = lcm(order, max(n, 1))
    return order


def track_cycle(system: System, ring: np.ndarray, moves: np.ndarray, *, rows: int = TRACK_ROWS,
                ticks: int = TRACK_TICKS, seed: int = 0):
    """:func:`plan_tracked`'s prefix to a cycle of the count model given by its counts
    ``ring`` (``P x nodes``) and admissions ``moves``: ``(counts, admitted, i)``, a walk of
    the server's rule from the initial state whose counts end at ``ring[i]``, or ``None``
    where no row meets the cycle within ``ticks`` (or the count model does not describe
    ``system``)."""
    rings = _rings(system)
    if rings is None:
        return None
    return _track(_Counts(system, rings), np.asarray(ring, np.int64),
                  np.asarray(moves, np.int64), rows=rows, ticks=ticks, seed=seed)


def _track(model: _Counts, ring: np.ndarray, moves: np.ndarray, *, rows: int, ticks: int,
           seed: int):
    """``(counts, admitted, i)``: the walk of :func:`plan_tracked`'s first row to reach the
    cycle's tick ``i`` (counts per tick ``0 .. H``, ``counts[H] == ring[i]``; admitted per
    tick ``0 .. H - 1``), or ``None`` where no row reaches it within ``ticks``."""
    from itertools import permutations

    P, V = ring.shape[0], model.V
    waits = np.array(model.waits, np.int64)
    nw = len(waits)
    rng = np.random.default_rng(seed)
    perms = list(permutations(range(nw))) if nw <= 6 else [
        tuple(rng.permutation(nw)) for _ in range(max(1, rows // P))]
    keep = max(1, rows // P)
    if len(perms) > keep:
        perms = [perms[k] for k in sorted(rng.choice(len(perms), keep, replace=False))]
    order = np.array([waits[list(p)] for p in perms for _ in range(P)], np.int64)
    offset = np.array([o for _ in perms for o in range(P)], np.int64)
    R = order.shape[0]
    start = np.zeros(V, np.int64)
    for g, cnt in enumerate(model.counts):
        start[model.first[g]] = cnt
    succ = np.array(model.succ, np.int64)
    is_wait = np.zeros(V, bool)
    is_wait[waits] = True
    busys = np.array(model.busys, np.int64)
    W, A = model.W, model.A
    # A row reaches the cycle where its counts equal one of the cycle's; candidates by a
    # random linear hash, then compared in full.
    mix = rng.integers(1, 2**31, V, dtype=np.int64)
    target = {int(h): k for k, h in enumerate(ring @ mix)}

    def step(X, o):
        busy = X[:, busys].sum(axis=1) if len(busys) else np.zeros(X.shape[0], np.int64)
        k = np.minimum(np.minimum(A, W - busy), X[:, waits].sum(axis=1))
        want = moves[(o % P)]                         # the cycle's admissions, rows x V
        adm = np.zeros_like(X)
        left = k.copy()
        at = np.arange(X.shape[0])
        for rank in (0, 1):
            for j in range(nw):
                col = order_of[:, j]
                have = X[at, col] - adm[at, col]
                take = np.minimum(have if rank else np.minimum(want[at, col], have), left)
                adm[at, col] += take
                left -= take
        go = np.where(is_wait[None, :], adm, X)
        Y = X - go
        np.add.at(Y, (at[:, None], succ[None, :]), go)
        return Y, adm

    X = np.tile(start, (R, 1))
    order_of = order
    hit = None
    for t in range(ticks + 1):
        h = X @ mix
        cand = [r for r in np.flatnonzero(np.isin(h, list(target))).tolist()
                if (X[r] == ring[target[int(h[r])]]).all()]
        if cand:
            hit = (t, cand[0], target[int(h[cand[0]])])
            break
        if t == ticks:
            break
        X, _ = step(X, t + offset)
    if hit is None:
        return None
    # The row walked again alone, recorded.
    H, r, i = hit
    order_of = order[r:r + 1]
    X = start[None, :].copy()
    counts, adm = [start.copy()], []
    for t in range(H):
        X, a = step(X, np.array([t + offset[r]]))
        counts.append(X[0].copy())
        adm.append(a[0].copy())
    assert (counts[-1] == ring[i]).all()
    return np.stack(counts), np.stack(adm).reshape(-1, V), i


def admissions(system: System, plan: CyclePlan, closing: bool = True, quota=None
               ) -> list[list[int]]:
    """Per tick ``0 .. plan.horizon - 1``, the clients (columns in the order of
    ``system.counts``, then by number) the server admits: of the clients at each ``wait``
    node, the plan's number: on the prefix's ticks those who came first (then the lowest
    numbers); on the period's ticks those with the least waiting left to do, a client of a
    ring of ``T`` nodes being aimed at ``P`` ticks of waiting modulo ``T`` over the period
    of ``P`` ticks (then it is back at its node when the period ends: ``P - w`` moves on a
    ring of ``T`` nodes), the clients who came first on a tie.

    Following it from the initial state, the clients stand where the plan counts them
    (whom a node admits changes no count). The aims only make the period's renaming of the
    clients small (the identity where every aim is met: the model's walk then closes
    exactly, with nothing to lift). With ``closing``, where some choice brings every client
    back to its node when the period ends (:func:`scenarios.closeflow.closing_flows`), the
    period's ticks admit by it instead (the aims then only break ties within a node's
    clients of one home); ``quota``: that choice, already made (``closing_flows`` of
    ``plan``).
    """
    node: list[int] = []
    base = 0
    for ks, (_, cnt) in zip(plan.kinds, system.counts):
        node += [base] * cnt
        base += len(ks)
    succ: list[int] = []
    for ks in plan.kinds:
        b = len(succ)
        succ += [b + (i + 1) % len(ks) for i in range(len(ks))]
    ring = [len(ks) for ks, (_, cnt) in zip(plan.kinds, system.counts) for _ in range(cnt)]
    arrived = [0] * len(node)
    waited = [0] * len(node)          # ticks waited since the period began
    home = quota = None               # (where each client stands when the period begins)
    out: list[list[int]] = []
    for t in range(plan.horizon):
        if t == plan.start and closing:
            home = list(node)
            if quota is None:
                quota = closing_flows(plan, home)
        if t >= plan.start:
            def order(c: int) -> tuple[int, int, int]:
                return ((plan.period - waited[c]) % ring[c], arrived[c], c)
        else:
            def order(c: int) -> tuple[int, int, int]:
                return (0, arrived[c], c)
        here: dict[int, list[int]] = {}
        for c, v in enumerate(node):
            here.setdefault(v, []).append(c)
        chosen: list[int] = []
        for v, cs in here.items():
            k = int(plan.admitted[t, v])
            if not k:
                continue
            if quota is not None:
                # as many of each home node's clients as the flows say
                for u, m in quota.get((t - plan.start, v), {}).items():
                    chosen += sorted((c for c in cs if home[c] == u), key=order)[:m]
            else:
                chosen += sorted(cs, key=order)[:k]
        go = set(chosen)
        for c, v in enumerate(node):
            wait = plan.admitted.shape[1] and _kind(plan, v) == "wait"
            if not wait or c in go:
                node[c] = succ[v]
                arrived[c] = t + 1
            elif t >= plan.start:
                waited[c] += 1
        out.append(sorted(chosen))
    return out


def _kind(plan: CyclePlan, v: int) -> str:
    for ks in plan.kinds:
        if v < len(ks):
            return ks[v]
        v -= len(ks)
    raise IndexError(v)


def walk_plan(system: System, node, admitted) -> CyclePlan | None:
    """The shortest plan hidden in a walk of the count model: ``node[t]`` (ticks ``0 ..
    T - 1``, clients: the ring node of each client at tick ``t``'s start, numbered as
    :func:`scenarios.schedule.simulate` numbers them) and ``admitted[t]`` (whom the server
    admits on tick ``t``), a walk of the server's rule such as a
    spread row of :func:`scenarios.schedule.simulate` records. ``None`` where the walk closes
    no cycle of full ticks.

    The count model's state is the count vector and its moves depend on it alone, so a walk
    may be cut where its count vector repeats: the first closed walk of full ticks is split
    into simple cycles (each of full ticks), the shortest kept, and the prefix to it loses its
    loops (from a count vector met again, the walk goes on with the move taken at its last
    visit). Nothing here is a result; the plan is checked on the model like any other.

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> from scenarios.schedule import simulate
    >>> pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
    >>> system = System({pair: 7}, server=Server(workers=2, admissions=2))
    >>> walk = []
    >>> simulate(system, Fraction(2), [[0, 1, 2, 4, 5, 7, 8]], ticks=100, walk=walk)
    (60,)
    >>> plan = walk_plan(system, [n[0] for n, _ in walk], [a[0] for _, a in walk])
    >>> plan.horizon < 60, [plan.served(t) for t in range(plan.start, plan.horizon)]
    (True, [2, 2, 2])
    """
    rings = _rings(system)
    if rings is None:
        return None
    model = _Counts(system, rings)
    V, W = model.V, model.W
    node = np.asarray(node, np.int64)
    admitted = np.asarray(admitted, bool)
    T = admitted.shape[0]
    counts = np.zeros((T + 1, V), np.int64)
    for t in range(T):
        counts[t] = np.bincount(node[t], minlength=V)
    adm = np.stack([np.bincount(node[t][admitted[t]], minlength=V) for t in range(T)])
    # (the counts after the last tick: who is not waiting, and who is admitted, moves on)
    succ = np.array(model.succ)
    wait = np.array([k == "wait" for k in model.flat])
    go = np.where(wait, adm[T - 1], counts[T - 1])
    counts[T] = counts[T - 1] - go
    np.add.at(counts[T], succ, go)
    busy = counts[:T, model.busys].sum(axis=1) if model.busys else np.zeros(T, np.int64)
    full = busy + adm.sum(axis=1) == W
    key = [counts[t].tobytes() for t in range(T + 1)]
    # The first closed walk of full ticks: i .. t, with counts[t] == counts[i].
    seen: dict[bytes, int] = {}
    last_short = -1             # the last tick that was not full
    closed = None
    for t in range(T + 1):
        i = seen.get(key[t])
        if i is not None and i > last_short:
            closed = (i, t)
            break
        seen[key[t]] = t
        if t < T and not full[t]:
            last_short = t
    if closed is None:
        return None
    i, j = closed
    # Its simple cycles (a stack of distinct count vectors; one met again pops the cycle it
    # closes): every tick lies on one, each of full ticks; the shortest is kept.
    stack: list[int] = []
    where: dict[bytes, int] = {}
    ticks_of_cycle: list[int] = []        # the shortest's ticks, in order
    for t in range(i, j + 1):
        k = key[t]
        if k in where:
            a = where[k]
            if not ticks_of_cycle or len(stack) - a < len(ticks_of_cycle):
                ticks_of_cycle = stack[a:]
            for x in stack[a:]:
                del where[key[x]]
            del stack[a:]
        where[k] = len(stack)
        stack.append(t)
    on_cycle = {key[t]: n for n, t in enumerate(ticks_of_cycle)}
    first = next(t for t in range(j + 1) if key[t] in on_cycle)
    pre: list[int] = []
    at: dict[bytes, int] = {}
    for t in range(first + 1):
        if key[t] in at:
            del pre[at[key[t]] + 1:]
            at = {key[x]: n for n, x in enumerate(pre)}
            continue
        at[key[t]] = len(pre)
        pre.append(t)
    o = on_cycle[key[first]]
    turn = ticks_of_cycle[o:] + ticks_of_cycle[:o]
    rows = [counts[p] for p in pre]
    moves = [adm[pre[n + 1] - 1] for n in range(len(pre) - 1)]
    for t in turn:
        moves.append(adm[t])
        rows.append(counts[t + 1])
    start = len(pre) - 1
    return CyclePlan(tuple(tuple(ks) for ks in model.kinds), np.stack(rows),
                     np.stack(moves).reshape(-1, V), start, start + len(turn), W, 0.0)


def walked_run(system: System, cap: Fraction, upper: Fraction | None, guide, *,
               progress=None):
    """A run of the model that keeps the server at ``cap``, cut out of the first spread row
    of ``guide`` (a :class:`scenarios.schedule.SpreadPlan`: rows the count model shows
    closing a walk of full ticks) and followed on the model itself, every step checked
    (:func:`scenarios.bounds.find_witness`'s ``plans``); ``None`` where there is no such
    row or the run does not reach ``cap``.

    The row is simulated again on the count model alone, its walk recorded and cut
    (:func:`walk_plan`), and the clients admitted by :func:`admissions`: the model then
    runs two rows (the plan's, one fixed policy's) for the plan's ticks instead of many
    rows for the whole walk, and its cycle closes exactly where every aim is met (nothing
    to lift). ``progress`` is :func:`~scenarios.bounds.find_witness`'s.
    """
    from .bounds import find_witness
    from .schedule import simulate

    if guide is None or not guide.aims:
        return None
    walk: list = []
    simulate(system, cap, [guide.aims[0]], ticks=guide.ticks[0], walk=walk)
    if not walk:
        return None
    plan = walk_plan(system, [n[0] for n, _ in walk], [a[0] for _, a in walk])
    if plan is None:
        return None
    run = find_witness(system, target=cap, upper=upper, rows=1,
                       max_ticks=plan.horizon + 4, plans=[admissions(system, plan)],
                       progress=progress)
    return run if run is not None and run.mean >= cap else None
