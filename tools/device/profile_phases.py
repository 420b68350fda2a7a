"""Per-phase times of ``ocm.optimal_cycle`` on CuPy arrays for state graphs (device machine).

Usage (repository root, lark on the path)::

    python3 tools/device/profile_phases.py --dve .bench/cs_10.dve --dve .bench/cs_11.dve \
        --cache /tmp/pp --label after [--repeat 5]

Each model's state graph is explored once on the CPU and cached as ``<cache>/<name>.npz``, so
that a second run (for instance with an older ``ocm`` first on ``PYTHONPATH``, to compare
before and after) times the same arrays without exploring again. One warm-up call, then
``repeat`` timed calls; prints one JSON line per graph with the median of every entry of
``CycleResult.timings`` (seconds, host clock; each phase ends in a host synchronisation), the
rest of ``total`` as ``other`` (validation and the gathers of the restriction).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys
import time

import numpy as np


def _graph(path: str, cache: pathlib.Path) -> dict:
    f = cache / (pathlib.Path(path).name + ".npz")
    if f.exists():
        z = np.load(f)
        return {k: z[k] for k in ("indptr", "indices", "cost", "time")}
    import dve
    import statespace

    sg = statespace.build_state_graph(statespace.compile_model(dve.load_model(path)))
    g = {"indptr": np.asarray(sg.indptr, dtype=np.int64),
         "indices": np.asarray(sg.indices, dtype=np.int64),
         "cost": np.asarray(sg.cost(), dtype=np.int64),
         "time": np.asarray(sg.time, dtype=np.int64)}
    cache.mkdir(parents=True, exist_ok=True)
    np.savez(f, **g)
    return g


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dve", action="append", default=[])
    ap.add_argument("--cache", default="/tmp/pp")
    ap.add_argument("--label", default="")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    import cupy as cp

    import ocm

    for path in args.dve:
        g = _graph(path, pathlib.Path(args.cache))
        d = [cp.asarray(g[k]) for k in ("indptr", "indices", "cost", "time")]
        cp.cuda.Device().synchronize()
        r = ocm.optimal_cycle(*d, kind="mean", mode="max")  # warm-up (and kernel builds)
        runs, tims = [], []
        for _ in range(max(1, args.repeat)):
            cp.cuda.Device().synchronize()
            t0 = time.perf_counter()
            r = ocm.optimal_cycle(*d, kind="mean", mode="max")
            runs.append(time.perf_counter() - t0)
            tims.append(r.timings)
        med = {k: round(statistics.median(t.get(k, 0.0) for t in tims) * 1e3, 3)
               for k in tims[0]}
        named = ("zero_time_check", "restrict", "howard", "certify")
        med["other"] = round(med["total"] - sum(med.get(k, 0.0) for k in named), 3)
        print(json.dumps({"label": args.label, "ocm": ocm.__file__,
                          "graph": pathlib.Path(path).name,
                          "n": int(g["indptr"].shape[0] - 1), "m": int(g["indices"].shape[0]),
                          "wall_ms": round(statistics.median(runs) * 1e3, 3),
                          "runs_ms": [round(x * 1e3, 3) for x in runs],
                          "value": str(r.value), "cycle_len": len(r.cycle),
                          "certified": r.certified, "iters": r.iterations, "phases_ms": med}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
