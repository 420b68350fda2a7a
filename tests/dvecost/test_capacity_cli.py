"""``dvecost workers`` and ``dvecost saturate --frontier`` against single analyses of the
rendered models (DVE text, symmetry reduction off: a path that shares no search code)."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

import dve
from dvecost import analyze
from dvecost.cli import main
from scenarios import Server, System
from scenarios.templates import EDITOR_SCENARIOS

SC = {sc.name: sc for sc in EDITOR_SCENARIOS}


def single_load(tmp_path, counts: dict[str, int], workers: int = 1) -> Fraction:
    """The load of one rendered editor model, analysed on its own without symmetry."""
    system = System({SC[n]: k for n, k in counts.items() if k}, server=Server(workers=workers),
                    name="editor")
    path = tmp_path / f"m{sum(counts.values())}_{workers}.dve"
    path.write_text(dve.format_model(system.to_model()))
    a = analyze(path, cost="server", backend="cpu", symmetry="off", witness=False)
    return Fraction(a.value).limit_denominator(10_000)


def test_workers_cli_agrees_with_single_analyses(tmp_path, capsys):
    code = main(["workers", "editor", "--clients", "reader=2,exporter=2", "--backend", "cpu",
                 "--json", "-q"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    tried = out["tried"]
    assert [t["workers"] for t in tried] == list(range(1, out["workers"] + 1))
    for t in tried:
        assert Fraction(t["exact"]) == single_load(tmp_path, {"reader": 2, "exporter": 2},
                                                   t["workers"])
        assert t["saturated"] == (Fraction(t["exact"]) >= t["workers"])
    assert not tried[-1]["saturated"] and all(t["saturated"] for t in tried[:-1])


def test_workers_cli_text_and_errors(capsys):
    assert main(["workers", "editor", "--clients", "reader=2,exporter=2", "--backend",
                 "cpu", "-q"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("2 reader, 2 exporter: ") and "needed" in text[0]
    assert text[1].split() == ["workers", "load", "≈", "capacity", "used", "saturated",
                               "states"]
    assert main(["workers", "editor", "--clients", "reader=two"]) == 2
    assert "NAME=COUNT" in capsys.readouterr().err
    assert main(["workers", "editor", "--clients", "nobody=2"]) == 2
    assert "no scenario 'nobody'" in capsys.readouterr().err
