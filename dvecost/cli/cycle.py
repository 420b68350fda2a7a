"""``dvecost cycle GRAPH``: the optimal cycle mean or ratio of a saved graph.

GRAPH is a state graph saved by ``dvecost explore --save graph.npz`` (or any ``.npz`` with
``indptr``, ``indices``, ``cost`` and ``time`` arrays) or a text edge list in the format of
``tools/ocmref`` (``n m`` on the first line, then ``u v cost time`` lines). The engine is
:func:`ocm.optimal_cycle`; the answer is exact (``p/q``) and certified.

Exit codes: 0 with an answer; 2 for an unreadable graph, bad options or an unavailable backend;
3 when there is no answer (no cycle; in ratio mode a cycle of total time 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from dve.errors import ConfigurationError

from . import add_backend, add_common

__all__ = ["register", "run", "load_cycle_graph"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``cycle`` subcommand to the ``dvecost`` parser."""
    p = sub.add_parser(
        "cycle", help="optimal cycle mean or ratio of a saved graph (.npz or edge list)",
        description="Maximal (or minimal) cycle mean or ratio of a graph, exact and certified, "
                    "with its critical cycle. Exit code 3 when the graph has no cycle or, for "
                    "ratios, a cycle of total time 0.")
    p.add_argument("graph", metavar="GRAPH",
                   help="a saved state graph (.npz) or a text edge list ('n m' then "
                        "'u v cost time' lines)")
    p.add_argument("--ratio", action="store_true",
                   help="cycle ratio (sum of costs / sum of times) instead of the mean")
    p.add_argument("--min", action="store_true", help="minimise instead of maximise")
    p.add_argument("--cost", metavar="RESOURCE",
                   help="which cost resource of a state graph (default: its only one)")
    add_backend(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_common(p)
    p.set_defaults(func=run)


def load_cycle_graph(path: str, resource: str | None = None):
    """``(indptr, indices, cost, time, edge_line)`` from a ``.npz`` graph or a text edge list.

    ``edge_line`` maps CSR edges to edge-list lines (None for ``.npz`` graphs).

    Raises
    ------
    ConfigurationError
        Missing or unreadable file, or a file of neither kind.
    """
    if not os.path.exists(path):
        raise ConfigurationError(f"no such file: '{path}'")
    if path.endswith(".npz"):
        try:
            with np.load(path, allow_pickle=False) as z:
                files = set(z.files)
                if {"indptr", "indices", "cost", "time"} <= files and "meta" not in files:
                    return z["indptr"], z["indices"], z["cost"], z["time"], None
        except (OSError, ValueError) as exc:
            raise ConfigurationError(f"cannot read '{path}': {exc}") from None
        from statespace.graph import load_graph

        g = load_graph(path)
        return g.indptr, g.indices, g.cost(resource), g.time, None
    import ocm

    e = ocm.read_edge_list(path)
    return e.indptr, e.indices, e.cost, e.time, e.line


def run(args: argparse.Namespace) -> int:
    """Run ``dvecost cycle``; returns the exit code."""
    import ocm

    t0 = time.perf_counter()
    indptr, indices, cost, tm, line = load_cycle_graph(args.graph, args.cost)
    t_load = time.perf_counter() - t0
    kind = "ratio" if args.ratio else "mean"
    mode = "min" if args.min else "max"
    if not args.quiet and not args.json and sys.stderr.isatty():
        print(f"dvecost: {len(indptr) - 1} vertices, {len(indices)} edges; computing the "
              f"{mode}imal cycle {kind}...", file=sys.stderr, flush=True)
    t1 = time.perf_counter()
    r = ocm.optimal_cycle(indptr, indices, cost, tm if args.ratio else None, kind=kind,
                          mode=mode, backend=args.backend)
    seconds = time.perf_counter() - t1
    if args.json:
        out = r.as_dict()
        out.update(status="ok", seconds=seconds, load_seconds=t_load, graph=args.graph)
        if line is not None:
            out["cycle_edge_lines"] = [int(line[e]) + 2 for e in r.cycle_edges]
        print(json.dumps(out))
        return 0 if r.certified else 1
    word = "maximal" if mode == "max" else "minimal"
    cert = "certified" if r.certified else "NOT certified (exact check failed)"
    print(f"{word} cycle {kind}: {r.exact} = {float(r.value):.6g} ({cert})")
    shown = " -> ".join(str(v) for v in r.cycle[:20])
    more = f" -> ... ({len(r.cycle)} vertices)" if len(r.cycle) > 20 else f" -> {r.cycle[0]}"
    print(f"critical cycle: {shown}{more}")
    n_scc = "" if r.scc_optima is None else f", {len(r.scc_optima)} cyclic SCCs"
    print(f"graph: {r.n_vertices} vertices, {r.n_edges} edges{n_scc}; "
          f"{r.iterations} Howard iterations, {seconds:.3f} s on the {r.backend.upper()}")
    return 0 if r.certified else 1
