"""``dvecost explore MODEL``: build the reachable state graph and count states and transitions.

Build the reachable state graph of a DVE model: states, transitions, deadlocks, the error
state (with a shortest run to it), depth, time. Exit code 3 when a limit stops the run.

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

A signal is handled in every phase (``load``, ``explore`` with the graph's assembly, ``save``,
``report``; the JSON names it as ``stopped_in``): the counts found are printed, and the
``--save`` path holds the old file or nothing, never part of one (:func:`statespace.save_graph`
writes a temporary and renames it). Once the result is final
(:func:`dvecost.cli.result_is_final`) a signal changes nothing.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from dve.errors import ConfigurationError
from runtime.errors import (ExplorationLimit, Interrupted, MemoryLimitExceeded, OutOfMemory,
                            RunStopped, TimeLimitExceeded)

from . import (add_common, add_model_run, emit_json, not_a_scenario_file, parse_defines,
               parse_size, peak_memory_bytes, printing, result_is_final, stop_info)
from .subcommand import add_command
from .terminal import ProgressLine, is_terminal

__all__ = ["check_save_path", "parse_size", "register", "run", "summary"]


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
    if os.path.exists(path) and not os.path.isfile(path):
        # The graph is written to a temporary file renamed over the path: a FIFO or a device
        # there would be replaced by a regular file (as root, /dev/null itself).
        raise ConfigurationError(f"--save {path}: not a regular file (a FIFO or a device); "
                                 "a graph is saved to a regular file only")
    return path


def run(args: argparse.Namespace) -> int:
    """Explore ``args.model``; return the exit code (0; 3 at a limit; 130/143 on a signal).

    A signal or ``--timeout`` may arrive in any phase (``load``, ``explore``, ``save``,
    ``report``); the first one stops the work where it is and the command reports what it has
    (the JSON names the phase as ``stopped_in``). Only one stop can be raised per process (a
    second signal ends it at once), so the reporting below the ``except`` is never interrupted.
    """
    not_a_scenario_file(args.model, "explore")
    if args.save:
        check_save_path(args.save)
    defines = parse_defines(args.defines)
    run_ = _Run(args)
    try:
        run_.work(defines)
    except RunStopped as exc:
        run_.stopped(exc)
    return run_.report()


class _Run:
    """What one ``explore`` has done so far: the phase it is in, the graph, timings, the stop."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.phase = "load"
        self.t0 = time.perf_counter()
        self.timings: dict[str, float] = {}
        self.graph = None
        self.stop: BaseException | None = None
        self.stopped_in: str | None = None
        self.saved = False
        self.info: dict | None = None
        self.prog: ProgressLine | None = None

    def work(self, defines: dict[str, int]) -> None:
        """Load, explore, save and summarise; ends by declaring the result final."""
        from statespace import save_graph

        from .. import pipeline

        args = self.args
        xp = pipeline.array_module(args.backend)   # refused (exit 2) before any work
        _, cm = pipeline.load(args.model, defines, property=not args.no_property)
        self._lap("load", "explore")
        if is_terminal(sys.stderr) and not args.quiet:
            self.prog = ProgressLine(sys.stderr)
        try:
            self.graph = pipeline.explore(
                cm, xp=xp, backend=args.backend, max_states=args.max_states,
                max_memory=args.max_memory, progress=self.prog.states if self.prog else None,
                error_successors=args.legacy_error_state)
        except ExplorationLimit as exc:
            self.stop, self.stopped_in = exc, "explore"
            if exc.partial is None:   # not even the partial graph fitted in memory
                self._close_progress()
                result_is_final()
                return
            self.graph = exc.partial
        self._close_progress()
        self._lap("explore", "save" if args.save else "report")
        if args.save:
            save_graph(self.graph, args.save)   # atomic: the old file or the new one
            self.saved = True
            self._lap("save", "report")
        self.phase = "report"
        self.info = summary(self.graph)
        result_is_final()

    def stopped(self, exc: RunStopped) -> None:
        """A signal or the timeout stopped :meth:`work` in ``self.phase``.

        Runs after the first stop, so nothing here is interrupted (a second signal ends the
        process). The timeout is a limit like ``--max-states``: the partial graph it leaves is
        saved; after a signal nothing is written (the user asked the program to end)."""
        self._close_progress()
        self._lap(self.phase, None)
        if self.graph is None:   # the explorer's graph found so far (or a limit's)
            self.graph = exc.partial if exc.partial is not None else getattr(
                self.stop, "partial", None)
        if exc.partial is None and self.graph is not None:
            exc.partial = self.graph   # the stop came after exploring: counts of the graph
        self.stop, self.stopped_in = exc, self.phase
        if (isinstance(exc, TimeLimitExceeded) and self.phase == "explore"
                and self.args.save and self.graph is not None):
            from statespace import save_graph
            save_graph(self.graph, self.args.save)
            self.saved = True
            self._lap("save", None)

    def report(self) -> int:
        """Print what was found; return the exit code."""
        args, graph, stop = self.args, self.graph, self.stop
        sinfo = stop_info(stop, args) if stop is not None else None
        status, code = (sinfo["status"], sinfo["exit_code"]) if sinfo else ("ok", 0)
        peak = peak_memory_bytes()
        if graph is None:   # stopped while loading, or no partial graph fitted in memory
            if args.json:
                emit_json(status, model=args.model, limit=sinfo.get("limit"),
                          stopped_in=self.stopped_in, counts=sinfo["counts"] or None,
                          timings=self.timings, peak_memory_bytes=peak)
            where = " (while loading the model)" if self.stopped_in == "load" else ""
            print(f"{sinfo['message']}{where}", file=sys.stderr)
            return code
        info = self.info if self.info is not None else summary(graph)
        if sinfo and "limit" in sinfo:
            info["limit"] = sinfo["limit"]
        with printing():   # `explore ... | head -c1`: the exit code stays the run's
            if args.json:
                emit_json(status, **info, saved=args.save if self.saved else None,
                          stopped_in=self.stopped_in if isinstance(stop, RunStopped) else None,
                          timings=self.timings, peak_memory_bytes=peak)
            else:
                print(_render(info, self.timings.get("explore", 0.0), peak))
                if self.saved and stop is not None:
                    print(f"partial graph saved to {args.save}")
        if stop is not None:
            print(sinfo["message"], file=sys.stderr)
            if (isinstance(stop, MemoryLimitExceeded) and not isinstance(stop, OutOfMemory)
                    and graph.n_expanded <= 0):
                print(f"hint: the program holds {_mib(peak)} before exploring; give "
                      "--max-memory more than that", file=sys.stderr)
            if args.save and not self.saved:
                why = "interrupted" if isinstance(stop, Interrupted) else "stopped"
                print(f"dvecost: {args.save} not written ({why})", file=sys.stderr)
        return code

    def _lap(self, phase: str, nxt: str | None) -> None:
        """Record the time of ``phase`` (since the previous lap) and enter ``nxt``."""
        now = time.perf_counter()
        self.timings[phase] = now - self.t0 - sum(self.timings.values())
        if nxt is not None:
            self.phase = nxt

    def _close_progress(self) -> None:
        if self.prog is not None:
            self.prog.close()
            self.prog = None


def _options(p: argparse.ArgumentParser) -> None:
    add_model_run(p, "a DVE model file")
    p.add_argument("--save", metavar="GRAPH.npz",
                   help="write the state graph to this file (exactly this name; checked "
                        "before exploring, written atomically)")
    p.add_argument("--no-property", action="store_true",
                   help="leave out the property process of 'system async property P'")
    p.add_argument("--legacy-error-state", action="store_true",
                   help="expand the error state like any state, as the generator behind "
                        "BEEM's published counts did (default: it has no successors)")



def register(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``explore`` subcommand to ``sub``."""
    p = add_command(sub, "explore", __doc__, run)
    _options(p)
    add_common(p)
    return p
