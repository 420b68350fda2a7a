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


def test_frontier_cli_agrees_with_single_analyses(tmp_path, capsys):
    csv_path = tmp_path / "f.csv"
    code = main(["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max",
                 "3,3", "--backend", "cpu", "--json", "-q", "--csv", str(csv_path)])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["grid"] == 16 and out["analyses"] <= 3 + 3 + 2 and out["monotone"]
    points = {(p["n_a"], p["n_b"]): Fraction(p["exact"]) for p in out["points"]}
    # Three points of the walk, each against its own analysis of the rendered model.
    for (na, nb) in sorted(k for k in points if sum(k))[:3]:
        assert points[(na, nb)] == single_load(tmp_path, {"reader": na, "exporter": nb})
    # The staircase read back: below capacity at its value, saturated one above (or by a
    # point to its left, by monotonicity).
    for step in out["stair"]:
        na, nb = step["n_a"], step["max_n_b"]
        if nb is not None:
            assert points[(na, nb)] < 1
        above = max((k for k in points if k[1] == (nb + 1 if nb is not None else 0)
                     and k[0] <= na), default=None)
        if nb is None or nb < 3:
            assert above is not None and points[above] >= 1
    lines = csv_path.read_text().splitlines()
    assert lines[0] == "reader,exporter,exact,value,saturated,n_states"
    assert len(lines) == 1 + len(out["points"])


def test_frontier_cli_text(capsys):
    assert main(["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max",
                 "2,3", "--backend", "cpu", "-q"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].startswith("editor: frontier of reader x exporter (0..2 x 0..3), capacity 1")
    # Two exporters alone: 2 x 8/22 = 8/11, three saturate.
    assert text[3].split() == ["0", "2", "8/11", "1"]
    assert main(["saturate", "editor", "--frontier", "reader"]) == 2
    assert "two scenario names" in capsys.readouterr().err
