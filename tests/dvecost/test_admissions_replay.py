"""The critical cycle of a server that admits several requests per tick replays on its model.

``dvecost analyze`` on a rendered ``Server(workers=W, admissions=A)`` system prints a run in
which each tick is ``A + 1`` steps (the server's admission steps, then the step in which
everybody moves); the independent checker of ``replay.py`` re-executes it step by step
(guards, effects, charges, the cycle closing on the exact load), with the symmetry reduction
(the lifted run of the full model) and without it.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from dvecost import analyze
from replay import replay_analysis
from scenarios import Request, Scenario, Server, System, Think


@pytest.mark.parametrize("symmetry", ["auto", "off"])
@pytest.mark.parametrize("workers, admissions", [(2, 2), (3, 3), (3, 2)])
def test_the_critical_cycle_replays(symmetry, workers, admissions):
    long = Scenario("long", [Think(1), Request("job", service=3)])
    quick = Scenario("quick", [Request("ping", service=1, cost=2), Think(2)])
    model = System({long: 3, quick: 2}, server=Server(workers, admissions)).to_model()
    a = analyze(model, cost="server", backend="cpu", symmetry=symmetry)
    d = a.as_dict()
    assert replay_analysis(model, d) >= len(d["cycle"]) > 0
    # A whole number of ticks of A + 1 steps (the admission steps take no time), and the
    # mean per step is the load.
    assert len(d["cycle"]) == (admissions + 1) * d["cycle_time"]
    assert Fraction(d["cycle_cost"], len(d["cycle"])) == a.value == Fraction(d["exact"])
