"""The device warm-up's two import finders (runtime.warmup): cuTENSOR's preload skipped while
CuPy is imported, SciPy kept out of one thread. Checked with stand-in packages, so that they
run where there is no CuPy."""

import os
import subprocess
import sys
import textwrap
import threading

import pytest

from runtime import warmup


@pytest.fixture
def fake_cupy(tmp_path):
    """A package named ``cupy`` that preloads 'cutensor' at import as CuPy 14 does."""
    pkg = tmp_path / "cupy"
    pkg.mkdir()
    (pkg / "_environment.py").write_text(textwrap.dedent("""
        _preload_libs = {'cutensor': None, 'nccl': None}
        def _preload_library(lib):
            if _preload_libs[lib] is not None:
                return False
            _preload_libs[lib] = {'path': 'libcutensor.so'}
            return True
    """))
    (pkg / "__init__.py").write_text(textwrap.dedent("""
        from cupy import _environment
        PRELOADED = _environment._preload_library('cutensor')
    """))
    return tmp_path


def _run(root, code):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), *sys.path]))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_cupy_imported_lean_skips_the_cutensor_preload(fake_cupy):
    assert _run(fake_cupy, "import cupy; print(cupy.PRELOADED)") == "True"
    lean = ("from runtime.warmup import _import_cupy_lean; _import_cupy_lean(); import cupy, sys; "
            "print(cupy.PRELOADED, cupy._environment._preload_libs['nccl'], "
            "any(type(f).__name__ == '_NoCuTensorPreload' for f in sys.meta_path))")
    # cuTENSOR marked loaded, nothing else touched, the finder gone afterwards.
    assert _run(fake_cupy, lean) == "False None False"


def test_scipy_is_kept_out_of_one_thread_only():
    finder = warmup._NoSciPyInThread(threading.get_ident())
    with pytest.raises(ModuleNotFoundError, match="warm-up"):
        finder.find_spec("scipy.sparse")
    assert finder.find_spec("numpy") is None
    seen = []
    t = threading.Thread(target=lambda: seen.append(finder.find_spec("scipy")))
    t.start()
    t.join()
    assert seen == [None]       # another thread imports SciPy as usual
