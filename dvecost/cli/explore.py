"""``dvecost explore MODEL``: build the reachable state graph and report on it.

Prints the number of states, transitions (generated successors, duplicates and self-loops
included) and deadlocks, whether the error state is reachable (with a shortest run to it,
decoded), the breadth-first depth and the time taken. ``--save graph.npz`` writes the graph
(:func:`statespace.save_graph`). ``--json`` prints one object with at least ``n_states``,
``n_transitions``, ``n_deadlocks``, ``error_state_reached`` and ``seconds``.

A progress line (states, edges, rate) is drawn on stderr for runs longer than a second, only
when stderr is a terminal and ``-q`` is not given. When ``--max-states`` or ``--max-memory`` is
reached the run stops, says which limit and what was found, and exits with code 3.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from dve.errors import ConfigurationError, MemoryLimitExceeded, StateLimitExceeded

from . import add_common, add_defines, add_limits, parse_defines, parse_size

__all__ = ["parse_size", "register", "run", "summary"]

def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``explore`` subcommand to the ``dvecost`` parser."""
    p = sub.add_parser(
        "explore", help="build the reachable state graph and count states and transitions",
        description="Build the reachable state graph of a DVE model: states, transitions, "
                    "deadlocks, the error state (with a shortest run to it), depth, time. "
                    "Exit code 3 when a limit stops the run.")
    p.add_argument("model", metavar="MODEL", help="a DVE model file")
    p.add_argument("--save", metavar="GRAPH.npz", help="write the state graph to this file")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    add_limits(p)
    add_defines(p)
    p.add_argument("--no-property", action="store_true",
                   help="leave out the property process of 'system async property P'")
    p.add_argument("--legacy-error-state", action="store_true",
                   help="expand the error state like any state, as the generator behind "
                        "BEEM's published counts did (default: it has no successors)")
    add_common(p)
    p.set_defaults(func=run)


class _Progress:
    """A one-line progress display on stderr, after the first second, TTY only."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.t0 = time.perf_counter()
        self.shown = False

    def __call__(self, n_states: int, n_edges: int, rate: float) -> None:
        if not self.enabled or time.perf_counter() - self.t0 < 1.0:
            return
        sys.stderr.write(f"\r{n_states:,} states, {n_edges:,} edges, "
                         f"{rate / 1e6:.2f} M edges/s   ")
        sys.stderr.flush()
        self.shown = True

    def clear(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def summary(graph) -> dict:
    """The facts ``explore`` reports, as a JSON-ready dict."""
    from statespace import decode_state, shortest_trace
    out = {"model": graph.name, "n_states": graph.n_states, "n_transitions": graph.n_edges,
           "n_deadlocks": graph.n_deadlocks, "error_state_reached": graph.error_state >= 0,
           "depth": graph.depth, "seconds": round(graph.seconds, 6),
           "resources": list(graph.costs), "complete": graph.complete}
    if graph.error_state >= 0:
        trace = shortest_trace(graph, graph.error_state)
        def where(a):
            if graph.model is None:
                return []
            return [str(p) for p in graph.model.action_positions(a) if p is not None]
        out["error_trace"] = [{"source": s.source, "target": s.target, "action": s.description,
                               "at": where(s.action), "state": decode_state(graph, s.target)}
                              for s in trace]
        out["error_trace_start"] = decode_state(graph, 0)
    if graph.n_deadlocks:
        out["first_deadlock"] = int(graph.deadlocks[0])
    return out


def _render(info: dict) -> str:
    lines = [f"{info['model']}:",
             f"  states        {info['n_states']:,}",
             f"  transitions   {info['n_transitions']:,}",
             f"  deadlocks     {info['n_deadlocks']:,}",
             f"  error state   {'reachable' if info['error_state_reached'] else 'not reachable'}",
             f"  depth         {info['depth']}",
             f"  seconds       {info['seconds']:.3f}"]
    if info["error_state_reached"]:
        lines.append("shortest run to the error state:")
        lines.append(f"  0: {_fmt_state(info['error_trace_start'])}")
        for step in info["error_trace"]:
            at = f"  ({', '.join(step['at'])})" if step.get("at") else ""
            lines.append(f"     --[{step['action']}]-->{at}")
            lines.append(f"  {step['target']}: {_fmt_state(step['state'])}")
    return "\n".join(lines)


def _fmt_state(d: dict) -> str:
    if d.get("error"):
        return "ERROR STATE"
    return ", ".join(f"{k}={v}" for k, v in d.items())


def run(args: argparse.Namespace) -> int:
    """Explore ``args.model``; return the exit code (0, or 3 when a limit was reached)."""
    from dve.loader import load_model
    from statespace import build_state_graph, save_graph
    from statespace.compiler import compile_model

    defines = parse_defines(args.defines)
    model = load_model(args.model, defines=defines)
    cm = compile_model(model, property=not args.no_property)
    prog = _Progress(sys.stderr.isatty() and not args.quiet)
    try:
        graph = build_state_graph(cm, max_states=args.max_states, max_memory=args.max_memory,
                                  progress=prog, error_successors=args.legacy_error_state)
    except (StateLimitExceeded, MemoryLimitExceeded) as exc:
        prog.clear()
        part = exc.partial
        which = ("--max-states" if isinstance(exc, StateLimitExceeded) else "--max-memory")
        limit = exc.limit if isinstance(exc, StateLimitExceeded) else exc.limit_bytes
        msg = (f"dvecost: error: limit {which} {limit} reached: {part.n_states:,} states and "
               f"{part.n_edges:,} transitions found ({part.n_expanded:,} states expanded)")
        if args.json:
            info = summary(part)
            info["limit"] = {"name": which, "value": limit}
            print(json.dumps(info))
        print(msg, file=sys.stderr)
        if args.save:
            save_graph(part, args.save)
        return 3
    prog.clear()
    if args.save:
        save_graph(graph, args.save)
    info = summary(graph)
    if args.json:
        print(json.dumps(info))
    else:
        print(_render(info))
    return 0
