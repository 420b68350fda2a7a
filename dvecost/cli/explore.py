"""``dvecost explore MODEL``: build the reachable state graph and report on it.

Prints the number of states, transitions (generated successors, duplicates and self-loops
included) and deadlocks, whether the error state is reachable (with a shortest run to it,
decoded), the breadth-first depth, the time taken and the peak memory of the process.
``--save graph.npz`` writes the graph (:func:`statespace.save_graph`) to exactly that path,
atomically; the path is checked before any work. ``--json`` prints one object (see
:func:`dvecost.cli.emit_json`) with ``status``, ``n_states``, ``n_transitions``,
``n_deadlocks``, ``error_state_reached``, ``complete``, ``timings`` and
``peak_memory_bytes``.

A progress line (states, edges, rate; :class:`~dvecost.cli.terminal.ProgressLine`) is drawn on
stderr for runs longer than half a second, only when stderr is a terminal and ``-q`` is not
given. When ``--max-states``, ``--max-memory`` or ``--timeout`` is reached, or on
SIGINT/SIGTERM, the run stops and prints what it found (a
*partial* graph: only its expanded states have their successors, so the states not expanded
yet are not counted as deadlocks) with a message on stderr naming the limit or signal; the exit
code is 3 for limits, 130/143 for signals. A partial graph is saved when ``--save`` is given and
a limit stopped the run (not after a signal: the user asked the program to end).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from dve.errors import (ConfigurationError, Interrupted, MemoryLimitExceeded, RunStopped,
                        StateLimitExceeded)

from . import (add_common, add_defines, add_limits, emit_json, parse_defines, parse_size,
               peak_memory_bytes, stop_info)
from .terminal import ProgressLine, is_terminal

__all__ = ["check_save_path", "parse_size", "register", "run", "summary"]

def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``explore`` subcommand to the ``dvecost`` parser."""
    p = sub.add_parser(
        "explore", help="build the reachable state graph and count states and transitions",
        description="Build the reachable state graph of a DVE model: states, transitions, "
                    "deadlocks, the error state (with a shortest run to it), depth, time. "
                    "Exit code 3 when a limit stops the run.")
    p.add_argument("model", metavar="MODEL", help="a DVE model file")
    p.add_argument("--save", metavar="GRAPH.npz",
                   help="write the state graph to this file (exactly this name; checked "
                        "before exploring, written atomically)")
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


def summary(graph) -> dict:
    """The facts ``explore`` reports, as a JSON-ready dict (without status and timings)."""
    from statespace import decode_state, shortest_trace
    from statespace.evaluate import explain_fault
    out = {"model": graph.name, "n_states": graph.n_states, "n_transitions": graph.n_edges,
           "n_deadlocks": graph.n_deadlocks, "error_state_reached": graph.error_state >= 0,
           "depth": graph.depth, "resources": list(graph.costs), "complete": graph.complete}
    if not graph.complete:
        out["n_expanded"] = graph.n_expanded
    if graph.error_state >= 0:
        trace = shortest_trace(graph, graph.error_state)
        def where(a):
            if graph.model is None:
                return []
            return [str(p) for p in graph.model.action_positions(graph.model_action(a))
                    if p is not None]
        def fault(s):  # what made the last step fault, with its model line
            if graph.model is None or s.target != graph.error_state:
                return None
            return explain_fault(graph.model, graph.states[s.source].tolist(),
                                 graph.model_action(s.action))
        out["error_trace"] = [{"source": s.source, "target": s.target, "action": s.description,
                               "at": where(s.action), "state": decode_state(graph, s.target),
                               "fault": fault(s)}
                              for s in trace]
        out["error_trace_start"] = decode_state(graph, 0)
    if graph.n_deadlocks:
        out["first_deadlock"] = int(graph.deadlocks[0])
    return out


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def _render(info: dict, seconds: float, peak: int) -> str:
    partial = not info["complete"]
    lines = [f"{info['model']}:" + ("  (partial: stopped before the end)" if partial else ""),
             f"  states        {info['n_states']:,}"
             + (f" ({info['n_expanded']:,} expanded)" if partial else ""),
             f"  transitions   {info['n_transitions']:,}",
             f"  deadlocks     {info['n_deadlocks']:,}"
             + (" among the expanded states" if partial else ""),
             f"  error state   {'reachable' if info['error_state_reached'] else 'not reachable'}"
             + (" (so far)" if partial and not info["error_state_reached"] else ""),
             f"  depth         {info['depth']}",
             f"  seconds       {seconds:.3f}",
             f"  peak memory   {_mib(peak)}"]
    if info["error_state_reached"]:
        lines.append("shortest run to the error state:")
        lines.append(f"  0: {_fmt_state(info['error_trace_start'])}")
        for step in info["error_trace"]:
            at = f"  ({', '.join(step['at'])})" if step.get("at") else ""
            lines.append(f"     --[{step['action']}]-->{at}")
            lines.append(f"  {step['target']}: {_fmt_state(step['state'])}")
            if step.get("fault"):
                lines.append(f"     fault: {step['fault']}")
    return "\n".join(lines)


def _fmt_state(d: dict) -> str:
    if d.get("error"):
        return "ERROR STATE"
    return ", ".join(f"{k}={v}" for k, v in d.items())


def check_save_path(path: str) -> str:
    """Refuse a ``--save`` path that cannot be written, before any work is done.

    The name is used exactly as given (no ``.npz`` is appended). Returns the path.

    Raises
    ------
    ConfigurationError
        The path is a directory, or its directory does not exist or is not writable.
    """
    if os.path.isdir(path):
        raise ConfigurationError(f"--save {path}: is a directory; give a file name, "
                                 f"e.g. {os.path.join(path, 'graph.npz')}")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise ConfigurationError(f"--save {path}: directory '{parent}' does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigurationError(f"--save {path}: directory '{parent}' is not writable")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise ConfigurationError(f"--save {path}: the file exists and is not writable")
    return path


def run(args: argparse.Namespace) -> int:
    """Explore ``args.model``; return the exit code (0; 3 at a limit; 130/143 on a signal)."""
    from dve.loader import load_model
    from statespace import build_state_graph, save_graph
    from statespace.compiler import compile_model

    if args.save:
        check_save_path(args.save)
    t0 = time.perf_counter()
    defines = parse_defines(args.defines)
    try:
        model = load_model(args.model, defines=defines)
        cm = compile_model(model, property=not args.no_property)
    except RunStopped as exc:   # stopped before exploring: nothing found yet
        sinfo = stop_info(exc, args)
        if args.json:
            emit_json(sinfo["status"], model=args.model, limit=sinfo.get("limit"),
                      stopped_in="load", timings={"load": time.perf_counter() - t0})
        print(f"{sinfo['message']} (while loading the model)", file=sys.stderr)
        return sinfo["exit_code"]
    t_load = time.perf_counter() - t0
    prog = ProgressLine(sys.stderr) if is_terminal(sys.stderr) and not args.quiet else None
    stop = None
    t1 = time.perf_counter()
    try:
        graph = build_state_graph(cm, max_states=args.max_states, max_memory=args.max_memory,
                                  progress=prog.states if prog else None,
                                  error_successors=args.legacy_error_state)
    except (StateLimitExceeded, MemoryLimitExceeded, RunStopped) as exc:
        if prog:
            prog.close()
        if exc.partial is None:   # not even the partial graph fitted in memory
            raise
        stop, graph = exc, exc.partial
    if prog:
        prog.close()
    t_explore = time.perf_counter() - t1
    saved = None
    if args.save and not isinstance(stop, Interrupted):
        t2 = time.perf_counter()
        save_graph(graph, args.save)
        saved = time.perf_counter() - t2
    info = summary(graph)
    timings = {"load": t_load, "explore": t_explore}
    if saved is not None:
        timings["save"] = saved
    status, code = "ok", 0
    if stop is not None:
        sinfo = stop_info(stop, args)
        status, code = sinfo["status"], sinfo["exit_code"]
        if "limit" in sinfo:
            info["limit"] = sinfo["limit"]
    peak = peak_memory_bytes()
    if args.json:
        emit_json(status, **info, saved=args.save if saved is not None else None,
                  timings=timings, peak_memory_bytes=peak)
    else:
        print(_render(info, t_explore, peak))
        if saved is not None and stop is not None:
            print(f"partial graph saved to {args.save}")
    if stop is not None:
        print(sinfo["message"], file=sys.stderr)
        if isinstance(stop, MemoryLimitExceeded) and graph.n_expanded <= 0:
            print(f"hint: the program holds {_mib(peak)} before exploring; give "
                  "--max-memory more than that", file=sys.stderr)
        if args.save and saved is None:
            print(f"dvecost: {args.save} not written (interrupted)", file=sys.stderr)
    return code
