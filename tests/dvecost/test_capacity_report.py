"""What the user reads of a curve whose load falls, in both kinds of family's reports, and the
answer's cycle as both reports' JSON writes it."""

from __future__ import annotations

import json
from fractions import Fraction as F

from dve.errors import Source
from dve.inputs import InputDecl
from dvecost.capacity_report import answer_cycle, cycle_json
from dvecost.cli import saturate as cli_saturate
from dvecost.cli import sweep as cli_sweep
from dvecost.result import demo
from dvecost.sweep import ModelFamily, SweepPoint, SweepResult
from scenarios.saturation import SaturationPoint, SaturationResult


def test_a_falling_load_is_a_warning_in_both_reports():
    fam = ModelFamily("m.dve", Source("m.dve", ""), "N", InputDecl("N", "int", 1, None), (),
                      "cost", ("cost",), "sync", F(1))
    pts = (SweepPoint(1, F(1, 2), F(1), 8, 0.0), SweepPoint(2, F(1, 3), F(1), 9, 0.0),
           SweepPoint(3, F(1), F(1), 10, 0.0))
    sweep = SweepResult(fam, 1, 3, "linear", "saturate", 3, pts)
    text = cli_sweep.render_answer(sweep).splitlines()
    assert "warning: the load is not monotone in N (N=1: 1/2 > N=2: 1/3)" in text
    a, b, c = (SaturationPoint(n, x, 5, 0.0, mix=(("u", n),))
               for n, x in ((1, F(1, 2)), (2, F(1, 3)), (3, F(1))))
    sat = SaturationResult("s", F(1), 3, (a, b, c), False, ((a, b),), 8, None, "busy")
    text = cli_saturate.render_answer(sat).splitlines()
    assert ("warning: the load is not monotone in the number of clients (N=1: 1/2 > N=2: "
            "1/3); the answer does not rely on it: every N below the answer was decided") in text


def test_the_answers_cycle_is_written_alike_in_both_jsons():
    a = demo()
    steps, ticks, cost = answer_cycle(a)
    assert (steps, cost) == (len(a.cycle), sum(s.cost for s in a.cycle))
    assert ticks == sum(s.time for s in a.cycle)
    fam = ModelFamily("m.dve", Source("m.dve", ""), "N", InputDecl("N", "int", 1, None), (),
                      "cost", ("cost",), "sync", F(1))
    sweep = SweepResult(fam, 1, 1, "linear", "saturate", 1,
                        (SweepPoint(1, F(3, 2), F(1), 4, 0.0),), witness=a)
    sat = SaturationResult("s", F(1), 1, (SaturationPoint(1, F(3, 2), 4, 0.0),), True, (), 8,
                           None, "busy", witness=a)
    w1 = json.loads(json.dumps(cli_sweep.json_object(sweep)))["witness"]
    w2 = json.loads(json.dumps(cli_saturate.json_object(sat), default=str))["witness"]
    assert list(w1) == ["n", "cycle_steps", "cycle_cost", "cycle_time", "cycle"]
    assert list(w2) == ["clients", "decided", "cycle_steps", "cycle_cost", "cycle_time",
                        "cycle"]
    body = json.loads(json.dumps(cycle_json(a)))
    assert {k: w1[k] for k in body} == {k: w2[k] for k in body} == body
    assert body["cycle_steps"] == len(body["cycle"]) == steps
