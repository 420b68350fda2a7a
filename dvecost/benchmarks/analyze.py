"""End to end: ``dvecost analyze`` against exploration alone (target: at most 5x), on cs_10.dve.

For each model, the best of ``--repeat`` runs of:

- *explore*: :func:`statespace.build_state_graph` on the compiled model (what ``dvecost
  explore`` spends its time on; loading and compiling the model are timed apart as *parse*);
- *analyze*: the whole of :func:`dvecost.analyze` (parse, explore, SCCs, Howard, certificate,
  decoding the critical cycle and the traces), for the cycle mean and for the cycle ratio.

The ratio ``analyze / explore`` is the figure the target is about: the analysis on top of a
state space should cost little more than building it.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import time
from typing import Callable

from . import Report, shared_roots

__all__ = ["add_arguments", "run", "default_models"]


def default_models() -> list[pathlib.Path]:
    """``cs_10.dve`` from the shared models folder (``$DVECOST_SHARED/models``, else
    ``../shared/models`` next to the working directory or the source tree)."""
    for r in shared_roots():
        p = r / "models" / "cs_10.dve"
        if p.is_file():
            return [p]
    return []


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", action="append", type=pathlib.Path, metavar="FILE",
                   help="a model to time (repeatable; default: ../shared/models/cs_10.dve)")
    p.add_argument("--repeat", type=int, default=3, metavar="K",
                   help="runs per measurement; the best is reported (default 3)")
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="cpu",
                   help="cycle engine backend (default cpu)")


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    import dve
    import statespace
    from dve.errors import ConfigurationError

    from ..analysis import analyze

    models = args.model or default_models()
    if not models:
        raise ConfigurationError("cs_10.dve not found: pass --model FILE or set DVECOST_SHARED")
    rows = []
    notes = []
    for path in models:
        progress(f"{path.name}: parse + compile")
        t0 = time.perf_counter()
        compiled = statespace.compile_model(dve.load_model(path))
        t_parse = time.perf_counter() - t0
        t_explore = float("inf")
        graph = None
        for k in range(args.repeat):
            progress(f"{path.name}: explore {k + 1}/{args.repeat}")
            graph = None  # free the previous graph before building the next
            t0 = time.perf_counter()
            graph = statespace.build_state_graph(compiled)
            t_explore = min(t_explore, time.perf_counter() - t0)
        n_states = len(graph.indptr) - 1
        n_edges = int(graph.indptr[-1])
        del graph
        best = {}
        for kind in ("mean", "ratio"):
            t_best, a_best = float("inf"), None
            for k in range(args.repeat):
                progress(f"{path.name}: analyze --{kind} {k + 1}/{args.repeat}")
                t0 = time.perf_counter()
                a = analyze(path, ratio=kind == "ratio", backend=args.backend)
                t = time.perf_counter() - t0
                if t < t_best:
                    t_best, a_best = t, a
                del a
            best[kind] = (t_best, a_best)
        for kind, (t, a) in best.items():
            phases = ", ".join(f"{k} {v:.2f}" for k, v in a.seconds.items())
            rows.append((path.name, kind, n_states, n_edges, round(t_parse, 3),
                         round(t_explore, 3), round(t, 3),
                         round(t / max(t_explore, 1e-9), 2), a.exact, a.iterations, a.backend))
            notes.append(f"{path.name} --{kind}: phases (s): {phases}")
    notes.append("ratio = analyze (whole pipeline, parse included) / explore "
                 "(build_state_graph alone); target <= 5")
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "repeat": args.repeat}
    return Report(title="End to end: analyze vs exploration alone",
                  columns=("model", "kind", "states", "edges", "parse_s", "explore_s",
                           "analyze_s", "ratio", "optimum", "iterations", "backend"),
                  rows=tuple(rows), notes=tuple(notes), meta=meta)
