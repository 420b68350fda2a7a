"""A certified upper bound on a server's load that sees its admissions and its workers: a
linear program over the scenarios' rates of rounds, solved exactly through its dual.

Over any cycle of the model, each client completes a whole number of rounds of its scenario
(it is back in its state), so per tick of the cycle the clients of scenario ``s`` complete
``f_s`` rounds on average, and:

- each round of ``s`` holds ``Q_s`` requests (admissions), ``B_s`` ticks of service
  (workers busy) and charges ``C_s`` (the cost of its service ticks): the cycle's mean load is
  ``sum_s f_s C_s``;
- a client's share of the load is at most its scenario's alone rate ``rho_s`` (the argument of
  the alone-rate bound, docs/algorithms.md), so ``f_s C_s <= n_s rho_s``;
- the server admits at most ``A`` requests per tick: ``sum_s f_s Q_s <= A``;
- at most ``W`` requests are in service per tick: ``sum_s f_s B_s <= W``.

The largest ``sum_s f_s C_s`` under these is an upper bound on every cycle's mean. Any
``beta, gamma >= 0`` gives, by weak duality, the bound

    ``D(beta, gamma) = A beta + W gamma + sum_s u_s max(0, C_s - Q_s beta - B_s gamma)``

(``u_s = n_s rho_s / C_s``, the most rounds per tick), computed here in exact fractions at
the vertices of the dual's arrangement (the origin, the lines' crossings with the axes and
with each other), so that the smallest is the program's optimum, exactly. It applies to
scenarios of one round shape (no :class:`~scenarios.dsl.Choice`, loops of a fixed count); elsewhere :func:`rate_bound` says ``None``.

Examples
--------
Clients of two kinds on a server with four workers that admits one request per tick: a
quick one (1 tick of service) and a long one (5 ticks). Alone, each loads the server its
service over its round; with 12 quick and 1 long client the alone rates add up to more than
4, but one admission per tick leaves the quick ones 1 tick of work per admission:

>>> from fractions import Fraction
>>> from scenarios import Scenario, Server, System, Think, Request
>>> quick = Scenario("quick", [Think(1), Request("q", 1)])       # 1 of 4 ticks
>>> slow = Scenario("slow", [Think(3), Request("s", 5)])         # 5 of 10 ticks
>>> s = System({quick: 12, slow: 1}, server=Server(workers=4))
>>> rho = {"quick": Fraction(1, 4), "slow": Fraction(1, 2)}
>>> b = rate_bound(s, lambda one: rho[one.scenarios[0].name])
>>> b.value, 12 * rho["quick"] + rho["slow"]
(Fraction(7, 5), Fraction(7, 2))
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from itertools import combinations
from typing import Callable

from .dsl import System

__all__ = ["RateBound", "rate_bound", "round_shape", "optimum", "dual_value"]


@dataclass(frozen=True)
class RateBound:
    """The rate program's optimum and the dual point that proves it.

    Attributes
    ----------
    value : Fraction
        ``D(beta, gamma)``: no cycle of the system has a larger mean load.
    beta, gamma : Fraction
        The dual prices of an admission and of a busy worker at the optimum.
    """

    value: Fraction
    beta: Fraction
    gamma: Fraction

    @property
    def why(self) -> str:
        """``'the rates of rounds, with 1 admission and 4 workers per tick'``."""
        return "the scenarios' rates of rounds under the server's admissions and workers"


def round_shape(scenario) -> tuple[int, int, int] | None:
    """``(Q, B, C)`` of one round of ``scenario``: its requests, its ticks of service and what
    they charge; ``None`` where rounds differ (a choice, a loop of varying count).

    >>> from scenarios.templates import EDITOR_SCENARIOS
    >>> [round_shape(sc) for sc in EDITOR_SCENARIOS]
    [(1, 2, 2), (3, 4, 4), (2, 8, 8)]
    """
    return _shape(scenario.steps)


def _shape(steps) -> tuple[int, int, int] | None:
    from .dsl import Loop, Request, Think

    q = b = c = 0
    for st in steps:
        if isinstance(st, Request):
            q, b, c = q + 1, b + st.service, c + st.service * st.cost
        elif isinstance(st, Loop):
            lo, hi = st.times
            inner = _shape(st.body)
            if inner is None or hi != lo:
                return None
            q, b, c = q + lo * inner[0], b + lo * inner[1], c + lo * inner[2]
        elif not isinstance(st, Think):
            return None          # a choice: rounds of several shapes
    return q, b, c


def dual_value(shapes, most, A: int, W: int, beta: Fraction, gamma: Fraction) -> Fraction:
    """``D(beta, gamma)`` for round shapes ``(Q, B, C)`` and the most rounds per tick of each
    scenario, ``most``: an upper bound on the program's optimum for any ``beta, gamma >= 0``.

    >>> dual_value([(1, 1, 1)], [Fraction(3)], 1, 4, Fraction(0), Fraction(0))
    Fraction(3, 1)
    """
    total = A * beta + W * gamma
    for (q, b, c), u in zip(shapes, most):
        total += u * max(Fraction(0), c - q * beta - b * gamma)
    return total


def rate_bound(system: System, alone: Callable[[System], Fraction]) -> RateBound | None:
    """The rate program's exact optimum for ``system`` (see the module's text), or ``None``
    where it does not apply: no server, a scenario whose rounds differ, or one whose round
    charges nothing.

    ``alone(system1)`` is the exact load of one client of a scenario alone (the search's
    memoised evaluator).
    """
    server = system.server
    if server is None:
        return None
    shapes = []
    for sc, _ in system.counts:
        shape = round_shape(sc)
        if shape is None:
            return None
        if getattr(system, "occupancy", False):
            shape = (shape[0], shape[1], shape[1])   # occupancy: a round charges B
        if shape[2] <= 0 or shape[0] <= 0:
            return None
        shapes.append(shape)
    most = [k * Fraction(alone(system.with_counts({sc: 1}))) / shape[2]
            for (sc, k), shape in zip(system.counts, shapes)]
    return optimum(shapes, most, server.admissions, server.workers)


def optimum(shapes, most, A: int, W: int) -> RateBound:
    """The rate program's optimum for round shapes ``(Q, B, C)`` (``Q >= 1``, ``C >= 1``), the
    most rounds per tick of each scenario, ``A`` admissions and ``W`` workers per tick: the
    smallest :func:`dual_value` over the dual's vertices, with the vertex.

    >>> optimum([(1, 1, 1), (1, 5, 5)], [Fraction(1), Fraction(1, 10)], 1, 4).value
    Fraction(7, 5)
    """
    # The dual's pieces change where C_s = Q_s beta + B_s gamma: its minimum over
    # beta, gamma >= 0 lies at the origin, where such a line meets an axis, or where two
    # meet (a convex piecewise linear function of two variables, bounded below by 0).
    lines = [(Fraction(q), Fraction(b), Fraction(c)) for q, b, c in shapes]
    points = {(Fraction(0), Fraction(0))}
    for q, b, c in lines:
        points.add((c / q, Fraction(0)))
        points.add((Fraction(0), c / b))
    for (q1, b1, c1), (q2, b2, c2) in combinations(lines, 2):
        det = q1 * b2 - q2 * b1
        if det != 0:
            beta = (c1 * b2 - c2 * b1) / det
            gamma = (q1 * c2 - q2 * c1) / det
            if beta >= 0 and gamma >= 0:
                points.add((beta, gamma))
    best = min(points, key=lambda p: (dual_value(shapes, most, A, W, *p), p))
    return RateBound(dual_value(shapes, most, A, W, *best), *best)
