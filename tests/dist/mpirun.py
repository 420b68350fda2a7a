"""Starting ``mpiexec`` from a test: where it is, and a skip with the reason when it is not."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def mpiexec() -> str:
    """The ``mpiexec`` beside this Python (the 'dist' extra's MPICH) or on the PATH; skips
    the test when mpi4py or ``mpiexec`` is absent."""
    pytest.importorskip("mpi4py", reason="mpi4py is not installed (pip install "
                                         "'dvecost[dist]'): no distributed run to test")
    exe = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or shutil.which("mpiexec")
    if exe is None:
        pytest.skip("no mpiexec found (pip install mpich)")
    return exe


def signalled_code(code: int) -> set[int]:
    """The exit codes ``mpiexec`` may give when it was signalled and its processes stopped with
    ``code``: MPICH's passes the processes' code on; Open MPI's forwards the signal and exits
    with its own 1, whatever the processes returned (seen with Open MPI 4.1 on the GPU
    machine)."""
    out = subprocess.run([mpiexec(), "--version"], capture_output=True, text=True).stdout
    return {code, 1} if "Open MPI" in out or "OpenRTE" in out else {code}


#: Open MPI's ``mpiexec`` refuses to start as root (the GPU machines run tests as root) unless
#: both are set; MPICH ignores them. Set for the tests' children only: ``dvecost --gpus``
#: leaves that choice to its user.
ALLOW_ROOT = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def env(**extra: str) -> dict:
    """The environment of the processes: this checkout first on the path, Open MPI allowed to
    run as root (:data:`ALLOW_ROOT`), and ``extra``."""
    return dict(os.environ, **ALLOW_ROOT, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        **extra)


def run(n: int, *args: str, timeout: float = 300, extra_env: dict | None = None,
        **kw) -> subprocess.CompletedProcess:
    """``mpiexec -n n python ARGS`` to its end (output captured, text)."""
    return subprocess.run([mpiexec(), "-n", str(n), sys.executable, *args],
                          env=env(**(extra_env or {})), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, **kw)


def ours(marker: str) -> list[int]:
    """Processes whose command line names ``marker`` (a file of the test: its model)."""
    pids = []
    for d in pathlib.Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if marker in (d / "cmdline").read_bytes().decode(errors="replace"):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def none_left(marker: str) -> bool:
    """Whether no process naming ``marker`` is left, within 5 s."""
    for _ in range(50):
        if not ours(marker):
            return True
        time.sleep(0.1)
    return False
