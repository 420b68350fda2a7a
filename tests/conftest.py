"""Shared fixtures: the ``xp`` backend fixture, markers ``gpu`` and ``slow``, paths."""

from __future__ import annotations

import os
import pathlib

import numpy
import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SHARED = pathlib.Path(os.environ.get("DVECOST_SHARED", ROOT.parent / "shared"))
BEEM = SHARED / "beem"


def pytest_addoption(parser):
    parser.addoption("--runslow", action="store_true", default=False, help="run slow tests")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="slow: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def gpu_available() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


@pytest.fixture(params=["numpy", pytest.param("cupy", marks=pytest.mark.gpu)])
def xp(request):
    """The array module: NumPy always; CuPy where a CUDA device is present."""
    if request.param == "numpy":
        return numpy
    if not gpu_available():
        pytest.skip("no CuPy or no CUDA device")
    import cupy
    return cupy


@pytest.fixture
def beem_dir():
    """``../shared/beem``; tests that need it skip with a clear reason where it is absent."""
    if not (BEEM / "models").is_dir():
        pytest.skip(f"BEEM benchmark not found at {BEEM} (set DVECOST_SHARED)")
    return BEEM
