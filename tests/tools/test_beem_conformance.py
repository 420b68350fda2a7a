"""tools/device/beem_conformance.py: the rows, the summary, the exit codes and the stops.

The tool runs as the lead runs it on the device, as a process, on a few tiny instances of
``../shared/beem`` (skipped where that is absent). Its GPU path runs here on a stand-in
``cupy`` (NumPy under CuPy's names, written below) that the worker processes import from
``PYTHONPATH``; the stand-in lowers ``Placement.device_min_rows`` so that the explorer really
moves to it, and keeps the array form (no generated kernel: nothing compiles CUDA here).
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "device" / "beem_conformance.py"
BEEM = Path(os.environ.get("DVECOST_SHARED", ROOT.parent / "shared")) / "beem"

#: A CuPy stand-in: NumPy under CuPy's spellings (stable argsort, lexsort of one 2-D array, the
#: explorer's one ElementwiseKernel), a device with 16 GiB free (``FAKE_FREE`` bytes where set),
#: and a memory pool that counts the bytes moved with ``asarray`` (the tool's ``device_bytes``).
FAKE_CUPY = '''
import os
import numpy as _np
for _k in dir(_np):
    if not _k.startswith("__"):
        globals()[_k] = getattr(_np, _k)
__version__ = "0+stand-in"
_held = [0]

def asarray(a, dtype=None):
    out = _np.asarray(a, dtype=dtype)
    _held[0] += out.nbytes
    return out

def argsort(a):
    return _np.argsort(a, kind="stable")

def lexsort(keys):
    assert keys.ndim == 2
    return _np.lexsort(keys)

def ElementwiseKernel(in_params, out_params, operation, name):
    def run(v, o, s, k):
        d = (_np.asarray(v, _np.int64) - _np.asarray(o).astype(_np.int64)).astype(_np.uint64)
        _np.add(k, d << _np.uint64(s), out=k)
    return run

class _Pool:
    def total_bytes(self):
        return _held[0]
    def free_bytes(self):
        return 0
    def free_all_blocks(self):
        pass   # CuPy hands back only cached blocks; the stand-in cannot tell them from live ones

_pool = _Pool()
get_default_memory_pool = get_default_pinned_memory_pool = lambda: _pool

class cuda:
    class runtime:
        getDeviceCount = staticmethod(lambda: 1)
        memGetInfo = staticmethod(lambda: (int(os.environ.get("FAKE_FREE", 1 << 34)), 1 << 34))

from statespace.search import Placement
Placement.device_min_rows = int(os.environ.get("FAKE_DEVICE_MIN_ROWS", Placement.device_min_rows))
Placement.use_kernel = False   # the array form: no NVRTC here
'''


@pytest.fixture(scope="module")
def beem():
    if not (BEEM / "expected.tsv").exists() or not (BEEM / "models").is_dir():
        pytest.skip(f"BEEM benchmark not found at {BEEM} (set DVECOST_SHARED)")
    return BEEM


def _published(name):
    with open(BEEM / name, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _run(out, *args, env=None, timeout=120):
    return subprocess.run([sys.executable, str(TOOL), "--out", str(out), *args],
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _rows(out):
    with open(out / "conformance.tsv", newline="") as f:
        return {r["id"]: r for r in csv.DictReader(f, delimiter="\t")}


def _summary(out):
    return json.loads((out / "summary.json").read_text())


def test_cpu_rows_summary_and_progress(beem, tmp_path):
    picks = ["phils.1.dve", "fischer.1.dve", "divine:bufchan2.dve:*", "divine:ltltest1.dve:*",
             "divine:B.prop1.dve:LTL"]
    p = _run(tmp_path, "--jobs", "2", *[a for x in picks for a in ("--only", x)])
    assert p.returncode == 0, p.stderr
    rows = _rows(tmp_path)
    assert set(rows) == {"phils.1.dve", "fischer.1.dve", "divine:bufchan2.dve:deadlock",
                         "divine:ltltest1.dve:LTL", "divine:B.prop1.dve:LTL"}
    # The BEEM rows: the published numbers in the expected_ columns, found equal.
    for pub in _published("expected.tsv"):
        r = rows.get(pub["model_file"])
        if r is None:
            continue
        assert (r["expected_states"], r["expected_transitions"]) == (pub["states"],
                                                                      pub["transitions"])
        assert (r["states"], r["transitions"], r["status"]) == (pub["states"],
                                                                 pub["transitions"], "match")
        assert r["backend"] == "cpu" and r["cpu_compare"] == "-" and r["property"] == "True"
        assert float(r["explore_s"]) > 0 and float(r["seconds"]) >= float(r["explore_s"])
    # DiVinE: the product with its accepting states; a row known to describe another model;
    # an inline 'ltl' formula (no property process) skipped with the reason.
    ltl = rows["divine:B.prop1.dve:LTL"]
    assert (ltl["status"], ltl["states"], ltl["transitions"], ltl["accepting"],
            ltl["deadlocks"]) == ("match", "14", "18", "14", "4")
    known = rows["divine:bufchan2.dve:deadlock"]
    assert (known["status"], known["expected_states"], known["states"]) == ("known", "3", "8")
    assert known["note"].startswith("known: ") and known["property"] == "False"
    skipped = rows["divine:ltltest1.dve:LTL"]
    assert skipped["status"] == "skipped" and "no property process" in skipped["note"]
    s = _summary(tmp_path)
    assert s["counts"] == {"match": 3, "known": 1, "mismatch": 0, "failed": 0, "timeout": 0,
                           "skipped": 1, "running": 0, "interrupted": 0, "not_run": 0}
    assert s["finished"] and s["exit_code"] == 0 and s["signal"] is None
    assert s["instances"] == 5 and s["problems"] == {} and set(s["seconds"]) == set(rows)
    assert s["states_explored"] == 80 + 634 + 8 + 14
    assert s["wall_s"] >= max(s["seconds"].values())
    # One progress line per model, numbered, with its status and counts; then the totals.
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("[")]
    assert [ln.split("]")[0] for ln in lines] == [f"[{k:>3}/5" for k in range(1, 6)]
    fischer = next(ln for ln in lines if "fischer.1.dve" in ln).split()
    assert fischer[2:4] == ["match", "fischer.1.dve"] and "634" in fischer
    # The published states: 80 + 634 + 3 (bufchan2's row) + 1 (ltltest1) + 14.
    assert p.stderr.splitlines()[0].startswith("5 instances, 732 published states")
    assert not list(tmp_path.glob(".*.tmp"))   # written atomically, nothing left over


def test_mismatch_fails_the_run(beem, tmp_path):
    # A copy of the set where phils.1's published states are off by one.
    fake = tmp_path / "beem"
    fake.mkdir()
    (fake / "models").symlink_to(beem / "models")
    pub = {r["model_file"]: r for r in _published("expected.tsv")}
    lines = ["model_file\tstates\ttransitions\tsource"]
    for name, bump in (("phils.1.dve", 1), ("fischer.1.dve", 0)):
        r = pub[name]
        lines.append(f"{name}\t{int(r['states']) + bump}\t{r['transitions']}\ttest")
    (fake / "expected.tsv").write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    p = _run(out, "--beem", str(fake), "--jobs", "1")
    assert p.returncode == 1, p.stderr
    rows = _rows(out)
    assert rows["phils.1.dve"]["status"] == "mismatch"
    assert rows["phils.1.dve"]["note"] == "differs in states"
    assert rows["fischer.1.dve"]["status"] == "match"
    s = _summary(out)
    assert s["counts"]["mismatch"] == 1 and s["counts"]["match"] == 1 and s["exit_code"] == 1
    assert s["problems"] == {"phils.1.dve": "mismatch: differs in states"}
    assert "mismatch phils.1.dve" in " ".join(p.stderr.split())


def test_gpu_path_on_a_stand_in_device(beem, tmp_path):
    fake = tmp_path / "fake"
    (fake / "cupy").mkdir(parents=True)
    (fake / "cupy" / "__init__.py").write_text(FAKE_CUPY)
    env = {"PYTHONPATH": os.pathsep.join([str(fake), str(ROOT),
                                          os.environ.get("PYTHONPATH", "")]),
           "FAKE_DEVICE_MIN_ROWS": "4"}
    out = tmp_path / "out"
    # phils.2 (581 states) is under --gpu-min-states: NumPy only; fischer.1 (634) on the
    # "device", then on NumPy, the two graphs compared array by array.
    p = _run(out, "--backend", "gpu", "--compare-cpu", "--gpu-min-states", "600", "--jobs", "2",
             "--only", "phils.2.dve", "--only", "fischer.1.dve", env=env)
    assert p.returncode == 0, p.stderr
    rows = _rows(out)
    gpu, cpu = rows["fischer.1.dve"], rows["phils.2.dve"]
    assert (gpu["status"], gpu["backend"], gpu["cpu_compare"]) == ("match", "gpu", "identical")
    assert float(gpu["device_bytes"]) > 0 and float(gpu["cpu_explore_s"]) > 0
    assert (cpu["status"], cpu["backend"], cpu["cpu_compare"], cpu["device_bytes"]) == \
        ("match", "cpu", "-", "-")
    s = _summary(out)
    assert s["cpu_compared"] == 1 and s["on_device"] == 1 and s["device_fallbacks"] == 0
    assert s["environment"]["cupy"] == "0+stand-in"
    # A full device: the build continues on the host, matches, and the row says so.
    p = _run(out, "--backend", "gpu", "--gpu-min-states", "600", "--only", "fischer.1.dve",
             env=dict(env, FAKE_FREE="0"))
    assert p.returncode == 0, p.stderr
    row = _rows(out)["fischer.1.dve"]
    assert (row["status"], row["device_bytes"]) == ("match", "0")
    assert row["note"].startswith("fallback: the GPU has 0")
    assert _summary(out)["device_fallbacks"] == 1 and "(fallback: the GPU has 0" in p.stderr


def _tool():
    spec = importlib.util.spec_from_file_location("beem_conformance", TOOL)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_graph_differences_names_each_field():
    import dve
    from statespace import build_state_graph
    g = build_state_graph(dve.load_model(
        "int x; process P { state a, b; init a; trans a -> b { effect x = 1; cost 2; },"
        " b -> a { cost 1; time 3; }; } system async;"))
    diff = _tool().graph_differences
    assert diff(g, dataclasses.replace(g)) == []
    other = dataclasses.replace(g, time=g.time.astype(np.int32),
                                costs={r: c + 1 for r, c in g.costs.items()}, depth=g.depth + 1)
    assert diff(g, other) == ["time", "costs", "depth"]
    moved = g.indices.copy()
    moved[0] = 1 - moved[0]
    assert diff(g, dataclasses.replace(g, indices=moved)) == ["indices"]


def test_timeout_exits_3(beem, tmp_path):
    big = max((r for r in _published("expected.tsv") if int(r["states"]) < 1_000_000),
              key=lambda r: int(r["states"]))["model_file"]
    p = _run(tmp_path, "--only", big, "--timeout", "1", "--no-divine")
    assert p.returncode == 3, p.stderr
    r = _rows(tmp_path)[big]
    assert r["status"] == "timeout" and r["note"] == "stopped after 1 s" and r["states"] == "-"
    assert _summary(tmp_path)["counts"]["timeout"] == 1


def _children(pid):
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmd = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"spawn_main" in cmd:
            kids.append(int(stat.parent.name))
    return kids


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_sigterm_kills_the_workers_and_writes_what_was_found(beem, tmp_path):
    big = sorted((r for r in _published("expected.tsv") if int(r["states"]) < 2_000_000),
                 key=lambda r: -int(r["states"]))[:3]
    proc = subprocess.Popen([sys.executable, str(TOOL), "--out", str(tmp_path), "--jobs", "2",
                             "--no-divine", *[a for r in big for a in ("--only", r["model_file"])]],
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr.readline().startswith("3 instances")
    deadline = time.monotonic() + 20
    while len(kids := _children(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(kids) == 2
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 143
    s = _summary(tmp_path)
    assert (s["signal"], s["exit_code"], s["finished"]) == ("SIGTERM", 143, False)
    assert s["counts"]["interrupted"] == 2 and s["counts"]["not_run"] == 1
    statuses = sorted(r["status"] for r in _rows(tmp_path).values())
    assert statuses == ["interrupted", "interrupted", "not_run"]
    for pid in kids:   # every worker is gone
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_usage_errors_exit_2(beem, tmp_path):
    p = _run(tmp_path, "--compare-cpu")
    assert p.returncode == 2 and "needs --backend gpu" in p.stderr
    p = _run(tmp_path, "--only", "no-such-model")
    assert p.returncode == 2 and "no instance selected" in p.stderr
    p = _run(tmp_path, "--beem", str(tmp_path))
    assert p.returncode == 2 and "expected.tsv not found" in p.stderr
    assert not (tmp_path / "summary.json").exists()


def test_row_of_a_gpu_build_and_its_cpu_reference():
    # How the two builds of --compare-cpu make one row: different digests are a mismatch
    # naming the fields, a reference that timed out makes the row a timeout.
    import argparse
    tool = _tool()
    spec = dict(id="m.dve", set="beem", model="m.dve", defines={}, property=True,
                states=3, transitions=4, deadlocks=None, accepting=None, known=None)
    args = argparse.Namespace(backend="gpu", compare_cpu=True, gpu_min_states=0,
                              max_memory=None)
    run = tool.Runner(args, [spec])
    assert run.need["m.dve"] == ("gpu", "ref") and [k for _, k in run.pending] == ["gpu", "ref"]
    digest = {n: "x" for n in tool.GRAPH_ARRAYS}
    gpu = dict(status="match", states=3, transitions=4, explore_s=0.5, device_bytes=64,
               note="", wall=1.0, digest=digest)
    ref = dict(status="match", states=3, transitions=4, explore_s=0.25, note="", wall=2.0,
               digest=dict(digest, indices="y", states="z"))
    row = run._merge(spec, {"gpu": gpu, "ref": ref})
    assert (row["status"], row["cpu_compare"], row["backend"]) == \
        ("mismatch", "differs:indices,states", "gpu")
    assert row["note"] == "the GPU graph differs from the CPU graph"
    assert (row["seconds"], row["cpu_explore_s"], row["device_bytes"]) == (3.0, 0.25, 64)
    assert "digest" not in row and "wall" not in row
    row = run._merge(spec, {"gpu": gpu, "ref": dict(ref, digest=digest)})
    assert (row["status"], row["cpu_compare"], row["note"]) == ("match", "identical", "")
    late = {"status": "timeout", "note": "stopped after 9 s", "wall": 9.0}
    row = run._merge(spec, {"gpu": gpu, "ref": late})
    assert row["status"] == "timeout" and row["note"] == "CPU build: timeout: stopped after 9 s"
    assert "cpu_compare" not in row


def test_copy_to_makes_a_set_the_tool_runs_on(beem, tmp_path):
    p = subprocess.run([sys.executable, str(TOOL), "--copy-to", str(tmp_path), "--only",
                        "phils.1.dve", "--only", "divine:input.dve:*"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stderr.startswith("2 models of 3 instances")
    copy = tmp_path / "beem"
    assert sorted(f.name for f in (copy / "models").iterdir()) == ["input.dve", "phils.1.dve"]
    assert (copy / "expected.tsv").read_bytes() == (beem / "expected.tsv").read_bytes()
    p = _run(tmp_path / "out", "--beem", str(copy), "--only", "phils.1.dve")
    assert p.returncode == 0 and _rows(tmp_path / "out")["phils.1.dve"]["status"] == "match"
    p = _run(tmp_path / "out2", "--beem", str(copy), "--only", "fischer.1.dve")
    assert p.returncode == 2 and "model files missing" in p.stderr
