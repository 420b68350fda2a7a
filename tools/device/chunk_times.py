"""Per-chunk wall times of one exploration, twice in one process (run on the device).

    python3 tools/device/chunk_times.py MODEL.dve [--profile]

The first run pays each kernel's first use in the process, the second does not; each chunk
is timed with the device synchronised before and after it, so a chunk's figure holds its own
device work. Prints, per run: the chunks on the host and on the device, their states and
milliseconds. ``--profile``: a cProfile of the second run's device chunks (own time).
"""

from __future__ import annotations

import sys
import time

import cupy

import dve
import statespace
from statespace import explore

cm = statespace.compile_model(dve.load_model(sys.argv[1]))
log: list = []
orig = explore.Explorer._chunk


def timed(self, k):
    dev = explore.on_device(self.xp)
    cupy.cuda.Device().synchronize()
    t = time.perf_counter()
    orig(self, k)
    cupy.cuda.Device().synchronize()
    log.append((dev, k, time.perf_counter() - t))


explore.Explorer._chunk = timed
profile = None
for run in (1, 2):
    if run == 2 and "--profile" in sys.argv:
        import cProfile
        profile = cProfile.Profile()
        orig_inner = orig

        def orig(self, k, _inner=orig_inner):
            on = explore.on_device(self.xp)
            if on:
                profile.enable()
            try:
                _inner(self, k)
            finally:
                if on:
                    profile.disable()
    log.clear()
    t0 = time.perf_counter()
    g = statespace.build_state_graph(cm, xp=cupy)
    total = time.perf_counter() - t0
    dev = [(k, t) for d, k, t in log if d]
    host = [(k, t) for d, k, t in log if not d]
    print(f"run {run}: {g.n_states} states, {g.n_edges} edges, {total:.3f} s; host chunks "
          f"{len(host)} ({sum(k for k, _ in host)} states, {sum(t for _, t in host):.3f} s); "
          f"device chunks {len(dev)} ({sum(k for k, _ in dev)} states, "
          f"{sum(t for _, t in dev):.3f} s)")
    print("   device chunks (states, ms):",
          " ".join(f"{k}:{t * 1e3:.1f}" for k, t in dev))
if profile is not None:
    import pstats
    pstats.Stats(profile).sort_stats("tottime").print_stats(30)
    pstats.Stats(profile).sort_stats("cumulative").print_stats("statespace", 30)
