"""Saturating cycles of one closed walk per client whose load repeats with a shorter period:
walks that go round ``j`` *laps* of ``P`` ticks, folded onto ``P`` ticks.

A family of closed walks of ``k P`` ticks (:mod:`scenarios.walkfamily`) is a witness of
``k P`` ticks. Ask more of it: that its state after ``P`` ticks be a *renaming* of its state
at 0 (clients of one scenario exchanged), of an order dividing ``k``. Such a family is a
cycle of the count model of ``P`` ticks, and its clients' walks form *lap walks*: a closed walk
of ``j P`` ticks (``j`` dividing ``k``) followed by ``j`` clients, the ``i``-th ``i P`` ticks
ahead of the first, each of them back at its own node after ``j P`` ticks, hence after ``k P``.
On a tick ``t`` of the ``P``, the lap walk holds as many workers as its laps hold at ``t``,
``t + P``, ..., ``t + (j - 1) P``. The master program (as in :mod:`scenarios.walkprice`) is
then over lap walks, with one row per tick of ``P`` (not of ``k P``) and a lap walk counting
``j`` clients of its scenario:

    sum_p x_p fold_p(t) = W  (t < P),   sum_p x_p afold_p(t) <= A,   sum_{p of g} j_p x_p = n_g.

Its relaxation is solved by column generation (the cheapest lap walk of each scenario, lap
count and start node, :func:`scenarios.walkprice.cheapest_walks` over ``j P`` ticks at the
duals repeated ``j`` times), then the integer program over the lap walks generated (HiGHS,
``P`` + a few rows whatever the clients), with more columns from perturbed duals while time
is left (price and branch). A solution, unfolded (:func:`unfold`), is a family of ``k P``
ticks, checked (:meth:`scenarios.walkfamily.WalkFamily.check`) before it is returned; it is
reached and followed on the model as every family is.

Examples
--------
Seven clients whose two requests must interlock to keep two workers busy:

>>> from scenarios.walkfamily import pair_system
>>> system = pair_system(7)
>>> family = lap_walks(system, 3, 7, time_limit=10)      # 21 ticks, a load of period 3
>>> family.check() and family.period
21
"""

from __future__ import annotations

import time as _time

import numpy as np

from .dsl import System
from .walkfamily import WalkFamily, periods, shape_of
from .walkprice import cheapest_walks

__all__ = ["lap_walks", "lap_search", "plan_laps", "unfold", "LAP_SECONDS", "LAP_PERIODS", "MOST_LAPS"]

#: Seconds :func:`plan_laps` gets in all where the search calls it, how many periods (from
#: the counting argument's floor up) it tries, and the most laps ``k`` of a fold.
LAP_SECONDS = 3.0
LAP_PERIODS = 2
MOST_LAPS = 12


def unfold(group, laps, node, adm, P: int, k: int):
    """The walks of ``k P`` ticks of lap walks: per lap walk (scenario ``group[c]``,
    ``laps[c]`` laps, ``node[c]`` and ``adm[c]`` of ``laps[c] P`` ticks) one client per lap,
    the ``i``-th following the walk from its tick ``i P`` round and round: ``(node,
    admitted, group)`` per client, by scenario.

    >>> unfold([0], [2], [np.array([0, 1, 2, 3])], [np.zeros(4, bool)], 2, 2)[0]
    [array([0, 1, 2, 3]), array([2, 3, 0, 1])]
    """
    rows, ads, groups = [], [], []
    for g, j, nd, ad in sorted(zip(group, laps, node, adm), key=lambda c: c[0]):
        for i in range(j):
            at = (np.arange(k * P) + i * P) % (j * P)
            rows.append(nd[at])
            ads.append(ad[at])
            groups.append(g)
    return rows, ads, groups


def lap_walks(system: System, P: int, k: int, *, time_limit: float = 30.0,
              seed: int = 0) -> WalkFamily | None:
    """A family of closed walks of ``k P`` ticks keeping every worker busy whose load
    repeats every ``P`` ticks (module docstring), checked; ``None`` where none was found in
    ``time_limit`` seconds (which proves nothing), ``k P`` is not a period
    :func:`scenarios.walkfamily.periods` leaves open, or the count model does not describe
    ``system``."""
    return lap_search(system, P, k, time_limit=time_limit, seed=seed)[1]


def lap_search(system: System, P: int, k: int, *, time_limit: float = 30.0, seed: int = 0):
    """:func:`lap_walks` with why it found none: ``(status, family)``, ``status`` ``"found"``,
    ``"none"`` (no such family: the relaxation over every lap walk, or the counting argument,
    has none) or ``"open"`` (the time ran out, or the count model does not describe
    ``system``)."""
    from scipy.optimize import Bounds, linprog, milp

    from .rows import ConstraintRows

    t0 = _time.perf_counter()
    shape = shape_of(system)
    if shape is None:
        return "open", None
    open_ = dict(periods(system, k * P))
    if k * P not in open_:
        return "none", None
    slack = open_[k * P]
    W, A = system.server.workers, system.server.admissions
    G = len(shape)
    n = np.array([c for _, _, c in shape], float)
    kinds = [ks for ks, _, _ in shape]
    laps = [j for j in range(1, k + 1) if k % j == 0]
    waits = {}
    for g, (ks, s, _) in enumerate(shape):
        T = len(ks)
        for j in laps:
            most = j * P // T
            waits[g, j] = [j * P - m * T for m in range(most, -1, -1)
                           if k * (most - m) * s <= slack]
    cols: list[tuple[int, int, np.ndarray, np.ndarray]] = []
    fold: list[np.ndarray] = []
    afold: list[np.ndarray] = []
    seen: set = set()

    def add(g, j, nd, ad):
        key = (g, j, nd.tobytes(), ad.tobytes())
        if key in seen:
            return False
        seen.add(key)
        ks = kinds[g]
        hold = np.array([ks[v] == "busy" for v in nd]) | ad
        cols.append((g, j, nd, ad))
        fold.append(hold.reshape(j, P).sum(axis=0))
        afold.append(ad.reshape(j, P).sum(axis=0))
        return True

    def price(y, z, u, noise):
        added = 0
        for g in range(G):
            for j in laps:
                if not waits[g, j] or j > n[g]:
                    continue
                got = cheapest_walks(kinds[g], j * P, waits[g, j], np.tile(-y + noise[0], j),
                                     np.tile(-z + noise[1], j))
                for cost, nd, ad in got:
                    if cost - j * u[g] < -1e-9 or noise[2]:
                        added += add(g, j, nd, ad)
        return added

    zero = np.zeros(P)
    price(zero, zero, np.zeros(G), (zero, zero, True))
    rng = np.random.default_rng(seed)

    def left():
        return time_limit - (_time.perf_counter() - t0)

    def relax():
        m = len(cols)
        F = np.array(fold, float).T
        Af = np.array(afold, float).T
        Gm = np.zeros((G, m))
        for c, (g, j, _, _) in enumerate(cols):
            Gm[g, c] = j
        A_eq = np.vstack([np.hstack([F, np.eye(P), -np.eye(P)]),
                          np.hstack([Gm, np.zeros((G, 2 * P))])])
        b_eq = np.concatenate([np.full(P, float(W)), n])
        cost = np.concatenate([np.zeros(m), np.ones(2 * P)])
        kw = {}
        if A < W:
            kw = dict(A_ub=np.hstack([Af, np.zeros((P, 2 * P))]), b_ub=np.full(P, float(A)))
        res = linprog(cost, A_eq=A_eq, b_eq=b_eq, bounds=(0, None), method="highs", **kw)
        if res.status != 0:
            return None
        z = res.ineqlin.marginals if A < W else np.zeros(P)
        return float(res.fun), res.eqlin.marginals[:P], z, res.eqlin.marginals[P:]

    def integer(limit):
        m = len(cols)
        rows = ConstraintRows()
        for t in range(P):
            rows.add([(c, float(fold[c][t])) for c in range(m) if fold[c][t]], W, W)
            if A < W:
                rows.add([(c, float(afold[c][t])) for c in range(m) if afold[c][t]], 0, A)
        for g in range(G):
            rows.add([(c, float(cols[c][1])) for c in range(m) if cols[c][0] == g], n[g], n[g])
        res = milp(np.zeros(m), constraints=rows.constraint(m), integrality=np.ones(m),
                   bounds=Bounds(0, np.array([n[c[0]] // c[1] for c in cols], float)),
                   options={"time_limit": max(0.1, limit), "disp": False})
        if res.x is None:
            return None
        return np.rint(res.x).astype(np.int64)

    x = None
    rounds = 0
    while left() > 0.1:
        got = relax()
        if got is None:
            return "open", None
        dev, y, z, u = got
        if rounds == 0:
            if price(y, z, u, (zero, zero, False)):
                continue                             # the relaxation not yet optimal
            if dev > 1e-6:
                return "none", None                  # (its relaxation over every lap walk)
            rounds = 1
        x = integer(min(left(), 2.0 * rounds))
        if x is not None:
            break
        rounds += 1
        # more columns: the cheapest lap walks at the duals perturbed
        scale = 0.5 * (np.abs(y).max() + 1e-9)
        price(y, z, u, (rng.normal(0, scale, P), rng.normal(0, scale, P), True))
    if x is None:
        return "open", None
    pick = [c for c in range(len(cols)) for _ in range(int(x[c]))]
    rows, ads, groups = unfold([cols[c][0] for c in pick], [cols[c][1] for c in pick],
                               [cols[c][2] for c in pick], [cols[c][3] for c in pick], P, k)
    family = WalkFamily(tuple(kinds), tuple(groups), np.array(rows), np.array(ads), W, A,
                        _time.perf_counter() - t0)
    return ("found", family) if family.check() else ("open", None)


def plan_laps(system: System, *, time_limit: float = LAP_SECONDS, count: int = LAP_PERIODS,
              most: int = 400) -> WalkFamily | None:
    """:func:`lap_walks` for the first ``count`` periods ``L`` (up to ``most`` ticks) that
    :func:`scenarios.walkfamily.periods` leaves open, shortest first, each folded onto every
    ``P`` dividing it with ``2 <= L / P <= MOST_LAPS`` (fewest laps first), ``time_limit``
    seconds in all; ``None`` where none was found. The folds take turns, a short time each
    and then twice as long (a family, where one is found, comes within a second on the
    editor's farm; a fold whose relaxation has none drops out at once)."""
    t0 = _time.perf_counter()
    todo = [(L, P) for L, _ in periods(system, most)[:count]
            for P in range(L // 2, 0, -1) if L % P == 0 and L // P <= MOST_LAPS]
    turn, share = 0, 1.0
    while todo:
        keep = []
        for L, P in todo:
            left = time_limit - (_time.perf_counter() - t0)
            if left <= 0.05:
                return None
            status, family = lap_search(system, P, L // P, time_limit=min(share, left),
                                        seed=turn)
            if family is not None:
                return family
            if status == "open":
                keep.append((L, P))
        todo, turn, share = keep, turn + 1, 2 * share
    return None
