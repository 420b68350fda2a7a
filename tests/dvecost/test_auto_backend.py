"""``--backend auto`` imports CuPy only when the work is large enough to use the device.

CuPy is not installed here, so the tests put a stand-in ``cupy`` on ``sys.meta_path``: the
look-up ``auto`` makes (``importlib.util.find_spec``) finds it, and the finder records every
time the module is really imported (its code run). The stand-in computes with NumPy under
CuPy's spellings; with ``device=False`` it imports but finds no CUDA device, as CuPy does on a
machine without a GPU.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import dve
import dvecost
from runtime.device import DeviceFallbackWarning
from dvecost.cli import main
from runtime.device import DeferredDevice, array_module_for, cupy_installed, gpu_unavailable_reason
from dvecost.pipeline import quiet_absent_device
from statespace import build_state_graph, compile_model
from statespace.search import Placement

EXAMPLES = Path(dvecost.__file__).parent / "examples"
PIPELINE = EXAMPLES / "pipeline.dve"   # 126 states, 240 transitions, no symmetry to reduce


class FakeCupy(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds ``cupy``; builds the stand-in when it is imported, and records that it was."""

    def __init__(self, device: bool) -> None:
        self.device = device
        self.imported = 0
        self.moved = 0   # bytes copied to the "device" with asarray

    def find_spec(self, name, path=None, target=None):
        return importlib.util.spec_from_loader(name, self) if name == "cupy" else None

    def create_module(self, spec):
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        self.imported += 1
        for k in dir(np):
            if not k.startswith("__"):
                setattr(module, k, getattr(np, k))
        fake = self

        def asarray(a, dtype=None):
            out = np.asarray(a, dtype=dtype)
            fake.moved += out.nbytes
            return out

        def device_count():
            if not fake.device:
                raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
            return 1

        def kernel(*args, **kw):   # the explorer computes the same with array operations
            raise TypeError("no kernels on the stand-in")

        module.asarray = asarray
        module.argsort = lambda a: np.argsort(a, kind="stable")
        module.lexsort = lambda keys: np.lexsort(keys)   # one 2-D array, as CuPy takes
        module.ElementwiseKernel = kernel
        pool = types.SimpleNamespace(free_bytes=lambda: 0, free_all_blocks=lambda: None)
        module.get_default_memory_pool = lambda: pool
        module.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(
            getDeviceCount=device_count, memGetInfo=lambda: (1 << 34, 1 << 34)))


@pytest.fixture
def fake_cupy(monkeypatch):
    """``install(device)``: the stand-in on the path, CuPy not imported yet, caches empty."""
    if "cupy" in sys.modules:
        monkeypatch.delitem(sys.modules, "cupy")   # a real one comes back afterwards

    def install(device: bool = True) -> FakeCupy:
        finder = FakeCupy(device)
        monkeypatch.setattr(sys, "meta_path", [finder, *sys.meta_path])
        return finder

    cupy_installed.cache_clear()
    gpu_unavailable_reason.cache_clear()
    yield install
    if isinstance(sys.modules.get("cupy"), types.ModuleType) and \
            isinstance(getattr(sys.modules["cupy"], "__loader__", None), FakeCupy):
        del sys.modules["cupy"]
    cupy_installed.cache_clear()
    gpu_unavailable_reason.cache_clear()


def _cpu(model=PIPELINE):
    return dvecost.analyze(model, backend="cpu", symmetry="off")


def test_auto_small_model_never_imports_cupy(fake_cupy):
    cupy = fake_cupy(device=True)
    assert isinstance(array_module_for("auto"), DeferredDevice)   # installed: found, deferred
    a = dvecost.analyze(PIPELINE, backend="auto", symmetry="off")
    assert (a.exact, a.n_states, a.n_transitions, a.backend) == ("7/5", 126, 240, "cpu")
    assert cupy.imported == 0 and "cupy" not in sys.modules


@pytest.mark.parametrize("command", ["analyze", "explore"])
def test_auto_cli_small_model_never_imports_cupy(fake_cupy, command, capsys):
    cupy = fake_cupy(device=True)
    assert main([command, str(PIPELINE), "--backend", "auto", "--json"]) == 0
    assert '"n_states": 126' in capsys.readouterr().out
    assert cupy.imported == 0 and "cupy" not in sys.modules


def test_auto_large_frontier_imports_cupy_and_uses_it(fake_cupy, monkeypatch):
    # The same run with the hand-over lowered to chunks of 4 states: the explorer reaches the
    # device, so CuPy is imported (once) and the work moved to it; the answer is the same.
    cupy = fake_cupy(device=True)
    monkeypatch.setattr(Placement, "device_min_rows", 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeviceFallbackWarning)
        a = dvecost.analyze(PIPELINE, backend="auto", symmetry="off")
    ref = _cpu()
    assert cupy.imported == 1 and cupy.moved > 0
    assert (a.exact, a.n_states, a.n_transitions) == (ref.exact, ref.n_states, ref.n_transitions)
    assert [s.moves for s in a.cycle] == [s.moves for s in ref.cycle]


def test_auto_without_a_device_stays_on_the_host_quietly(fake_cupy, monkeypatch):
    # CuPy imports but finds no device: the exploration that would have moved stays on the
    # host, with no "fell back" warning (nothing fell back), and the same answer.
    cupy = fake_cupy(device=False)
    monkeypatch.setattr(Placement, "device_min_rows", 4)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        a = dvecost.analyze(PIPELINE, backend="auto", symmetry="off")
    assert cupy.imported == 1 and cupy.moved == 0
    assert not [w for w in seen if issubclass(w.category, DeviceFallbackWarning)]
    assert (a.exact, a.n_states, a.n_transitions) == ("7/5", 126, 240)


def test_explore_cli_without_a_device_prints_no_warning(fake_cupy, monkeypatch, capsys):
    fake_cupy(device=False)
    monkeypatch.setattr(Placement, "device_min_rows", 4)
    assert main(["explore", str(PIPELINE), "--backend", "auto"]) == 0
    err = capsys.readouterr().err
    assert "warning" not in err


def test_other_warnings_pass_through_the_quiet_exploration(fake_cupy, monkeypatch):
    # With a device the explorer's own fallback warnings still reach the user: here the
    # "device" is full (no free memory), so the exploration continues on the host and says so.
    cupy = fake_cupy(device=True)
    monkeypatch.setattr(Placement, "device_min_rows", 4)
    cm = compile_model(dve.load_model(PIPELINE))
    xp = array_module_for("auto")
    xp.cuda   # resolve now, then take its free memory away
    xp.cuda = types.SimpleNamespace(runtime=types.SimpleNamespace(memGetInfo=lambda: (0, 1)))
    with pytest.warns(DeviceFallbackWarning, match="continues on the CPU"):
        with quiet_absent_device(xp):
            g = build_state_graph(cm, xp=xp)
    assert g.n_states == 126 and cupy.imported == 1
