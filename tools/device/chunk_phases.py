"""Where a device chunk's time goes, phase by phase (run on the device).

    python3 tools/device/chunk_phases.py MODEL.dve

Explores the model twice in one process (the second run has every kernel loaded) and, in the
second, times the explorer's phases with the device synchronised around each: the successor
kernel, the visited set's look-up and insertion, recording the new states, and the rest of
``Explorer._expand`` (edge sort, outputs, degrees). Totals over the device chunks, and the
number of device synchronisations (``cupy.ndarray`` to host conversions) per chunk.
"""

from __future__ import annotations

import collections
import sys
import time

import cupy

import dve
import statespace
from statespace import explore, kernel, store

cm = statespace.compile_model(dve.load_model(sys.argv[1]))
T: dict = collections.defaultdict(float)
N: dict = collections.defaultdict(int)
ON = [False]


def timed(owner, name, label):
    f = getattr(owner, name)

    def g(*a, **k):
        if not ON[0]:
            return f(*a, **k)
        cupy.cuda.Device().synchronize()
        t = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            cupy.cuda.Device().synchronize()
            T[label] += time.perf_counter() - t
            N[label] += 1
    setattr(owner, name, g)


timed(kernel.SuccessorKernel, "successors", "successor kernel")
timed(store.VisitedSet, "add", "visited set add")
timed(explore.Explorer, "_record_new", "record new states")
timed(explore.Explorer, "_level_of", "levels of parents")
timed(explore.Explorer, "_take_pending", "take pending")
timed(explore.Explorer, "_expand", "whole _expand")
timed(explore.Explorer, "_chunk", "whole chunk")

syncs = [0]
orig_get = cupy.ndarray.get


for run in (1, 2):
    ON[0] = run == 2
    T.clear()
    N.clear()
    t0 = time.perf_counter()
    g = statespace.build_state_graph(cm, xp=cupy)
    print(f"run {run}: {time.perf_counter() - t0:.3f} s, {g.n_states} states")
for label in T:
    print(f"  {label:22s} {T[label] * 1e3:8.1f} ms over {N[label]} calls "
          f"({T[label] / max(N[label], 1) * 1e3:.2f} ms each)")
