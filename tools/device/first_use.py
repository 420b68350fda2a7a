"""What the first use of each array operation costs in a fresh CuPy process, and whether it
holds the interpreter's lock meanwhile (issue 15). Run on the device::

    python3 tools/device/first_use.py              # the operations, first and second call
    python3 tools/device/first_use.py --chunk -- analyze .bench/cs_10.dve --backend gpu

The first form times each operation of the explorer's device path (sorts, scans, reductions,
searches, elementwise) on arrays of 20,000 elements, first call and second, synchronised,
while a thread counts in Python: a count far below its idle rate means the first call held
the lock (a background warm-up would stall the host's work by as much). The second form runs
the command with cProfile on for its first device chunk only and prints where that went.
"""

from __future__ import annotations

import sys
import threading
import time


def ops():
    import cupy as cp
    import numpy as np
    n = 20_000
    u = cp.arange(n, dtype=np.uint64)[::-1].copy()
    i = cp.arange(n, dtype=np.int64)[::-1].copy()
    b = (i % 3) == 0
    return [
        ("sort uint64 (thrust)", lambda: u.copy().sort()),
        ("argsort int64", lambda: cp.argsort(i)),
        ("argsort uint64", lambda: cp.argsort(u)),
        ("cumsum bool", lambda: cp.cumsum(b)),
        ("cumsum int64", lambda: cp.cumsum(i)),
        ("flatnonzero", lambda: cp.flatnonzero(b)),
        ("any", lambda: b.any()),
        ("any (2M)", lambda: cp.zeros(2_000_000, bool).any()),
        ("bincount", lambda: cp.bincount(i % 100, minlength=100)),
        ("searchsorted", lambda: cp.searchsorted(u[::-1].copy(), u)),
        ("take", lambda: u[i]),
        ("concatenate", lambda: cp.concatenate([u, u])),
        ("add int64", lambda: i + i),
        ("array_equal", lambda: cp.array_equal(u, u)),
        ("memGetInfo", lambda: cp.cuda.runtime.memGetInfo()),
    ]


def census() -> None:
    import cupy as cp
    t = time.perf_counter()
    cp.empty(1)
    print(f"context {time.perf_counter() - t:.3f} s")
    stop, count = [False], [0]

    def spin():
        while not stop[0]:
            count[0] += 1
    th = threading.Thread(target=spin, daemon=True)
    th.start()
    time.sleep(0.05)
    c0, t0 = count[0], time.perf_counter()
    time.sleep(0.05)
    rate = (count[0] - c0) / (time.perf_counter() - t0)
    print(f"idle count rate {rate / 1e6:.2f} M/s")
    total = 0.0
    for name, f in ops():
        c0, t0 = count[0], time.perf_counter()
        f()
        cp.cuda.Device().synchronize()
        t1 = time.perf_counter()
        c1 = count[0]
        f()
        cp.cuda.Device().synchronize()
        t2 = time.perf_counter()
        total += t1 - t0
        share = (c1 - c0) / max(rate * (t1 - t0), 1)
        print(f"{name:22s} first {1e3 * (t1 - t0):7.1f} ms  second {1e3 * (t2 - t1):6.2f} ms"
              f"  other thread ran {100 * share:5.1f} % of it")
    stop[0] = True
    print(f"first calls in all {total:.3f} s")


def chunk_profile(argv) -> int:
    import cProfile
    import pstats

    import cupy  # noqa: F401

    import dvecost.cli
    import statespace.explore as ex
    plain, seen = ex.Explorer._chunk, [0]

    def chunk(self, k):
        if not ex.on_device(self.xp) or seen[0]:
            return plain(self, k)
        seen[0] = 1
        prof = cProfile.Profile()
        t = time.perf_counter()
        prof.enable()
        try:
            return plain(self, k)
        finally:
            self.xp.cuda.Device().synchronize()
            prof.disable()
            print(f"first device chunk ({k} states) {time.perf_counter() - t:.3f} s",
                  file=sys.stderr)
            st = pstats.Stats(prof, stream=sys.stderr)
            st.sort_stats("tottime").print_stats(25)
            st.sort_stats("cumulative").print_stats(30)
    ex.Explorer._chunk = chunk
    return dvecost.cli.main(argv)


if __name__ == "__main__":
    if "--chunk" in sys.argv:
        sys.exit(chunk_profile(sys.argv[sys.argv.index("--") + 1:]))
    census()
