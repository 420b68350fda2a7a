"""Run the CUDA source of :mod:`ocm.kernels` on the CPU, for tests on machines without a GPU.

The kernels use grid-stride loops, read only buffers that the same launch does not write (or,
for the representatives' marks, whose updates commute), and use shared memory and barriers only
within one block's loop; so one host "thread" (``gridDim = blockDim = 1``, its own shared
memory, barriers that wait for nothing, warp shuffles of one lane) running each kernel's loop
sequentially computes exactly what the GPU computes. :func:`emulator` compiles
:data:`ocm.kernels.SOURCE` behind a small prelude that defines the CUDA built-ins, with the
system C++ compiler, and returns an :class:`ocm.kernels.Launcher` over NumPy arrays.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ocm import kernels

PRELUDE = r"""
#include <cmath>
#include <cstdint>
using std::fabs;
struct EmuDim { unsigned int x; };
static EmuDim blockIdx = {0}, threadIdx = {0}, blockDim = {1}, gridDim = {1};
#define __global__
#define __device__
#define __forceinline__ inline
#define __align__(n) alignas(n)
#define __launch_bounds__(...)
// One thread per block: shared memory is that thread's own, and a barrier has nothing to wait for.
#define __shared__ static
static inline void __syncthreads() {}
static inline int __syncthreads_or(int p) { return p != 0; }
static inline int __syncthreads_count(int p) { return p != 0; }
template <class T> static inline T __shfl_xor_sync(unsigned, T x, int) { return x; }
static inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p; if (v > old) *p = v; return old;
}
template <class T> static inline T __ldcs(const T* p) { return *p; }
static inline long long __mul64hi(long long a, long long b) {
    return (long long)(((__int128)a * (__int128)b) >> 64);
}
static inline unsigned __activemask() { return 1u; }
static inline bool __any_sync(unsigned, bool p) { return p; }
static inline unsigned __ballot_sync(unsigned, bool p) { return p ? 1u : 0u; }
static inline int __ffs(unsigned x) { return __builtin_ffs((int)x); }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long old = *p; *p = old + v; return old;
}
"""


def compiler() -> str | None:
    """The C++ compiler to use (``$CXX``, ``g++`` or ``c++``), or None."""
    for c in (os.environ.get("CXX"), "g++", "c++"):
        if c and shutil.which(c):
            return c
    return None


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL:
    cxx = compiler()
    if cxx is None:
        raise RuntimeError("no C++ compiler")
    d = tempfile.mkdtemp(prefix="ocm-emu-")
    src = os.path.join(d, "kernels.cpp")
    lib = os.path.join(d, "kernels.so")
    with open(src, "w") as f:
        f.write(PRELUDE + kernels.SOURCE)
    # -fwrapv: int64 overflow wraps as on the GPU and in NumPy (never reached when bounds hold).
    subprocess.run([cxx, "-O1", "-fwrapv", "-shared", "-fPIC", "-o", lib, src], check=True,
                   capture_output=True)
    return ctypes.CDLL(lib)


def emulator() -> kernels.Launcher:
    """A :class:`ocm.kernels.Launcher` running the kernels on the CPU over NumPy arrays."""
    lib = _library()

    def launch(name: str, n: int, *args) -> None:
        cargs = []
        for a in args:
            if isinstance(a, np.ndarray):
                if not a.flags.c_contiguous:
                    raise ValueError(f"{name}: non-contiguous argument")
                cargs.append(ctypes.c_void_p(a.ctypes.data))
            else:
                cargs.append(ctypes.c_longlong(int(a)))
        getattr(lib, name)(*cargs)

    return kernels.Launcher(np, launch, graphs=False)
