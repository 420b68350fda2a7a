"""The count model of a server admitting several requests per tick (``scenarios.schedule``):
its rings of tick nodes, and its runs against the model's own simulation.

The guide is only worth anything if the rows it recommends do on the model what they do on
the counts: each row it says closes a walk of full ticks by tick ``t`` is run on the compiled
model (``find_witness``, which shares no code with it) and must reach the capacity by then;
each row it says does not must not reach it in the model either.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from scenarios import Choice, Request, Scenario, Server, System, Think
from scenarios.bounds import find_witness, spread_aims
from scenarios.schedule import describes, plan_spread, simulate, tick_ring
from scenarios.templates import EDITOR_SCENARIOS

PAIR = Scenario("pair", [Request("open", service=2), Think(1), Request("edit", service=1),
                         Think(2)])
TRIO = Scenario("trio", [Request("load", service=3), Think(2)])


def test_the_rings_follow_the_scenarios_tick_by_tick():
    reader, writer, exporter = (tick_ring(sc) for sc in EDITOR_SCENARIOS)
    assert [len(r.kind) for r in (reader, writer, exporter)] == [12, 18, 22]
    # send, served 2 (admitted, then one more), reply, 8 thinking
    assert reader.kind == ("free", "wait", "busy") + ("free",) * 9
    assert writer.kind.count("wait") == 3 and writer.kind.count("busy") == 1
    assert exporter.kind.count("wait") == 2 and exporter.kind.count("busy") == 1 + 5
    assert sum(c for c, k in zip(exporter.cost, exporter.kind) if k != "free") == 8


def test_only_servers_admitting_several_requests_and_scenarios_without_choices():
    chooser = Scenario("c", [Think(1), Choice(Request("a", 1), Request("b", 2))])
    assert tick_ring(chooser) is None
    assert describes(System({PAIR: 3}, server=Server(workers=2, admissions=2)))
    assert not describes(System({PAIR: 3}, server=Server(workers=2)))
    assert not describes(System({PAIR: 3, chooser: 1}, server=Server(workers=2, admissions=2)))
    assert simulate(System({PAIR: 3}, server=Server(workers=2)), F(2), [[0, 1, 2]]) == (None,)


SOLO = Scenario("solo", [Request("get", service=1), Think(3)])


@pytest.mark.parametrize("counts, workers, mixes", [
    ({PAIR: 5, SOLO: 4}, 2, [(4, 4), (5, 3), (5, 4)]),
    ({PAIR: 7, SOLO: 1}, 2, [(6, 1), (7, 0), (7, 1)]),
    pytest.param({PAIR: 4, TRIO: 5}, 3, [(3, 5), (4, 5)], marks=pytest.mark.slow),
])
def test_what_the_counts_say_a_row_does_the_model_does(counts, workers, mixes):
    system = System(counts, server=Server(workers=workers, admissions=2))
    cap = F(workers)
    aims = spread_aims(system, mixes)
    found = simulate(system, cap, aims, ticks=200)
    assert any(t is None for t in found) and any(t is not None for t in found), \
        "the test needs rows of both kinds"
    for aim, t in zip(aims, found):
        run = find_witness(system, target=cap, rows=1, policies=("oldest",), spread=[aim],
                           max_ticks=(t or 200) + 2)
        got = run is not None and run.mean >= cap and run.policy.startswith("spread")
        assert got == (t is not None), (aim, t, run and run.mean)


def test_the_plan_keeps_the_rows_that_get_there_first():
    system = System({PAIR: 8}, server=Server(workers=2, admissions=2))
    mixes = [(8,), (7,), (6,)]
    plan = plan_spread(system, F(2), mixes, keep=2, ticks=300, shifted=0)
    found = simulate(system, F(2), spread_aims(system, mixes), ticks=300)
    want = sorted((t, r) for r, t in enumerate(found) if t is not None)[:2]
    assert plan.ticks == tuple(t for t, _ in want)
    assert plan.aims == tuple(tuple(spread_aims(system, mixes)[r]) for _, r in want)
    assert plan_spread(System({PAIR: 8}, server=Server(workers=2)), F(2), mixes) is None


def test_shifted_aims_are_the_mixes_aims_moved_and_keep_the_clients_left_out():
    system = System({PAIR: 4, SOLO: 3}, server=Server(workers=2, admissions=2))
    mixes = [(4, 2), (3, 3)]
    plan = plan_spread(system, F(2), mixes, keep=600, ticks=2, shifted=9)
    assert plan.tried == 2 + 9 and plan.aims == ()       # nothing closes in two ticks
    from scenarios import schedule

    rows = []
    real = schedule.simulate
    schedule.simulate = lambda s, c, aims, **k: rows.extend(aims) or real(s, c, aims, **k)
    try:
        plan_spread(system, F(2), mixes, ticks=2, shifted=9)
    finally:
        schedule.simulate = real
    even = spread_aims(system, mixes)
    assert rows[:2] == even
    for n, row in enumerate(rows[2:]):
        base = even[n % 2]
        assert [x < 0 for x in row] == [x < 0 for x in base]
        assert all(0 <= x < (10 if i < 4 else 6) for i, x in enumerate(row) if x >= 0)
