"""Saturating cycles of one closed walk per client, by column generation and diving.

A *family* (:mod:`scenarios.walkfamily`) is a choice of one closed walk of ``L`` ticks per
client, every tick full. Clients of one scenario are alike, so a family is also a count per
*walk*: how many clients follow it. The *master* program over a set of walks

    minimise   sum_t (d+_t + d-_t)
    subject to sum_p x_p hold_p(t) + d+_t - d-_t = W - F(t)       (every tick t)
               sum_p x_p adm_p(t)               <= A - G(t)       (where A < W)
               sum_{p of scenario g} x_p         = n_g - f_g       (every scenario g)

(``F``, ``G``, ``f`` what walks already *committed* take) is a family exactly when its
optimum is 0 with ``x`` integral. Its linear relaxation is solved over all walks at once by
*column generation*: the duals ``y_t`` of the ticks' rows (``z_t`` of the admissions', ``u_g``
of the scenarios') price a walk ``p`` of scenario ``g`` at ``-sum_t (y_t hold_p(t) + z_t
adm_p(t)) - u_g``, and the cheapest walk of each scenario is a shortest path through the
``L`` ticks (:func:`cheapest_walks`), added while it prices below 0. A *dive* then commits
clients to walks: the whole part of every count at once (the relaxation stays feasible), else
one client to the walk of largest fractional count, the columns generated again after each
commitment; it ends with every client committed (a family, checked), or where the relaxation
of what is left is infeasible (then it undoes the last commitment, forbids it and goes on,
a few times, else starts again with another random tie-breaking). Walks that give up rounds
are committed first; once none is left to give up and few clients are free, every walk that
fits what is left is enumerated (:func:`fitting_walks`) and the integer master program over
them completes the family or proves that nothing does.

A dive proves nothing where it fails: the optimum of the relaxation above 0 would (no family
of period ``L`` exists: it is the relaxation of every family), but the dive only uses it to
prune. As everywhere, a family found is reached from the initial state
(:func:`scenarios.walkfamily.family_plan`) and followed on the model, every step checked.

Examples
--------
Seven clients whose two requests must interlock to keep two workers busy:

>>> from scenarios.walkfamily import pair_system
>>> system = pair_system(7)
>>> family = dive_walks(system, 21, time_limit=10)
>>> family.check() and family.period
21
"""

from __future__ import annotations

import time as _time

import numpy as np

from .dsl import System
from .walkfamily import WalkFamily, over_periods, periods, shape_of, walk_back, walk_table

__all__ = ["cheapest_walks", "fitting_walks", "dive_walks", "plan_dives", "DIVE_SECONDS", "DIVE_PERIODS"]

#: Seconds :func:`plan_dives` gets in all by default (the search does not call it: it tries
#: :mod:`scenarios.walklaps` instead), and how many periods
#: (from the counting argument's floor up) it tries.
DIVE_SECONDS = 1.0
DIVE_PERIODS = 2
#: A dive tries to complete its family exactly (the integer master program over every walk
#: that fits, :func:`fitting_walks`) once this few clients are left and none has a round
#: left to give up, for at most this many seconds a time.
COMPLETE_CLIENTS = 24
COMPLETE_SECONDS = 2.0
#: The most walks :meth:`_Master.complete` enumerates.
FITTING_WALKS = 20_000


def cheapest_walks(kinds, L: int, waits, hold: np.ndarray, admit: np.ndarray):
    """Per start node, the cheapest closed walk of ``L`` ticks along the ring ``kinds`` that
    waits (unadmitted at ``wait`` nodes) a number of ticks in ``waits``, a tick ``t`` at
    which it holds a worker costing ``hold[t]`` and one at which it is admitted ``admit[t]``
    more: ``[(cost, node, admitted)]``, one per start node from which such a walk exists.

    A shortest path through the ticks over the states (start, node, waiting done), all
    starts side by side.

    >>> got = cheapest_walks(("free", "wait", "busy"), 7, [1], np.array([0., 5, 5, 0, 0, 0, 0]),
    ...                      np.zeros(7))
    >>> min(got, key=lambda c: c[0])[0]
    0.0
    """
    T = len(kinds)
    is_wait = np.array([k == "wait" for k in kinds])
    holds = np.array([k != "free" for k in kinds], float)
    step = holds[None, :] * np.asarray(hold, float)[:, None] + \
        is_wait[None, :] * np.asarray(admit, float)[:, None]
    dist, stayed = walk_table(kinds, step[:L], max(waits))
    out = []
    ws = np.array(sorted(set(waits)))
    for h in range(T):
        ends = dist[h, h, ws]
        j = int(np.argmin(ends))
        if np.isfinite(ends[j]):
            out.append((float(ends[j]), *walk_back(kinds, stayed, h, int(ws[j]))))
    return out


def fitting_walks(kinds, L: int, waits, room, arrive, most: int):
    """Every closed walk of ``L`` ticks along the ring ``kinds`` waiting a number of ticks in
    ``waits`` that holds a worker only on ticks with ``room[t] > 0`` and is admitted only on
    ticks with ``arrive[t] > 0``: a list of ``(node, admitted)``, or ``None`` where there are
    more than ``most`` (counted first, by paths through the states (tick, waiting done) from
    each start node).

    >>> walks = fitting_walks(("free", "wait", "busy"), 4, [1], [1, 1, 0, 1], [1, 1, 1, 1], 99)
    >>> sorted(nd.tolist() for nd, _ in walks)
    [[1, 2, 0, 1], [2, 0, 1, 1]]
    """
    T = len(kinds)
    out = []
    plans = []
    total = 0
    for w in waits:
        for h in range(T):
            def go(t, k):
                v = (h + t - k) % T
                moves = kinds[v] == "free" or (room[t] > 0 and (kinds[v] != "wait"
                                                                or arrive[t] > 0))
                return moves, kinds[v] == "wait" and k < w
            # paths from (t, k) to (L, w), counted backwards
            count = [dict() for _ in range(L + 1)]
            count[L] = {w: 1}
            for t in range(L - 1, -1, -1):
                for k in range(min(t, w) + 1):
                    mv, st = go(t, k)
                    c = (count[t + 1].get(k, 0) if mv else 0) + (
                        count[t + 1].get(k + 1, 0) if st else 0)
                    if c:
                        count[t][k] = c
            n = count[0].get(0, 0)
            total += n
            if total > most:
                return None
            if n:
                plans.append((w, h, count, go))
    for w, h, count, go in plans:
        stack = [(0, 0, [], [])]
        while stack:
            t, k, nd, ad = stack.pop()
            if t == L:
                out.append((np.array(nd, np.int64), np.array(ad, bool)))
                continue
            v = (h + t - k) % T
            mv, st = go(t, k)
            if mv and count[t + 1].get(k, 0):
                stack.append((t + 1, k, nd + [v], ad + [kinds[v] == "wait"]))
            if st and count[t + 1].get(k + 1, 0):
                stack.append((t + 1, k + 1, nd + [v], ad + [False]))
    return out


class _Master:
    """The master program's columns (walks) and its relaxation solved by column generation."""

    def __init__(self, shape, L: int, W: int, A: int, slack: int):
        self.shape, self.L, self.W, self.A = shape, L, W, A
        self.waits = []
        for ks, s, _ in shape:
            most = L // len(ks)
            self.waits.append([L - m * len(ks) for m in range(most, -1, -1)
                               if (most - m) * s <= slack])
        self.group: list[int] = []
        self.node: list[np.ndarray] = []
        self.adm: list[np.ndarray] = []
        self.hold: list[np.ndarray] = []
        self.lost: list[bool] = []              # whether the walk gives up a round
        self.seen: dict[tuple, int] = {}
        for g, (ks, _, _) in enumerate(shape):      # a first column per scenario and start
            for _, node, adm in cheapest_walks(ks, L, self.waits[g], np.zeros(L), np.zeros(L)):
                self.column(g, node, adm)

    def waits_left(self, free, room) -> list[list[int]]:
        """Per scenario, the waiting its free clients' walks may have: the rounds they give up
        bring no more ticks of service than their largest rounds bring beyond the ticks left
        to fill, ``room`` (each client gives up a whole number of rounds, none fewer than 0,
        and together exactly that)."""
        L = self.L
        most = sum(int(f) * (L // len(ks)) * s for (ks, s, _), f in zip(self.shape, free))
        slack = most - int(np.sum(room))
        return [[L - m * len(ks) for m in range(L // len(ks), -1, -1)
                 if (L // len(ks) - m) * s <= slack] for ks, s, _ in self.shape]

    def column(self, g: int, node, adm) -> int:
        key = (g, node.tobytes(), adm.tobytes())
        if key in self.seen:
            return self.seen[key]
        ks = self.shape[g][0]
        self.seen[key] = len(self.group)
        self.group.append(g)
        self.node.append(node)
        self.adm.append(adm)
        self.hold.append(np.array([ks[v] == "busy" for v in node]) | adm)
        waited = int(sum(ks[v] == "wait" for v in node) - adm.sum())
        self.lost.append(waited > self.L % len(ks))
        return self.seen[key]

    def complete(self, free, load, admitted, time_limit):
        """Every walk that fits what is left (:func:`fitting_walks`) and the integer master
        program over them: ``(status, columns)``, ``columns`` one per free client where
        ``status`` is ``"found"``; ``"none"`` where no choice of them fills the ticks (a
        proof, every fitting walk being a column), ``"open"`` where there are too many
        walks or the time ran out."""
        from scipy.optimize import Bounds, milp

        from .rows import ConstraintRows

        L = self.L
        room, arrive = self.W - load, self.A - admitted
        fit = []
        waits = self.waits_left(free, room)
        for g, (ks, _, _) in enumerate(self.shape):
            if free[g]:
                if not waits[g]:
                    return "none", None
                got = fitting_walks(ks, L, waits[g], room, arrive, FITTING_WALKS)
                if got is None:
                    return "open", None
                fit += [self.column(g, nd, ad) for nd, ad in got]
        if not fit:
            return "none", None
        rows = ConstraintRows()
        for t in range(L):
            rows.add([(i, 1.0) for i, j in enumerate(fit) if self.hold[j][t]], room[t], room[t])
            if self.A < self.W:
                rows.add([(i, 1.0) for i, j in enumerate(fit) if self.adm[j][t]], 0, arrive[t])
        for g in range(len(self.shape)):
            rows.add([(i, 1.0) for i, j in enumerate(fit) if self.group[j] == g],
                     free[g], free[g])
        ub = np.array([free[self.group[j]] for j in fit], float)
        res = milp(np.zeros(len(fit)), constraints=rows.constraint(len(fit)),
                   integrality=np.ones(len(fit)), bounds=Bounds(0, ub),
                   options={"time_limit": max(0.1, time_limit), "disp": False})
        if res.status == 2:
            return "none", None
        if res.x is None:
            return "open", None
        x = np.rint(res.x).astype(np.int64)
        return "found", [j for i, j in enumerate(fit) for _ in range(int(x[i]))]

    def relax(self, free, load, admitted, cap, time_limit):
        """The relaxation over all walks for ``free`` clients per scenario, ``load`` workers
        and ``admitted`` admissions per tick already taken, column ``j`` at most ``cap[j]``
        (columns not in ``cap``: as many as their scenario's free clients): ``(deviation,
        x)``, ``x`` per column; ``None`` where the time ran out."""
        from scipy.optimize import linprog
        from scipy.sparse import coo_array

        L, G = self.L, len(self.shape)
        t0 = _time.perf_counter()
        while True:
            if _time.perf_counter() - t0 > time_limit:
                return None
            n = len(self.group)
            H = np.array(self.hold, float).T if n else np.zeros((L, 0))
            Ad = np.array(self.adm, float).T if n else np.zeros((L, 0))
            Gm = np.zeros((G, n))
            Gm[self.group, np.arange(n)] = 1.0
            # columns: x (n), then d+ and d- per tick
            A_eq = np.vstack([np.hstack([H, np.eye(L), -np.eye(L)]),
                              np.hstack([Gm, np.zeros((G, 2 * L))])])
            b_eq = np.concatenate([self.W - load, free]).astype(float)
            c = np.concatenate([np.zeros(n), np.ones(2 * L)])
            ub = np.array([cap.get(j, free[self.group[j]]) for j in range(n)]
                          + [np.inf] * (2 * L), float)
            kw = {}
            if self.A < self.W:
                kw = dict(A_ub=coo_array(np.hstack([Ad, np.zeros((L, 2 * L))])),
                          b_ub=(self.A - admitted).astype(float))
            res = linprog(c, A_eq=coo_array(A_eq), b_eq=b_eq, bounds=list(zip(np.zeros(len(c)),
                          ub)), method="highs", **kw)
            if res.status != 0:
                return None
            y = res.eqlin.marginals
            z = res.ineqlin.marginals if self.A < self.W else np.zeros(L)
            added = 0
            waits = self.waits_left(free, self.W - load)
            for g, (ks, _, _) in enumerate(self.shape):
                if free[g] == 0 or not waits[g]:
                    continue
                for cost, node, adm in cheapest_walks(ks, L, waits[g], -y[:L], -z):
                    if cost - y[L + g] < -1e-9:
                        before = len(self.group)
                        j = self.column(g, node, adm)
                        added += len(self.group) > before and j not in cap
            if not added:
                return float(res.fun), res.x[:n]


def dive_walks(system: System, period: int, *, time_limit: float = 30.0, seed: int = 0,
               backtracks: int = 4) -> WalkFamily | None:
    """A family of closed walks of ``period`` ticks keeping every worker busy, found by
    column generation and dives (module docstring), checked; ``None`` where the dives found
    none in ``time_limit`` seconds (which proves nothing), the period is not one
    :func:`scenarios.walkfamily.periods` leaves open, or the count model does not describe
    ``system``."""
    t0 = _time.perf_counter()
    shape = shape_of(system)
    if shape is None:
        return None
    open_ = dict(periods(system, period))
    if period not in open_:
        return None
    W, A, L = system.server.workers, system.server.admissions, period
    master = _Master(shape, L, W, A, open_[period])
    rng = np.random.default_rng(seed)
    n = np.array([k for _, _, k in shape], np.int64)

    def left():
        return time_limit - (_time.perf_counter() - t0)

    while left() > 0:
        chosen: list[int] = []                    # committed columns, one per client
        banned: dict[int, int] = {}               # column -> most clients it may take
        tries = backtracks
        while len(chosen) < int(n.sum()) and left() > 0:
            free = n - np.bincount([master.group[j] for j in chosen], minlength=len(n))
            if not free.any():
                break
            load = np.zeros(L, np.int64)
            admitted = np.zeros(L, np.int64)
            for j in chosen:
                load += master.hold[j]
                admitted += master.adm[j]
            taken = np.bincount(chosen, minlength=len(master.group))
            cap = {j: max(0, b - int(taken[j])) for j, b in banned.items()}
            got = master.relax(free, load, admitted, cap, left())
            if got is None:
                return None
            dev, x = got
            if dev <= 1e-6 and free.sum() <= COMPLETE_CLIENTS:
                status, rest = master.complete(free, load, admitted,
                                               min(COMPLETE_SECONDS, left()))
                if rest is not None:
                    chosen += rest
                    break
                if status == "none":
                    dev = 1.0                     # (what is left has no family: undo)
            if dev > 1e-6:
                if not chosen or tries == 0:
                    break                         # start again
                tries -= 1
                j = chosen.pop()
                banned[j] = int(np.count_nonzero(np.array(chosen) == j))
                continue
            whole = np.floor(x + 1e-9).astype(np.int64)
            if whole.any():
                for j in np.flatnonzero(whole):
                    chosen += [int(j)] * int(whole[j])
                continue
            # Walks that give up rounds first: once none is left to give up, the walks that
            # fit what is left are few and :meth:`_Master.complete` tries them all.
            lost = np.array([master.lost[j] for j in range(len(x))]) & (x > 1e-6)
            frac = np.where(lost, x, 0.0) if lost.any() else x - whole
            top = np.flatnonzero(frac > frac.max() - 0.1 - 1e-9)
            chosen.append(int(rng.choice(top)))
        if len(chosen) == int(n.sum()):
            order = sorted(chosen, key=lambda j: master.group[j])
            family = WalkFamily(tuple(ks for ks, _, _ in shape),
                                tuple(master.group[j] for j in order),
                                np.array([master.node[j] for j in order]),
                                np.array([master.adm[j] for j in order]), W, A,
                                _time.perf_counter() - t0)
            if family.check():
                return family
    return None


def plan_dives(system: System, *, time_limit: float = DIVE_SECONDS, count: int = DIVE_PERIODS,
               most: int = 400, seed: int = 0) -> WalkFamily | None:
    """:func:`dive_walks` for the first ``count`` periods (up to ``most`` ticks) that
    :func:`scenarios.walkfamily.periods` leaves open, shortest first, ``time_limit`` seconds
    in all shared among them; ``None`` where none was found."""
    return over_periods(system, lambda L, _, seconds: dive_walks(
        system, L, time_limit=seconds, seed=seed), time_limit=time_limit, count=count,
        most=most)
