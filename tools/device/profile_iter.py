"""Per-kernel GPU times of Howard's iteration (:func:`ocm.howard_gpu.howard_solve`), per graph.

Run on the device machine from the repository root (needs gen.py: ``.bench/ocmref/gen.py``)::

    python3 tools/device/profile_iter.py [--graphs random-1M-10M,model-1M-10M] [--json FILE]

For each graph: the engine's own loop time per iteration (CUDA graph replays, as the benchmark
measures it), then one more solve with plain launches, each bracketed by CUDA events, behind a
spinning kernel that keeps the GPU busy while the host queues the iteration (so the events
time the kernels, not the host's launch latency; each event pair adds a little). Per
iteration it prints the time of each kernel family and of each doubling round (rounds after
convergence return at once), and the round flags of the last iteration.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import statistics
import sys
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import cupy as cp  # noqa: E402

from dvecost.benchmarks import ocm_gpu as OG  # noqa: E402
from ocm import howard_gpu as HG  # noqa: E402
from ocm import kernels as KN  # noqa: E402

SPIN = cp.RawKernel(r"""
extern "C" __global__ void spin(long long cycles) {
    long long t0 = clock64();
    while (clock64() - t0 < cycles) { }
}""", "spin")


def family(name: str) -> str:
    """Kernel family: the record-width suffix dropped; doubling rounds summed over rounds."""
    return name.removesuffix("16")


def profile(name: str, csr, reps: int) -> dict:
    indptr, indices, cost, _ = (cp.asarray(a) for a in csr)
    n = int(indptr.shape[0] - 1)
    m = int(indices.shape[0])
    base = KN.cupy_launcher()
    # 1. As the engine runs (graph replays), warm then timed.
    loop = []
    for _ in range(reps + 1):
        cp.cuda.Device().synchronize()
        st = HG.howard_solve(indptr, indices, cost, None, xp=cp)
        loop.append(st.timings["iterate"] / st.iterations)
    iters = st.iterations
    # 1b. GPU time of one iteration alone: the captured graph of a solve replayed back to back
    # from the converged policy (the work of a late iteration), between two events.
    steps = []
    real = HG._Stepper

    class Recorded(real):
        def __init__(self, *a) -> None:
            super().__init__(*a)
            steps.append(self)

    counts: list[int] = []  # vertices switched by each iteration (flags[0])

    def wait(self) -> tuple[int, int, int]:
        f = real.wait(self)
        counts.append(f[0])
        return f

    Recorded.wait = wait
    HG._Stepper = Recorded
    try:
        HG.howard_solve(indptr, indices, cost, None, xp=cp)
    finally:
        HG._Stepper = real
    g, stream = steps[-1].graph, steps[-1].stream
    replay_us = None
    if g is not None:
        with stream:
            s, e = cp.cuda.Event(), cp.cuda.Event()
            g.launch(stream)
            s.record(stream)
            for _ in range(20):
                g.launch(stream)
            e.record(stream)
            e.synchronize()
            replay_us = cp.cuda.get_elapsed_time(s, e) * 1e3 / 20
    # 2. Plain launches with events, queued behind a spinning kernel.
    recs: list[list] = []
    acts: list = []

    def launch(kname: str, nn: int, *args) -> None:
        if kname.startswith("p_cyc0"):
            acts.append(args[6])  # the act array (read after the solve: the last one only)
            SPIN((1,), (1,), (np.int64(4_000_000),))
            recs.append([])
        if not recs:  # the initial policy, before the first iteration
            base.launch(kname, nn, *args)
            return
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        base.launch(kname, nn, *args)
        e.record()
        recs[-1].append((kname, s, e))

    L = KN.Launcher(cp, launch, graphs=False)
    cp.cuda.Device().synchronize()
    st2 = HG.howard_solve(indptr, indices, cost, None, xp=cp, launcher=L)
    cp.cuda.Device().synchronize()
    per_iter = []
    for rec in recs:
        fam = collections.defaultdict(float)
        tot = cp.cuda.get_elapsed_time(rec[0][1], rec[-1][2]) * 1e3
        for kname, s, e in rec:
            fam[family(kname)] += cp.cuda.get_elapsed_time(s, e) * 1e3
        rounds = {f: [round(cp.cuda.get_elapsed_time(s, e) * 1e3, 1) for k, s, e in rec
                      if family(k) == f] for f in ("p_cyc", "p_tsum")}
        per_iter.append({"total_us": tot, "fam_us": dict(fam), "rounds_us": rounds})
    return {"graph": name, "n": n, "m": m, "iters": iters, "iters_plain": st2.iterations,
            "graph_replay_us": replay_us, "switched": counts,
            "loop_ms_per_iter": [x * 1e3 for x in loop], "per_iter": per_iter,
            "last_act": acts[-1].get().tolist() if acts else None}


def skip_cost(n: int = 1 << 20, launches: int = 20) -> float:
    """Microseconds per cycle-detection round that returns at once (its flag clear), in a
    captured graph: what each unneeded round of an iteration costs."""
    base = KN.cupy_launcher()
    ja, jb = cp.zeros(n, dtype=cp.int64), cp.zeros(n, dtype=cp.int64)
    cand, act = cp.zeros(n, dtype=cp.int8), cp.zeros(8, dtype=cp.int64)
    cp.cuda.Device().synchronize()
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        for _ in range(launches):
            base.launch("p_cyc", n, ja, n, jb, cand, act, 3)
        g = stream.end_capture()
        g.launch(stream)
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(stream)
        for _ in range(10):
            g.launch(stream)
        e.record(stream)
        e.synchronize()
    return cp.cuda.get_elapsed_time(s, e) * 1e3 / (10 * launches)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", default="random-1M-10M,model-1M-10M")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json")
    a = ap.parse_args()
    gen = OG._load_gen(OG._find("gen.py", None))
    print(f"a skipped round in a graph: {skip_cost():.2f} us", flush=True)
    out = []
    for name in a.graphs.split(","):
        fam, p = {**OG.GRAPHS, **OG.QUICK_GRAPHS}[name]
        t0 = time.perf_counter()
        n, u, v, c, t = OG._generate(gen, fam, p)
        csr = OG._csr(n, u, v, c, t)
        print(f"{name}: generated in {time.perf_counter() - t0:.1f} s", flush=True)
        r = profile(name, csr, a.reps)
        out.append(r)
        print(f"{name}: n={r['n']} m={r['m']} iters={r['iters']} loop ms/iter "
              f"{statistics.median(r['loop_ms_per_iter']):.3f} {r['loop_ms_per_iter']}; "
              f"graph replay alone {r['graph_replay_us']:.1f} us")
        print(f"  switched per iteration: {r['switched']}")
        fams = sorted({k for it in r["per_iter"] for k in it["fam_us"]})
        tot = collections.defaultdict(float)
        for i, it in enumerate(r["per_iter"]):
            for k, x in it["fam_us"].items():
                tot[k] += x
            if i < 6 or i >= len(r["per_iter"]) - 2:
                print(f"  it {i:2d} total {it['total_us']:7.1f} us  " +
                      " ".join(f"{k}={x:.1f}" for k, x in sorted(it["fam_us"].items())))
                for f, xs in it["rounds_us"].items():
                    print(f"     {f} rounds us: " + " ".join(f"{x:.1f}" for x in xs))
        k = len(r["per_iter"])
        print(f"  mean per iteration over {k}: total "
              f"{sum(it['total_us'] for it in r['per_iter']) / k:.1f} us; " +
              " ".join(f"{f}={tot[f] / k:.1f}" for f in fams), flush=True)
        print(f"  act flags of the last iteration: {r['last_act']}", flush=True)
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(out, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
