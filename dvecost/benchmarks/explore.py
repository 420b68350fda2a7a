"""State generation: edges per second and peak bytes per edge, on cs_10.dve and BEEM models.

For each model, the best of ``--repeat`` timed runs of :func:`statespace.build_state_graph` on
the compiled model (parsing and compiling are timed apart), then one more run under
``tracemalloc`` for the peak memory of the exploration (NumPy reports its array allocations to
``tracemalloc``), divided by the number of edges. Targets on the 2-core CPU: at least 2.5 M
edges/s on ``cs_10.dve`` (SPIN, compiled C, on the same model) and at most 64 bytes of peak
memory per edge.

``--backend gpu`` explores each model on the GPU (CuPy) as well, with the CPU explorer as the
same run's reference: the CPU figures, the GPU's first exploration in the process (CUDA start-up
and kernel compilation included), the best of ``--repeat`` later ones, the ratio, the device
memory CuPy's pool held, and whether the two graphs are identical array for array. Target
(issue 15): cs_12 at 50 M edges/s or more, 10 times the CPU explorer.
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
    p.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                   help="gpu: explore on the GPU too, the CPU explorer as the same run's "
                        "reference (default: cpu only)")


#: What the column ``GPU engine B/transition`` holds.
_ENGINE_NOTE = ("GPU engine B/transition: the device memory the cycle engine allocates at its "
                "peak on this graph (ocm.device_bytes, an estimate from the sizes of its "
                "buffers: 122 bytes a state, no array per edge when the graph is one piece), "
                "per transition, besides the edges it reads in place (B/transition)")


def _engine_bytes(g) -> int:
    """The GPU cycle engine's estimated peak device bytes on ``g`` (its charges' width)."""
    import ocm

    charge = g.charge
    return ocm.device_bytes(g.n_states, g.n_edges,
                            8 if charge is None else charge.dtype.itemsize)


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    """Time state generation on each model; returns the report (never prints)."""
    import dve
    import statespace
    from dve.errors import ConfigurationError

    models = args.model or default_models(getattr(args, "quick", False))
    if not models:
        raise ConfigurationError("cs_10.dve not found: pass --model FILE or set DVECOST_SHARED")
    if getattr(args, "backend", "cpu") == "gpu":
        return _run_gpu(args, models, progress)
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
        edge_bytes = g.edge_bytes()
        engine = _engine_bytes(g)
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
                     round(graph_bytes / max(n_edges, 1), 1),
                     round(edge_bytes / max(n_edges, 1), 2),
                     round(engine / max(n_edges, 1), 2)))
    notes = (("M edges/s: transitions generated per second of wall time, best of --repeat runs "
              "(target >= 2.5 on cs_10.dve); M edges/cpu-s: per second of this process's CPU "
              "time (NumPy runs on one thread), the fairer figure on a shared machine"),
             ("peak B/edge: tracemalloc peak of one exploration / edges (target <= 64); "
              "graph B/edge: the returned StateGraph's arrays / edges; B/transition: its "
              "edges alone (target, action and palette row per edge, and the palette: "
              "StateGraph.edge_bytes), target <= 12"),
             _ENGINE_NOTE,
             (f"cpu: {os.cpu_count()} cores ({platform.processor() or platform.machine()}); "
              f"load average {os.getloadavg()[0]:.1f} at the end"))
    return Report("State generation (dvecost bench explore)",
                  ("model", "states", "edges", "parse s", "explore s", "M edges/s",
                   "cpu s", "M edges/cpu-s", "peak B/edge", "graph B/edge", "B/transition",
                   "GPU engine B/transition"),
                  tuple(rows), notes,
                  {"python": platform.python_version(), "cpus": os.cpu_count()})


def _run_gpu(args: argparse.Namespace, models, progress: Callable[[str], None]) -> Report:
    """The GPU explorer against the CPU explorer, model by model, in one process."""
    import numpy as np

    import dve
    import statespace
    from ocm.backend import resolve_backend
    from runtime.device import array_module

    cupy = array_module(resolve_backend("gpu", 0))   # BackendUnavailableError without one
    pool = cupy.get_default_memory_pool()
    repeat = max(1, args.repeat)
    rows = []
    for path in models:
        progress(f"{path.name}: parse + compile")
        cm = statespace.compile_model(dve.load_model(path))
        cpu = float("inf")
        ref = None
        for k in range(repeat):
            progress(f"{path.name}: CPU explore {k + 1}/{repeat}")
            ref = None
            t0 = time.perf_counter()
            ref = statespace.build_state_graph(cm)
            cpu = min(cpu, time.perf_counter() - t0)
        gpu, first, held = float("inf"), None, 0
        for k in range(repeat + 1):
            progress(f"{path.name}: GPU explore {k + 1}/{repeat + 1}")
            g = None
            pool.free_all_blocks()
            t0 = time.perf_counter()
            # The graph on the host inside the clock (the explorer leaves its arrays on the
            # device until read); a full device stops the run.
            g = statespace.build_state_graph(cm, xp=cupy, on_device_full="stop").released()
            dt = time.perf_counter() - t0
            held = max(held, pool.total_bytes())
            if first is None:
                first = dt
            else:
                gpu = min(gpu, dt)
        same = _same_graph(ref, g, np)
        m = ref.n_edges
        rows.append((path.name, ref.n_states, m, round(cpu, 3), round(m / cpu / 1e6, 2),
                     round(first, 3), round(gpu, 3), round(m / gpu / 1e6, 2),
                     round(cpu / gpu, 1), round(held / 2**20, 1),
                     round(g.edge_bytes() / max(m, 1), 2),
                     round(_engine_bytes(g) / max(m, 1), 2), same))
        del ref, g
        pool.free_all_blocks()
    dev = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else dev
    notes = ((f"same run, one process: CPU = statespace.build_state_graph(cm) (NumPy, one "
              f"thread), GPU = build_state_graph(cm, xp=cupy) on {dev}; best of {repeat} runs "
              "each, parsing and compiling excluded; the GPU's graph is copied to the host "
              "before the clock stops"),
             "GPU first s: the process's first GPU exploration of the model (kernel "
             "compilation and CUDA start-up included; CuPy's on-disk kernel cache cuts it on "
             "later processes)",
             "device MiB: the most CuPy's memory pool held during one exploration; "
             "B/transition: the graph's edges alone (StateGraph.edge_bytes) / edges; identical: "
             "every array of the two graphs equal", _ENGINE_NOTE,
             f"cpu: {os.cpu_count()} cores ({platform.processor() or platform.machine()})")
    return Report("State generation on the GPU (dvecost bench explore --backend gpu)",
                  ("model", "states", "edges", "CPU s", "CPU M edges/s", "GPU first s",
                   "GPU s", "GPU M edges/s", "GPU/CPU", "device MiB", "B/transition",
                   "GPU engine B/transition", "identical"),
                  tuple(rows), notes, {"python": platform.python_version(),
                                       "cpus": os.cpu_count(), "device": dev})


def _same_graph(a, b, np) -> bool:
    """Every array and count of two state graphs equal (dtype included)."""
    names = ("indptr", "indices", "time", "action", "states", "parent", "parent_action",
             "deadlocks")
    arrays = [(getattr(a, k), getattr(b, k)) for k in names]
    if a.charge is not None or b.charge is not None:   # the compact form itself too
        if a.charge is None or b.charge is None:
            return False
        arrays += [(a.charge, b.charge), (a.palette.time, b.palette.time)]
        arrays += [(a.palette.costs[r], b.palette.costs[r]) for r in a.palette.costs]
    arrays += [(a.costs[r], b.costs[r]) for r in a.costs]
    return (a.costs.keys() == b.costs.keys()
            and all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in arrays)
            and (a.error_state, a.depth, a.n_expanded) == (b.error_state, b.depth, b.n_expanded))
