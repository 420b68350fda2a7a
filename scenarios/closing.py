"""Cycles of the count model whose clients come home in few rounds: the renaming chosen.

A cycle of ``P`` full ticks of the count model (:func:`scenarios.periodic.count_cycle`) is a
cycle of the model only up to a renaming of the clients: after ``P`` ticks every node holds
as many clients as before, not the same ones. Gone round ``k`` times it is a cycle of the
model (``k P`` ticks, every client back at its own node, nothing to lift) exactly where some
choice of whom the server admits, among the clients that stand together at a ``wait`` node,
brings every client home after ``k P`` ticks; :func:`scenarios.closeflow.closing_flows`
decides that exactly (one integer flow per home node, per scenario). Two necessary
conditions come first, cheap and exact:

- over ``k`` rounds the clients of a scenario wait ``k w`` ticks in all (``w``: the cycle's
  waiting per round, fixed by its counts and admissions), and a client of a ring of ``T``
  ticks that is back home after ``k P`` ticks has waited ``k P mod T`` ticks plus a multiple
  of ``T``: so ``n (k P mod T) <= k w`` for each scenario of ``n`` clients
  (:func:`closing_candidates`). This is the counting argument of
  :func:`scenarios.walkfamily.periods` for each scenario of this cycle, not only summed;
- the smallest ``k`` is the same wherever the cycle is entered (a family of closed walks of
  ``k P`` ticks, turned in time, is one).

:func:`closing_rounds` is the smallest ``k``; :func:`plan_closing` looks, period by period,
at several cycles (the solver's first, then ones steered by random prices: cycles of one
period differ much in how few rounds close them) for one that closes within twice the
shortest period the counting argument allows, and reaches it by
:func:`scenarios.periodic.track_cycle`. :func:`closed_cycle` asks one integer program for the
cycle and its closing together (exact, slower). Nothing here is a result: the plan is
followed on the model (:func:`scenarios.bounds.find_witness`) and every step checked.

Examples
--------
Six clients, each asking for 3 ticks of service then 1, on two workers admitting two:

>>> from scenarios import Scenario, Server, System, Think, Request
>>> burst = Scenario("burst", [Request("load", 3), Request("ack", 1), Think(1)])
>>> system = System({burst: 6}, server=Server(workers=2, admissions=2))
>>> plan, quota = plan_closing(system)
>>> [plan.served(t) for t in range(plan.start, plan.horizon)] == [2] * plan.period
True
>>> from scenarios.periodic import admissions, renaming_order
>>> renaming_order(system, plan, admissions(system, plan, quota=quota))
1
"""

from __future__ import annotations

import time as _time

import numpy as np

from .closeflow import closing_flows, home_flow_rows
from .dsl import System
from .periodic import CyclePlan, count_cycle, track_cycle
from .schedule import tick_ring

__all__ = ["round_waits", "closing_candidates", "closing_rounds", "closed_cycle",
           "closing_periods", "plan_closing", "repeated", "homes",
           "CLOSING_SECONDS", "CLOSING_TICKS", "CLOSING_SEEDS"]

#: :func:`plan_closing` in ``saturate`` (``Bounds.tracked_run``): its seconds (of CPU), the
#: longest cycle (ticks, ``k P``) it looks for, and how many steered cycles per period it
#: tries.
CLOSING_SECONDS = 10.0
CLOSING_TICKS = 400
CLOSING_SEEDS = 12


def _groups(system: System) -> list[tuple[int, int, list[int]]] | None:
    """Per scenario ``(first node, ring ticks T, its wait nodes)`` in the count model's node
    numbering (the rings one after the other)."""
    out, base = [], 0
    for sc, _ in system.counts:
        ring = tick_ring(sc)
        if ring is None:
            return None
        T = len(ring.kind)
        out.append((base, T, [base + i for i, k in enumerate(ring.kind) if k == "wait"]))
        base += T
    return out


def round_waits(system: System, counts: np.ndarray, admitted: np.ndarray) -> list[int]:
    """Per scenario, the ticks its clients wait in one round of the cycle ``counts``,
    ``admitted`` (``P x nodes``): at each ``wait`` node, those there not admitted.

    Seven clients on a ring of 10 ticks (two requests) in a cycle of 3 ticks: they wait 1
    tick a round in all (``7 x 3 - w`` ticks of moving must be whole rounds of 10):

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> from scenarios.periodic import count_cycle
    >>> pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
    >>> s = System({pair: 7}, server=Server(workers=2, admissions=2))
    >>> counts, admitted = count_cycle(s, 3)
    >>> round_waits(s, counts, admitted)
    [1]
    """
    return [int(sum(counts[t, w] - admitted[t, w] for t in range(len(counts)) for w in ws))
            for _, _, ws in _groups(system)]


def closing_candidates(system: System, counts: np.ndarray, admitted: np.ndarray,
                       most: int) -> list[int]:
    """The rounds ``k`` (``k P <= most``) after which the cycle ``counts``, ``admitted`` may
    bring every client home, shortest first: those where, for each scenario of ``n`` clients
    on a ring of ``T`` ticks waiting ``w`` ticks a round, ``n (k P mod T) <= k w`` (each of
    its clients waits ``k P mod T`` ticks plus a multiple of ``T``). Every ``k`` left out is
    proved impossible; one kept may still be.

    The same cycle: ``7 (3 k mod 10) <= k`` first at ``k = 7`` (each client waits once):

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> from scenarios.periodic import count_cycle
    >>> pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
    >>> s = System({pair: 7}, server=Server(workers=2, admissions=2))
    >>> closing_candidates(s, *count_cycle(s, 3), 30)
    [7, 10]
    >>> closing_rounds(s, *count_cycle(s, 3), most=30)[0]
    7
    """
    P = len(counts)
    waits = round_waits(system, counts, admitted)
    rings = [(n, T) for (_, n), (_, T, _) in zip(system.counts, _groups(system))]
    return [k for k in range(1, most // P + 1)
            if all(n * (k * P % T) <= k * w for (n, T), w in zip(rings, waits))]


def repeated(system: System, counts: np.ndarray, admitted: np.ndarray, k: int, *,
             prefix=None) -> CyclePlan:
    """The cycle ``counts``, ``admitted`` (``P x nodes``) gone round ``k`` times as a plan:
    after ``prefix`` (``(counts, admitted, i)`` of a run of ``H`` ticks whose counts end at
    the cycle's tick ``i``: :func:`scenarios.periodic.track_cycle`), entered at that tick;
    without one, the plan starts at the cycle's tick 0 (``start`` 0)."""
    P = len(counts)
    kinds = tuple(tuple(tick_ring(sc).kind) for sc, _ in system.counts)
    if prefix is None:
        head, moves, i = counts[:1], admitted[:0], 0
    else:
        head, moves, i = prefix
    turn = [(i + x) % P for x in range(k * P)]
    rows = list(head) + [counts[(x + 1) % P] for x in turn]
    moved = list(moves) + [admitted[x] for x in turn]
    H = len(head) - 1
    return CyclePlan(kinds, np.stack(rows), np.stack(moved).reshape(-1, counts.shape[1]), H,
                     H + k * P, system.server.workers, 0.0)


def homes(counts_at_start: np.ndarray) -> list[int]:
    """Each client's node where a plan's period begins, numbered as
    :func:`scenarios.periodic.admissions` numbers them (node by node: clients of one
    scenario are alike, so any numbering of those at one node serves)."""
    return [v for v, c in enumerate(counts_at_start) for _ in range(int(c))]


def closed_cycle(system: System, period: int, rounds: int, *, time_limit: float = 60.0,
                 scenarios=None):
    """A cycle of ``period`` full ticks of the count model whose clients can all be home
    after ``rounds`` rounds: ``(counts, admitted)``, ``None`` where there is none (proved),
    ``False`` where ``time_limit`` (CPU seconds) ran out first.

    One integer program: the cycle's (:func:`scenarios.periodic.count_cycle`) and, for the
    scenarios of ``scenarios`` (indices; default the one with the most clients), their home
    flows through the cycle written out ``rounds`` times
    (:func:`scenarios.closeflow.home_flow_rows`, the counts and homes now variables of the
    cycle). Any part of the program is a relaxation of the whole, so ``None`` is a proof
    whichever scenarios it holds. Where the solution does not close every scenario (checked by
    :func:`scenarios.closeflow.closing_flows`), those that fail join the program and it is
    solved again; with every scenario in it, a solution closes and infeasibility is a proof
    that no cycle of this period does.
    """
    t0 = _time.process_time()
    groups = _groups(system)
    if groups is None or system.server is None or system.server.admissions < 2:
        return False
    kinds = [tick_ring(sc).kind for sc, _ in system.counts]
    with_flows = set(scenarios) if scenarios is not None else {
        max(range(len(kinds)), key=lambda g: system.counts[g][1])}
    Q = rounds * period
    while True:
        left = time_limit - (_time.process_time() - t0)
        if left <= 0.2:
            return False

        def extra(add, n_of, a_of, nvar):
            for g in sorted(with_flows):
                base, T, _ = groups[g]
                nvar, _ = home_flow_rows(
                    add, nvar, kinds[g], base, list(range(base, base + T)), Q,
                    lambda t, v: ([(n_of(t % period, v), 1.0)], 0),
                    lambda t, w: ([(a_of(t % period, w), 1.0)], 0),
                    lambda u: ([(n_of(0, u), 1.0)], 0))
            return nvar

        # (each scenario's waiting for `rounds`, as rows, is implied by the flows where they
        # are; added for the others it made HiGHS slower at 37 users: 137 s against 43 s)
        got = count_cycle(system, period, time_limit=left, extra=extra)
        if not got:
            return got
        plan = repeated(system, *got, rounds)
        failing = {g for g, (base, T, _) in enumerate(groups)
                   if closing_flows(plan, [v for v in homes(got[0][0]) if base <= v < base + T],
                                    time_limit=max(left, 1.0)) is None}
        if not failing:
            return got
        if failing <= with_flows:
            return False                     # (the flows ran out of time)
        with_flows |= failing


def closing_rounds(system: System, counts: np.ndarray, admitted: np.ndarray, *, most: int,
                   least: int = 0, time_limit: float = 10.0):
    """``(k, quota)``: the fewest rounds ``k`` (``k P <= most``) of the cycle ``counts``,
    ``admitted`` after which every client can be home (of those with ``k P > least``), with
    whom to admit
    (:func:`scenarios.closeflow.closing_flows` of the cycle gone round ``k`` times, entered at
    its tick 0); ``None`` where no ``k`` does (proved: the candidates left out by
    :func:`closing_candidates`, the others by the flows) or ``time_limit`` ran out first.
    """
    t0 = _time.perf_counter()
    for k in closing_candidates(system, counts, admitted, most):
        if k * len(counts) <= least:
            continue
        left = time_limit - (_time.perf_counter() - t0)
        if left <= 0.1:
            return None
        plan = repeated(system, counts, admitted, k)
        quota = closing_flows(plan, homes(counts[0]), time_limit=left)
        if quota is not None:
            return k, quota
    return None


def closing_periods(system: System, most: int, periods=range(1, 31)) -> list[int]:
    """The periods ``P`` of ``periods`` whose cycles could close within ``most`` ticks, in the
    order :func:`plan_closing` tries them: by the shortest multiple ``k P <= most`` that the
    counting argument leaves open (:func:`scenarios.walkfamily.periods`), then by ``P``.

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> u = Scenario("u", [Request("r", 2), Think(2)])      # a ring of 6 ticks
    >>> closing_periods(System({u: 6}, server=Server(workers=2, admissions=2)), 13, range(1, 8))
    [1, 2, 3, 6, 4]
    """
    from .walkfamily import periods as open_periods

    open_ = [L for L, _ in open_periods(system, most)]
    first = {P: next((L for L in open_ if L % P == 0), None) for P in periods}
    return sorted((P for P in periods if first[P] is not None), key=lambda P: (first[P], P))


def plan_closing(system: System, *, most: int = CLOSING_TICKS,
                 time_limit: float = CLOSING_SECONDS, seeds: int = CLOSING_SEEDS,
                 periods=range(1, 31), enough: int | None = None, rows: int = 4096,
                 ticks: int = 400):
    """``(plan, quota)``: a run of the count model from its initial state into a cycle of full
    ticks gone round ``k`` times, ``k P <= most``, whose clients can all be home after the
    ``k`` rounds, and whom to admit so that they are (:func:`scenarios.periodic.admissions`
    with ``quota``: the model's walk then closes after the plan's period with nothing to
    lift); ``None`` where none was found in ``time_limit`` seconds of CPU time (which proves
    nothing).

    Periods are tried in the order of :func:`closing_periods`; for each, the solver's first
    cycle and up to ``seeds`` steered by random prices (:func:`scenarios.periodic.count_cycle`),
    each checked by :func:`closing_rounds` and, where it closes, reached from the initial
    state by :func:`scenarios.periodic.track_cycle` (``rows``, ``ticks``): first within
    ``enough`` ticks (default: twice the shortest period the counting argument allows,
    the periods of :func:`closing_periods` up to it), then the cycles seen that close only
    later, up to ``most``. The first plan reached is returned.
    """
    from .walkfamily import periods as open_periods

    # The budget is this process's CPU time, not the wall clock: on a loaded machine the
    # same cycles are tried (so the same plan found), only later.
    t0 = _time.process_time()

    def left() -> float:
        return time_limit - (_time.process_time() - t0)

    if system.server is None or system.server.admissions < 2 or _groups(system) is None:
        return None
    floor = open_periods(system, most)
    if enough is None:
        enough = 2 * floor[0][0] if floor else most
    enough = min(enough, most)

    def reach(counts, admitted, k, seed):
        track = track_cycle(system, counts, admitted, rows=rows, ticks=ticks, seed=seed or 0)
        if track is None:
            return None
        plan = repeated(system, counts, admitted, k, prefix=track)
        quota = closing_flows(plan, homes(plan.counts[plan.start]),
                              time_limit=max(left(), 1.0))
        return None if quota is None else (plan, quota)

    # First the cycles that close within `enough` ticks; the longer ones of those seen
    # after, while the time lasts.
    longer = []
    for P in closing_periods(system, enough, periods):
        for seed in [None, *range(seeds)]:
            if left() <= 0.2:
                return None
            cyc = count_cycle(system, P, time_limit=min(left(), 5.0), seed=seed)
            if cyc is None:
                break                            # (no cycle of P ticks at all: proved)
            if cyc is False:
                continue
            got = closing_rounds(system, *cyc, most=enough, time_limit=left())
            if got is None:
                longer.append((cyc, seed))
                continue
            out = reach(*cyc, got[0], seed)
            if out is not None:
                return out
    for cyc, seed in longer:
        if left() <= 0.2:
            return None
        got = closing_rounds(system, *cyc, most=most, least=enough, time_limit=left())
        out = None if got is None else reach(*cyc, got[0], seed)
        if out is not None:
            return out
    return None
