"""The NCCL path (``DVECOST_COMM=nccl``, one process per GPU): the collectives, the distributed
build identical to the one-process build (searched on the devices: successors by the generated
kernel, visited sets and rows in GPU memory), and ``dvecost analyze --gpus N`` giving the
one-process answer. Needs CuPy, mpi4py and at least two GPUs; skipped otherwise."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from statespace import build_state_graph

from mpirun import ROOT, env, mpiexec, none_left, run

sys.path.insert(0, str(ROOT / "tests" / "dist"))
from comm_worker import expected  # noqa: E402
from dist_worker import load, summary  # noqa: E402

pytestmark = pytest.mark.gpu

EX = ROOT / "dvecost" / "examples"


def _gpus() -> int:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount()
    except Exception:   # no CuPy, no driver, no device
        return 0


def _need(n: int) -> None:
    mpiexec()
    if _gpus() < n:
        pytest.skip(f"needs CuPy and {n} GPUs (found {_gpus()})")


NCCL = {"DVECOST_COMM": "nccl", "NCCL_NVLS_ENABLE": "0"}


@pytest.mark.parametrize("P, guard", [(2, ""), (4, ""), (2, "1")])
def test_nccl_collectives(P, guard, tmp_path):
    # (guarded: runtime.guard's communicator over NCCL, the same answers)
    _need(P)
    out = tmp_path / "comm.json"
    r = run(P, str(ROOT / "tests" / "dist" / "comm_worker.py"), str(out),
            extra_env=dict(NCCL, COMM_GUARDED=guard))
    assert r.returncode == 0, r.stderr
    assert json.loads(out.read_text()) == expected(P, large=True)


@pytest.mark.parametrize("P", [2, 4])
def test_nccl_builds_identical_to_one_process(P, tmp_path):
    _need(P)
    specs = [str(EX / m) for m in ("client_server.dve", "error_state.dve", "rings_sync.dve")]
    specs += [f"{EX / 'client_server_template.dve'}:5", f"{EX / 'editor_farm.py'}:3"]
    out = tmp_path / "out.jsonl"
    r = run(P, str(ROOT / "tests" / "dist" / "dist_worker.py"), str(out), *specs,
            extra_env=NCCL)
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert [g["model"] for g in got] == specs
    for g in got:
        want = summary(build_state_graph(load(g["model"])))
        assert {k: g[k] for k in want} == want, g["model"]
        # The search ran on the GPUs: its graph's edges are still on process 0's device.
        assert g["edges_on_device"], g["model"]


def test_analyze_gpus_gives_the_one_process_answer():
    _need(2)
    args = ["analyze", str(EX / "client_server.dve"), "--json", "--symmetry", "off"]
    one = subprocess.run([sys.executable, "-m", "dvecost", *args], env=env(), cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    two = subprocess.run([sys.executable, "-m", "dvecost", *args, "--gpus", "2"],
                         env=env(NCCL_NVLS_ENABLE="0"), cwd=ROOT, capture_output=True,
                         text=True, timeout=300)
    assert two.returncode == one.returncode == 0, two.stderr
    assert len(two.stdout.strip().splitlines()) == 1

    def answer(s):
        d = json.loads(s)
        for k in ("timings", "peak_memory_bytes", "symmetry", "backend", "iterations",
                  "distributed"):
            d.pop(k, None)
        return d
    assert answer(two.stdout) == answer(one.stdout)


def test_bench_scale_over_gpus_explores_the_one_process_graphs(capsys, monkeypatch):
    """``dvecost bench scale --gpus 1,2``: strong rows (the one-GPU explorer's reference and
    P = 1, 2) and weak rows, each the one-process graph's counts, rows kept compact."""
    _need(2)
    import dve
    from dvecost.cli import main
    from statespace import compile_model

    from mpirun import ALLOW_ROOT
    for k, v in {**ALLOW_ROOT, "NCCL_NVLS_ENABLE": "0"}.items():
        monkeypatch.setenv(k, v)
    model = EX / "client_server.dve"
    template = EX / "client_server_template.dve"
    assert main(["bench", "scale", "--gpus", "1,2", "--model", str(model), "--weak", "3,4",
                 "--repeat", "1", "--json", "-q"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["scaling"], r["P"]) for r in rows] == [
        ("strong", 1), ("strong", 1), ("strong", 2), ("weak", 1), ("weak", 2)]
    for r in rows:
        if r["scaling"] == "strong":
            g = build_state_graph(compile_model(dve.load_model(str(model))))
        else:
            n = int(r["model"].rsplit("=", 1)[1])
            g = build_state_graph(compile_model(dve.load_model(str(template),
                                                               defines={"N": n})))
        assert (r["states"], r["transitions"]) == (g.n_states, g.n_edges), r
        if r["run"] != "build_state_graph (GPU)":
            assert r["rows B/transition"] == 8


@pytest.mark.parametrize("P", [2, 4])
def test_analyze_gpus_blocks_engine_on_the_devices_gives_the_one_process_answer(P):
    """``DVECOST_DIST_ENGINE=blocks dvecost analyze --gpus P``: the rows handed over in
    blocks on the GPUs and the engine across processes run there (CuPy arrays exchanged by
    NCCL; the answer says backend ``gpu``), with the one-process answer, witness included,
    for means and ratios."""
    _need(P)
    for model, extra in [(EX / "client_server.dve", []),
                         (EX / "client_server_template.dve", ["-D", "N=5"]),
                         (EX / "resources.dve", ["--ratio", "--cost", "cpu"])]:
        args = ["analyze", str(model), "--json", "--symmetry", "off", *extra]
        one = subprocess.run([sys.executable, "-m", "dvecost", *args], env=env(), cwd=ROOT,
                             capture_output=True, text=True, timeout=300)
        got = subprocess.run([sys.executable, "-m", "dvecost", *args, "--gpus", str(P)],
                             env=env(NCCL_NVLS_ENABLE="0", DVECOST_DIST_ENGINE="blocks"),
                             cwd=ROOT, capture_output=True, text=True, timeout=300)
        assert got.returncode == one.returncode, got.stderr
        d_one, d_got = json.loads(one.stdout), json.loads(got.stdout)
        assert d_got.get("backend") == "gpu", model
        for d in (d_one, d_got):
            for k in ("timings", "peak_memory_bytes", "symmetry", "backend", "iterations",
                      "distributed"):
                d.pop(k, None)
        assert d_got == d_one, model


def test_analyze_gpus_auto_gathers_what_fits_the_first_gpu():
    """``DVECOST_DIST_ENGINE=auto dvecost analyze --gpus 2`` on a small model: it fits the
    first GPU gathered, so the one-GPU engine answers (backend of the gathering run), with the
    one-process answer."""
    _need(2)
    args = ["analyze", str(EX / "client_server_template.dve"), "-D", "N=5", "--json",
            "--symmetry", "off"]
    one = subprocess.run([sys.executable, "-m", "dvecost", *args], env=env(), cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    got = subprocess.run([sys.executable, "-m", "dvecost", *args, "--gpus", "2"],
                         env=env(NCCL_NVLS_ENABLE="0", DVECOST_DIST_ENGINE="auto"), cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == one.returncode == 0, got.stderr
    d_one, d_got = json.loads(one.stdout), json.loads(got.stdout)
    for d in (d_one, d_got):
        for k in ("timings", "peak_memory_bytes", "symmetry", "backend", "iterations",
                  "distributed"):
            d.pop(k, None)
    assert d_got == d_one


@pytest.mark.parametrize("P", [2, 4])
def test_nccl_engine_on_random_runs_equals_one_process(P, tmp_path):
    """The engine across GPUs (CuPy arrays, NCCL exchanges) on graphs cut in random runs of
    ids (several a process, local order not id order, some processes holding none): the
    layout's device searches, the halo grouped by owner, the restriction per run; every
    answer the one-process engine's."""
    _need(P)
    from cycle_cases import CASES, comparable, graph_of
    from test_dist_cycle import MODELS, RANDOM, one_process
    specs = [MODELS[0]] + RANDOM[:3]   # (8 cases each: the GPU run stays within a minute)
    out = tmp_path / "cycle.jsonl"
    r = run(P, str(ROOT / "tests" / "dist" / "cycle_worker.py"), str(out), *specs,
            extra_env={**NCCL, "DIST_RUNS": "1"})
    assert r.returncode == 0, r.stderr
    got = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(got) == len(specs) * len(CASES)
    graphs = {s: graph_of(s) for s in specs}
    for g in got:
        assert g["answer"].get("backend", "gpu") == "gpu", g
        assert comparable(g["answer"]) == comparable(
            one_process(graphs[g["spec"]], g["kind"], g["mode"], g["per_scc"])), g


@pytest.mark.parametrize("fault", ["1:handover:1:huge", "1:trim:1:huge",
                                   "0:value_sums:1:huge", "1:scc_forward:2:recv"])
def test_gpus_a_failed_allocation_stops_every_process(fault, tmp_path):
    # A real allocation of 2**60 bytes refused by CuPy on one GPU (runtime.guard's injection,
    # DVECOST_FAULT), or a receive buffer on the device: every process stops at the same
    # collective, exit 3, the stop line once with the graph's counts, no traceback.
    _need(2)
    import shutil
    model = tmp_path / "gpu_oom_cs.dve"
    shutil.copy(EX / "client_server_template.dve", model)
    want = build_state_graph(load(f"{EX / 'client_server_template.dve'}:6"))
    r = subprocess.run([sys.executable, "-m", "dvecost", "analyze", str(model), "-D", "N=6",
                        "--json", "--gpus", "2"], cwd=ROOT, capture_output=True, text=True,
                       env=env(NCCL_NVLS_ENABLE="0", DVECOST_DIST_ENGINE="blocks",
                               DVECOST_FAULT=fault), timeout=300)
    assert r.returncode == 3, r.stderr
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 1
    d = json.loads(lines[0])
    rank, phase = fault.split(":")[:2]
    gpu = "" if fault.endswith("recv") else "GPU "
    line = f"out of {gpu}memory on process {rank} of 2 (phase: {phase})"
    assert d["status"] == "out_of_memory" and line in d["message"], d
    assert d["counts"] == {"states": want.n_states, "transitions": want.n_edges}
    assert r.stderr.count(line) == 1 and "Traceback" not in r.stderr, r.stderr
    assert none_left(str(model))
