"""State generation: edges per second and peak bytes per edge, on cs_10.dve and BEEM models.

For each model, the best of ``--repeat`` timed runs of :func:`statespace.build_state_graph` on
the compiled model (parsing and compiling are timed apart), then one more run under
``tracemalloc`` for the peak memory of the exploration (NumPy reports its array allocations to
``tracemalloc``), divided by the number of edges. Targets on the 2-core CPU: at least 2.5 M
edges/s on ``cs_10.dve`` (SPIN, compiled C, on the same model) and at most 64 bytes of peak
memory per edge.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import time
import tracemalloc
from collections.abc import Callable

from . import Report, shared_roots

__all__ = ["BEEM_MODELS", "add_arguments", "default_models", "run"]

#: BEEM instances timed by default (mid-sized, varied: rendezvous, arrays, many words).
BEEM_MODELS = ("cyclic_scheduler.3.dve", "blocks.3.dve", "adding.2.dve", "bopdp.3.dve",
               "anderson.1.dve", "leader_election.4.dve")


def default_models(quick: bool = False) -> list[pathlib.Path]:
    """``cs_10.dve`` and :data:`BEEM_MODELS` found under the shared folder (``quick``: cs_7
    and one small BEEM model)."""
    for r in shared_roots():
        if (r / "models" / "cs_10.dve").is_file():
            if quick:
                return [r / "models" / "cs_7.dve", r / "beem" / "models" / "bridge.1.dve"]
            return [r / "models" / "cs_10.dve"] + [r / "beem" / "models" / m for m in BEEM_MODELS
                                                    if (r / "beem" / "models" / m).is_file()]
    return []


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``dvecost bench explore``."""
    p.add_argument("--model", action="append", type=pathlib.Path, metavar="FILE",
                   help="a model to time (repeatable; default: cs_10.dve and a set of BEEM "
                        "models from ../shared)")
    p.add_argument("--repeat", type=int, default=3, metavar="K",
                   help="timed runs per model; the best is reported (default 3)")
    p.add_argument("--quick", action="store_true", help="small models only (a smoke test)")
    p.add_argument("--no-memory", action="store_true", help="skip the tracemalloc run")


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    """Time state generation on each model; returns the report (never prints)."""
    import dve
    import statespace
    from dve.errors import ConfigurationError

    models = args.model or default_models(getattr(args, "quick", False))
    if not models:
        raise ConfigurationError("cs_10.dve not found: pass --model FILE or set DVECOST_SHARED")
    rows = []
    for path in models:
        progress(f"{path.name}: parse + compile")
        t0 = time.perf_counter()
        cm = statespace.compile_model(dve.load_model(path))
        t_parse = time.perf_counter() - t0
        best = best_cpu = float("inf")
        g = None
        for k in range(max(1, args.repeat)):
            progress(f"{path.name}: explore {k + 1}/{args.repeat}")
            g = None
            t0, c0 = time.perf_counter(), time.process_time()
            g = statespace.build_state_graph(cm)
            best = min(best, time.perf_counter() - t0)
            best_cpu = min(best_cpu, time.process_time() - c0)
        n_states, n_edges, graph_bytes = g.n_states, g.n_edges, g.nbytes
        del g
        peak = None
        if not getattr(args, "no_memory", False):
            progress(f"{path.name}: explore under tracemalloc")
            tracemalloc.start()
            tracemalloc.reset_peak()
            g = statespace.build_state_graph(cm)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            del g
        rows.append((path.name, n_states, n_edges, round(t_parse, 3), round(best, 3),
                     round(n_edges / best / 1e6, 3), round(best_cpu, 3),
                     round(n_edges / max(best_cpu, 1e-9) / 1e6, 3),
                     None if peak is None else round(peak / max(n_edges, 1), 1),
                     round(graph_bytes / max(n_edges, 1), 1)))
    notes = (("M edges/s: transitions generated per second of wall time, best of --repeat runs "
              "(target >= 2.5 on cs_10.dve); M edges/cpu-s: per second of this process's CPU "
              "time (NumPy runs on one thread), the fairer figure on a shared machine"),
             ("peak B/edge: tracemalloc peak of one exploration / edges (target <= 64); "
              "graph B/edge: the returned StateGraph's arrays / edges"),
             (f"cpu: {os.cpu_count()} cores ({platform.processor() or platform.machine()}); "
              f"load average {os.getloadavg()[0]:.1f} at the end"))
    return Report("State generation (dvecost bench explore)",
                  ("model", "states", "edges", "parse s", "explore s", "M edges/s",
                   "cpu s", "M edges/cpu-s", "peak B/edge", "graph B/edge"), tuple(rows), notes,
                  {"python": platform.python_version(), "cpus": os.cpu_count()})
