"""Checks of the count model's plans shared by the planners' tests: a plan against a count
model written out again here (the server admits ``min(A, W - busy, waiting)`` per tick, a
waiting client moves on only when admitted), and the concrete admissions by counting where
the clients stand. Nothing here comes from the planners' code but the rings' description
(:func:`scenarios.schedule.tick_ring`).
"""

from __future__ import annotations

import random

from scenarios import Request, Scenario, Server, System, Think
from scenarios.schedule import tick_ring

__all__ = ["check_plan", "check_admissions", "random_system"]


def random_system(seed: int, workers: int | None = None) -> System:
    """One or two scenarios of one or two requests (1-3 ticks) and thinks (0-2 ticks), 2-4
    clients each, on ``workers`` workers admitting as many per tick, or (None) on 2-3
    workers admitting 2-3 requests per tick (drawn after the scenarios)."""
    rng = random.Random(seed)
    scs = []
    for letter in "ab"[:rng.randint(1, 2)]:
        steps = []
        for _ in range(rng.randint(1, 2)):
            steps.append(Request(f"{letter}{len(steps)}", service=rng.randint(1, 3)))
            steps.append(Think(rng.randint(0, 2)))
        scs.append(Scenario(f"s{letter}", steps))
    if workers is not None:
        return System({sc: rng.randint(2, 4) for sc in scs},
                      server=Server(workers=workers, admissions=workers))
    w = rng.randint(2, 3)
    counts = {sc: rng.randint(2, 4) for sc in scs}
    return System(counts, server=Server(workers=w, admissions=rng.randint(2, w)))


def check_plan(system: System, plan) -> None:
    """The plan's counts follow the count model tick by tick, from every client at its
    ring's first node; the period's ticks are full and it closes."""
    W, A = system.server.workers, system.server.admissions
    kinds, succ, first = [], [], []
    for sc, _ in system.counts:
        ring = tick_ring(sc).kind
        first.append(len(kinds))
        succ += [len(kinds) + (i + 1) % len(ring) for i in range(len(ring))]
        kinds += list(ring)
    at = [0] * len(kinds)
    for f, (_, k) in zip(first, system.counts):
        at[f] = k
    assert list(plan.counts[0]) == at
    for t in range(plan.horizon):
        adm = [int(x) for x in plan.admitted[t]]
        busy = sum(at[v] for v in range(len(kinds)) if kinds[v] == "busy")
        waiting = sum(at[v] for v in range(len(kinds)) if kinds[v] == "wait")
        assert all(adm[v] == 0 or (kinds[v] == "wait" and adm[v] <= at[v])
                   for v in range(len(kinds)))
        assert sum(adm) == min(A, W - busy, waiting)
        if t >= plan.start:
            assert busy + sum(adm) == W, f"tick {t} of the period is not full"
        nxt = [0] * len(kinds)
        for v in range(len(kinds)):
            go = adm[v] if kinds[v] == "wait" else at[v]
            nxt[succ[v]] += go
            nxt[v] += at[v] - go
        at = nxt
        assert list(plan.counts[t + 1]) == at
    assert list(plan.counts[plan.horizon]) == list(plan.counts[plan.start])


def check_admissions(system: System, plan, chosen) -> None:
    """The clients the concrete plan admits stand, tick by tick, where the counts say."""
    kinds, succ, home = [], [], []
    for sc, k in system.counts:
        ring = tick_ring(sc).kind
        home += [len(kinds)] * k
        succ += [len(kinds) + (i + 1) % len(ring) for i in range(len(ring))]
        kinds += list(ring)
    where = list(home)
    for t, who in enumerate(chosen):
        counts = [where.count(v) for v in range(len(kinds))]
        assert counts == list(plan.counts[t])
        assert all(kinds[where[c]] == "wait" for c in who)
        for v in range(len(kinds)):
            assert sum(1 for c in who if where[c] == v) == plan.admitted[t, v]
        where = [succ[v] if kinds[v] != "wait" or c in who else v
                 for c, v in enumerate(where)]
