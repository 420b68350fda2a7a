"""Whom the server admits so that every client comes home: flows of clients per home node.

A plan of the count model (:class:`scenarios.periodic.CyclePlan`) says how many clients stand
at each ring node and how many the server admits at each ``wait`` node, tick by tick, not
which ones. Clients of one scenario standing at one node are alike, so who ends where after
the plan's period is a choice; :func:`closing_flows` makes it so that every client is back at
its own node, where any choice does, by one integer flow per home node and scenario.
:func:`home_flow_rows` writes those flows' rows, over numbers or over the variables of
another program (:func:`scenarios.closing.closed_cycle`).
"""

from __future__ import annotations

import numpy as np

from .rows import ConstraintRows

__all__ = ["closing_flows", "home_flow_rows"]


def home_flow_rows(add, nvar: int, ks, base: int, homes: list[int], Q: int, count, admit, start):
    """The rows of one scenario's home flows through ``Q`` ticks (ring node kinds ``ks``, its
    nodes numbered from ``base``), variables numbered from ``nvar``: ``x(h, t, v)`` clients
    from home ``homes[h]`` at node ``v`` on tick ``t``, ``y(h, t, w)`` of those at a ``wait``
    node admitted. ``count(t, v)``, ``admit(t, w)``, ``start(u)``: ``(terms, constant)``,
    what the flows' sum at a node, their admissions there and home ``u``'s clients equal
    (terms over other variables, moved to the left). Returns ``(variables in all, y)``."""
    T = len(ks)
    nodes = range(base, base + T)
    waits = [v for v in nodes if ks[v - base] == "wait"]
    H = len(homes)
    nx = H * (Q + 1) * T

    def x(h, t, v):
        return nvar + (h * (Q + 1) + t) * T + (v - base)

    def y(h, t, w):
        return nvar + nx + (h * Q + t) * len(waits) + waits.index(w)

    def equal(terms, what):
        more, c = what
        add(terms + [(i, -a) for i, a in more], c, c)

    for h, u in enumerate(homes):          # each home's clients start and end at it
        for t in (0, Q):
            for v in nodes:
                equal([(x(h, t, v), 1.0)], start(u) if v == u else ([], 0))
    for t in range(Q + 1):
        for v in nodes:
            equal([(x(h, t, v), 1.0) for h in range(H)], count(t, v))
    for t in range(Q):
        for w in waits:
            equal([(y(h, t, w), 1.0) for h in range(H)], admit(t, w))
            for h in range(H):
                add([(y(h, t, w), 1.0), (x(h, t, w), -1.0)], -np.inf, 0)
        for h in range(H):
            for v in nodes:                 # the ring moves, as the count model's
                p = base + (v - base - 1) % T
                terms = [(x(h, t + 1, v), 1.0),
                         (y(h, t, p), -1.0) if p in waits else (x(h, t, p), -1.0)]
                if v in waits:
                    terms += [(x(h, t, v), -1.0), (y(h, t, v), 1.0)]
                add(terms, 0, 0)
    return nvar + nx + H * Q * len(waits), y


def closing_flows(plan, home: list[int], *, time_limit: float = 10.0
                  ) -> dict[tuple[int, int], dict[int, int]] | None:
    """Whom the period of ``plan`` admits so that every client is back at its own node when
    it ends: ``{(tick of the period, wait node): {home node: how many}}``, the clients named
    by the node they stand at when the period begins (``home``, per client); ``None`` where
    no choice does it (or the program ran out of ``time_limit``).

    One integer program per scenario, a flow of ``home`` commodities through the period's
    ticks: ``x[u, t, v]`` clients from home ``u`` at node ``v`` on tick ``t``, ``y[u, t,
    w]`` of those at a ``wait`` node admitted; per tick and node they add up to the plan's
    counts and admissions, each moves along its ring as the count model does, and each
    commodity ends at its home. Any split of a commodity among its clients then works (they
    stand together), so the clients' renaming over the period is the identity.

    Seven clients in a cycle of 3 ticks: after one round they cannot all be home, after 7
    they can (:func:`scenarios.closing.closing_rounds` says why):

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> from scenarios.closing import homes, repeated
    >>> from scenarios.periodic import count_cycle
    >>> pair = Scenario("pair", [Request("open", 2), Think(1), Request("edit", 1), Think(2)])
    >>> s = System({pair: 7}, server=Server(workers=2, admissions=2))
    >>> counts, admitted = count_cycle(s, 3)
    >>> [closing_flows(repeated(s, counts, admitted, k), homes(counts[0])) is None
    ...  for k in (1, 7)]
    [True, False]
    """
    from scipy.optimize import Bounds, milp

    Q, s0 = plan.period, plan.start
    out: dict[tuple[int, int], dict[int, int]] = {}
    base = 0
    for ks in plan.kinds:
        T = len(ks)
        homes = sorted({v for v in home if base <= v < base + T})
        if homes:
            cons = ConstraintRows()
            nvar, y = home_flow_rows(
                cons.add, 0, ks, base, homes, Q,
                lambda t, v: ([], float(plan.counts[s0 + t, v])),
                lambda t, w: ([], float(plan.admitted[s0 + t, w])),
                lambda u: ([], float(sum(1 for v in home if v == u))))
            res = milp(np.zeros(nvar), constraints=cons.constraint(nvar),
                       integrality=np.ones(nvar), bounds=Bounds(0, len(home)),
                       options={"time_limit": time_limit, "disp": False})
            if res.x is None:
                return None
            z = np.rint(res.x).astype(np.int64)
            for t in range(Q):
                for w in (v for v in range(base, base + T) if ks[v - base] == "wait"):
                    got = {homes[h]: int(z[y(h, t, w)]) for h in range(len(homes))
                           if z[y(h, t, w)]}
                    if got:
                        out[(t, w)] = got
        base += T
    return out
