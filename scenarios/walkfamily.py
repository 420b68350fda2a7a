"""Saturating cycles planned per client: one closed walk of its ring per client, every tick full.

A cycle of full ticks of the count model (:mod:`scenarios.periodic`) may bring the clients
back only up to a renaming (a client ends the period where another one began), and the
model's run is then that period repeated through the renaming's order. A cycle of ``L``
ticks of the *model* whose renaming is the identity is the same thing as a *family* of closed
walks, one per client, each of ``L`` ticks along its scenario's ring (moving on each tick,
except at a ``wait`` node where the server does not admit it), such that on every tick the
server's workers are all busy and it admits at most ``A`` clients (docs/algorithms.md,
"Walks per client"). This module searches for such a family directly:

- the periods ``L`` tried are those the counting argument allows (:func:`periods`): a client
  of a ring of ``T`` ticks goes round at most ``floor(L / T)`` times, each round bringing its
  ``s`` ticks of service, and the rounds must bring ``W L`` in all; the *slack* (what the
  largest rounds bring beyond ``W L``) says how many rounds the clients must give up;
- each client's walk is improved in turn against the others (a best response: the closed
  walk of exactly its number of rounds that least overloads the ticks, a shortest path
  through the ``L`` ticks of its ring, :func:`best_walk`), from a greedy start;
- where that stalls, a few clients at a time are freed and their walks chosen again by an
  integer program (:func:`scipy.optimize.milp`: one binary per client, tick and move, each
  client's walk a unit flow from its node back to it) that minimises the ticks' distance
  from full, the others held.

Nothing here is a result: a family is checked (:meth:`WalkFamily.check`), turned into a run of
the count model reaching it from the initial state (:func:`family_plan`), and followed on the
model itself, every step checked, by :func:`scenarios.bounds.find_witness`.

Examples
--------
Seven clients whose two requests must interlock to keep two workers busy:

>>> system = pair_system(7)
>>> family = plan_walks(system, time_limit=10)
>>> family.check() and [family.served(t) for t in range(family.period)] == [2] * family.period
True
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np

from .dsl import System
from .rows import ConstraintRows
from .schedule import tick_ring

__all__ = ["WalkFamily", "periods", "best_walk", "plan_walks", "family_plan", "WALK_SECONDS",
           "WALK_PERIODS", "REPAIR_CLIENTS", "shape_of", "pair_system", "over_periods", "walk_table", "walk_back"]

#: Seconds :func:`plan_walks` gets in all where the search calls it, and how many periods
#: (from the counting argument's floor up) it tries.
WALK_SECONDS = 4.0
WALK_PERIODS = 3
#: Clients freed at a time by the repair program.
REPAIR_CLIENTS = 8
#: Ticks of the window whose walks are chosen again at once.
WINDOW_TICKS = 24


@dataclass(frozen=True)
class WalkFamily:
    """One closed walk of ``period`` ticks per client: ``node[c, t]`` the ring node (its
    scenario's, numbered from 0) of client ``c`` at the start of tick ``t``, ``admitted[c,
    t]`` whether the server admits it on tick ``t``. Clients are numbered in the order of
    ``system.counts``, then by number (as :func:`scenarios.periodic.admissions` numbers them).

    Attributes
    ----------
    kinds : tuple of tuple of str
        Per scenario, its ring's node kinds.
    group : tuple of int
        Per client, its scenario's index.
    node, admitted : numpy.ndarray
        ``(clients, period)``.
    workers, admissions : int
        The server's.
    seconds : float
        Time spent finding it.
    """

    kinds: tuple[tuple[str, ...], ...]
    group: tuple[int, ...]
    node: np.ndarray
    admitted: np.ndarray
    workers: int
    admissions: int
    seconds: float

    @property
    def period(self) -> int:
        """Ticks of the cycle."""
        return self.node.shape[1]

    def serving(self) -> np.ndarray:
        """``(clients, period)``: whether each client holds a worker on each tick (at a
        ``busy`` node, or admitted)."""
        busy = np.array([[k == "busy" for k in self.kinds[g]][v] for g, row in
                         zip(self.group, self.node) for v in row], bool)
        return busy.reshape(self.node.shape) | self.admitted

    def served(self, t: int) -> int:
        """Workers busy on tick ``t``."""
        return int(self.serving()[:, t].sum())

    def check(self) -> bool:
        """Whether every walk follows its ring (moving on unless waiting unadmitted, admitted
        only at a ``wait`` node), closes after ``period`` ticks, and every tick is full and
        admits at most ``admissions``."""
        L = self.period
        for g, row, adm in zip(self.group, self.node, self.admitted):
            ks = self.kinds[g]
            for t in range(L):
                v, nxt = int(row[t]), int(row[(t + 1) % L])
                if adm[t] and ks[v] != "wait":
                    return False
                stays = ks[v] == "wait" and not adm[t]
                if nxt != (v if stays else (v + 1) % len(ks)):
                    return False
        return (bool((self.serving().sum(axis=0) == self.workers).all())
                and bool((self.admitted.sum(axis=0) <= self.admissions).all()))

    def flat(self) -> tuple[np.ndarray, np.ndarray]:
        """The family as a cycle of the count model: ``(counts, admitted)``, each ``(period,
        nodes)`` over the rings' nodes one after the other (as in
        :class:`scenarios.periodic.CyclePlan`)."""
        base = np.cumsum([0] + [len(ks) for ks in self.kinds])
        V = int(base[-1])
        at = self.node + base[np.array(self.group)][:, None]
        counts = np.zeros((self.period, V), np.int64)
        adm = np.zeros((self.period, V), np.int64)
        for t in range(self.period):
            counts[t] = np.bincount(at[:, t], minlength=V)
            adm[t] = np.bincount(at[self.admitted[:, t], t], minlength=V)
        return counts, adm


def shape_of(system: System):
    """Per scenario ``(kinds, ticks of service a round, clients)``; ``None`` where the count
    model does not describe ``system``."""
    server = system.server
    if server is None or server.admissions < 2:
        return None
    out = []
    for sc, n in system.counts:
        ring = tick_ring(sc)
        if ring is None:
            return None
        out.append((ring.kind, sum(k != "free" for k in ring.kind), n))
    return out


def periods(system: System, most: int) -> list[tuple[int, int]]:
    """The periods ``L <= most`` that the counting argument leaves open, with their slack:
    ``(L, sum_c floor(L / T_c) s_c - W L)`` where that is at least 0 (client ``c`` goes round
    its ring of ``T_c`` ticks a whole number of times in a closed walk, each round keeping a
    worker busy for ``s_c`` ticks, and a full period needs ``W L`` such ticks).

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> u = Scenario("u", [Request("r", 2), Think(2)])      # a ring of 6 ticks, 2 served
    >>> periods(System({u: 6}, server=Server(workers=2, admissions=2)), 13)
    [(6, 0), (12, 0)]
    """
    shape = shape_of(system)
    if shape is None:
        return []
    W = system.server.workers
    out = []
    for L in range(1, most + 1):
        slack = sum((L // len(ks)) * s * n for ks, s, n in shape) - W * L
        if slack >= 0:
            out.append((L, slack))
    return out


def _losses(shape, L: int, slack: int, rng) -> list[int] | None:
    """Rounds each client gives up (per client, in order) so that the rounds bring exactly
    ``W L`` ticks of service: ``slack`` paid in rounds of ``s_c`` ticks, at most one per
    client first, of the scenarios in a random order; ``None`` where no such choice."""
    groups = list(range(len(shape)))
    rng.shuffle(groups)
    cap = [n * (L // len(ks)) for ks, _, n in shape]
    # (a change-making table: which scenario's rounds pay the slack)
    best: dict[int, list[int]] = {0: [0] * len(shape)}
    for g in groups:
        s = shape[g][1]
        for rest in range(s, slack + 1):
            prev = best.get(rest - s)
            if rest not in best and prev is not None and prev[g] < cap[g]:
                best[rest] = prev[:g] + [prev[g] + 1] + prev[g + 1:]
    if slack not in best:
        return None
    out = []
    for g, (ks, _, n) in enumerate(shape):
        k = best[slack][g]
        per = [k // n + (1 if i < k % n else 0) for i in range(n)]
        out += [per[i] for i in rng.permutation(n)]
    return out


def best_walk(kinds, waits: int, cost: np.ndarray, rng) -> tuple[np.ndarray, np.ndarray]:
    """The closed walk along the ring ``kinds`` of ``len(cost)`` ticks that waits exactly
    ``waits`` ticks (unadmitted at ``wait`` nodes) and costs least, a tick at which it holds a
    worker costing ``cost[t]``: ``(node, admitted)`` per tick, from whichever node is best
    (ties broken by ``rng``).

    A shortest path through the ticks: the state is the node and the waiting done so far,
    one per start node side by side; a client at a ``wait`` node either is admitted (holds a
    worker on that tick, moves on) or waits.

    >>> node, adm = best_walk(("free", "wait", "busy"), 1, np.array([0., 5, 5, 0, 0, 0, 0]),
    ...                       np.random.default_rng(0))
    >>> node.tolist(), adm.astype(int).tolist()
    ([2, 0, 1, 1, 2, 0, 1], [0, 0, 0, 1, 0, 0, 1])
    """
    T = len(kinds)
    holds = np.array([k != "free" for k in kinds], float)
    dist, stayed = walk_table(kinds, holds[None, :] * np.asarray(cost, float)[:, None], waits)
    end = dist[np.arange(T), np.arange(T), waits]
    home = int(np.argmin(end + rng.random(T) * 1e-9))
    return walk_back(kinds, stayed, home, waits)


def walk_table(kinds, step: np.ndarray, most_waits: int) -> tuple[np.ndarray, np.ndarray]:
    """The shortest paths through the ticks behind :func:`best_walk` (and
    :func:`scenarios.walkprice.cheapest_walks`): ``step[t, v]`` is what tick ``t`` costs a
    client that leaves node ``v`` on it (moves on; a client at a ``wait`` node that stays,
    unadmitted, pays nothing and counts a tick of waiting). Returns ``(dist, stayed)``:
    ``dist[h, v, k]`` the least cost of ``L = len(step)`` ticks from start ``h`` to node ``v``
    having waited ``k <= most_waits`` ticks, and ``stayed[t, h, v, k]`` whether that path's
    tick ``t`` was a wait (for :func:`walk_back`).

    Two ticks round a ring of a free node and a wait node, admission costing 1: back home
    without waiting for 1, and no closed walk of two ticks waits one of them.

    >>> dist, _ = walk_table(("free", "wait"), np.array([[0., 1], [0, 1]]), 1)
    >>> dist[0, 0].tolist(), dist[1, 1].tolist()
    ([1.0, inf], [1.0, inf])
    """
    L, T = step.shape[0], len(kinds)
    is_wait = np.array([k == "wait" for k in kinds])
    dist = np.full((T, T, most_waits + 1), np.inf)     # (start node, node, waited)
    dist[np.arange(T), np.arange(T), 0] = 0.0
    stayed = np.zeros((L, T, T, most_waits + 1), bool)
    for t in range(L):
        move = np.roll(dist + step[t][None, :, None], 1, axis=1)
        stay = np.full_like(dist, np.inf)
        stay[:, is_wait, 1:] = dist[:, is_wait, :-1]
        better = stay < move
        dist = np.where(better, stay, move)
        stayed[t] = better
    return dist, stayed


def walk_back(kinds, stayed: np.ndarray, home: int, waited: int) -> tuple[np.ndarray, np.ndarray]:
    """The closed walk from ``home`` back to it with ``waited`` ticks of waiting that
    :func:`walk_table`'s choices ``stayed`` make: ``(node, admitted)`` per tick."""
    L, T = stayed.shape[0], len(kinds)
    is_wait = np.array([k == "wait" for k in kinds])
    node = np.zeros(L, np.int64)
    adm = np.zeros(L, bool)
    v, k = home, waited
    for t in range(L - 1, -1, -1):           # back from the end, along the choices made
        if stayed[t, home, v, k]:
            k -= 1
        else:
            v = (v - 1) % T
            adm[t] = is_wait[v]
        node[t] = v
    return node, adm


def _holds(kinds, node, adm) -> np.ndarray:
    return np.array([kinds[v] == "busy" for v in node]) | adm


def _repair(shape, group, free, waited, load, W, time_limit):
    """The walks of the clients ``free`` chosen again by one integer program, the others'
    ``load`` (workers per tick) held: each client's walk a unit circulation through the
    period's ticks (one binary per tick, node and move; one unit leaves tick 0, so one
    crosses each tick: a single closed walk of the period's length) waiting ``waited[c]``
    ticks as before, minimising the sum of
    the ticks' distances from ``W``. ``None`` where the solver found nothing in time."""
    from scipy.optimize import Bounds, milp

    L = len(load)
    rows = ConstraintRows()
    add = rows.add

    nvar = 0
    var = []
    holding = [[] for _ in range(L)]
    for c in free:
        ks = shape[group[c]][0]
        T = len(ks)
        mv = np.arange(L * T).reshape(L, T) + nvar             # move on from (t, v)
        nvar += L * T
        st = np.full((L, T), -1)
        waits = [v for v in range(T) if ks[v] == "wait"]
        for v in waits:
            st[:, v] = np.arange(L) + nvar                     # stay at (t, v)
            nvar += L
        var.append((mv, st))
        for t in range(L):
            for v in range(T):
                out = [(int(mv[t, v]), 1.0)] + ([(int(st[t, v]), 1.0)] if st[t, v] >= 0 else [])
                into = [(int(mv[t - 1, (v - 1) % T]), -1.0)] + (
                    [(int(st[t - 1, v]), -1.0)] if st[t - 1, v] >= 0 else [])
                add(out + into, 0, 0)          # (t - 1 = -1: the last tick, a cycle)
                if ks[v] != "free":
                    holding[t].append(int(mv[t, v]))
        # one unit on tick 0, so on every tick: one closed walk of the period's ticks
        add([(int(mv[0, v]), 1.0) for v in range(T)]
            + [(int(st[0, v]), 1.0) for v in range(T) if st[0, v] >= 0], 1, 1)
        # its waiting, hence its rounds, kept: the service in all stays W times the period
        add([(int(i), 1.0) for i in st[st >= 0]], waited[c], waited[c])
    dev = nvar
    nvar += 2 * L
    for t in range(L):
        add([(i, 1.0) for i in holding[t]] + [(dev + 2 * t, 1.0), (dev + 2 * t + 1, -1.0)],
            W - load[t], W - load[t])
    cost = np.zeros(nvar)
    cost[dev:] = 1.0
    ub = np.ones(nvar)
    ub[dev:] = W + len(free)
    integ = np.ones(nvar)
    integ[dev:] = 0
    res = milp(cost, constraints=rows.constraint(nvar),
        integrality=integ, bounds=Bounds(0, ub),
        options={"time_limit": max(0.2, time_limit), "disp": False})
    if res.x is None:
        return None
    x = res.x > 0.5
    out = []
    for c, (mv, st) in zip(free, var):
        ks = shape[group[c]][0]
        nd = np.zeros(L, np.int64)
        ad = np.zeros(L, bool)
        for t in range(L):
            on = np.flatnonzero(x[mv[t]])
            if len(on):
                nd[t] = on[0]
                ad[t] = ks[on[0]] == "wait"
            else:
                nd[t] = next(v for v in range(len(ks)) if st[t, v] >= 0 and x[st[t, v]])
        out.append((nd, ad))
    return out


def _rewindow(shape, group, node, adm, start, ticks, W, A, time_limit):
    """Every client's walk over the ``ticks`` ticks from ``start`` (cyclically) chosen again
    by one integer program, where each client stands at the window's two ends held: clients
    of one scenario with the same two ends are one integer flow through the window's ticks
    (any split of it into unit paths works: they are alike), every tick's distance from
    ``W`` workers minimised, at most ``A`` admitted. ``(node, admitted)`` over the window per
    client, or ``None`` where the solver found nothing in time."""
    from scipy.optimize import Bounds, milp

    L = node.shape[1]
    when = [(start + j) % L for j in range(ticks + 1)]
    ends: dict[tuple[int, int, int], list[int]] = {}
    for c, g in enumerate(group):
        ends.setdefault((g, int(node[c, when[0]]), int(node[c, when[-1]])), []).append(c)
    rows = ConstraintRows()
    add = rows.add

    nvar = 0
    holding = [[] for _ in range(ticks)]
    admits = [[] for _ in range(ticks)]
    flows = []
    for (g, p, q), cs in ends.items():
        ks = shape[g][0]
        T = len(ks)
        # the nodes a path from p (window start) to q (its end) can be at, tick by tick
        fwd = [{p}]
        for j in range(ticks):
            fwd.append({(v + 1) % T for v in fwd[-1]} | {v for v in fwd[-1] if ks[v] == "wait"})
        back = [set() for _ in range(ticks + 1)]
        back[ticks] = {q} & fwd[ticks]
        for j in range(ticks - 1, -1, -1):
            back[j] = {v for v in fwd[j] if (v + 1) % T in back[j + 1]
                       or (ks[v] == "wait" and v in back[j + 1])}
        arcs = {}                                   # (j, v, moves) -> column
        for j in range(ticks):
            for v in back[j]:
                for moves in (True, False):
                    if (moves or ks[v] == "wait") and ((v + 1) % T if moves else v) in \
                            back[j + 1]:
                        arcs[(j, v, moves)] = nvar
                        if moves and ks[v] != "free":
                            holding[j].append(nvar)
                        if moves and ks[v] == "wait":
                            admits[j].append(nvar)
                        nvar += 1
        m = float(len(cs))
        for j in range(ticks + 1):
            for v in back[j]:
                out = [(arcs[(j, v, mv)], 1.0) for mv in (True, False) if (j, v, mv) in arcs]
                into = [(arcs[(j - 1, u, mv)], -1.0) for u, mv in (((v - 1) % T, True),
                                                                   (v, False))
                        if j and (j - 1, u, mv) in arcs]
                need = (m if (j == 0 and v == p) else 0.0) - (m if (j == ticks and v == q)
                                                              else 0.0)
                add(out + into, need, need)
        flows.append((g, cs, arcs))
    dev = nvar
    nvar += 2 * ticks
    for j in range(ticks):
        add([(i, 1.0) for i in holding[j]] + [(dev + 2 * j, 1.0), (dev + 2 * j + 1, -1.0)],
            W, W)
        add([(i, 1.0) for i in admits[j]], 0, A)
    cost = np.zeros(nvar)
    cost[dev:] = 1.0
    integ = np.ones(nvar)
    integ[dev:] = 0
    res = milp(cost, constraints=rows.constraint(nvar),
        integrality=integ, bounds=Bounds(0, len(group) + W),
        options={"time_limit": max(0.2, time_limit), "disp": False})
    if res.x is None:
        return None
    x = np.rint(res.x).astype(np.int64)
    out_node = node.copy()
    out_adm = adm.copy()
    for g, cs, arcs in flows:
        ks = shape[g][0]
        T = len(ks)
        left = {a: int(x[i]) for a, i in arcs.items() if x[i] > 0}
        for c in cs:                                # one unit path per client
            v = int(node[c, when[0]])
            for j in range(ticks):
                mv = (j, v, True) if left.get((j, v, True), 0) > 0 else (j, v, False)
                left[mv] -= 1
                out_node[c, when[j]] = v
                out_adm[c, when[j]] = mv[2] and ks[v] == "wait"
                v = (v + 1) % T if mv[2] else v
    return out_node, out_adm


def walk_family(system: System, period: int, slack: int, *, time_limit: float,
                seed: int = 0) -> WalkFamily | None:
    """A family of closed walks of ``period`` ticks keeping every worker busy on every tick
    (:class:`WalkFamily`, checked), or ``None`` where none was found in ``time_limit``
    seconds (which proves nothing). ``slack`` is :func:`periods`'. The best responses and
    the repair of whole walks do not count admissions (only the windows do): where the server
    admits fewer than it has workers, a family admitting too many on a tick fails
    :meth:`WalkFamily.check` and is not returned."""
    shape = shape_of(system)
    if shape is None:
        return None
    t0 = _time.perf_counter()
    rng = np.random.default_rng(seed)
    W, A, L = system.server.workers, system.server.admissions, period
    group = [g for g, (_, _, n) in enumerate(shape) for _ in range(n)]
    U = len(group)
    lost = _losses(shape, L, slack, rng)
    if lost is None:
        return None
    waits = [L - (L // len(shape[g][0]) - lost[c]) * len(shape[g][0])
             for c, g in enumerate(group)]
    node = np.zeros((U, L), np.int64)
    adm = np.zeros((U, L), bool)
    hold = np.zeros((U, L), np.int64)
    load = np.zeros(L, np.int64)

    def place(c, noise):
        nonlocal load
        ks = shape[group[c]][0]
        rest = load - hold[c]
        # adding a worker on tick t changes sum (load - W)^2 by 2 (rest - W) + 1
        cost = 2.0 * (rest - W) + 1 + rng.random(L) * noise
        node[c], adm[c] = best_walk(ks, waits[c], cost, rng)
        hold[c] = _holds(ks, node[c], adm[c])
        load = rest + hold[c]

    def waited(node, adm):
        # (an exact step may change a client's rounds: its best responses keep them)
        return [int(sum(shape[group[c]][0][v] == "wait" for v in node[c]) - adm[c].sum())
                for c in range(U)]

    def score():
        return int(((load - W) ** 2).sum())

    for c in rng.permutation(U):
        place(c, 0.5)
    best = score()
    stall = 0
    while best and _time.perf_counter() - t0 < time_limit:
        if stall < 4 * U:
            # a best response of one client, kept where it is no worse
            c = int(rng.integers(U))
            keep = node[c].copy(), adm[c].copy(), hold[c].copy(), load.copy()
            place(c, 0.3)
            now = score()
            if now > best:
                node[c], adm[c], hold[c], load = keep
                stall += 1
            else:
                stall = 0 if now < best else stall + 1
                best = now
            continue
        stall = 0
        keep = node.copy(), adm.copy(), hold.copy(), load.copy()
        off = np.flatnonzero(load != W)
        if rng.random() < 0.5:
            # stalled: every walk over a window of ticks around one off full, chosen again
            k = min(WINDOW_TICKS, L - 1)
            got = _rewindow(shape, group, node, adm, int(rng.choice(off)) - int(rng.integers(k)),
                            k, W, A, min(10.0, time_limit - (_time.perf_counter() - t0)))
            if got is not None:
                node, adm = got
                for c in range(U):
                    hold[c] = _holds(shape[group[c]][0], node[c], adm[c])
                load = hold.sum(axis=0)
                if score() > best:
                    node, adm, hold, load = keep
                best = score()
                waits = waited(node, adm)
            continue
        # stalled: free the clients at the worst ticks and a few others, solve them exactly
        pick = [int(rng.choice(np.flatnonzero(hold[:, t]))) for t in off if load[t] > W]
        free = list(dict.fromkeys(pick))[:REPAIR_CLIENTS // 2]
        while len(free) < min(REPAIR_CLIENTS, U):
            c = int(rng.integers(U))
            if c not in free:
                free.append(c)
        got = _repair(shape, group, free, waits, load - hold[free].sum(axis=0), W,
                      min(10.0, time_limit - (_time.perf_counter() - t0)))
        if got is None:
            continue
        for c, (nd, ad) in zip(free, got):
            node[c], adm[c] = nd, ad
            hold[c] = _holds(shape[group[c]][0], nd, ad)
        load = hold.sum(axis=0)
        if score() > best:
            node, adm, hold, load = keep
        best = score()
        waits = waited(node, adm)
    if best:
        return None
    family = WalkFamily(tuple(ks for ks, _, _ in shape), tuple(group), node, adm, W, A,
                        _time.perf_counter() - t0)
    return family if family.check() else None


def pair_system(clients: int = 7) -> System:
    """The planners' worked example: ``clients`` alike, each opening (2 ticks), thinking 1,
    editing (1 tick), thinking 2, on 2 workers admitting 2 a tick; their two requests must
    interlock to keep both workers busy, so a saturating family needs the walks placed.

    >>> system = pair_system(7)
    >>> system.server.workers, system.n_clients
    (2, 7)
    """
    from .dsl import Request, Scenario, Server, Think
    pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
    return System({pair: clients}, server=Server(workers=2, admissions=2))


def plan_walks(system: System, *, time_limit: float = WALK_SECONDS, count: int = WALK_PERIODS,
               most: int = 400, seed: int = 0) -> WalkFamily | None:
    """A family of closed walks keeping every worker busy (:func:`walk_family`), for the
    first ``count`` periods (up to ``most`` ticks) that :func:`periods` leaves open, shortest
    first, ``time_limit`` seconds in all shared among them; ``None`` where none was found
    (which proves nothing) or the count model does not describe ``system``."""
    return over_periods(system, lambda L, slack, seconds: walk_family(
        system, L, slack, time_limit=seconds, seed=seed), time_limit=time_limit, count=count,
        most=most)


def over_periods(system: System, solve, *, time_limit: float, count: int,
                 most: int = 400) -> WalkFamily | None:
    """The first family ``solve(L, slack, seconds)`` returns over the first ``count`` periods
    (up to ``most`` ticks) that :func:`periods` leaves open, shortest first, the ``time_limit``
    seconds shared among them as they come (what is left split over the periods left);
    ``None`` where it returns none in time. How every planner of families goes over periods.

    >>> over_periods(pair_system(7), lambda L, slack, s: L if L % 7 == 0 else None,
    ...              time_limit=5, count=3)
    21
    """
    t0 = _time.perf_counter()
    todo = periods(system, most)[:count]
    for k, (L, slack) in enumerate(todo):
        left = time_limit - (_time.perf_counter() - t0)
        if left <= 0.2:
            return None
        got = solve(L, slack, left / (len(todo) - k))
        if got is not None:
            return got
    return None


def family_plan(system: System, family: WalkFamily, *, seed: int = 0):
    """A run of the count model from the initial state into ``family``'s cycle and once round
    it, with whom the server admits on each tick: ``(plan, chosen)``, ``plan`` a
    :class:`scenarios.periodic.CyclePlan` (prefix, then the period), ``chosen`` per tick the
    clients admitted (for :func:`scenarios.bounds.find_witness`'s ``plans``); ``None`` where
    no tracking row reaches the cycle.

    The prefix is :func:`scenarios.periodic.track_cycle`'s walk, its clients admitted as
    :func:`scenarios.periodic.admissions` admits them; where it ends at the cycle's tick
    ``i``, the clients at each node take, in any order, the walks that stand there at tick
    ``i`` (clients of one scenario are alike), and each follows its walk from then on: after
    the period every client is back at its own node, so the model's run closes exactly.
    """
    from .periodic import CyclePlan, admissions, track_cycle

    ring, moves = family.flat()
    got = track_cycle(system, ring, moves, seed=seed)
    if got is None:
        return None
    counts, adm, i = got
    H, L = len(adm), family.period
    turn = [(i + k) % L for k in range(L)]
    plan = CyclePlan(family.kinds, np.concatenate([counts, ring[turn[1:] + turn[:1]]]),
                     np.concatenate([adm, moves[turn]]).reshape(-1, ring.shape[1]), H, H + L,
                     family.workers, family.seconds)
    chosen = admissions(system, plan, closing=False)[:H]
    # where each client stands when the prefix ends (the plan's prefix, followed)
    base = np.cumsum([0] + [len(ks) for ks in family.kinds])
    flat = [k for ks in family.kinds for k in ks]
    succ = [int(base[g]) + (v + 1) % len(ks) for g, ks in enumerate(family.kinds)
            for v in range(len(ks))]
    at = [int(base[g]) for g in family.group]
    for t in range(H):
        go = set(chosen[t])
        at = [succ[v] if flat[v] != "wait" or c in go else v for c, v in enumerate(at)]
    walks_at: dict[int, list[int]] = {}
    for w, g in enumerate(family.group):
        walks_at.setdefault(int(base[g]) + int(family.node[w, i]), []).append(w)
    follows = [walks_at[v].pop() for v in at]       # client -> the walk it follows
    for k in turn:
        chosen.append(sorted(c for c, w in enumerate(follows) if family.admitted[w, k]))
    return plan, chosen
