"""``dvecost analyze MODEL``: maximal cycle mean or ratio of a model, with its critical cycle.

Build the reachable state graph of MODEL and compute its maximal (or minimal) cycle mean of a
cost resource, or with --ratio its cycle ratio cost/time: an exact fraction, certified, with
the critical cycle shown as a run of the model. Exit codes: 0 answer, 2 invalid input, 3 no
answer (no reachable cycle, a zero-time cycle with --ratio, a state, memory or time limit),
130/143 interrupted.

The worst sustainable load of a model and the run that causes it, as a thin layer over
:func:`dvecost.analyze`: options in, a report out (text with the peak memory on its timings
line, ``--json`` as one line with ``status``, ``timings`` and ``peak_memory_bytes``, ``--dot
FILE``), a progress display on stderr when it is a terminal.
Limits (``--max-states``, ``--max-memory``, ``--timeout``) and SIGINT/SIGTERM stop with what
exploration found so far (exit 3, or 130/143).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from dve.errors import ConfigurationError
from runtime.errors import ExplorationLimit, RunStopped
from ocm.errors import AnalysisError, NoCycleError, ZeroTimeCycleError

from . import (add_common, add_model_run, drop_closed_outputs, emit_json,
               not_a_scenario_file, parse_defines, peak_memory_bytes, print_error, printing,
               stop_info)
from .distributed import (Rendezvous, add_gpus, distributed_world, engine_in_blocks, follow,
                          launch_gpus)
from .subcommand import add_command
from .terminal import ProgressLine, is_terminal
from .views import add_view_options, check_view_files, text_width, write_views

__all__ = ["register", "run", "ProgressLine"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``analyze`` subcommand to ``sub``."""
    p = add_command(sub, "analyze", __doc__, run)
    add_model_run(p, "a DVE file (with cost/time annotations)")
    p.add_argument("--ratio", action="store_true",
                   help="cycle ratio (cost per unit of time) instead of cycle mean (per step)")
    p.add_argument("--min", action="store_true", help="minimise instead of maximise")
    p.add_argument("--cost", metavar="NAME",
                   help="the cost resource to analyse (needed when the model names several)")
    p.add_argument("--trace", action="store_true",
                   help="also show the run from the initial state to the critical cycle")
    p.add_argument("--no-witness", action="store_true",
                   help="the value only: decode no run (no critical cycle, prefix or traces)")
    p.add_argument("--dot", metavar="FILE",
                   help="write the critical cycle and its prefix (and the whole graph when "
                        "small) as Graphviz DOT to FILE ('-' for stdout)")
    add_view_options(p)
    p.add_argument("--symmetry", choices=("auto", "off"), default="auto",
                   help="auto (default): explore one state per orbit of interchangeable "
                        "template instances (same answer); off: the full product")
    add_gpus(p)
    add_common(p)


def run(args: argparse.Namespace) -> int:
    """Run ``dvecost analyze``; returns the exit code. One of several processes (under
    ``mpiexec``, see :mod:`dvecost.cli.distributed`): process 0 explores its share, gathers
    the graph and reports; the others explore their share and print nothing."""
    comm = distributed_world()
    if comm is None:
        if args.gpus:
            return launch_gpus(args.gpus, sys.argv[1:])
        return _run(args, None)
    try:
        blocks = engine_in_blocks(args)
    except ConfigurationError:
        if comm.rank != 0:   # every process finds it; process 0 alone says it
            return 2
        raise
    if comm.rank != 0:
        return follow(args, comm, blocks)
    meet = Rendezvous(comm, blocks)
    try:
        return _run(args, meet.explore, meet.engine)
    finally:
        meet.abandon()


def _run(args: argparse.Namespace, explore, engine=None) -> int:
    from ..analysis import NoCycleRun, ZeroTimeCycleRun, analyze
    from ..report import render_steps

    if args.dot and args.no_witness:
        raise ConfigurationError("--dot draws the critical cycle, which --no-witness leaves out")
    not_a_scenario_file(args.model, "analyze")
    defines = parse_defines(args.defines)
    check_view_files(args)
    progress = ProgressLine(sys.stderr) if _interactive(sys.stderr, args.quiet) else None
    try:
        result = analyze(args.model, ratio=args.ratio, mode="min" if args.min else "max",
                         cost=args.cost, backend=args.backend, defines=defines,
                         max_states=args.max_states, max_memory=args.max_memory,
                         progress=progress, witness=not args.no_witness,
                         symmetry=args.symmetry, explore=explore, engine=engine,
                         # What is printed reads a few states and edges: the graph's arrays
                         # stay on the GPU (if there) and come to the host only when read.
                         lazy_graph=True)
    except (ExplorationLimit, RunStopped) as exc:
        if progress:
            progress.close()
        if args.debug:
            raise
        return _stopped(exc, args)
    except AnalysisError as exc:
        if progress:
            progress.close()
        if args.debug:
            raise
        print_error(exc)
        steps = exc.trace if isinstance(exc, (NoCycleRun, ZeroTimeCycleRun)) else ()
        if steps:
            print(f"{exc.trace_title} ({len(steps)} step{'s' * (len(steps) != 1)}):",
                  file=sys.stderr)
            print("\n".join(render_steps(steps)), file=sys.stderr)
        if args.json:
            emit_json("no-answer", error=_error_code(exc), message=str(exc),
                      trace=[s.as_dict() for s in steps])
        return 3
    finally:
        if progress:
            progress.close()
    try:
        return _output(args, result)
    except RunStopped as exc:   # a signal or --timeout while rendering: the counts are known
        from ..analysis import with_counts
        return _stopped(with_counts(exc, result.graph), args)


def _stopped(exc: BaseException, args: argparse.Namespace) -> int:
    """Report a stop (limit, signal, --timeout): what was found so far on stdout (text, or
    the ``--json`` object), the stop's message with the counts on stderr."""
    info = stop_info(exc, args)
    with printing():
        if args.json:
            emit_json(info["status"], limit=info.get("limit"), counts=info["counts"] or None,
                      message=info["message"])
        else:
            print(render_stop(args.model, info))
    print(info["message"], file=sys.stderr)
    return info["exit_code"]


def render_stop(model: str, info: dict) -> str:
    """The text report of an analysis stopped before its answer (:func:`stop_info`'s
    ``info``): no value, why, and the counts found so far.

    >>> print(render_stop("m.dve", {"status": "interrupted", "counts": {"states": 1200,
    ...     "transitions": 3400, "expanded": 1000}, "message": "dvecost: interrupted by SIGINT"}))
    m.dve: no value (interrupted before the answer)
      states found so far       1,200 (1,000 expanded)
      transitions found so far  3,400
    """
    why = {"limit": "a limit stopped it", "timeout": "--timeout stopped it",
           "interrupted": "interrupted"}.get(info["status"], "stopped")
    lines = [f"{model}: no value ({why} before the answer)"]
    counts = info.get("counts") or {}
    if "states" in counts:
        more = f" ({counts['expanded']:,} expanded)" if "expanded" in counts else ""
        lines.append(f"  states found so far       {counts['states']:,}{more}")
    if "transitions" in counts:
        lines.append(f"  transitions found so far  {counts['transitions']:,}")
    return "\n".join(lines)


def _output(args: argparse.Namespace, result) -> int:
    from ..report import render_dot, render_text

    if args.dot:
        dot = render_dot(result)
        if args.dot == "-":
            sys.stdout.write(dot)
        else:
            try:
                with open(args.dot, "w", encoding="utf-8") as fh:
                    fh.write(dot)
            except OSError as exc:
                raise ConfigurationError(f"cannot write '{args.dot}': {exc.strerror}") from None
    try:
        if args.json:
            d = result.as_dict()
            emit_json(d.pop("status"), timings=d.pop("timings"), **d)
        elif args.dot != "-":
            print(render_text(result, trace=args.trace, peak_memory=peak_memory_bytes(),
                              view=args.view, width=text_width()))
        for path in write_views(args, result if result.witness else None, result.model):
            if not args.json:
                print(f"written to {path}")
        sys.stdout.flush()
    except BrokenPipeError:  # `dvecost analyze ... | head`: the reader has seen enough
        drop_closed_outputs()
    return 0


def _error_code(exc: AnalysisError) -> str:
    if isinstance(exc, ZeroTimeCycleError):
        return "zero-time-cycle"
    if isinstance(exc, NoCycleError):
        return "no-cycle"
    return "no-answer"


def _interactive(stream: TextIO, quiet: bool) -> bool:
    return not quiet and is_terminal(stream)
