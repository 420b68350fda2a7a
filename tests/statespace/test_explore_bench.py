"""``dvecost bench explore`` runs and reports one row per model (smoke test, no timing)."""

from __future__ import annotations

import argparse

import pytest

import ocm
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
    col = {name: i for i, name in enumerate(report.columns)}
    assert all(r[col["peak B/edge"]] is not None and r[col["peak B/edge"]] > 0
               for r in report.rows)
    # What the user reads: the compact graph's bytes per transition, at most 12 (int32
    # targets and actions, a one-byte palette row, and the palette spread over the edges).
    for r in report.rows:
        assert 9 <= r[col["B/transition"]] <= 12, r
        # The GPU cycle engine's estimated peak beside it: its buffers (per state) spread over
        # the transitions (the estimate itself is checked against the engine's allocations in
        # tests/ocm/test_device_engine.py).
        assert r[col["GPU engine B/transition"]] == round(ocm.device_bytes(r[1], r[2], 1)
                                                          / r[2], 2)
    assert "M edges/s" in report.as_markdown() and "B/transition" in report.as_markdown()
