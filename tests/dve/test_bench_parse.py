"""``dvecost bench parse`` on a small BEEM-shaped folder (smoke test: the table, no timing)."""

from __future__ import annotations

import json
import shutil

from dvecost.cli import main
from dvecost.examples import example_path

MANIFEST = """file\tcollection\torigin\tnote
models/pipeline.dve\tBEEM instance\tours\t
models/printer.dve\tBEEM property variant\tours\t
models/rings_async.dve\tDiVinE test/example model (not BEEM)\tours\t
"""


def test_bench_parse_rows(tmp_path, capsys):
    (tmp_path / "models").mkdir()
    (tmp_path / "MANIFEST.tsv").write_text(MANIFEST)
    for name in ("pipeline", "printer", "rings_async"):
        shutil.copy(example_path(name), tmp_path / "models" / f"{name}.dve")
    code = main(["bench", "parse", "--beem", str(tmp_path), "--lark-skip", "printer",
                 "--json", "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    rows = {r["files"]: r for r in json.loads(out)["rows"]}
    assert set(rows) == {"BEEM", "BEEM, without 'printer'", "DiVinE tests"}
    assert rows["BEEM"]["n"] == 2 and rows["BEEM"]["target"] == "met"
    assert rows["BEEM, without 'printer'"]["n"] == 1
    assert rows["DiVinE tests"]["n"] == 1
    for name in ("BEEM, without 'printer'", "DiVinE tests"):
        assert rows[name]["lark_s"] > 0 and rows[name]["speedup"] > 0


def test_bench_parse_without_beem(tmp_path, capsys):
    code = main(["bench", "parse", "--beem", str(tmp_path)])
    assert code == 2 and "BEEM folder not found" in capsys.readouterr().err
