"""The clients of a server that admits several requests per tick, counted tick by tick: a fast
guide to the runs :func:`scenarios.bounds.find_witness` looks for.

The model of a :class:`~scenarios.dsl.System` whose server admits ``A > 1`` requests per tick
takes ``A + 1`` steps per tick and, at fifty clients, some milliseconds per step to simulate.
Which server policy keeps the workers busy is a question about the clients' phases only, and
each client of a scenario without choices is a ring of *tick nodes*:

- ``free``: sending, thinking, receiving a reply; the client moves on;
- ``wait``: its request is waiting; if admitted it is served on this very tick (its first
  tick of service, charged) and moves on, else it stays;
- ``busy``: a further tick of service (charged), then on.

Each tick the server admits ``min(A, workers - busy, waiting)`` waiting clients (it must, as
the model's admission steps do), and chooses which. :func:`simulate` runs many rows of this
count model side by side (one numpy array of nodes, rows x clients), each row choosing by a
*spread* aim (:func:`scenarios.bounds.find_witness`'s ``spread`` rows), and tells for each row
the first tick at which it has closed a walk of full ticks up to a renaming of the clients.
Nothing it says is a result: the model's own simulation then runs the rows it recommends, and
only a run of the model, checked step by step, is a witness. The guide only saves the time of
simulating the model on rows that lead nowhere.

Examples
--------
Seven clients whose two requests must interlock to keep two workers busy:

>>> from fractions import Fraction
>>> from scenarios import Scenario, Server, System, Think, Request
>>> pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
>>> ring = tick_ring(pair)
>>> [k for k in ring.kind], len(ring.kind)
(['free', 'wait', 'busy', 'free', 'free', 'free', 'wait', 'free', 'free', 'free'], 10)
>>> system = System({pair: 7}, server=Server(workers=2, admissions=2))
>>> simulate(system, Fraction(2), [[0, 1, 2, 4, 5, 7, 8], [0, 1, 3, 5, 6, 8, -1]], ticks=300)
(60, None)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Sequence

import numpy as np

from .dsl import Scenario, System, automaton

__all__ = ["TickRing", "tick_ring", "describes", "simulate"]


#: :func:`simulate` tells its ``progress`` every this many ticks.
PROGRESS_TICKS = 100


@dataclass(frozen=True)
class TickRing:
    """A scenario's tick nodes in the order a client that never waits passes them.

    Attributes
    ----------
    kind : tuple of str
        ``'free'``, ``'wait'`` or ``'busy'`` per node.
    cost : tuple of int
        What the node's tick charges when it serves (``busy``, or ``wait`` when admitted).
    """

    kind: tuple[str, ...]
    cost: tuple[int, ...]


def tick_ring(scenario: Scenario, occupancy: bool = False) -> TickRing | None:
    """The ring of tick nodes of ``scenario`` with a server, starting at its first tick;
    ``None`` when the scenario chooses (a :class:`~scenarios.dsl.Choice`, a loop of varying
    count: its nodes do not form one ring). A tick of service charges the request's cost, or
    1 (one busy worker) with ``occupancy``."""
    auto = automaton(scenario, True)
    out: dict[int, list] = {}
    for a, b, t in auto.edges:
        out.setdefault(a, []).append((b, t))
    kind: list[str] = []
    cost: list[int] = []
    seen: set = set()
    # A node is ("a", state, timer): a state of the automaton with its tick counter (a
    # request's wait state: waiting, served on this tick if admitted); ("b", state, m, cost):
    # a further tick of service, m of them left; ("f", state): the reply's tick. The model's
    # rendering does the same in its own terms (render.ModelBuilder.pooled_phased, service_ticks).
    node = ("a", auto.init, 0)
    while node not in seen:
        seen.add(node)
        if node[0] == "b":
            _, a, m, c = node
            kind.append("busy")
            cost.append(c)
            node = ("b", a, m - 1, c) if m > 1 else ("f", a)
            continue
        if node[0] == "f":
            nxt = {b for b, t in out[node[1]] if t.kind == "reply"}
            if len(nxt) != 1:
                return None
            kind.append("free")
            cost.append(0)
            node = ("a", nxt.pop(), 0)
            continue
        _, a, tau = node
        edges = out.get(a, [])
        wait = [t for _, t in edges if t.kind == "wait"]
        if wait:
            r = wait[0].request
            kind.append("wait")
            c = 1 if occupancy else r.cost
            cost.append(c)
            node = ("f", a) if r.service == 1 else ("b", a, r.service - 1, c)
            continue
        nxt = set()
        for b, t in edges:
            if t.phase == "loop":
                if tau < t.count - 1:
                    nxt.add(("a", a, tau + 1))
            elif t.phase == "exit":
                if tau == t.count - 1:
                    nxt.add(("a", b, 0))
            else:
                nxt.add(("a", b, 0))
        if len(nxt) != 1:
            return None
        kind.append("free")
        cost.append(0)
        node = nxt.pop()
    if node != ("a", auto.init, 0):
        return None          # a lead-in before the ring: not a scenario of one round
    return TickRing(tuple(kind), tuple(cost))


def describes(system: System) -> bool:
    """Whether the count model describes ``system``: a server admitting several requests per
    tick, and scenarios that never choose (each a ring of tick nodes).

    >>> from scenarios import Scenario, Server, System, Request, Choice
    >>> u = Scenario("u", Request("r", 2))
    >>> v = Scenario("v", Choice(Request("r", 2), Request("q", 1)))
    >>> [describes(System({u: 2}, server=Server(2, admissions=2))),
    ...  describes(System({u: 2}, server=Server(2))),
    ...  describes(System({v: 2}, server=Server(2, admissions=2)))]
    [True, False, False]
    """
    server = system.server
    return (server is not None and server.admissions > 1
            and all(tick_ring(sc) is not None for sc, _ in system.counts))


def simulate(system: System, cap: Fraction, aims: Sequence[Sequence[int]],
             ticks: int = 1000, enough: int | None = None,
             trace: list | None = None,
             walk: list | None = None,
             progress: Callable[[int, int, int], None] | None = None
             ) -> tuple[int | None, ...]:
    """Per spread row (``aims``: per row, each client's aim in the clients' order, ``-1``
    for an inactive one: :func:`scenarios.bounds.spread_aims`), the first tick at which the
    row, run on the count model, has come back to its state up to a renaming of the clients
    with every tick in between charging ``cap`` or more; ``None`` where it has not within
    ``ticks``, or for every row where the system is not one this model describes (no server
    admitting several requests per tick, or a scenario that chooses).

    The row's choice is :func:`scenarios.bounds.find_witness`'s: a client aimed at ``a``
    ticks of waiting modulo its round ``T``; of the clients waiting, those with no waiting
    left to do first, then those with the most, the inactive ones last, ties to the first
    client. With ``enough``, it stops once that many rows have closed such a walk; with
    ``trace`` (a list), each tick's charge per row is appended to it; with ``walk`` (a
    list), each tick's ``(node, admitted)`` (rows x clients: the global ring node of each
    client at the tick's start, whether the server admits it on the tick); ``progress(tick,
    ticks, closed)`` is called every :data:`PROGRESS_TICKS` ticks with the rows closed so
    far.
    """
    server = system.server
    rings = [tick_ring(sc, system.occupancy) for sc, _ in system.counts]
    if len(aims) == 0 or server is None or server.admissions < 2 or None in rings:
        return tuple(None for _ in aims)      # (not a system :func:`describes`)
    # Global node numbers: each scenario's ring after the last.
    kind_code = {"free": 0, "wait": 1, "busy": 2}
    kind, cost, nxt, start, T = [], [], [], [], []
    for ring in rings:
        base = len(kind)
        n = len(ring.kind)
        kind += [kind_code[k] for k in ring.kind]
        cost += list(ring.cost)
        nxt += [base + (i + 1) % n for i in range(n)]
        start.append(base)
        T.append(n)
    kind_a, cost_a, next_a = (np.array(x, np.int64) for x in (kind, cost, nxt))
    aim_a = np.asarray(aims, np.int64)
    R = aim_a.shape[0]
    client_start, client_T = [], []
    for g, (_, k) in enumerate(system.counts):
        client_start += [start[g]] * k
        client_T += [T[g]] * k
    C = len(client_start)
    node = np.tile(np.array(client_start, np.int64), (R, 1))
    period = np.tile(np.array(client_T, np.int64), (R, 1))
    waited = np.zeros((R, C), np.int64)
    order_bias = np.arange(C)[None, :]
    W, A = server.workers, server.admissions
    seen: list[dict[bytes, int]] = [{} for _ in range(R)]
    short = np.zeros(R, np.int64)              # ticks charging less than cap so far
    shorts: list[np.ndarray] = [short.copy()]
    found: list[int | None] = [None] * R
    rows = np.arange(R)
    for tick in range(1, ticks + 1):
        kd = kind_a[node]
        busy, wait = kd == 2, kd == 1
        k = np.minimum(np.minimum(A, W - busy.sum(axis=1)), wait.sum(axis=1))
        key = np.where(aim_a >= 0, (aim_a - waited - 1) % period + 1, 0)
        score = np.where(wait, key * (C + 1) + (C - order_bias), -1)
        order = np.argsort(-score, axis=1, kind="stable")
        rank = np.empty_like(order)
        rank[rows[:, None], order] = np.arange(C)[None, :]
        admitted = wait & (rank < k[:, None])
        charged = (cost_a[node] * (busy | admitted)).sum(axis=1)
        if trace is not None:
            trace.append(charged)
        if walk is not None:
            walk.append((node, admitted))
        stay = wait & ~admitted
        waited += stay
        node = np.where(stay, node, next_a[node])
        short = short + (charged < cap)
        shorts.append(short)
        canon = np.sort(node, axis=1)
        for r in range(R):
            if found[r] is not None:
                continue
            h = canon[r].tobytes()
            i = seen[r].get(h)
            if i is not None and short[r] == shorts[i][r]:
                found[r] = tick
            seen[r][h] = tick
        done = sum(f is not None for f in found)
        if done == R or (enough is not None and done >= enough):
            break
        if progress is not None and tick % PROGRESS_TICKS == 0:
            progress(tick, ticks, done)
    return tuple(found)


@dataclass(frozen=True)
class SpreadPlan:
    """The spread rows worth simulating on the model, as the count model found them.

    Attributes
    ----------
    aims : tuple of tuple of int
        Rows for :func:`scenarios.bounds.find_witness`'s ``spread``, earliest first.
    ticks : tuple of int
        The tick by which each closed a walk of full ticks on the count model.
    tried : int
        Rows the count model ran.
    """

    aims: tuple[tuple[int, ...], ...]
    ticks: tuple[int, ...]
    tried: int


def plan_spread(system: System, cap: Fraction, mixes: Sequence[Sequence[int]], *,
                keep: int = 3, ticks: int = 3000, shifted: int = 600,
                seed: int = 0,
                progress: Callable[[int, int, int], None] | None = None
                ) -> SpreadPlan | None:
    """The spread rows that keep the server at ``cap`` on the count model, or ``None`` where
    the count model does not describe ``system`` (:func:`describes`).

    Each mix evenly spread (:func:`scenarios.bounds.spread_aims`), and ``shifted`` more rows
    in which the mixes' aims are shifted (seeded: each client's aim moved by -1, 0 or +1
    tick, or, in every third row, a fifth of the clients moved anywhere in their round): the
    even aims settle into the same cycle from the same start whatever the run, and a few
    clients a tick off often lead elsewhere, sooner. All run side by side until ``keep`` of
    them have closed a walk of full ticks: those, the first to get there. ``progress`` is
    :func:`simulate`'s.

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
    >>> plan = plan_spread(System({pair: 7}, server=Server(workers=2, admissions=2)),
    ...                    Fraction(2), [(7,)])
    >>> plan.ticks, plan.tried          # the even row takes 60 ticks, shifted ones 30
    ((30, 30, 30), 601)
    """
    from .bounds import round_ticks, spread_aims

    if not describes(system):
        return None
    if not mixes:
        return SpreadPlan((), (), 0)
    rows = spread_aims(system, mixes)
    rng = np.random.default_rng(seed)
    T = np.array([round_ticks(sc.steps) for sc, k in system.counts for _ in range(k)],
                 np.int64)
    even = len(rows)
    for n in range(shifted):
        base = np.array(rows[n % even], np.int64)
        if n % 3 == 2:
            new = np.where(rng.random(base.shape[0]) < 0.2, rng.integers(0, T), base)
        else:
            new = (base + rng.integers(-1, 2, base.shape[0])) % T
        rows.append(np.where(base >= 0, new, -1).tolist())
    found = simulate(system, cap, rows, ticks=ticks, enough=keep, progress=progress)
    hits = sorted((t, r) for r, t in enumerate(found) if t is not None)[:keep]
    return SpreadPlan(tuple(tuple(int(x) for x in rows[r]) for _, r in hits),
                      tuple(t for t, _ in hits), len(rows))
