"""Distributed builds (``mpiexec -n 2`` and ``-n 3``) are the one-process build, array for
array: the digests of ``tools/graph_digest.py`` (every array of the full form, dtypes and
shapes included) and the palette rows per edge. The one-process explorer is the oracle: it
numbers states through one visited set chunk by chunk, and shares none of the distributed
search's routing, numbering by ranks, or gathering."""

from __future__ import annotations

import json
import sys

import pytest

from statespace import build_state_graph

from mpirun import ROOT, run

sys.path.insert(0, str(ROOT / "tests" / "dist"))
from dist_worker import load, summary  # noqa: E402

EX = ROOT / "dvecost" / "examples"
EXAMPLES = ["client_server.dve", "deadlock.dve", "error_state.dve", "pipeline.dve",
            "printer.dve", "resources.dve", "rings_async.dve", "zero_time.dve", "rings_sync.dve"]
#: Rendered templates and scenario families (system sync, steps numbered as met).
RENDERED = [("client_server_template.dve", 2), ("client_server_template.dve", 4),
            ("pool_template.dve", 3), ("editor_farm.py", 2), ("analysts.py", 2),
            ("converters.py", 3)]
BEEM_SAMPLE = ["firewire_link.1", "public_subscribe.1", "msmie.1", "cyclic_scheduler.1",
               "B.prop1", "brp.1"]


def _one_process(spec: str) -> dict:
    return summary(build_state_graph(load(spec)))


def _distributed(n: int, specs: list[str], tmp_path) -> list[dict]:
    out = tmp_path / f"out{n}.jsonl"
    r = run(n, str(ROOT / "tests" / "dist" / "dist_worker.py"), str(out), *specs)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.parametrize("n", [2, 3])
def test_examples_and_templates_identical_to_one_process(n, tmp_path):
    specs = [str(EX / m) for m in EXAMPLES] + [f"{EX / m}:{n}" for m, n in RENDERED]
    got = _distributed(n, specs, tmp_path)
    assert [g["model"] for g in got] == specs
    for g in got:
        want = _one_process(g["model"])
        assert g["size"] == n
        assert {k: g[k] for k in want} == want, g["model"]


@pytest.mark.parametrize("n", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_beem_sample_identical_to_one_process(n, tmp_path, beem_dir):
    specs = [str(beem_dir / "models" / f"{b}.dve") for b in BEEM_SAMPLE]
    got = _distributed(n, specs, tmp_path)
    assert len(got) == len(specs)
    for g in got:
        want = _one_process(g["model"])
        assert {k: g[k] for k in want} == want, g["model"]


def _answer(stdout: str) -> dict:
    d = json.loads(stdout)
    d.pop("timings", None)
    d.pop("peak_memory_bytes", None)
    d.pop("symmetry", None)
    return d


@pytest.mark.parametrize("model", ["client_server.dve", "error_state.dve", "rings_sync.dve"])
def test_analyze_value_cycle_and_witness_equal_to_one_process(model, tmp_path):
    """What the user reads: ``mpiexec -n 2 dvecost analyze --json`` gives the one-process
    answer (value, certificate, critical cycle, prefix and runs), printed once."""
    from dvecost.cli import main
    import contextlib
    import io
    args = ["analyze", str(EX / model), "--json", "--symmetry", "off", "--trace"]
    r = run(2, "-m", "dvecost", *args)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
        code = main(args)
    assert r.returncode == code
    assert len(r.stdout.strip().splitlines()) == 1     # one process prints
    assert _answer(r.stdout) == _answer(buf.getvalue())
