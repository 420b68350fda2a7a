"""Where GPU exploration spends its time: a cProfile of one warm exploration, and per-model
CPU and GPU times with a time limit each (run on the device; see run_explore_gpu.sh).

    python3 tools/device/profile_explore.py MODEL.dve [--models A.dve B.dve ...] [--limit S]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import signal
import time

import cupy

import dve
import statespace


def _explore(path, xp, **kw):
    cm = statespace.compile_model(dve.load_model(path))
    t0 = time.perf_counter()
    g = statespace.build_state_graph(cm, xp=xp, **kw)
    return g, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--models", nargs="*", default=[])
    ap.add_argument("--limit", type=int, default=30)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--host-below", type=int, default=None,
                    help="Explorer.device_min_rows (chunks smaller than this on the host)")
    args = ap.parse_args()
    if args.host_below is not None:
        from statespace.explore import Explorer
        Explorer.device_min_rows = args.host_below
    _explore(args.model, cupy)   # warm: kernels compiled
    prof = cProfile.Profile()
    prof.enable()
    g, dt = _explore(args.model, cupy)
    prof.disable()
    print(f"{args.model}: {g.n_states} states, {g.n_edges} edges, GPU {dt:.3f} s")
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(args.top)
    st.sort_stats("cumtime").print_stats(25)

    def stop(*_):
        raise TimeoutError

    signal.signal(signal.SIGALRM, stop)
    for path in args.models:
        row = [path]
        for xp in (__import__("numpy"), cupy, cupy):
            signal.alarm(args.limit)
            try:
                g, dt = _explore(path, xp)
                row.append(f"{dt:.3f}")
            except TimeoutError:
                row.append(f">{args.limit}")
            finally:
                signal.alarm(0)
        print("model cpu gpu-first gpu:", *row, flush=True)


if __name__ == "__main__":
    main()
