"""Backend selection and the out-of-memory fallback (``ocm.backend``); runs without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

import ocm
from ocm.errors import BackendUnavailableError, InputError
from ocm import backend
from runtime import device
from runtime.device import DeviceFallbackWarning, is_out_of_memory


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: "CuPy is not installed")


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: None)


def test_explicit_gpu_without_one_says_how_to_get_one(no_gpu):
    with pytest.raises(BackendUnavailableError) as info:
        backend.resolve_backend("gpu", 10)
    msg = str(info.value)
    assert "CuPy is not installed" in msg
    assert "pip install dvecost[gpu]" in msg and "--backend cpu" in msg


def test_auto_is_quietly_cpu_without_gpu(no_gpu, recwarn):
    assert backend.resolve_backend("auto", 10 ** 9) == "cpu"
    assert len(recwarn) == 0


def test_auto_uses_gpu_only_for_large_graphs(fake_gpu):
    assert backend.resolve_backend("auto", backend.AUTO_MIN_EDGES - 1) == "cpu"
    assert backend.resolve_backend("auto", backend.AUTO_MIN_EDGES) == "gpu"
    assert backend.resolve_backend("cpu", 10 ** 9) == "cpu"
    assert backend.resolve_backend("gpu", 1) == "gpu"


def test_unknown_backend():
    with pytest.raises(InputError, match="unknown backend"):
        backend.resolve_backend("tpu", 1)


def test_api_gpu_without_one_raises(no_gpu):
    with pytest.raises(BackendUnavailableError):
        ocm.max_cycle_mean(np.array([0, 1]), np.array([0]), np.array([3]), backend="gpu")
    # auto: the CPU engine, whatever the size.
    r = ocm.max_cycle_mean(np.array([0, 1]), np.array([0]), np.array([3]), backend="auto")
    assert r.backend == "cpu" and r.value == 3


def test_cli_gpu_without_one_exits_2(no_gpu, tmp_path, capsys):
    from dvecost.cli import main

    g = tmp_path / "g.txt"
    g.write_text("2 2\n0 1 3 1\n1 0 5 1\n")
    assert main(["cycle", str(g), "--backend", "gpu"]) == 2
    err = capsys.readouterr().err
    assert "pip install dvecost[gpu]" in err and "--backend cpu" in err
    assert "Traceback" not in err
    assert main(["cycle", str(g), "--backend", "auto", "--json"]) == 0


def test_out_of_memory_reruns_on_cpu_with_a_warning():
    class OutOfMemoryError(MemoryError):  # the class name CuPy uses
        pass

    calls = []

    def run(xp):
        calls.append(xp.__name__)
        if xp is not np:
            raise OutOfMemoryError("out of memory allocating 8 GiB")
        return "cpu answer"

    import types

    fake_cupy = types.SimpleNamespace(__name__="cupy")
    with pytest.warns(DeviceFallbackWarning, match="ran out of memory"):
        assert backend.call_with_cpu_fallback(run, fake_cupy, 10) == "cpu answer"
    assert calls == ["cupy", "numpy"]


def test_other_errors_are_not_swallowed():
    def run(xp):
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        backend.call_with_cpu_fallback(run, np, 10)
    assert is_out_of_memory(RuntimeError("cudaErrorMemoryAllocation: out of memory"))
    assert not is_out_of_memory(RuntimeError("something else"))
