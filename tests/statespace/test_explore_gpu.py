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
from device_stand_in import same_graph
from device_stand_in import stand_in as _stand_in
from ss_helpers import BEEM, ROOT, SHARED
from ss_models import WIDE_KEYS

import dve
from statespace import build_state_graph, compile_model, validate_graph
from statespace.search import Placement

EXAMPLES = sorted((ROOT / "dvecost" / "examples").glob("*.dve"))

#: A sample of BEEM: async models of many shapes (rendezvous, buffered channels, arrays,
#: commit states, huge guards (plc), property products (anderson.1.prop2)), all small.
BEEM_SAMPLE = ("adding.1", "anderson.1.prop2", "bakery.1", "brp.1", "collision.1",
               "driving_phils.1", "elevator.1", "extinction.1", "firewire_link.1", "hanoi.1",
               "krebs.1", "lamport.1", "leader_election.1", "mcs.1", "msmie.1", "peterson.1",
               "plc.1", "protocols.1", "public_subscribe.1", "szymanski.1")

TEMPLATE_SIZES = (("paper-no-server", 3), ("paper-server", 3), ("editor", 4))


# ----------------------------------------------------------------- everywhere: a stand-in xp

@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
@pytest.mark.parametrize("host_below", [0, 5])
def test_stand_in_module_builds_the_same_graph(path, host_below, monkeypatch):
    # host_below 0: every chunk's successors on the "device"; 5: chunks of fewer than 5 states
    # computed on the host (NumPy) and moved over, the others on the "device".
    monkeypatch.setattr(Placement, "device_min_rows", host_below)
    cm = compile_model(dve.load_model(str(path)))
    ref = build_state_graph(cm)
    # A small chunk: several batches, so the visited set merges runs and numbers across them.
    got = build_state_graph(cm, xp=_stand_in(monkeypatch), chunk_size=7)
    validate_graph(got)
    same_graph(ref, got)


def test_stand_in_module_wide_keys_and_legacy_error_state(monkeypatch):
    # Three words per key (tags mixed and confirmed), an error state expanded like any state.
    text = WIDE_KEYS
    cm = compile_model(dve.load_model(text))
    monkeypatch.setattr(Placement, "device_min_rows", 0)
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
    from runtime.device import gpu_available
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
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    cm = compile_model(dve.load_model(str(path)))
    ref, got = both(cm, cupy, chunk_size=chunk)
    validate_graph(got)
    same_graph(ref, got)


@gpu
@pytest.mark.parametrize("name,n", TEMPLATE_SIZES)
def test_gpu_rendered_templates(name, n, cupy, monkeypatch):
    monkeypatch.setattr(Placement, "device_min_rows", 0)
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
    monkeypatch.setattr(Placement, "device_min_rows", host_below)
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
def test_gpu_client_server_many_chunks(cupy, monkeypatch):
    # cs_7 in chunks of 1,000 states: the visited set's runs merge many times on the device
    # (where every chunk goes: by default chunks of fewer than 16,384 states stay on the host).
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    path = SHARED / "models" / "cs_7.dve"
    if not path.exists():
        pytest.skip(f"{path} not found")
    cm = compile_model(dve.load_model(str(path)))
    ref, got = both(cm, cupy, chunk_size=1000)
    assert (ref.n_states, ref.n_edges) == (22599, 122472)
    same_graph(ref, got)
    # The edges the explorer keeps on the device for the cycle engine equal the host's.
    assert ref.on_device is None and got.on_device is not None
    indptr, indices, charge = got.on_device
    assert all(isinstance(a, cupy.ndarray) for a in (indptr, indices, charge))
    for dev, host in ((indptr, ref.indptr), (indices, ref.indices), (charge, ref.charge)):
        assert dev.dtype == host.dtype and np.array_equal(dev.get(), host)


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
    from runtime.device import gpu_available
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


# ----------------------------------------------------------------- a full device (stand-in)

class OutOfMemoryError(MemoryError):
    """Named as CuPy's ``cupy.cuda.memory.OutOfMemoryError`` (a MemoryError), which is how
    the explorer recognises a failed device allocation."""


def _small_device(monkeypatch, free_bytes, fail_at=None):
    """The stand-in module with a device memory: ``free_bytes(k)`` answers the ``k``-th
    ``memGetInfo`` (from 0); with ``fail_at``, the ``fail_at``-th degree count on the device
    (one per chunk, after the chunk has numbered its states and stored its edges) raises
    OutOfMemoryError, once. ``fake.calls`` counts both."""
    fake = _stand_in(monkeypatch)
    fake.calls = {"memGetInfo": 0, "bincount": 0, "free_all_blocks": 0}

    def mem_get_info():
        k = fake.calls["memGetInfo"]
        fake.calls["memGetInfo"] += 1
        return free_bytes(k), 1 << 34

    plain_kernel = fake.ElementwiseKernel

    def kernel(in_params, out_params, operation, name):
        # The degree count (runtime.arrays.count_values) is the chunk's counted call.
        run = plain_kernel(in_params, out_params, operation, name)
        if name != "dvecost_count":
            return run

        def bincount(*a):
            fake.calls["bincount"] += 1
            if fake.calls["bincount"] == fail_at:
                raise OutOfMemoryError("out of memory allocating 1,024 bytes")
            return run(*a)
        return bincount

    def free_all_blocks():
        fake.calls["free_all_blocks"] += 1

    fake.ElementwiseKernel = kernel
    fake.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(memGetInfo=mem_get_info))
    pool = types.SimpleNamespace(free_bytes=lambda: 0, free_all_blocks=free_all_blocks)
    fake.get_default_memory_pool = lambda: pool
    return fake


def _client_server():
    return compile_model(dve.load_model(str(ROOT / "dvecost" / "examples" / "client_server.dve")))


def _found(ref, e: int) -> int:
    """States breadth-first search has found once it has expanded the first ``e`` states of
    ``ref`` (the largest successor id among them, plus one)."""
    return int(ref.indices[:ref.indptr[e]].max()) + 1 if e else 1


def _boundaries(ref, chunk: int) -> list[int]:
    """The expanded counts at the explorer's chunk boundaries: each chunk takes at most
    ``chunk`` of the states found and not expanded yet."""
    out = [0]
    while out[-1] < ref.n_states:
        out.append(out[-1] + min(chunk, _found(ref, out[-1]) - out[-1]))
    return out


def _is_prefix(part, ref) -> None:
    """``part`` is the breadth-first prefix of ``ref`` after ``part.n_expanded`` states."""
    e = part.n_expanded
    assert not part.complete and 0 < e < ref.n_states
    assert part.n_edges == ref.indptr[e]
    assert np.array_equal(part.indptr[:e + 1], ref.indptr[:e + 1])
    assert np.array_equal(part.indices, ref.indices[:part.n_edges])
    assert part.n_states == _found(ref, e)
    assert np.array_equal(part.states, ref.states[:part.n_states])


@pytest.mark.parametrize("first_fits", [0, 4])
def test_device_too_small_continues_on_the_host(first_fits, monkeypatch):
    # 0: the hand-over is refused, all on the host; 4: the first checks pass (the
    # exploration moves to the "device"), then the device is full: back to the host.
    from runtime.device import DeviceFallbackWarning
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    cm = _client_server()
    ref = build_state_graph(cm)
    fake = _small_device(monkeypatch, lambda k: 1 << 40 if k < first_fits else 0)
    with pytest.warns(DeviceFallbackWarning, match=r"the GPU has 0\.0 MiB free, the next "
                      r"step needs about .* at [\d,]+ states; exploration continues on the CPU"):
        got = build_state_graph(cm, xp=fake, chunk_size=7)
    same_graph(ref, got)
    # Chunks on the device until the check failed, none after (never back to the device).
    assert fake.calls["memGetInfo"] == first_fits + 1
    assert fake.calls["bincount"] == first_fits
    assert fake.calls["free_all_blocks"] == (first_fits > 0)


def test_device_too_small_stops_with_the_graph_so_far(monkeypatch):
    from runtime.errors import OutOfMemory
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    cm = _client_server()
    ref = build_state_graph(cm)
    fake = _small_device(monkeypatch, lambda k: 1 << 40 if k < 4 else 0)
    with pytest.raises(OutOfMemory) as info:
        build_state_graph(cm, xp=fake, chunk_size=7, on_device_full="stop")
    exc = info.value
    assert exc.device and "the GPU has 0.0 MiB free" in exc.why
    _is_prefix(exc.partial, ref)
    # The hand-over's chunk and three more on the device, the next one refused.
    e = _boundaries(ref, 7)[4]
    assert exc.partial.n_expanded == e
    assert exc.counts == {"states": _found(ref, e), "transitions": ref.indptr[e], "expanded": e}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_device_allocation_failure_redoes_the_chunk_on_the_host(path, monkeypatch):
    # The third chunk fails after numbering its states and storing its edges: back to the
    # chunk boundary (visited set, frontier, outputs, sync step ids), the rest on the host.
    from runtime.device import DeviceFallbackWarning
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    cm = compile_model(dve.load_model(str(path)))
    ref = build_state_graph(cm)
    fake = _small_device(monkeypatch, lambda k: 1 << 40, fail_at=3)
    bounds = _boundaries(ref, 5)
    if len(bounds) <= 3:   # fewer than three chunks: nothing fails
        return
    with pytest.warns(DeviceFallbackWarning,
                      match=f"an allocation on the GPU failed at {_found(ref, bounds[2]):,} "
                            f"states; exploration continues on the CPU"):
        got = build_state_graph(cm, xp=fake, chunk_size=5)
    validate_graph(got)
    same_graph(ref, got)
    assert fake.calls["bincount"] == 3


@pytest.mark.parametrize("fail_at", [1, 3])
def test_device_allocation_failure_during_the_hand_over(fail_at, monkeypatch):
    # The copy to the device fails (at its first array, or with the visited set moved): what
    # moved comes back, and the whole exploration runs on the host.
    from runtime.device import DeviceFallbackWarning
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    cm = _client_server()
    ref = build_state_graph(cm)
    fake = _small_device(monkeypatch, lambda k: 1 << 40)
    calls = [0]

    def asarray(*a, **kw):
        calls[0] += 1
        if calls[0] == fail_at:
            raise OutOfMemoryError("out of memory allocating 512 bytes")
        return np.asarray(*a, **kw)

    fake.asarray = asarray
    with pytest.warns(DeviceFallbackWarning, match="an allocation on the GPU failed at 1 "):
        got = build_state_graph(cm, xp=fake, chunk_size=7)
    same_graph(ref, got)
    assert calls[0] == fail_at and fake.calls["bincount"] == 0


def test_device_allocation_failure_stops_with_the_graph_so_far(monkeypatch):
    from runtime.errors import OutOfMemory
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    cm = _client_server()
    ref = build_state_graph(cm)
    fake = _small_device(monkeypatch, lambda k: 1 << 40, fail_at=3)
    with pytest.raises(OutOfMemory) as info:
        build_state_graph(cm, xp=fake, chunk_size=5, on_device_full="stop")
    assert info.value.device and info.value.why == "an allocation on the GPU failed"
    _is_prefix(info.value.partial, ref)
    # The two chunks before the failure.
    assert info.value.partial.n_expanded == _boundaries(ref, 5)[2]


def _cli_on_small_device(monkeypatch, free_bytes, fail_at=None):
    """``dvecost`` in this process with the stand-in as the GPU's module."""
    import runtime.device
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    fake = _small_device(monkeypatch, free_bytes, fail_at)
    monkeypatch.setattr(runtime.device, "array_module_for", lambda backend: fake)
    return fake


EXAMPLE = str(ROOT / "dvecost" / "examples" / "client_server.dve")


@pytest.mark.parametrize("fail_at", [None, 2])
def test_cli_auto_full_device_warns_once_and_answers(fail_at, monkeypatch, capsys):
    # What the user reads: the CPU's answer, and one warning line (no traceback).
    import json
    from dvecost.cli import main
    _cli_on_small_device(monkeypatch, lambda k: 1 << 40 if k < 2 else 1000, fail_at)
    assert main(["explore", EXAMPLE, "--json", "--backend", "auto"]) == 0
    out, err = capsys.readouterr()
    info = json.loads(out)
    assert (info["status"], info["n_states"], info["n_transitions"]) == ("ok", 135, 360)
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("dvecost: warning: ")
    assert lines[0].endswith("exploration continues on the CPU (--backend gpu stops instead)")
    _cli_on_small_device(monkeypatch, lambda k: 1 << 40 if k < 2 else 1000, fail_at)
    assert main(["analyze", EXAMPLE, "--json", "--backend", "auto", "--symmetry", "off"]) == 0
    out, err = capsys.readouterr()
    res = json.loads(out)
    assert (res["status"], res["value"], res["n_states"]) == ("ok", 2.6, 135)
    assert err.count("dvecost: warning: ") == 1 and "Traceback" not in err


@pytest.mark.parametrize("fail_at", [None, 2])
def test_cli_gpu_full_device_stops_with_exit_3_and_counts(fail_at, monkeypatch, capsys):
    import json
    from dvecost.cli import main
    ref = build_state_graph(_client_server())
    free = (lambda k: 1 << 40 if k < 2 else 0) if fail_at is None else (lambda k: 1 << 40)
    _cli_on_small_device(monkeypatch, free, fail_at)
    assert main(["explore", EXAMPLE, "--json", "--backend", "gpu"]) == 3
    out, err = capsys.readouterr()
    info = json.loads(out)
    assert info["status"] == "out_of_memory" and info["complete"] is False
    e = info["n_expanded"]
    assert 0 < e < 135 and info["n_transitions"] == ref.indptr[e]
    assert info["n_states"] == int(ref.indices[:ref.indptr[e]].max()) + 1
    assert err.startswith("dvecost: out of GPU memory (")
    assert "--backend auto continues on the CPU)" in err
    assert (f"; {info['n_states']:,} states, {info['n_transitions']:,} transitions "
            f"({e:,} expanded) found so far") in err
    assert "hint" not in err and "Traceback" not in err
    _cli_on_small_device(monkeypatch, free, fail_at)
    assert main(["analyze", EXAMPLE, "--json", "--backend", "gpu", "--symmetry", "off"]) == 3
    out, err = capsys.readouterr()
    res = json.loads(out)
    assert res["status"] == "out_of_memory"
    assert res["counts"] == {"states": info["n_states"], "transitions": info["n_transitions"],
                             "expanded": e}
    assert err.startswith("dvecost: out of GPU memory (") and "Traceback" not in err
