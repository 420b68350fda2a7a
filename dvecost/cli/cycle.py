"""``dvecost cycle GRAPH``: optimal cycle mean or ratio of a saved graph (.npz or edge list).

Maximal (or minimal) cycle mean or ratio of a graph, exact and certified, with its critical
cycle. Exit code 3 when the graph has no cycle or, for ratios, a cycle of total time 0.

GRAPH is a state graph saved by ``dvecost explore --save graph.npz`` (or any ``.npz`` with
``indptr``, ``indices``, ``cost`` and ``time`` arrays) or a text edge list in the format of
``tools/ocmref`` (``n m`` on the first line, then ``u v cost time`` lines). The engine is
:func:`ocm.optimal_cycle`; the answer is exact (``p/q``) and certified.

Every loader refuses what it cannot hold exactly (a cost beyond ``±(2**63 - 1)``, a uint64
above ``2**63 - 1``, a truncated file, a header announcing more vertices than memory could
hold), naming the file (and for edge lists the line and column).

A *partial* state graph (saved by ``explore --save`` after a limit stopped it) has successors
only for its expanded states. Every cycle in it is a cycle of the model, so its optimum is a
certified *bound* for the model's: at least the model's maximal cycle mean is that value (at
most, for the minimum). ``cycle`` prints it as such, says that the graph is incomplete, and
exits with code 3 (JSON status ``incomplete``): the question asked, the model's value, has no
answer from this file.

Exit codes: 0 with an answer; 2 for an unreadable graph, bad options or an unavailable backend;
3 when there is no answer (no cycle; in ratio mode a cycle of total time 0; an incomplete graph;
``--max-memory`` or ``--timeout`` reached); 130/143 on SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

from dve.errors import ConfigurationError
from runtime.errors import MemoryLimitExceeded, RunStopped

from ..report import count
from . import (add_common, add_limits, emit_json, peak_memory_bytes, result_is_final,
               stop_info)
from .subcommand import add_command

__all__ = ["register", "run", "load_cycle_graph", "CycleInput"]


@dataclass(frozen=True)
class CycleInput:
    """A graph read by :func:`load_cycle_graph`: CSR arrays, the edge-list line of each CSR
    edge (None for ``.npz``), and for saved state graphs whether exploration was complete."""

    indptr: np.ndarray
    indices: np.ndarray
    cost: np.ndarray
    time: np.ndarray
    line: np.ndarray | None = None
    complete: bool = True
    n_expanded: int = -1


def load_cycle_graph(path: str, resource: str | None = None) -> CycleInput:
    """Read a ``.npz`` graph (saved state graph or plain arrays) or a text edge list.

    Raises
    ------
    ConfigurationError, ocm.errors.InputError
        Missing, unreadable or malformed file, values that do not fit, or ``resource`` given
        for a graph with a single unnamed cost.
    MemoryError
        An edge list announces more vertices than this machine's memory.
    """
    from statespace.graphfile import check_int_range, graph_from_arrays, read_npz
    if not os.path.exists(path):
        raise ConfigurationError(f"no such file: '{path}'")
    if os.path.isdir(path):
        raise ConfigurationError(f"'{path}' is a directory, not a graph file")
    try:
        with open(path, "rb") as f:
            is_zip = f.read(4) == b"PK\x03\x04"
    except OSError as exc:
        raise ConfigurationError(f"cannot read '{path}': {exc.strerror or exc}") from None
    if is_zip or path.endswith(".npz"):
        # read_npz turns every failure of the zip, decompression and .npy layers into an
        # error naming the file; nothing below opens the archive again.
        arrays = read_npz(path)
        if "meta" in arrays:
            g = graph_from_arrays(path, arrays)
            return CycleInput(g.indptr, g.indices, g.cost(resource), g.time, None, g.complete,
                              g.n_expanded)
        if not {"indptr", "indices", "cost", "time"} <= set(arrays):
            raise ConfigurationError(f"{path}: neither a saved state graph nor arrays "
                                     "'indptr', 'indices', 'cost' and 'time'")
        if resource is not None:
            raise ConfigurationError(f"--cost {resource}: {path} holds one unnamed cost array; "
                                     "--cost names a resource of a saved state graph")
        imax = 2**63 - 1
        ip = check_int_range(path, "indptr", arrays["indptr"], 0, imax)
        n = max(ip.shape[0] - 1, 0)
        ix = check_int_range(path, "indices", arrays["indices"], 0, max(n - 1, 0))
        cost = check_int_range(path, "cost", arrays["cost"], -imax, imax)
        tm = check_int_range(path, "time", arrays["time"], 0, imax)
        # One cost and one time per edge, whatever the mode: a mean does not read the times,
        # but a file whose arrays disagree is not a graph (refused as a saved graph's is).
        for key, a in (("cost", cost), ("time", tm)):
            if a.shape[0] != ix.shape[0]:
                raise ConfigurationError(f"{path}: '{key}' has {a.shape[0]} entries, expected "
                                         f"one per edge ({ix.shape[0]}, the length of "
                                         "'indices')")
        return CycleInput(ip, ix, cost, tm)
    if resource is not None:
        raise ConfigurationError(f"--cost {resource}: an edge list has a single cost column; "
                                 "--cost names a resource of a saved state graph (.npz)")
    import ocm

    e = ocm.read_edge_list(path)
    return CycleInput(e.indptr, e.indices, e.cost, e.time, e.line)


def _check_memory(args, n: int, m: int) -> None:
    """Refuse to start the engine when it would take the process past ``--max-memory``
    (:func:`dvecost.pipeline.check_engine_memory`), the stop carrying the graph's counts."""
    from ..pipeline import check_engine_memory
    try:
        check_engine_memory(args.max_memory, n, m)
    except MemoryLimitExceeded as exc:
        exc.counts = {"vertices": n, "edges": m}
        raise


def run(args: argparse.Namespace) -> int:
    """Run ``dvecost cycle``; returns the exit code."""
    t0 = time.perf_counter()
    phase = ["load"]
    try:
        return _run(args, t0, phase)
    except RunStopped as exc:   # --timeout, SIGINT, SIGTERM: say where it stopped
        info = stop_info(exc, args)
        if args.json:
            emit_json(info["status"], graph=args.graph, limit=info.get("limit"),
                      stopped_in=phase[0], timings={phase[0]: time.perf_counter() - t0})
        what = "loading the graph" if phase[0] == "load" else "computing the optimum"
        print(f"{info['message']} (while {what})", file=sys.stderr)
        return info["exit_code"]


def _run(args: argparse.Namespace, t0: float, phase: list) -> int:
    import ocm
    from ocm.errors import AnalysisError

    g = load_cycle_graph(args.graph, args.cost)
    t_load = time.perf_counter() - t0
    phase[0] = "cycle"
    n, m = len(g.indptr) - 1, len(g.indices)
    kind = "ratio" if args.ratio else "mean"
    mode = "min" if args.min else "max"
    bound = "at least" if mode == "max" else "at most"
    incomplete = (f"the graph is incomplete: exploration stopped at a limit with "
                  f"{g.n_expanded:,} of {n:,} states expanded")
    try:
        _check_memory(args, n, m)
    except MemoryLimitExceeded as exc:
        result_is_final()
        info = stop_info(exc, args)
        msg = (f"dvecost: limit --max-memory {args.max_memory} reached: the process holds "
               f"{exc.held / 2**20:,.0f} MiB with the graph loaded, and the cycle engine would "
               f"need about {exc.more / 2**20:,.0f} MiB more for {n:,} vertices and {m:,} edges")
        if args.json:
            emit_json("limit", graph=args.graph, limit=info["limit"], n_vertices=n, n_edges=m,
                      timings={"load": t_load})
        print(msg, file=sys.stderr)
        return 3
    if not args.quiet and not args.json and sys.stderr.isatty():
        print(f"dvecost: {n} vertices, {m} edges; computing the "
              f"{mode}imal cycle {kind}...", file=sys.stderr, flush=True)
    t1 = time.perf_counter()
    try:
        r = ocm.optimal_cycle(g.indptr, g.indices, g.cost, g.time if args.ratio else None,
                              kind=kind, mode=mode, backend=args.backend)
    except AnalysisError as exc:
        result_is_final()
        if g.complete:
            if args.json:   # the same shape as analyze's: status, error code, message
                from ocm.errors import NoCycleError, ZeroTimeCycleError
                code = ("zero-time-cycle" if isinstance(exc, ZeroTimeCycleError) else
                        "no-cycle" if isinstance(exc, NoCycleError) else "no-answer")
                emit_json("no-answer", error=code, message=str(exc), graph=args.graph,
                          timings={"load": t_load})
            raise
        if args.json:
            emit_json("incomplete", graph=args.graph, complete=False, n_expanded=g.n_expanded,
                      error=str(exc), timings={"load": t_load})
        print(f"dvecost: {incomplete}; among the cycles found so far: {exc}", file=sys.stderr)
        return 3
    seconds = time.perf_counter() - t1
    result_is_final()   # a signal from here on would only cut the answer's printing short
    status = ("incomplete" if not g.complete else "ok" if r.certified else "not_certified")
    code = (0 if r.certified else 1) if g.complete else 3
    if args.json:
        out = r.as_dict()
        engine = out.pop("timings", {})
        extra = {}
        if g.line is not None:
            extra["cycle_edge_lines"] = [int(g.line[e]) + 2 for e in r.cycle_edges]
        if not g.complete:
            extra.update(complete=False, n_expanded=g.n_expanded,
                         bound="lower" if mode == "max" else "upper")
        emit_json(status, **out, graph=args.graph, **extra,
                  timings={"load": t_load, "cycle": seconds,
                           **{f"cycle.{k}": v for k, v in engine.items()}})
        if not g.complete:
            print(f"dvecost: {incomplete}; the value is a bound: the model's {mode}imal cycle "
                  f"{kind} is {bound} {r.exact}", file=sys.stderr)
        return code
    word = "maximal" if mode == "max" else "minimal"
    cert = "certified" if r.certified else "NOT certified (exact check failed)"
    # The decimal only where it says something the fraction does not (not "2 = 2").
    value = (str(r.exact) if str(r.exact) == f"{float(r.value):.6g}"
             else f"{r.exact} = {float(r.value):.6g}")
    if g.complete:
        print(f"{word} cycle {kind}: {value} ({cert})")
    else:
        print(f"{word} cycle {kind} of the explored part: {value} "
              f"({cert} for this partial graph only)")
        print(f"warning: {incomplete}; every cycle found is a cycle of the model, so its "
              f"{word} cycle {kind} is {bound} {r.exact}, but not necessarily equal")
    shown = " -> ".join(str(v) for v in r.cycle[:20])
    more = f" -> ... ({len(r.cycle)} vertices)" if len(r.cycle) > 20 else f" -> {r.cycle[0]}"
    print(f"critical cycle: {shown}{more}")
    n_scc = "" if r.scc_optima is None else f", {count(len(r.scc_optima), 'cyclic SCC')}"
    print(f"graph: {count(r.n_vertices, 'vertex').replace('vertexs', 'vertices')}, "
          f"{count(r.n_edges, 'edge')}{n_scc}; {count(r.iterations, 'Howard iteration')}, "
          f"{seconds:.3f} s on the {r.backend.upper()}; "
          f"peak memory {peak_memory_bytes() / 2**20:,.1f} MiB")
    if not g.complete:
        print(f"dvecost: {incomplete}", file=sys.stderr)
    return code


def _options(p: argparse.ArgumentParser) -> None:
    p.add_argument("graph", metavar="GRAPH",
                   help="a saved state graph (.npz) or a text edge list ('n m' then "
                        "'u v cost time' lines)")
    p.add_argument("--ratio", action="store_true",
                   help="cycle ratio (sum of costs / sum of times) instead of the mean")
    p.add_argument("--min", action="store_true", help="minimise instead of maximise")
    p.add_argument("--cost", metavar="RESOURCE",
                   help="which cost resource of a saved state graph (default: its only one; "
                        "an error for edge lists and plain arrays, which have one cost)")
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="auto",
                   help="where the cycle engine runs (default: auto, the GPU when CuPy and a "
                        "device are present and the graph is large enough to gain)")
    add_limits(p, states=False)
    p.add_argument("--json", action="store_true", help="print one JSON object")



def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``cycle`` subcommand to ``sub``."""
    p = add_command(sub, "cycle", __doc__, run)
    _options(p)
    add_common(p)
    return p
