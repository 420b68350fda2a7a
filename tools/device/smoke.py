"""First device call: does CuPy work, how fast is a device-to-device copy, do our compile
options (no FMA contraction) work, and does the carried static ``ocmref`` run.

Run on the device machine from the repository root; prints a short report and writes
``$OUT/smoke.json``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def copy_bandwidth(cp, nbytes: int = 2 << 30, reps: int = 20) -> float:
    """Median device-to-device copy rate in bytes/s, counting bytes read plus written."""
    a = cp.random.random(nbytes // 8)  # random data, never zeros (METHOD.md)
    b = cp.empty_like(a)
    for _ in range(3):
        b[...] = a
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        cp.copyto(b, a)
        e.record()
        e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
    times.sort()
    return 2 * a.nbytes / times[len(times) // 2]


def main() -> int:
    out = os.environ.get("OUT", ".")
    info: dict = {"python": sys.version.split()[0]}
    import cupy as cp
    import numpy as np
    info["cupy"] = cp.__version__
    info["numpy"] = np.__version__
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    info["device"] = props["name"].decode()
    info["sms"] = props["multiProcessorCount"]
    info["l2_bytes"] = props["l2CacheSize"]
    info["mem_bytes"] = dev.mem_info[1]
    info["copy_Bps"] = copy_bandwidth(cp)
    # FMA contraction off: a*b+c must round twice, as NumPy does.
    k = cp.RawKernel(r'''
    extern "C" __global__ void f(const double* a, const double* b, const double* c, double* o,
                                 int n) {
        int i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) o[i] = c[i] - a[i] * b[i];
    }''', "f", options=("--fmad=false",))
    n = 1 << 20
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(n) for _ in range(3))
    o = cp.empty(n)
    k(((n + 255) // 256,), (256,), (cp.asarray(a), cp.asarray(b), cp.asarray(c), o, np.int32(n)))
    info["nofma_identical"] = bool((cp.asnumpy(o) == (c - a * b)).all())
    # Launch latency: a tiny kernel, many times.
    x = cp.zeros(1, dtype=cp.int32)
    t0 = time.perf_counter()
    for _ in range(1000):
        k((1,), (32,), (o, o, o, o, np.int32(0)))
    cp.cuda.Device().synchronize()
    info["launch_us"] = (time.perf_counter() - t0) * 1e3
    t0 = time.perf_counter()
    for _ in range(200):
        int(x.sum())
    info["scalar_roundtrip_us"] = (time.perf_counter() - t0) / 200 * 1e6
    ocmref = ".bench/ocmref/ocmref"
    if os.path.exists(ocmref):
        g = "2 3\n0 1 3 1\n1 0 1 1\n1 1 5 1\n"
        r = subprocess.run([ocmref, "--algo", "boost-howard", "-"], input=g, text=True,
                           capture_output=True)
        info["ocmref"] = r.stdout.strip() or r.stderr.strip()
    print(json.dumps(info, indent=1))
    with open(os.path.join(out, "smoke.json"), "w") as f:
        json.dump(info, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
