"""The critical cycle ``dvecost saturate`` decodes for its answer is a run of that answer's model.

The search analyses its points for their value only and decodes one run, the answer's; it is
replayed here step by step with the independent checker of ``replay.py`` (guards, effects,
costs, the cycle closing on the exact load), and the ``--json`` witness is that same run.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import scenarios
from dvecost.cli import main
from dvecost.saturation import saturate
from replay import replay_analysis
from scenario_files import SHOP


@pytest.mark.parametrize("spec, capacity, answer", [("paper-server", "1", 3),
                                                   ("shop", "3/2", 4)])
def test_the_answers_cycle_replays_on_its_model(tmp_path, capsys, spec, capacity, answer):
    if spec == "shop":
        (tmp_path / "shop.py").write_text(SHOP)
        spec = str(tmp_path / "shop.py")
    r = saturate(spec, capacity, backend="cpu", method="exact")
    assert r.saturating_clients == answer
    family = scenarios.resolve_spec(spec)[1]
    model = family(answer).to_model()
    d = r.witness.as_dict()
    assert replay_analysis(model, d) >= len(d["cycle"]) > 0
    assert Fraction(d["exact"]) == r.point(answer).exact >= r.capacity
    # The --json witness is the replayed run, step for step.
    assert main(["saturate", spec, "--capacity", capacity, "--backend", "cpu", "--json",
                 "--method", "exact", "-q"]) == 0
    w = json.loads(capsys.readouterr().out)["witness"]
    assert w["clients"] == answer and w["cycle"] == json.loads(json.dumps(d["cycle"]))
    assert (w["cycle_cost"], w["cycle_time"]) == (d["cycle_cost"], d["cycle_time"])
