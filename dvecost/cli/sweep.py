"""``saturate``, ``headroom`` and ``workers`` for a DVE model (``model.dve``) instead of scenarios.

A thin layer over :mod:`dvecost.sweep`. ``dvecost saturate model.dve --param N`` sweeps the
``input`` constant ``N`` (``--from A --to B``; every value, or ``--bisect``) and prints the curve
as the scenario search prints its own: a table (or ``--json``, ``--csv FILE``, ``--plot FILE``),
the answer, whether it is certified, and the critical cycle of the answer's value.
``dvecost headroom model.dve -D N=5`` analyses one model against its capacity; ``dvecost workers
model.dve --param W`` is the smallest ``W`` whose load stays below the capacity.

The commands' modules add these options (:func:`add_saturate_options`,
:func:`add_headroom_options`, :func:`add_workers_options`) and hand a ``.dve`` SPEC to
:func:`run_saturate`, :func:`run_headroom` or :func:`run_workers`; the options of one kind of
SPEC given with the other are refused (exit 2).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import signal
import sys
from fractions import Fraction
from typing import Any, Callable, TextIO

from dve.errors import ConfigurationError
from runtime.errors import ExplorationLimit, RunStopped
from scenarios.parallel import check_jobs

from . import add_defines, emit_json, parse_defines, partial_result, peak_memory_bytes, report_stop
from ..capacity_report import answer_cycle, cycle_json, not_monotone
from .files import check_output_files, need_matplotlib, save_figure, write_atomic
from .terminal import LiveLines, is_terminal

__all__ = ["is_model", "add_saturate_options", "add_headroom_options", "add_workers_options",
           "check_spec_options", "model_only_options", "run_saturate", "run_headroom",
           "run_workers",
           "render_table", "render_answer", "render_report", "render_csv", "json_object",
           "build_figure", "progress_printer", "curve_figure", "finish_curve"]


def is_model(spec: str | None) -> bool:
    """Whether a SPEC names a DVE model (a ``.dve`` file) rather than scenarios.

    >>> is_model("models/pool.dve"), is_model("editor"), is_model("shop.py"), is_model(None)
    (True, False, False, False)
    """
    return bool(spec) and str(spec).lower().endswith(".dve")


# ---------------------------------------------------------------------------- options

def _add_shared(p, flag: str, **kw) -> None:
    """``flag``, unless the command has it already (the scenarios' own option of that name
    then serves both kinds of SPEC); when added here, ``args.<dest>_models_only`` is true, so
    that a scenario SPEC refuses it."""
    try:
        action = p.add_argument(flag, **kw)
    except argparse.ArgumentError:
        return
    p.set_defaults(**{f"{action.dest}_models_only": True})


def _add_resource(p) -> None:
    _add_shared(p, "--resource", metavar="NAME",
                help="DVE models: the cost resource whose load is judged (needed when the "
                     "model charges several)")


def add_saturate_options(p: argparse.ArgumentParser) -> None:
    """The options of ``dvecost saturate model.dve``: ``--param``, ``--from``, ``--to``,
    ``--bisect``, ``-D`` and ``--resource``."""
    g = p.add_argument_group(
        "DVE models (SPEC a .dve file)",
        "sweep an input of the model; its load (the maximal cycle mean of --resource) is "
        "judged against --capacity C, or else the model's constant CAPACITY")
    g.add_argument("--param", metavar="NAME",
                   help="the model's input constant to sweep (e.g. N, the number of clients)")
    g.add_argument("--from", dest="sweep_from", type=int, metavar="A",
                   help="first value of --param (default 1)")
    g.add_argument("--to", dest="sweep_to", type=int, metavar="B",
                   help="last value of --param (default A + 63)")
    g.add_argument("--bisect", action="store_true",
                   help="exponential then binary search over --param instead of every value: "
                        "fewer analyses, but the answer then rests on the load being "
                        "monotone (marked not certified)")
    add_defines(g)
    _add_resource(g)


def add_headroom_options(p: argparse.ArgumentParser) -> None:
    """``-D`` and ``--resource`` for ``dvecost headroom model.dve``."""
    g = p.add_argument_group("DVE models (SPEC a .dve file)")
    add_defines(g)
    _add_resource(g)


def add_workers_options(p: argparse.ArgumentParser) -> None:
    """``--param``, ``--from``, ``-D`` and ``--resource`` for ``dvecost workers model.dve``;
    ``--capacity C`` is one worker's capacity there, as for scenarios (``W`` workers: ``W x
    C``)."""
    g = p.add_argument_group(
        "DVE models (SPEC a .dve file)",
        "the model's number of workers is its input --param; W workers carry W x --capacity, "
        "or else the model's constant CAPACITY (which may use W)")
    g.add_argument("--param", metavar="NAME",
                   help="the model's input constant giving its number of workers (e.g. W)")
    _add_shared(g, "--capacity", metavar="C",
                help="DVE models: what one worker carries (W workers: W x C)")
    g.add_argument("--from", dest="sweep_from", type=int, metavar="A",
                   help="fewest workers tried (default 1)")
    add_defines(g)
    _add_resource(g)


def check_spec_options(args: argparse.Namespace, given: dict[str, bool]) -> None:
    """Refuse options that do not apply to this kind of SPEC: ``given`` maps each option of
    the other kind to whether it was given. Raises ConfigurationError (exit 2) naming them.

    >>> ns = argparse.Namespace(spec="m.dve")
    >>> check_spec_options(ns, {"--scenario": True, "--fixed": False})
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: --scenario applies to scenario specs (a template or a .py ...
    >>> check_spec_options(argparse.Namespace(spec="editor"), {"-D": True, "--to": True})
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: -D, --to apply to DVE models (a .dve file), not to the ...
    """
    bad = [name for name, on in given.items() if on]
    if not bad:
        return
    opts = ", ".join(bad)
    verb = "applies" if len(bad) == 1 else "apply"
    if is_model(args.spec):
        raise ConfigurationError(
            f"{opts} {verb} to scenario specs (a template or a .py file), not to the DVE "
            f"model {args.spec}; a model's clients are its input (--param NAME, -D "
            "NAME=VALUE)")
    raise ConfigurationError(f"{opts} {verb} to DVE models (a .dve file), not to the scenario "
                             f"spec {args.spec}")


def model_only_options(args: argparse.Namespace, *names: str) -> dict[str, bool]:
    """The model-only options of ``args`` and whether each was given."""
    out = {"-D": bool(getattr(args, "defines", None))}
    attrs = {"--param": "param", "--from": "sweep_from", "--to": "sweep_to",
             "--bisect": "bisect"}
    for name in names:
        out[name] = bool(getattr(args, attrs[name], None) not in (None, False))
    for flag in ("resource", "capacity"):
        if getattr(args, f"{flag}_models_only", False):
            out[f"--{flag}"] = getattr(args, flag) is not None
    return out


# ---------------------------------------------------------------------------- saturate

def run_saturate(args: argparse.Namespace) -> int:
    """``dvecost saturate model.dve --param N ...``; returns the exit code (0 an answer or
    none up to ``--to``; 2 invalid input; 3 a limit stopped the sweep before an answer;
    130/143 a signal, the curve so far printed)."""
    from scenarios.saturation import DEFAULT_MAX_CLIENTS

    check_spec_options(args, {
        "--scenario": args.scenario is not None,
        "--fixed": bool(args.fixed.strip()), "--workers": args.workers is not None,
        "--list": args.list,
        "--max-clients (use --to)": args.max_clients != DEFAULT_MAX_CLIENTS,
        "--method bounds": args.method == "bounds"})
    if not args.param:
        raise ConfigurationError(f"saturate {args.spec} needs --param NAME: the model's input "
                                 "to sweep (e.g. --param N for N clients)")
    if args.bisect and args.linear:
        raise ConfigurationError("--bisect and --linear contradict each other: choose one")
    check_output_files(args.csv, args.plot)
    start = 1 if args.sweep_from is None else args.sweep_from
    result, exit_code = _sweep_until_stopped(
        args, args.spec, args.param, start=start, stop=args.sweep_to, capacity=args.capacity,
        resource=args.resource, defines=parse_defines(args.defines),
        search="bisect" if args.bisect else "linear", backend=args.backend,
        max_states=args.max_states, max_memory=args.max_memory, witness=not args.no_witness,
        jobs=check_jobs(1 if args.jobs is None else args.jobs))
    if result is None:
        return exit_code       # stopped before the sweep began: no curve to show
    if result.stopped:
        print(f"dvecost: {result.stopped}; the curve found so far follows", file=sys.stderr,
              flush=True)
    files: dict[str, str] = {}
    if args.csv:
        files["csv"] = write_atomic(args.csv, render_csv(result))
    if args.plot:
        files["plot"] = save_figure(build_figure(result), args.plot)
    if args.json:
        print(json.dumps(json_object(result, files)), flush=True)
    else:
        print(render_report(result))
        n = len(result.curve)
        line = f"time: {result.seconds:.2f} s analysing {n} model{'s' * (n != 1)}"
        if result.witness is not None:
            line += f", {result.witness_seconds:.2f} s decoding the answer's run"
        print(line + f"; peak memory {peak_memory_bytes() / 2**20:.0f} MiB")
        for what, path in files.items():
            print(f"{what}: written to {path}")
    return exit_code


def _per(result) -> str:
    return "tick" if result.family.system == "sync" else "step"


def render_table(result) -> str:
    """The curve: the input's value, states, load exact and decimal, the capacity (when it
    varies with the input), seconds.

    >>> print(render_table(_demo()))
    N  states  load (exact)    load  seconds
    1       8           1/3  0.3333     0.01
    2      40           2/3  0.6667     0.02
    3     160             1  1.0000     0.05
    """
    varies = result.capacity is None
    head = (result.family.param, "states", "load (exact)", "load",
            *(("capacity",) if varies else ()), "seconds")
    rows = [(str(p.n), f"{p.n_states}", str(p.exact), f"{p.value:.4f}",
             *((str(p.capacity),) if varies else ()), f"{p.seconds:.2f}")
            for p in result.curve]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)).rstrip()
                     for r in [head, *rows])


def render_capacity(result) -> str:
    """Which capacity the values were judged against, and why.

    >>> render_capacity(_demo())
    "capacity 1 = the model's constant CAPACITY"
    """
    cap, why = result.capacity, result.family.capacity_why
    if cap is None:
        return f"capacity: {why}, evaluated at each value (the table's column)"
    if why == "given":
        return f"capacity {cap} (given with --capacity)"
    return f"capacity {cap} = {why}"


def render_answer(result) -> str:
    """The answer in words, what it rests on, and the warnings.

    >>> for part in render_answer(_demo()).split("; "):
    ...     print(part)
    saturation: N = 3 brings the load of 'cost' to 1, reaching the capacity 1
    N = 2 gives 2/3 (0.6667)
    certified: every N from 1 to 2 was analysed exactly and stays below the capacity
    """
    fam = result.family
    x = fam.param
    lines = []
    n = result.answer
    goal = result.goal
    if n is not None:
        p = result.point(n)
        if goal == "saturate":
            line = (f"saturation: {x} = {n} brings the load of '{fam.resource}' to {p.exact}, "
                    f"reaching the capacity {p.capacity}")
        else:
            line = (f"workers: {x} = {n} keeps the load of '{fam.resource}' at {p.exact} "
                    f"({p.value:.4f}), below the capacity {p.capacity}")
        below = result.point(n - 1)
        if below is not None:
            line += (f"; {x} = {n - 1} gives {below.exact} ({below.value:.4f})"
                     + ("" if goal == "saturate" else f" of capacity {below.capacity}"))
        lines.append(line)
    elif result.partial:
        below = [p.n for p in result.curve if not result.found(p)]
        so_far = ""
        if below and result.search == "linear":
            so_far = (f"; so far every {x} from {result.start} to {max(below)} "
                      + ("stays below" if goal == "saturate" else "reaches") + " the capacity")
        lines.append(f"no answer: the sweep stopped before its end{so_far}")
    else:
        upto = max((p.n for p in result.curve), default=result.start)
        top = max(result.curve, key=lambda q: q.exact, default=None)
        what = ("reaches the capacity" if goal == "saturate"
                else "keeps the load below the capacity")
        most = "" if top is None else f" (the load is at most {top.exact}, {top.value:.4f})"
        lines.append(f"no {'saturation' if goal == 'saturate' else 'answer'}: no {x} from "
                     f"{result.start} to {upto} {what}{most}")
    if n is not None or not result.partial:
        top = n if n is not None else result.stop
        if result.certified and n is not None and n > result.start:
            lines.append(f"certified: every {x} from {result.start} to {n - 1} was analysed "
                         f"exactly and {'stays below' if goal == 'saturate' else 'reaches'} "
                         "the capacity")
        elif result.certified and n is not None:
            lines.append(f"certified: {n} is the first value of the sweep (--from "
                         f"{result.start})")
        elif result.assumes_monotone:
            skipped = [k for k in range(result.start, top) if result.point(k) is None]
            lines.append(f"not certified: the bisection skipped {len(skipped)} value"
                         f"{'s' * (len(skipped) != 1)} below {top} (e.g. {x} = {skipped[0]}); "
                         "the answer holds if the load never falls as "
                         f"{x} grows (every value: leave out --bisect)")
        elif n is not None or not result.certified:
            lines.append("not certified: a value's exact check failed")
    if result.stopped:
        lines.append(f"stopped: {result.stopped}; the curve above is what was found so far")
    if not result.monotone:
        pairs = ", ".join(f"{x}={a.n}: {a.exact} > {x}={b.n}: {b.exact}"
                          for a, b in result.violations[:5])
        lines.append(not_monotone(x, pairs))
    for w in result.warnings:
        lines.append(f"warning: {w}")
    return "\n".join(lines)


def render_witness(result) -> str | None:
    """One line on the critical cycle of the answer's value, or ``None`` without one."""
    a = result.witness
    cycle = answer_cycle(a)
    if cycle is None:
        return None
    fam = result.family
    n = result.answer
    _, ticks, cost = cycle
    sets = "".join(f" -D {k}={v}" for k, v in fam.defines)
    return (f"critical cycle at {fam.param}={n}: {len(a.cycle)} steps ({ticks} time units) "
            f"costing {cost}, load {Fraction(cost, len(a.cycle))}; to see it step by step: "
            f"dvecost analyze {fam.name} -D {fam.param}={n}{sets} --cost {fam.resource}")


def render_report(result) -> str:
    """The whole text report: header, capacity, table, answer, witness."""
    fam = result.family
    how = "exponential then binary search" if result.search == "bisect" else "every value"
    lines = [f"{fam.name}: worst load of '{fam.resource}' per {_per(result)} against "
             f"{fam.param} ({how} from {result.start}, up to {result.stop})",
             render_capacity(result)]
    if result.curve:
        lines.append(render_table(result))
    lines.append(render_answer(result))
    w = render_witness(result)
    if w:
        lines.append(w)
    return "\n".join(lines)


def json_object(result, files: dict[str, str] | None = None) -> dict[str, Any]:
    """The ``--json`` object: the result's :meth:`~dvecost.sweep.SweepResult.as_dict`, the
    answer's critical cycle under ``witness`` (``n``, ``cycle_steps``, ``cycle_cost``,
    ``cycle_time``, ``cycle``), the files written, ``timings`` (``search``, ``witness``) and
    ``peak_memory_bytes`` last."""
    out = result.as_dict()
    seconds = out.pop("seconds")
    a = result.witness
    if answer_cycle(a) is not None:
        out["witness"] = {"n": result.answer, **cycle_json(a)}
    out.update(files or {})
    out["timings"] = {"search": round(seconds, 6), "witness": round(result.witness_seconds, 6)}
    out["peak_memory_bytes"] = peak_memory_bytes()
    return out


def render_csv(result) -> str:
    """The curve as CSV: the input's name (its value), ``states``, ``load_exact``, ``load``,
    ``capacity``, ``saturated``, ``seconds``, ``certified``.

    >>> print(render_csv(_demo()), end="")
    N,states,load_exact,load,capacity,saturated,seconds,certified
    1,8,1/3,0.3333333333333333,1,false,0.01,true
    2,40,2/3,0.6666666666666666,1,false,0.02,true
    3,160,1,1.0,1,true,0.05,true
    """
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([result.family.param, "states", "load_exact", "load", "capacity", "saturated",
                "seconds", "certified"])
    for p in result.curve:
        w.writerow([p.n, p.n_states, str(p.exact), repr(p.value), str(p.capacity),
                    "true" if p.saturated else "false", round(p.seconds, 4),
                    "true" if p.certified else "false"])
    return buf.getvalue()


def curve_figure():
    """``(fig, ax)``: an empty figure for a curve of load against ``N`` (matplotlib, headless;
    exit 2 with the hint to install it when missing)."""
    matplotlib = need_matplotlib()
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(6, 4))


def finish_curve(fig, ax, xs: list[int], xlabel: str, ylabel: str, title: str):
    """The axes of a curve figure: ticks exactly at the evaluated ``xs`` (up to 16 of them;
    integers otherwise), labels, title, the load from 0, the legend; returns ``fig``."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    if 0 < len(xs) <= 16:
        ax.xaxis.set_major_locator(FixedLocator(xs))   # ticks exactly at the evaluated N
    else:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    fig.tight_layout()
    return fig


def build_figure(result):
    """The plot: one marker per analysed value, load against the input, the capacity (a line,
    or a marker per value when it varies) and the answer circled."""
    fam = result.family
    xs = [p.n for p in result.curve]
    fig, ax = curve_figure()
    ax.plot(xs, [p.value for p in result.curve], "o", linestyle="none",
            label=f"load ({fam.resource}), analysed {fam.param}")
    if result.capacity is not None:
        ax.axhline(float(result.capacity), color="tab:red", linestyle="--",
                   label=f"capacity {result.capacity}")
    else:
        ax.plot(xs, [float(p.capacity) for p in result.curve], "_", color="tab:red",
                markersize=14, label="capacity")
    if result.answer is not None:
        p = result.point(result.answer)
        what = "saturation" if result.goal == "saturate" else "answer"
        ax.plot([p.n], [p.value], "o", markersize=12, markerfacecolor="none",
                color="tab:green", label=f"{what} at {p.n}")
    return finish_curve(fig, ax, xs, fam.param, f"worst load per {_per(result)}",
                        f"dvecost saturate {fam.name} --param {fam.param}"
                        + (" (partial)" if result.partial else ""))


def progress_printer(stream: TextIO, *, quiet: bool = False,
                     live: bool = False) -> Callable[[object], None]:
    """The sweep's ``progress``: the plan's warnings (always), and unless ``quiet`` one line
    when a value starts and one when it is done; with ``live`` (a terminal),
    ``show.phase(phase, message)`` rewrites a line of its own in place, wiped by
    ``show.clear()``.

    >>> from dvecost.sweep import PointStarted
    >>> out = io.StringIO(); show = progress_printer(out)
    >>> show(PointStarted(3)); show(_demo().curve[2])
    >>> print(out.getvalue(), end="")
    value 3: exploring ...
    value 3: load 1 (1.0000) of capacity 1, saturated, 160 states, 0.05 s
    """
    from ..sweep import PointStarted, SweepPlan, SweepPoint

    out = LiveLines(stream, live=live, quiet=quiet)
    line = out.line
    name = ["value"]   # the swept input's name, once the plan says it

    def show(event: object) -> None:
        if isinstance(event, SweepPlan):
            name[0] = f"{event.family.param} ="
            for w in event.warnings:
                line(f"warning: {w}")
            return
        if quiet:
            return
        if isinstance(event, PointStarted):
            what = "decoding the critical cycle" if event.witness else "exploring"
            line(f"{name[0]} {event.n}: {what} ...")
        elif isinstance(event, SweepPoint):
            line(f"{name[0]} {event.n}: load {event.exact} ({event.value:.4f}) of capacity "
                 f"{event.capacity}, {'saturated' if event.saturated else 'below'}, "
                 f"{event.n_states:,} states, {event.seconds:.2f} s")

    show.phase = out.phase   # type: ignore[attr-defined]
    show.clear = out.clear   # type: ignore[attr-defined]
    return show


def _demo():
    """A small result for the examples (no analysis)."""
    from dve.errors import Source
    from dve.inputs import InputDecl

    from ..sweep import ModelFamily, SweepPoint, SweepResult

    fam = ModelFamily("m.dve", Source("m.dve", ""), "N", InputDecl("N", "int", 1, None), (),
                      "cost", ("cost",), "sync", None)
    one = Fraction(1)
    pts = (SweepPoint(1, Fraction(1, 3), one, 8, 0.01), SweepPoint(2, Fraction(2, 3), one, 40,
                                                                    0.02),
           SweepPoint(3, one, one, 160, 0.05))
    return SweepResult(fam, 1, 64, "linear", "saturate", 3, pts)


# ---------------------------------------------------------------------------- headroom

def run_headroom(args: argparse.Namespace) -> int:
    """``dvecost headroom model.dve [-D N=5] [--capacity C]``: one analysis; a limit or a
    signal stops it as it stops ``dvecost analyze``."""
    from ..report import render_text
    from ..sweep import model_headroom

    check_spec_options(args, {"--clients": args.clients is not None,
                              "--workers": args.workers is not None})
    try:
        result = model_headroom(args.spec, defines=parse_defines(args.defines),
                                capacity=args.capacity, resource=args.resource,
                                backend=args.backend, max_states=args.max_states,
                                max_memory=args.max_memory)
    except (ExplorationLimit, RunStopped) as exc:
        if args.debug:
            raise
        return report_stop(exc, args)
    if args.json:
        d = result.as_dict()
        seconds = d.pop("seconds")
        status = d.pop("status")
        emit_json(status, **d, analysis=result.witness.as_dict(), timings={"total": seconds})
    else:
        print(result)
        print()
        print(render_text(result.witness, trace=args.trace))
    return 0


# ---------------------------------------------------------------------------- workers

def _sweep_until_stopped(args: argparse.Namespace, *pos, **kwargs):
    """``(result, exit code)`` of :func:`dvecost.sweep.sweep` with the progress on stderr, as
    the commands run it: a signal or ``--timeout`` keeps the curve so far (its exit code, 130
    / 143 / 3); a state or memory limit with no answer is exit 3; ``(None, code)`` when it
    stopped before the sweep began (reported here, as ``analyze`` reports a stop). The
    ``--timeout`` clock is stopped once the sweep is over, so it cannot cut the report."""
    from ..sweep import SweepResult, sweep

    exit_code = 0
    show = progress_printer(sys.stderr, quiet=args.quiet, live=is_terminal(sys.stderr))
    try:
        result = sweep(*pos, progress=show, phases=show.phase, **kwargs)
    except (RunStopped, KeyboardInterrupt) as exc:
        show.clear()
        result, exit_code = partial_result(exc, SweepResult, args)
        if result is None:
            return None, exit_code
    show.clear()
    if args.timeout:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if result.status == "limit" and result.answer is None:
        exit_code = 3
    return result, exit_code


def run_workers(args: argparse.Namespace) -> int:
    """``dvecost workers model.dve --param W``: the smallest ``W`` (from ``--from``, up to
    ``--max-workers``) whose load stays below its capacity; exit codes as ``saturate``'s."""
    check_spec_options(args, {"--clients": args.clients is not None})
    if not args.param:
        raise ConfigurationError(f"workers {args.spec} needs --param NAME: the model's input "
                                 "giving its number of workers (e.g. --param W)")
    start = 1 if args.sweep_from is None else args.sweep_from
    stop = max(start, args.max_workers)
    # --capacity is one worker's, as for scenarios: W workers carry W x C.
    result, exit_code = _sweep_until_stopped(
        args, args.spec, args.param, start=start, stop=stop, capacity_per=args.capacity,
        resource=args.resource, defines=parse_defines(args.defines), goal="below",
        backend=args.backend, max_states=args.max_states, max_memory=args.max_memory,
        witness=False, jobs=check_jobs(1 if args.jobs is None else args.jobs))
    if result is None:
        return exit_code
    if result.stopped:
        print(f"dvecost: {result.stopped}; the values tried so far follow", file=sys.stderr,
              flush=True)
    if args.json:
        print(json.dumps(json_object(result)), flush=True)
    else:
        fam = result.family
        print(f"{fam.name}: smallest {fam.param} whose worst load of '{fam.resource}' per "
              f"{_per(result)} stays below its capacity (every value from {result.start}, up "
              f"to {result.stop})")
        print(render_capacity(result))
        if result.curve:
            print(render_table(result))
        print(render_answer(result))
    return exit_code
