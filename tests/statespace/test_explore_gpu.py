"""Exploration on the GPU (CuPy) against exploration on the host (NumPy): identical graphs.

The explorer is written once over ``xp``; these tests build each model twice, with NumPy and
with CuPy, and require every array of the two graphs to be equal bit for bit (same numbering,
same edge order, costs, times, actions, states, parents, levels, deadlocks). The NumPy build is
the one the oracle tests (``test_explore_oracle.py``) and BEEM's published counts check.

Marked ``gpu`` and skipped where CuPy or a CUDA device is missing, except the first tests,
which run everywhere: they drive the explorer's non-NumPy branches (stable argsort, 2-D
lexsort, scatter-min of the visited set, constant charge tables copied to the array module)
with a stand-in module that computes with NumPy but is not NumPy.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
from ss_helpers import BEEM, ROOT, SHARED

import dve
from statespace import build_state_graph, compile_model, validate_graph
from statespace.explore import Explorer

EXAMPLES = sorted((ROOT / "dvecost" / "examples").glob("*.dve"))

#: A sample of BEEM: async models of many shapes (rendezvous, buffered channels, arrays,
#: commit states, huge guards (plc), property products (anderson.1.prop2)), all small.
BEEM_SAMPLE = ("adding.1", "anderson.1.prop2", "bakery.1", "brp.1", "collision.1",
               "driving_phils.1", "elevator.1", "extinction.1", "firewire_link.1", "hanoi.1",
               "krebs.1", "lamport.1", "leader_election.1", "mcs.1", "msmie.1", "peterson.1",
               "plc.1", "protocols.1", "public_subscribe.1", "szymanski.1")

TEMPLATE_SIZES = (("paper-no-server", 3), ("paper-server", 3), ("editor", 4))


def same_graph(a, b) -> None:
    """Every array and count of two state graphs equal, dtype included."""
    for name in ("indptr", "indices", "time", "action", "states", "parent", "parent_action",
                 "deadlocks"):
        x, y = getattr(a, name), getattr(b, name)
        assert isinstance(y, np.ndarray), name
        assert x.dtype == y.dtype and x.shape == y.shape, name
        assert np.array_equal(x, y), name
    assert a.costs.keys() == b.costs.keys()
    for r in a.costs:
        assert a.costs[r].dtype == b.costs[r].dtype and np.array_equal(a.costs[r], b.costs[r])
    assert (a.action_codes is None) == (b.action_codes is None)
    if a.action_codes is not None:
        assert np.array_equal(a.action_codes, b.action_codes)
    for name in ("error_state", "depth", "complete", "n_expanded", "n_states", "n_edges"):
        assert getattr(a, name) == getattr(b, name), name


# ----------------------------------------------------------------- everywhere: a stand-in xp

def _stand_in(monkeypatch):
    """A module that is not NumPy but computes with it, with CuPy's spellings where they
    differ (argsort always stable, lexsort of one 2-D array), and a ``cupyx`` with the
    scatter functions the explorer takes from it."""
    fake = types.ModuleType("fake_xp")
    for k in dir(np):
        if not k.startswith("__"):
            setattr(fake, k, getattr(np, k))
    fake.argsort = lambda a: np.argsort(a, kind="stable")

    def lexsort(keys):
        assert isinstance(keys, np.ndarray) and keys.ndim == 2   # CuPy takes one 2-D array
        return np.lexsort(keys)

    fake.lexsort = lexsort

    def kernel(in_params, out_params, operation, name):
        # The one fused kernel the explorer defines (statespace.device.add_slot_change),
        # computed here from its specification: k += uint64(v - o) << s, wrapping.
        assert name.startswith("dvecost_slot_change")

        def run(v, o, s, k):
            d = (np.asarray(v, np.int64) - np.asarray(o).astype(np.int64)).astype(np.uint64)
            np.add(k, d << np.uint64(s), out=k)
        return run

    fake.ElementwiseKernel = kernel
    cupyx = types.ModuleType("cupyx")
    cupyx.scatter_min = np.minimum.at
    cupyx.scatter_add = np.add.at
    monkeypatch.setitem(sys.modules, "cupyx", cupyx)
    return fake


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("host_below", [0, 5])
def test_stand_in_module_builds_the_same_graph(path, host_below, monkeypatch):
    # host_below 0: every chunk's successors on the "device"; 5: chunks of fewer than 5 states
    # computed on the host (NumPy) and moved over, the others on the "device".
    monkeypatch.setattr(Explorer, "device_min_rows", host_below)
    cm = compile_model(dve.load_model(str(path)))
    ref = build_state_graph(cm)
    # A small chunk: several batches, so the visited set merges runs and numbers across them.
    got = build_state_graph(cm, xp=_stand_in(monkeypatch), chunk_size=7)
    validate_graph(got)
    same_graph(ref, got)


def test_stand_in_module_wide_keys_and_legacy_error_state(monkeypatch):
    # Three words per key (tags mixed and confirmed), an error state expanded like any state.
    text = """
    int a[6];
    process P { state s, t; init s;
      trans s -> t { guard a[0] < 3; effect a[0] = a[0] + 1, a[5] = 1000 * a[0]; },
            t -> s { effect a[1] = a[1] + a[0], a[2] = 7 / (a[0] - 2); }; }
    process Q { state u; init u; trans u -> u { guard a[3] < 2; effect a[3] = a[3] + 1; }; }
    system async;"""
    cm = compile_model(dve.load_model(text))
    monkeypatch.setattr(Explorer, "device_min_rows", 0)
    from statespace.store import KeyLayout
    assert KeyLayout.for_model(cm).n_words >= 2
    for legacy in (False, True):
        ref = build_state_graph(cm, error_successors=legacy)
        got = build_state_graph(cm, xp=_stand_in(monkeypatch), chunk_size=3,
                                error_successors=legacy)
        same_graph(ref, got)
        assert ref.error_state >= 0   # 7 / 0 faults


# ----------------------------------------------------------------- on the device

gpu = pytest.mark.gpu


@pytest.fixture(scope="module")
def cupy():
    from ocm.backend import gpu_available
    if not gpu_available():
        pytest.skip("no CuPy or no CUDA device")
    import cupy
    return cupy


def both(cm, cupy, **kw):
    ref = build_state_graph(cm, **kw)
    got = build_state_graph(cm, xp=cupy, **kw)
    return ref, got


@gpu
@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("chunk", [None, 5])
def test_gpu_examples(path, chunk, cupy, monkeypatch):
    # Every chunk's successors on the device (small chunks go to the host by default).
    monkeypatch.setattr(Explorer, "device_min_rows", 0)
    cm = compile_model(dve.load_model(str(path)))
    ref, got = both(cm, cupy, chunk_size=chunk)
    validate_graph(got)
    same_graph(ref, got)


@gpu
@pytest.mark.parametrize("name,n", TEMPLATE_SIZES)
def test_gpu_rendered_templates(name, n, cupy, monkeypatch):
    monkeypatch.setattr(Explorer, "device_min_rows", 0)
    from scenarios.templates import TEMPLATES
    model = TEMPLATES[name].family(n).to_model()
    cm = compile_model(model)
    ref, got = both(cm, cupy)
    assert ref.n_edges > 0
    same_graph(ref, got)


@gpu
@pytest.mark.parametrize("name", BEEM_SAMPLE)
@pytest.mark.parametrize("host_below", [0, 1 << 14])
def test_gpu_beem_sample(name, host_below, cupy, monkeypatch):
    # host_below 0: all on the device from the first chunk; 1 << 14 (the default): on the
    # host until a chunk holds that many states, small chunks on the host afterwards.
    monkeypatch.setattr(Explorer, "device_min_rows", host_below)
    if host_below and name == "plc.1":
        pytest.skip("plc.1's frontier never reaches 2**14 states: all on the host")
    path = BEEM / "models" / f"{name}.dve"
    if not path.exists():
        pytest.skip(f"{path} not found (set DVECOST_SHARED)")
    cm = compile_model(dve.load_model(str(path)))
    for legacy in ((False, True) if host_below else (False,)):
        ref, got = both(cm, cupy, error_successors=legacy)
        same_graph(ref, got)


@gpu
def test_gpu_client_server_many_chunks(cupy):
    # cs_7 in chunks of 1,000 states: the visited set's runs merge many times on the device.
    path = SHARED / "models" / "cs_7.dve"
    if not path.exists():
        pytest.skip(f"{path} not found")
    cm = compile_model(dve.load_model(str(path)))
    ref, got = both(cm, cupy, chunk_size=1000)
    assert (ref.n_states, ref.n_edges) == (22599, 122472)
    same_graph(ref, got)


@gpu
def test_gpu_analyze_cli_matches_cpu(cupy, tmp_path):
    # What the user reads: the same answer and counts from --backend gpu and --backend cpu.
    import json
    import subprocess
    path = ROOT / "dvecost" / "examples" / "client_server.dve"
    out = {}
    for backend in ("cpu", "gpu"):
        run = subprocess.run([sys.executable, "-m", "dvecost", "analyze", str(path), "--json",
                              "--backend", backend], capture_output=True, text=True,
                             cwd=str(tmp_path))
        assert run.returncode == 0, run.stderr
        out[backend] = json.loads(run.stdout)
    cpu, dev = out["cpu"], out["gpu"]
    for key in ("value", "exact", "certified", "n_states", "n_transitions", "n_deadlocks",
                "cycle"):
        assert dev[key] == cpu[key], key
    assert (cpu["value"], cpu["n_states"], cpu["n_transitions"]) == (2.6, 135, 360)
    run = subprocess.run([sys.executable, "-m", "dvecost", "explore", str(path), "--json",
                          "--backend", "gpu"], capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    info = json.loads(run.stdout)
    assert (info["n_states"], info["n_transitions"], info["depth"]) == (135, 360,
                                                                        cpu_depth(path))


def cpu_depth(path) -> int:
    return build_state_graph(compile_model(dve.load_model(str(path)))).depth


# ----------------------------------------------------------------- without a device

@pytest.mark.parametrize("argv", [["explore", "--backend", "gpu"],
                                  ["analyze", "--backend", "gpu"]])
def test_backend_gpu_without_a_device_is_refused(argv, tmp_path):
    # What the user reads on a machine without CuPy or a device: exit 2, the reason and the
    # way out, no traceback; nothing explored.
    import subprocess
    from ocm.backend import gpu_available
    if gpu_available():
        pytest.skip("a GPU is present here")
    path = ROOT / "dvecost" / "examples" / "client_server.dve"
    run = subprocess.run([sys.executable, "-m", "dvecost", argv[0], str(path), *argv[1:]],
                         capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 2
    assert "the GPU backend is unavailable" in run.stderr
    assert "--backend cpu" in run.stderr
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_explore_backend_cpu_is_the_default_build(tmp_path):
    import json
    import subprocess
    path = ROOT / "dvecost" / "examples" / "client_server.dve"
    out = []
    for extra in ([], ["--backend", "cpu"]):
        run = subprocess.run([sys.executable, "-m", "dvecost", "explore", str(path), "--json",
                              *extra], capture_output=True, text=True, cwd=str(tmp_path))
        assert run.returncode == 0, run.stderr
        info = json.loads(run.stdout)
        out.append((info["n_states"], info["n_transitions"], info["depth"]))
    assert out[0] == out[1] == (135, 360, cpu_depth(path))
