"""``dvecost bench explore`` runs and reports one row per model (smoke test, no timing)."""

from __future__ import annotations

import argparse

import pytest
from ss_helpers import SHARED


def test_bench_explore_quick():
    if not (SHARED / "models" / "cs_7.dve").exists():
        pytest.skip("../shared/models not found")
    from dvecost.benchmarks import explore
    p = argparse.ArgumentParser()
    explore.add_arguments(p)
    args = p.parse_args(["--quick", "--repeat", "1"])
    report = explore.run(args, progress=lambda m: None)
    rows = {r[0]: r for r in report.rows}
    assert rows["cs_7.dve"][1:3] == (22599, 122472)
    assert all(r[-2] is not None and r[-2] > 0 for r in report.rows)  # peak bytes per edge
    assert "M edges/s" in report.as_markdown()
