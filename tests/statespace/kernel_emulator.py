"""Run generated CUDA kernels on the CPU: a ``RawModule`` over NumPy arrays for tests.

The successor kernel (:mod:`statespace.kernel`) uses a grid-stride loop and no shared memory,
barriers or atomics; each state's thread writes only its own rows. So one host "thread"
(``gridDim = blockDim = 1``) running the loop over all states computes exactly what the GPU
computes. :class:`RawModule` compiles the source behind a prelude that defines the CUDA
built-ins, with the host C++ compiler, and calls its kernels through ``ctypes`` with CuPy's
calling convention (``kernel(grid, block, args)``).
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

PRELUDE = r"""
#include <cstdint>
struct EmuDim { unsigned int x; };
static EmuDim blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__
"""

_DIR = tempfile.mkdtemp(prefix="dvecost-kernel-emu-")
atexit.register(shutil.rmtree, _DIR, True)


def compiler() -> str | None:
    """The C++ compiler to use (``$CXX``, ``g++`` or ``c++``), or None."""
    for c in (os.environ.get("CXX"), "g++", "c++"):
        if c and shutil.which(c):
            return c
    return None


class RawModule:
    """CuPy's ``RawModule(code=..., options=...)`` compiled for the host."""

    def __init__(self, code: str, options=()) -> None:
        cxx = compiler()
        if cxx is None:
            raise RuntimeError("no C++ compiler")
        tag = hashlib.sha1(code.encode()).hexdigest()[:16]
        src = os.path.join(_DIR, f"k{tag}.cpp")
        lib = os.path.join(_DIR, f"k{tag}.so")
        if not os.path.exists(lib):
            with open(src, "w") as f:
                f.write(PRELUDE + code)
            # -fwrapv is *not* given: the kernel must not rely on signed wrap-around.
            subprocess.run([cxx, "-O1", "-shared", "-fPIC", "-o", lib, src], check=True,
                           capture_output=True)
        self.lib = ctypes.CDLL(lib)

    def get_function(self, name: str):
        fn = getattr(self.lib, name)

        def launch(grid, block, args):
            conv = []
            for a in args:
                if isinstance(a, np.ndarray):
                    assert a.flags.c_contiguous
                    conv.append(ctypes.c_void_p(a.ctypes.data))
                elif isinstance(a, np.int64):
                    conv.append(ctypes.c_longlong(int(a)))
                else:
                    raise TypeError(f"kernel argument of type {type(a).__name__}")
            fn(*conv)
        return launch
