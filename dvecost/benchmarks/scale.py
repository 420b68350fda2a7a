"""Scaling over processes: states/s, edges/s and bytes per transition of the distributed search
for P = 1, 2, 4 in one run (issue 26), against the one-process explorer.

Each P runs as ``mpiexec -n P`` processes (this module as the program) exploring the model
with :func:`statespace.dist.explore_distributed`, best of ``--repeat``; the one-process
explorer (:func:`statespace.build_state_graph`) is timed in the same run as the reference.
``search`` is the levels (the graph spread over the processes), ``total`` adds gathering it
to process 0 for the cycle engine. ``B/transition`` is the gathered graph's edge bytes per
transition (:meth:`StateGraph.edge_bytes`), ``sent B/transition`` the bytes all processes sent
to others during the levels (measured; the gather excluded) per transition: a successor's key
and rank to its owner when that is another process, its id back as int32 while ids fit.
Speed-ups are against P = 1 of the same run; on a machine shared with other work they measure
what the processes got, not the code.
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
                   help="timed runs per process count; the best is reported (default 2)")


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
    rows, notes = [], []
    ref = _one_process(model, args.repeat)
    progress(f"one process: {ref['total']:.2f} s")
    rows.append(("build_state_graph", ref["states"], ref["transitions"], None, None,
                 ref["total"], ref["states"] / ref["total"], ref["transitions"] / ref["total"],
                 ref["bytes"], None, None, None))
    launcher = _mpiexec()
    base = None
    for p in procs:
        if p > 1 and launcher is None:
            notes.append(f"P = {p} skipped: no mpiexec (pip install 'dvecost[dist]')")
            continue
        got = _distributed(launcher, p, model, args.repeat)
        progress(f"P = {p}: search {got['search']:.2f} s, total {got['total']:.2f} s")
        base = base or got
        rows.append((f"P = {p}", got["states"], got["transitions"], got["search"],
                     got["gather"], got["total"], got["states"] / got["search"],
                     got["transitions"] / got["search"], got["bytes"], got["sent"],
                     base["search"] / got["search"], base["total"] / got["total"]))
    notes.append(f"model {model.name}; states/s and edges/s over the search; speed-ups "
                 f"against the first P of this run; {os.cpu_count()} CPUs, "
                 f"load average {os.getloadavg()[0]:.1f} at the end")
    return Report("Distributed exploration: scaling over processes",
                  ("run", "states", "transitions", "search s", "gather s", "total s",
                   "states/s", "edges/s", "B/transition", "sent B/transition",
                   "speed-up search", "speed-up total"), tuple(rows), tuple(notes))


def _one_process(model: pathlib.Path, repeat: int) -> dict:
    import dve
    from statespace import build_state_graph, compile_model
    cm = compile_model(dve.load_model(str(model)))
    best = None
    for _ in range(max(1, repeat)):
        t = time.perf_counter()
        g = build_state_graph(cm)
        dt = time.perf_counter() - t
        best = dt if best is None else min(best, dt)
    return {"states": g.n_states, "transitions": g.n_edges, "total": best,
            "bytes": g.edge_bytes() / max(g.n_edges, 1)}


def _distributed(launcher: str | None, p: int, model: pathlib.Path, repeat: int) -> dict:
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
        t = time.perf_counter()
        timings: dict = {}
        g = explore_distributed(cm, comm, timings=timings)
        comm.barrier()
        total = time.perf_counter() - t
        search = comm.allreduce(timings["search"], "max")
        sent = comm.allreduce(int(timings["sent"]))
        if best is None or total < best["total"]:
            best = {"total": total, "search": search, "gather": total - search, "graph": g,
                    "sent_bytes": sent}
    if comm.rank == 0:
        g = best.pop("graph")
        print(json.dumps({**best, "states": g.n_states, "transitions": g.n_edges,
                          "bytes": g.edge_bytes() / max(g.n_edges, 1),
                          "sent": best["sent_bytes"] / max(g.n_edges, 1)}))


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]))
