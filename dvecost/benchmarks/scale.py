"""Scaling over processes: states/s, edges/s and bytes per transition of the distributed search
for P = 1, 2, 4 in one run (issue 26), against the one-process explorer.

Each P runs as ``mpiexec -n P`` processes (this module as the program) exploring the model
with :func:`statespace.dist.explore_distributed`; the one-process explorer
(:func:`statespace.build_state_graph`) is timed in the same run as the reference, in
``--repeat`` interleaved rounds (the best of each kept). ``search`` is the levels (the graph
spread over the processes), ``total`` adds gathering it to process 0 for the cycle engine;
``CPU s`` is the busiest process's CPU seconds. ``B/transition`` is the gathered graph's edge
bytes per transition (:meth:`StateGraph.edge_bytes`), ``sent B/transition`` the bytes all
processes sent to others during the levels (measured; the gather excluded) per transition: a
successor's key and rank to its owner when that is another process, its id back as int32
while ids fit. Speed-ups are against P = 1 of the same run, ``vs one process`` against the
one-process explorer; on a machine shared with other work they measure what the processes
got, not the code.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time
from collections.abc import Callable

from . import Report, shared_roots

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``dvecost bench scale``."""
    p.add_argument("--model", type=pathlib.Path, metavar="FILE",
                   help="the model (default: cs_10.dve from ../shared/models)")
    p.add_argument("--procs", default="1,2,4", metavar="LIST",
                   help="process counts, comma-separated (default 1,2,4)")
    p.add_argument("--repeat", type=int, default=2, metavar="K",
                   help="rounds, each timing every run; the best of each is reported "
                        "(default 2)")


def _default_model() -> pathlib.Path | None:
    for r in shared_roots():
        if (r / "models" / "cs_10.dve").is_file():
            return r / "models" / "cs_10.dve"
    return None


def _mpiexec() -> str | None:
    return shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")


def run(args: argparse.Namespace, progress: Callable[[str], None]) -> Report:
    from dve.errors import ConfigurationError
    model = args.model or _default_model()
    if model is None:
        raise ConfigurationError("no model: give --model FILE (cs_10.dve not found in "
                                 "../shared/models)")
    procs = [int(p) for p in str(args.procs).split(",") if p.strip()]
    launcher = _mpiexec()
    notes = [f"P = {p} skipped: no mpiexec (pip install 'dvecost[dist]')"
             for p in procs if p > 1 and launcher is None]
    procs = [p for p in procs if p == 1 or launcher is not None]
    # Rounds, each timing every run once, the best of each kept: on a shared machine the
    # load drifts, and interleaving gives every run the same chances.
    ref, best = None, {}
    for _ in range(max(1, args.repeat)):
        got = _one_process(model)
        ref = got if ref is None or got["total"] < ref["total"] else ref
        for p in procs:
            # Two runs in the processes, the first warming them (their first search pays
            # for lazy imports and first calls, which the one-process reference has paid).
            got = _distributed(launcher, p, model, 2)
            if p not in best or got["total"] < best[p]["total"]:
                best[p] = got
    progress(f"one process: {ref['total']:.2f} s")
    rows = [("build_state_graph", ref["states"], ref["transitions"], None, None,
             ref["total"], ref["cpu"], ref["states"] / ref["total"],
             ref["transitions"] / ref["total"], ref["bytes"], None, None, None, 1.0)]
    base = best[procs[0]] if procs else None
    for p in procs:
        got = best[p]
        progress(f"P = {p}: search {got['search']:.2f} s, total {got['total']:.2f} s")
        rows.append((f"P = {p}", got["states"], got["transitions"], got["search"],
                     got["gather"], got["total"], got["cpu"], got["states"] / got["search"],
                     got["transitions"] / got["search"], got["bytes"], got["sent"],
                     base["search"] / got["search"], base["total"] / got["total"],
                     ref["total"] / got["total"]))
    notes.append(f"model {model.name}; best of {max(1, args.repeat)} interleaved rounds; "
                 f"states/s and edges/s over the search; 'CPU s' is the busiest process's CPU "
                 f"seconds (waiting in a collective spins, so it counts); speed-ups against "
                 f"the first P of this run, 'vs one process' against build_state_graph's "
                 f"total; {os.cpu_count()} CPUs, load average "
                 f"{os.getloadavg()[0]:.1f} at the end")
    return Report("Distributed exploration: scaling over processes",
                  ("run", "states", "transitions", "search s", "gather s", "total s", "CPU s",
                   "states/s", "edges/s", "B/transition", "sent B/transition",
                   "speed-up search", "speed-up total", "vs one process"), tuple(rows),
                  tuple(notes))


def _one_process(model: pathlib.Path) -> dict:
    import dve
    from statespace import build_state_graph, compile_model
    cm = compile_model(dve.load_model(str(model)))
    t, c = time.perf_counter(), time.process_time()
    g = build_state_graph(cm)
    dt, dc = time.perf_counter() - t, time.process_time() - c
    return {"states": g.n_states, "transitions": g.n_edges, "total": dt, "cpu": dc,
            "bytes": g.edge_bytes() / max(g.n_edges, 1)}


def _distributed(launcher: str | None, p: int, model: pathlib.Path, repeat: int = 1) -> dict:
    here = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(here)] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x]))
    cmd = [sys.executable, "-m", "dvecost.benchmarks.scale", str(model), str(repeat)]
    if launcher is not None:
        cmd = [launcher, "-n", str(p)] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _worker(model: str, repeat: int) -> None:
    """One process of a timed distributed run (run by ``mpiexec``): process 0 prints the
    best run's figures as one JSON line."""
    import dve
    from runtime.comm import world
    from statespace import compile_model
    from statespace.dist import explore_distributed
    comm = world()
    cm = compile_model(dve.load_model(model))
    best = None
    for _ in range(max(1, repeat)):
        comm.barrier()
        t, c = time.perf_counter(), time.process_time()
        timings: dict = {}
        g = explore_distributed(cm, comm, timings=timings)
        cpu = comm.allreduce(time.process_time() - c, "max")
        comm.barrier()
        total = time.perf_counter() - t
        search = comm.allreduce(timings["search"], "max")
        sent = comm.allreduce(int(timings["sent"]))
        if best is None or total < best["total"]:
            best = {"total": total, "search": search, "gather": total - search, "graph": g,
                    "sent_bytes": sent, "cpu": cpu}
    if comm.rank == 0:
        g = best.pop("graph")
        print(json.dumps({**best, "states": g.n_states, "transitions": g.n_edges,
                          "bytes": g.edge_bytes() / max(g.n_edges, 1),
                          "sent": best["sent_bytes"] / max(g.n_edges, 1)}))


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]))
