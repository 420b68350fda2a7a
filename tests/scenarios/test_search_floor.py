"""The search's floor (the first N whose upper bound reaches the capacity, asked before the
bisection goes down): the same certified answer as exact analysis of every point, and every
N below the floor below the capacity by exact analysis."""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from dvecost.saturation import saturate
from scenarios import Request, Scenario, Server, System, Think
from scenarios.saturation import PointStarted

U = Scenario("u", [Think(2), Request("r", service=1)])
V = Scenario("v", [Think(1), Request("r", service=2)])


@pytest.mark.parametrize("scenario, workers", [(U, 2), (V, 4)])
def test_auto_asks_the_floor_first_and_answers_as_exact_analysis(scenario, workers):
    def family(n):
        return System({scenario: n}, server=Server(workers=workers, admissions=workers))

    asked = []

    def heard(event):
        if isinstance(event, PointStarted) and not event.witness:
            asked.append(event.clients)

    auto = saturate(family, method="auto", backend="cpu", max_clients=32, progress=heard)
    exact = saturate(family, method="exact", backend="cpu", max_clients=32, search="linear")
    assert auto.certified and exact.certified
    assert auto.saturating_clients == exact.saturating_clients
    # The exponential steps (powers of two up to the first saturated one), then the floor:
    # it jumps over points (lo + 1 .. floor - 1), each below the capacity by exact analysis.
    powers = [n for n in asked if n & (n - 1) == 0]
    floor = asked[len(powers)]
    assert powers[-2] + 1 < floor < powers[-1]
    cap = F(workers)
    loads = {p.clients: p.exact for p in exact.curve}
    assert all(loads[n] < cap for n in range(1, floor))
    assert all(p.reaches(cap) is False for p in auto.curve if p.clients < floor)
    assert auto.saturating_clients >= floor
