"""``dvecost bench symmetry``: the table's figures for small N (checked against the full
product explored with --symmetry off) and its Markdown/JSON shapes."""

from __future__ import annotations

import json
import math

from dvecost.cli import main


def test_bench_symmetry_quick_rows_are_right(capsys):
    assert main(["bench", "symmetry", "--quick", "--json", "--no-memory", "-q"]) == 0
    d = json.loads(capsys.readouterr().out)
    rows = {(r["family"], r["N"]): r for r in d["rows"]}
    for n in (3, 6):
        t = rows[("cs-template", n)]
        assert t["classes"] == math.comb(n + 2, 2) + 4 * math.comb(n + 1, 2)
        full = rows.get((f"cs_{n}", n))
        if full is not None:     # ../shared present: the expanded family, full product
            assert full["classes"] == full["full states"] == t["full states"]
            assert full["value"] == t["value"] == "13/14"
    assert rows[("cs-template", 3)]["full states"] == 135
    # paper-server with 3 clients: 644 states in the full product, load 1.
    assert (rows[("paper-server", 3)]["full states"], rows[("paper-server", 3)]["value"]) == \
        (644, "1")


def test_bench_symmetry_markdown_has_the_columns(capsys):
    assert main(["bench", "symmetry", "--n", "4", "--full-max", "0", "--no-memory", "-q"]) == 0
    out = capsys.readouterr().out
    assert "| family | N | full states | classes | edges | seconds | explore s | peak MiB | " \
           "value |" in out
    assert "| cs-template | 4 | 513 | 55 | 128 |" in out
