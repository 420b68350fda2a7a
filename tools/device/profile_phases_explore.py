"""Where a GPU exploration spends its time, phase by phase (run on the device).

Each wrapped step of the explorer synchronises the device before and after it, so the times
add up to the wall time (slightly inflated by the synchronisations themselves):

    python3 tools/device/profile_phases_explore.py MODEL.dve [MODEL.dve ...]
"""

from __future__ import annotations

import sys
import time
from collections import defaultdict

import cupy

import dve
import statespace
from statespace import explore, store

T: dict[str, float] = defaultdict(float)
N: dict[str, int] = defaultdict(int)


def _timed(cls, name, label):
    f = getattr(cls, name)

    def g(*a, **kw):
        cupy.cuda.Device().synchronize()
        t0 = time.perf_counter()
        try:
            return f(*a, **kw)
        finally:
            cupy.cuda.Device().synchronize()
            T[label] += time.perf_counter() - t0
            N[label] += 1
    setattr(cls, name, g)


for cls, name in ((explore.Explorer, "_expand"), (explore.Explorer, "_successors_kernel"),
                  (explore.Explorer, "_successors_async"),
                  (explore.Explorer, "_successors_on_host"),
                  (explore.Explorer, "_record_new"), (explore.Explorer, "_take_pending"),
                  (explore.Explorer, "_finish"), (explore.Explorer, "_to_device"),
                  (explore.Explorer, "_device_fits"), (store.VisitedSet, "add"),
                  (explore.Explorer, "_level_of")):
    _timed(cls, name, f"{cls.__name__}.{name}")

for path in sys.argv[1:]:
    cm = statespace.compile_model(dve.load_model(path))
    statespace.build_state_graph(cm, xp=cupy)   # warm
    for k in (T, N):
        k.clear()
    t0 = time.perf_counter()
    g = statespace.build_state_graph(cm, xp=cupy).released()   # on the host, as before
    wall = time.perf_counter() - t0
    print(f"{path}: {g.n_states} states, {g.n_edges} edges, wall {wall:.3f} s, "
          f"{g.n_edges / wall / 1e6:.1f} M edges/s")
    for k in sorted(T, key=T.get, reverse=True):
        print(f"  {k:36s} {T[k]:8.3f} s  x{N[k]}")
