"""``dvecost bench saturate``: each row's answer, certification and decisions are those of the
search it times, its ratio is its seconds over the reference's, and the Markdown has the
columns."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from dvecost.benchmarks.saturate import CASES
from dvecost.cli import main
from dvecost.saturation import saturate


def _rows(capsys, *argv):
    assert main(["bench", "saturate", *argv, "--json", "-q"]) == 0
    return {r["case"]: r for r in json.loads(capsys.readouterr().out)["rows"]}


def test_a_row_is_the_search_it_times(capsys):
    row = _rows(capsys, "--case", "editor")["editor"]
    spec, scenario, _ = CASES["editor"]
    r = saturate(spec, scenario=scenario, backend="cpu", method="auto")
    assert row["answer"] == r.saturating_clients == 6 and row["certified"] is True
    want = Counter(p.how for p in r.curve)
    assert row["decided"] == ", ".join(f"{v} {k}" for k, v in sorted(want.items()))
    assert row["ratio"] == pytest.approx(row["seconds"] / row["exact s"], rel=0.03)
    assert 0 < row["peak MiB"] < 4096


@pytest.mark.slow
def test_the_quick_suite_times_both_small_cases(capsys):
    rows = _rows(capsys, "--quick")
    assert set(rows) == {"analysts", "editor"}
    assert rows["analysts"]["answer"] == 22 and rows["analysts"]["certified"] is True
    assert main(["bench", "saturate", "--case", "editor", "-q"]) == 0
    out = capsys.readouterr().out
    assert "| case | answer | certified | decided | seconds | exact s | ratio | peak MiB |" \
        in out
    assert "| editor | 6 | True | 3 bound, 1 exact, 2 witness |" in out
