"""Scaling over processes or GPUs: states/s, edges/s and bytes per transition of the distributed
search for P = 1, 2, 4 in one run (issue 26), strong and weak scaling, against the one-process
explorer.

Each P runs as ``mpiexec -n P`` processes (this module as the program) exploring with
:func:`statespace.dist.explore_distributed`: on the CPU (``--procs``, MPI), or one process per
GPU exchanging through NCCL (``--gpus``), where the search runs on the devices. Two kinds of
rows:

- *strong* scaling: one model (``--model``) for every P; the one-process explorer
  (:func:`statespace.build_state_graph`, on the GPU with ``--gpus``) is timed in the same run
  as the reference. ``efficiency`` is the search's speed-up over the first P divided by P's
  ratio to it;
- *weak* scaling (``--weak N1,N2,...``, one client count per P): the client/server family
  rendered for ``N`` clients (``--family``, by default the bundled
  ``client_server_template.dve``, the family of the ``cs_N`` models: the same state spaces), so
  that the states per process stay about constant while P grows. ``efficiency`` is the edges/s
  per process against the first P's (sizes differ a little: per-process throughput, not
  time, is compared).

Every run is timed in ``--repeat`` interleaved rounds, the best kept (each distributed run
searches twice in its processes, the first warming them: lazy imports, the kernel's
compilation). ``search`` is the levels (the graph spread over the processes), ``total`` adds
the hand-over to process 0 for the cycle engine; ``engine s`` is the cycle engine's (the
cycle mean of the model's first resource): across the processes on the graph left in blocks
(:mod:`ocm.dist`, as ``dvecost analyze`` runs it, the slowest process's), and the one-process
engine for the reference row; ``CPU s`` is the busiest process's CPU
seconds, and ``CPU vs one process`` the one-process explorer's CPU seconds against it (the
figure a shared machine spoils least; a note below the table puts both ratios in words for each
strong row of P > 1: issue 26's CPU target). ``B/transition`` is the gathered graph's edge bytes per transition
(:meth:`StateGraph.edge_bytes`), ``rows B/transition`` what the processes kept of the edges
while searching (on the devices with ``--gpus``), ``sent B/transition`` the bytes all processes
sent to others during the levels (measured; the hand-over excluded) per transition: a
successor's key and rank to its owner when that is another process, its id back as int32
while ids fit, and a new state's key and smallest rank to the process that numbers it, its id
back. Below the table, for each distributed row, the CPU seconds by phase of the levels
(``expand``, ``route``, ``keys out``, ``visited``, ``agree``, ``number``, ``targets back``,
``rows``, ``owned``: see :func:`statespace.dist.explore_distributed`'s ``timings``), each the
busiest process's, and the hand-over's wall seconds (also in the JSON's ``meta``, under
``phases``); and what a level costs (:func:`level_costs`: the count of levels, the mean wall
time of the smallest third, the largest; ``meta``'s ``levels``), the cost a level pays
whatever its size showing in the smallest. On a machine shared with other work the figures measure what the processes got,
not the code. ``--jsonl FILE`` appends each row as one JSON line (the report's columns as
keys) once the rounds are done.
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

__all__ = ["add_arguments", "run", "COLUMNS"]

#: The bundled template of the client/server family (``-D N``): the weak-scaling models.
FAMILY = pathlib.Path(__file__).resolve().parents[1] / "examples" / \
    "client_server_template.dve"

#: The report's columns (and each JSON line's keys).
COLUMNS = ("run", "scaling", "P", "model", "states", "transitions", "search s", "gather s",
           "total s", "CPU s", "states/s", "edges/s", "B/transition", "rows B/transition",
           "sent B/transition", "speed-up search", "efficiency", "vs one process",
           "CPU vs one process", "engine s")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``dvecost bench scale``."""
    p.add_argument("--model", type=pathlib.Path, metavar="FILE",
                   help="the strong-scaling model (default: cs_10.dve of the benchmark folder, "
                        "else the family at N=10)")
    p.add_argument("--strong", type=int, metavar="N",
                   help="the strong-scaling model is the family (--family) at N clients "
                        "instead of --model")
    p.add_argument("--procs", default="1,2,4", metavar="LIST",
                   help="process counts on the CPU, comma-separated (default 1,2,4)")
    p.add_argument("--gpus", metavar="LIST",
                   help="GPU counts instead of --procs: one process per GPU of this host, "
                        "exchanging through NCCL, the search on the devices (e.g. 1,2,4)")
    p.add_argument("--weak", metavar="LIST",
                   help="weak scaling too: the family's client count for each P, in the "
                        "order of --procs/--gpus (e.g. 13,14,14)")
    p.add_argument("--family", type=pathlib.Path, metavar="FILE", default=FAMILY,
                   help="the weak-scaling family, a template with 'input int N' (default: "
                        "the bundled client_server_template.dve)")
    p.add_argument("--no-strong", action="store_true",
                   help="weak-scaling rows only (no strong-scaling model, no reference)")
    p.add_argument("--repeat", type=int, default=2, metavar="K",
                   help="rounds, each timing every run; the best of each is reported "
                        "(default 2)")
    p.add_argument("--no-engine", action="store_true",
                   help="time the exploration only: no cycle engine after it ('engine s' "
                        "empty)")
    p.add_argument("--no-gather", action="store_true",
                   help="the distributed runs' search alone: the graph stays spread over the "
                        "processes (counts only, 'gather s' and 'B/transition' empty), for "
                        "models whose gathered graph would not fit process 0")
    p.add_argument("--jsonl", type=pathlib.Path, metavar="FILE",
                   help="also append each row to FILE as one JSON line")


def _default_model() -> tuple[pathlib.Path, int | None]:
    for r in shared_roots():
        if (r / "models" / "cs_10.dve").is_file():
            return r / "models" / "cs_10.dve", None
    return FAMILY, 10


def _mpiexec() -> str | None:
    return shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")


def _counts(text: str, what: str) -> list[int]:
    from dve.errors import ConfigurationError
    try:
        got = [int(p) for p in str(text).split(",") if p.strip()]
    except ValueError:
        got = []
    if not got or min(got) < 1:
        raise ConfigurationError(f"{what} {text!r}: expected positive integers separated by "
                                 "commas, e.g. 1,2,4")
    return got


def run(args: argparse.Namespace, progress: Callable[[str], None]) -> Report:
    from dve.errors import ConfigurationError
    gpus = args.gpus is not None
    procs = _counts(args.gpus if gpus else args.procs, "--gpus" if gpus else "--procs")
    weak = _counts(args.weak, "--weak") if args.weak else []
    if weak and len(weak) != len(procs):
        raise ConfigurationError(f"--weak gives {len(weak)} client counts for {len(procs)} "
                                 f"process counts: one per P")
    if args.no_strong and not weak:
        raise ConfigurationError("--no-strong leaves nothing to run: give --weak")
    if args.strong is not None:
        if args.model is not None or args.strong < 1:
            raise ConfigurationError("--strong N (N >= 1) names the strong-scaling model; "
                                     "give it or --model, not both")
        model, defines = args.family, args.strong
    else:
        model, defines = (args.model, None) if args.model else _default_model()
    launcher = _mpiexec()
    notes = [f"P = {p} skipped: no mpiexec (pip install 'dvecost[dist]')"
             for p in procs if p > 1 and launcher is None]
    procs_ok = [p for p in procs if p == 1 or launcher is not None]
    # The runs: (scaling, P, model, N); the strong ones share one model.
    runs = [] if args.no_strong else [("strong", p, model, defines) for p in procs_ok]
    runs += [("weak", p, args.family, n) for p, n in zip(procs, weak) if p in procs_ok]
    sink = open(args.jsonl, "a") if args.jsonl else None
    try:
        # Rounds, each timing every run once, the best of each kept: on a shared machine the
        # load drifts, and interleaving gives every run the same chances.
        ref, best = None, {}
        for _ in range(max(1, args.repeat)):
            if not args.no_strong:
                got = _one_process(model, defines, gpus, not args.no_engine)
                ref = got if ref is None or got["total"] < ref["total"] else ref
            for key in runs:
                got = _distributed(launcher, key[1], key[2], key[3], gpus, 2,
                                   not args.no_engine, not args.no_gather)
                if key not in best or got["total"] < best[key]["total"]:
                    best[key] = got
        rows = []
        if ref is not None:
            progress(f"one {'GPU' if gpus else 'process'}: {ref['total']:.2f} s")
            rows.append(_row("build_state_graph" + (" (GPU)" if gpus else ""), "strong", 1,
                             _name(model, defines), ref, None, None, ref))
        for scaling in ("strong", "weak"):
            mine = [k for k in runs if k[0] == scaling]
            base = best[mine[0]] if mine else None
            for key in mine:
                got = best[key]
                progress(f"{scaling} P = {key[1]}: search {got['search']:.2f} s, total "
                         f"{got['total']:.2f} s")
                rows.append(_row(f"P = {key[1]}", scaling, key[1], _name(key[2], key[3]), got,
                                 base, mine[0][1], ref if scaling == "strong" else None))
        for r in rows:
            if sink is not None:
                sink.write(json.dumps(dict(zip(COLUMNS, r))) + "\n")
                sink.flush()
    finally:
        if sink is not None:
            sink.close()
    phases, levels = {}, {}
    for key in runs:
        label = f"{key[0]} P = {key[1]}"
        phases[label] = best[key]["phases"]
        levels[label] = lv = best[key]["levels"]
        notes.append(f"{label}: CPU s by phase (busiest process each): " + ", ".join(
            f"{k} {v:.3f}" for k, v in best[key]["phases"].items()))
        notes.append(f"{label}: {lv['levels']} levels; a level of the smallest third "
                     f"{lv['smallest third ms']:.2f} ms, the largest {lv['largest ms']:.2f} ms "
                     f"(wall, each level's slowest process)")
    if ref is not None:
        notes += [_against_one(ref, best[k], k[1], args.no_gather, gpus) for k in runs
                  if k[0] == "strong" and k[1] > 1]
    where = "GPUs (NCCL)" if gpus else "CPU processes (MPI)"
    notes.append(f"{where}; best of {max(1, args.repeat)} interleaved rounds; states/s and "
                 f"edges/s over the search; 'CPU s' is the busiest process's CPU seconds "
                 f"(waiting in a collective spins, so it counts); speed-up and efficiency "
                 f"against the first P of the same scaling: strong, speed-up / (P / P0); weak "
                 f"(no speed-up: the models differ), edges/s per process / P0's; 'vs one "
                 f"process' against build_state_graph's total, 'CPU vs one process' its CPU "
                 f"against the busiest process's; {os.cpu_count()} CPUs, load "
                 f"average {os.getloadavg()[0]:.1f} at the end")
    return Report("Distributed exploration: scaling over " + ("GPUs" if gpus else "processes"),
                  COLUMNS, tuple(rows), tuple(notes), {"phases": phases, "levels": levels})


def _against_one(ref: dict, got: dict, p: int, no_gather: bool, gpus: bool) -> str:
    """The figure issue 26's CPU target names, in words: P processes against the one-process
    explorer of the same run, by wall (the total: the search, and the hand-over unless
    ``--no-gather``) and by the busiest process's CPU.

    >>> _against_one({"total": 0.5, "cpu": 0.5}, {"total": 0.25, "cpu": 0.3}, 2, True, False)
    'P = 2 explores 2.00x as fast as one process (wall 0.250 s against 0.500 s; busiest process CPU 0.300 s against 0.500 s: 1.67x), the search alone'
    """
    one = "one GPU" if gpus else "one process"
    what = "the search alone" if no_gather else "search and hand-over to process 0"
    return (f"P = {p} explores {ref['total'] / got['total']:.2f}x as fast as {one} (wall "
            f"{got['total']:.3f} s against {ref['total']:.3f} s; busiest process CPU "
            f"{got['cpu']:.3f} s against {ref['cpu']:.3f} s: "
            f"{ref['cpu'] / max(got['cpu'], 1e-9):.2f}x), {what}")


def _name(model: pathlib.Path, n: int | None) -> str:
    return model.name + ("" if n is None else f" N={n}")


def _row(run: str, scaling: str, p: int, name: str, got: dict, base: dict | None,
         p0: int | None, ref: dict | None) -> tuple:
    """One line of the report (see :data:`COLUMNS`)."""
    m = max(got["transitions"], 1)
    speed = eff = None
    if base is not None:
        if scaling == "strong":
            speed = base["search"] / got["search"]
            eff = speed / (p / p0)
        else:
            eff = (got["transitions"] / got["search"] / p) / \
                (base["transitions"] / base["search"] / p0)
    return (run, scaling, p, name, got["states"], got["transitions"], got.get("search"),
            got.get("gather"), got["total"], got["cpu"],
            got["states"] / got.get("search", got["total"]),
            got["transitions"] / got.get("search", got["total"]), got["bytes"],
            got.get("row_bytes", 0) / m if "row_bytes" in got else None, got.get("sent"),
            speed, eff, None if ref is None else ref["total"] / got["total"],
            None if ref is None else ref["cpu"] / max(got["cpu"], 1e-9), got.get("engine"))


def _load(model: str, n: int | None):
    import dve
    from statespace import compile_model
    return compile_model(dve.load_model(model, defines=None if n is None else {"N": n}))


def _one_process(model: pathlib.Path, n: int | None, gpu: bool, engine: bool = True) -> dict:
    from statespace import build_state_graph
    cm = _load(str(model), n)
    xp = None
    if gpu:
        from runtime.device import array_module
        xp = array_module("gpu")
    t, c = time.perf_counter(), time.process_time()
    g = build_state_graph(cm) if xp is None else build_state_graph(cm, xp=xp)
    if xp is not None:
        xp.cuda.Stream.null.synchronize()
    dt, dc = time.perf_counter() - t, time.process_time() - c
    return {"states": g.n_states, "transitions": g.n_edges, "total": dt, "cpu": dc,
            "bytes": g.edge_bytes() / max(g.n_edges, 1),
            "engine": _engine_seconds(g, cm, "gpu" if gpu else "cpu") if engine else None}


def _engine_seconds(g, cm, backend: str) -> float | None:
    """Seconds of the one-process cycle engine (the cycle mean of the first resource) on
    ``g``; None when the graph has no answer."""
    import ocm
    import scipy.sparse.csgraph  # noqa: F401 - imported before the clock, as P's runs have it
    from dvecost import pipeline
    t = time.perf_counter()
    try:
        ocm.optimal_cycle(*pipeline.engine_arrays(g, cm.resources[0], ratio=False,
                                                  backend=backend), backend=backend)
    except ocm.errors.AnalysisError:
        return None
    return time.perf_counter() - t


def _distributed(launcher: str | None, p: int, model: pathlib.Path, n: int | None, gpu: bool,
                 repeat: int = 1, engine: bool = True, gather: bool = True) -> dict:
    here = pathlib.Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(here)] + [x for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x]))
    if gpu:
        env["DVECOST_COMM"] = "nccl"
    cmd = [sys.executable, "-m", "dvecost.benchmarks.scale", str(model), str(repeat),
           "" if n is None else str(n), "1" if engine else "0", "1" if gather else "0"]
    if launcher is not None:
        cmd = [launcher, "-n", str(p)] + cmd
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0:
        from runtime.errors import StateSpaceError
        raise StateSpaceError(failed_run(p, _name(model, n), out.returncode, out.stderr))
    return json.loads(out.stdout.strip().splitlines()[-1])


def failed_run(p: int, name: str, code: int, stderr: str) -> str:
    """What a timed run that failed tells the user: which run, its exit code and the line of
    its error output that says why (the last that names an error, else the last line).

    >>> failed_run(1, "cs.dve N=15", 1, "Traceback ...\\n  x\\ncupy...OutOfMemoryError: Out of "
    ...            "memory allocating 13 bytes\\n-----\\nmpiexec detected ...\\n")[-73:]
    '(exit code 1): cupy...OutOfMemoryError: Out of memory allocating 13 bytes'
    """
    lines = [s.strip() for s in stderr.splitlines()
             if s.strip() and not set(s.strip()) <= set("-")]
    why = [s for s in lines if "Error" in s or s.startswith("dvecost:")]
    said = (why or lines or ["no error output"])[-1]
    return f"bench scale: the run P = {p} ({name}) failed (exit code {code}): {said}"


def _counts_only(share, comm, cm, **options) -> dict:
    """A hand-over that gathers nothing: the graph's counts, the same on every process."""
    return {"states": share.n, "transitions": comm.allreduce(int(share.targets.shape[0]))}


def _worker(model: str, repeat: int, n: int | None, engine: bool = True,
            gather: bool = True) -> None:
    """One process of a timed distributed run (run by ``mpiexec``): process 0 prints the
    best run's figures as one JSON line. Without ``gather`` the graph is left spread over
    the processes and only its counts are kept."""
    from runtime.comm import world
    from statespace.dist import explore_distributed
    comm = world()
    cm = _load(model, n)
    best = None
    for _ in range(max(1, repeat)):
        comm.barrier()
        t, c = time.perf_counter(), time.process_time()
        timings: dict = {}
        g = explore_distributed(cm, comm, timings=timings,
                                handover=None if gather else _counts_only)
        # Seconds are floats: gathered as Python values (the interface reduces integers).
        cpu = max(comm.allgather(time.process_time() - c))
        comm.barrier()
        total = time.perf_counter() - t
        search = max(comm.allgather(timings["search"]))
        sent = comm.allreduce(int(timings["sent"]))
        rows = comm.allreduce(int(timings["row_bytes"]))
        # Per phase the busiest process's CPU seconds (as Python values: floats).
        each = comm.allgather({k: v[1] for k, v in timings["phases"].items()})
        phases = {k: max(d.get(k, 0.0) for d in each) for k in each[0]}
        levels = level_costs(comm.allgather([sum(d.values()) for d in timings["levels"]]))
        if best is None or total < best["total"]:
            best = {"total": total, "search": search, "gather": total - search,
                    "sent_bytes": sent, "row_bytes": rows, "cpu": cpu,
                    "phases": {**phases, "hand-over (wall)": total - search},
                    "levels": levels}
            if isinstance(g, dict):   # the counts alone (every process)
                best.update(g, bytes=None, gather=None,
                            sent=sent / max(g["transitions"], 1))
            elif g is not None:   # process 0: the graph's figures, not the graph
                m = max(g.n_edges, 1)
                best.update(states=g.n_states, transitions=g.n_edges,
                            bytes=g.edge_bytes() / m, sent=sent / m)
        del g   # (before the next run: two graphs never held at once)
    best["engine"] = _engine_across(cm, comm) if engine else None
    if comm.rank == 0:
        print(json.dumps(best))


def level_costs(each: list[list[float]]) -> dict:
    """What a level costs, from every process's wall seconds per level (``each``, one list a
    process, the levels in order): each level's slowest process is the level's time (the
    processes meet at its collectives); the count of levels, the mean of the smallest third
    of them (where the cost a level pays whatever its size shows) and the largest, in ms.

    >>> level_costs([[0.004, 0.010, 0.002], [0.003, 0.012, 0.003]])
    {'levels': 3, 'smallest third ms': 3.0, 'largest ms': 12.0}
    """
    slowest = sorted(max(lv) for lv in zip(*each))
    if not slowest:
        return {"levels": 0, "smallest third ms": 0.0, "largest ms": 0.0}
    third = slowest[:max(1, len(slowest) // 3)]
    return {"levels": len(slowest), "smallest third ms": round(1000 * sum(third) / len(third), 3),
            "largest ms": round(1000 * slowest[-1], 3)}


def _engine_across(cm, comm) -> float | None:
    """Seconds of the cycle engine across the processes (the graph left in blocks, the cycle
    mean of the first resource, as ``dvecost analyze`` runs it), the slowest process's;
    None when the graph has no answer."""
    from dvecost.distributed import solve_blocks
    from statespace.dist import explore_distributed
    from statespace.dist.blocks import hand_over_blocks
    block = explore_distributed(cm, comm, handover=hand_over_blocks)
    comm.barrier()
    t = time.perf_counter()
    got = solve_blocks(block, comm, cm.resources[0], "mean", "max")
    took = max(comm.allgather(time.perf_counter() - t))   # (a float: as a Python value)
    return None if isinstance(got, Exception) else took


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]),
            int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else None,
            len(sys.argv) <= 4 or sys.argv[4] != "0", len(sys.argv) <= 5 or sys.argv[5] != "0")
