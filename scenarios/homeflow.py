"""Saturating cycles of one closed walk per client, found exactly: one integer program whose
flows, one per scenario, round count and home node, are the clients' walks.

:mod:`scenarios.walkfamily` searches for a *family* of closed walks (one per client, each of
``L`` ticks along its scenario's ring, every tick full) by local moves, which prove nothing
where they find nothing. Here the same family is the solution of one integer program whose
size grows with the scenarios, their rings and the period, never with the clients:

- a client of a ring of ``T`` ticks that goes round it ``m`` times in a closed walk of ``L``
  ticks waits exactly ``w = L - m T`` of them (unadmitted at ``wait`` nodes); its walk from
  its *home* node ``h`` (where it stands at tick 0) is a path through the states ``(t, k)``,
  ``k`` the waiting done by tick ``t`` (its node is then ``(h + t - k) mod T``), from ``(0,
  0)`` to ``(L, w)``, which ends back at ``h``;
- one integer flow per *class* ``(scenario, m, h)`` through those states, of as many units
  as clients of the class (an integer variable, the classes of a scenario adding up to its
  clients): the states form an acyclic graph (time goes on), so any integral flow is that
  many unit paths, each a closed walk of exactly ``L`` ticks;
- on every tick the units holding a worker (moving on from a ``busy`` or a ``wait`` node)
  are ``W``, and those admitted (moving on from a ``wait`` node) at most ``A``.

Rotating a family in time gives a family, so one exporter-like class (a round count that
waits no tick: its walk is fixed by its home) may be held at home 0. A solution is a family
exactly (docs/algorithms.md, "Walks per client, exactly"); where HiGHS proves the program
infeasible, no family of period ``L`` exists at all. As everywhere, the family is then
reached from the initial state (:func:`scenarios.walkfamily.family_plan`) and followed on the
model, every step checked.

Examples
--------
Seven clients whose two requests must interlock to keep two workers busy:

>>> from scenarios.walkfamily import pair_system
>>> system = pair_system(7)
>>> [(L, home_flows(system, L, time_limit=10).status) for L in (10, 20, 21)]
[(10, 'none'), (20, 'none'), (21, 'found')]
>>> home_flows(system, 21, time_limit=10).family.check()
True
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np

from .dsl import System
from .rows import ConstraintRows
from .walkfamily import WalkFamily, over_periods, periods, shape_of

__all__ = ["HomeFlows", "home_flows", "walk_program", "round_waits", "plan_homes", "HOME_SECONDS"]

#: Seconds :func:`plan_homes` gets in all where the search calls it.
HOME_SECONDS = 6.0
DISP = False


@dataclass(frozen=True)
class HomeFlows:
    """What :func:`home_flows` decided for one period.

    Attributes
    ----------
    period : int
    status : str
        ``"found"`` (``family`` is a checked family), ``"none"`` (HiGHS proved that no family
        of this period exists) or ``"open"`` (the time ran out first).
    family : WalkFamily or None
    seconds : float
        Time spent building and solving.
    """

    period: int
    status: str
    family: WalkFamily | None
    seconds: float


def _states(ks, L: int, h: int, w: int):
    """The states ``(t, k)`` of a walk from home ``h`` waiting ``w`` of ``L`` ticks that lie
    on some such walk: per tick the set of ``k`` reachable from ``(0, 0)`` and from which
    ``(L, w)`` is reachable."""
    T = len(ks)
    wait = [ks[v] == "wait" for v in range(T)]
    fwd = [{0}]
    for t in range(L):
        nxt = set()
        for k in fwd[-1]:
            nxt.add(k)
            if k < w and wait[(h + t - k) % T]:
                nxt.add(k + 1)
        fwd.append(nxt)
    back = [set() for _ in range(L + 1)]
    back[L] = {w} & fwd[L]
    for t in range(L - 1, -1, -1):
        back[t] = {k for k in fwd[t] if k in back[t + 1]
                   or (k < w and wait[(h + t - k) % T] and k + 1 in back[t + 1])}
    return back


def home_flows(system: System, period: int, *, time_limit: float = 30.0) -> HomeFlows | None:
    """The integer program of the module's docstring for ``period`` ticks, solved by HiGHS
    within ``time_limit`` seconds: a checked family, a proof that none exists, or neither;
    ``None`` where the count model does not describe ``system``."""
    t0 = _time.perf_counter()
    shape = shape_of(system)
    if shape is None:
        return None
    W, A, L = system.server.workers, system.server.admissions, period
    open_ = dict(periods(system, L))
    if L not in open_:
        return HomeFlows(L, "none", None, _time.perf_counter() - t0)
    kinds = [ks for ks, _, _ in shape]
    status, walks = walk_program(kinds, L, round_waits(shape, L, open_[L]),
                                 [n for _, _, n in shape], np.full(L, W), np.full(L, A),
                                 time_limit=time_limit, turn=True)
    seconds = _time.perf_counter() - t0
    if walks is None:
        return HomeFlows(L, status, None, seconds)
    family = WalkFamily(tuple(kinds), tuple(g for g, _, _ in walks),
                        np.array([nd for _, nd, _ in walks]),
                        np.array([ad for _, _, ad in walks]), W, A, seconds)
    assert family.check(), "a solution of the program is a family"
    return HomeFlows(L, status, family, seconds)


def round_waits(shape, L: int, slack: int) -> list[list[int]]:
    """Per scenario, the ticks of waiting its clients' closed walks of ``L`` ticks may have:
    ``L - m T`` for the round counts ``m`` that give up at most ``slack`` ticks of service
    (:func:`scenarios.walkfamily.periods`)."""
    out = []
    for ks, s, _ in shape:
        most = L // len(ks)
        out.append([L - m * len(ks) for m in range(most, -1, -1) if (most - m) * s <= slack])
    return out


def walk_program(kinds, L: int, waits, free, room, arrive, *, time_limit: float,
                 turn: bool = False):
    """The program of the module's docstring for ``free[g]`` clients of each ring
    ``kinds[g]``, each waiting a number of ticks in ``waits[g]``, holding exactly ``room[t]``
    workers and admitted at most ``arrive[t]`` on each tick ``t``: ``(status, walks)``,
    ``walks`` a list of ``(g, node, admitted)`` (one per client, ``node`` and ``admitted``
    per tick) where ``status`` is ``"found"``, else ``None`` with ``status`` ``"none"``
    (proven infeasible) or ``"open"``. ``turn``: hold one never-waiting class at home 0
    (sound only where nothing fixes the ticks, as ``room`` and ``arrive`` constant do not).

    >>> walk_program([("free", "wait", "busy")], 3, [[0]], [3], np.full(3, 2), np.full(3, 2),
    ...              time_limit=5)[0]
    'found'
    """
    from scipy.optimize import Bounds, milp

    t0 = _time.perf_counter()
    rows = ConstraintRows()
    add = rows.add
    nvar = 0
    holding: list[list[int]] = [[] for _ in range(L)]
    admits: list[list[int]] = [[] for _ in range(L)]
    classes = []            # (g, w, h, units column, {(t, k, moves): column})
    pinned = None
    for g, ks in enumerate(kinds):
        T = len(ks)
        units_of_g = []
        for w in (waits[g] if free[g] else []):
            for h in range(T):
                back = _states(ks, L, h, w)
                if not back[0]:
                    continue
                units = nvar
                nvar += 1
                units_of_g.append(units)
                arcs = {}
                for t in range(L):
                    for k in sorted(back[t]):
                        v = (h + t - k) % T
                        if k in back[t + 1] and (ks[v] == "free" or room[t] > 0) and \
                                (ks[v] != "wait" or arrive[t] > 0):
                            arcs[(t, k, True)] = nvar
                            if ks[v] != "free":
                                holding[t].append(nvar)
                            if ks[v] == "wait":
                                admits[t].append(nvar)
                            nvar += 1
                        if ks[v] == "wait" and k < w and k + 1 in back[t + 1]:
                            arcs[(t, k, False)] = nvar
                            nvar += 1
                # conservation: what leaves (t, k) is what entered it; the units at (0, 0)
                for t in range(L):
                    for k in back[t]:
                        out = [(arcs[(t, k, mv)], 1.0) for mv in (True, False)
                               if (t, k, mv) in arcs]
                        if t == 0:
                            add(out + [(units, -1.0)], 0, 0)
                            continue
                        into = [(arcs[(t - 1, j, mv)], -1.0) for j, mv in ((k, True),
                                                                          (k - 1, False))
                                if (t - 1, j, mv) in arcs]
                        add(out + into, 0, 0)
                if w == 0 and pinned is None:
                    pinned = units
                classes.append((g, w, h, units, arcs))
        add([(u, 1.0) for u in units_of_g], free[g], free[g])
    for t in range(L):
        add([(i, 1.0) for i in holding[t]], room[t], room[t])
        add([(i, 1.0) for i in admits[t]], 0, arrive[t])
    ub = np.full(nvar, float(max(free)))
    lb = np.zeros(nvar)
    if turn and pinned is not None:
        # (a family turned in time is a family: one never-waiting class kept at home 0)
        lb[pinned] = 1.0
    left = time_limit - (_time.perf_counter() - t0)
    if left <= 0.1:
        return "open", None
    res = milp(np.zeros(nvar), constraints=rows.constraint(nvar), integrality=np.ones(nvar),
               bounds=Bounds(lb, ub), options={"time_limit": left, "disp": DISP})
    if res.status == 2:
        return "none", None
    if res.x is None:
        return "open", None
    x = np.rint(res.x).astype(np.int64)
    walks = []
    for g, w, h, units, arcs in classes:
        ks = kinds[g]
        T = len(ks)
        count = {a: int(x[i]) for a, i in arcs.items() if x[i] > 0}
        for _ in range(int(x[units])):              # one unit path per client
            k = 0
            nd = np.zeros(L, np.int64)
            ad = np.zeros(L, bool)
            for t in range(L):
                v = (h + t - k) % T
                mv = (t, k, True) if count.get((t, k, True), 0) > 0 else (t, k, False)
                count[mv] -= 1
                nd[t] = v
                ad[t] = mv[2] and ks[v] == "wait"
                k += 0 if mv[2] else 1
            walks.append((g, nd, ad))
    walks.sort(key=lambda c: c[0])
    return "found", walks


def plan_homes(system: System, *, time_limit: float = HOME_SECONDS, count: int = 3,
               most: int = 400) -> WalkFamily | None:
    """A family of closed walks keeping every worker busy (:func:`home_flows`) for the first
    ``count`` periods (up to ``most`` ticks) that :func:`scenarios.walkfamily.periods` leaves
    open, shortest first, ``time_limit`` seconds in all; ``None`` where none was found."""
    def solve(L: int, _slack: int, seconds: float) -> WalkFamily | None:
        got = home_flows(system, L, time_limit=seconds)
        return None if got is None else got.family

    return over_periods(system, solve, time_limit=time_limit, count=count, most=most)
