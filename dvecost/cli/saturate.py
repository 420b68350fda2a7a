"""``dvecost saturate SPEC``: the smallest number of clients whose load reaches the server's
capacity.

Grow the number of clients of a system described by scenarios (a bundled template or a Python
scenario file), compute the server's worst sustainable load per tick for each number (the
maximal cycle mean of its cost under 'system sync'), and report the smallest number whose load
reaches the capacity (by default the server's: all workers busy on every tick), with the curve
and the mix of clients at each number. Exponential then binary search; it checks that the curve
is monotone and says so when it is not. --method auto (the default) decides a number by
certified bounds where they settle it (the clients' alone rates added up below the capacity; a
simulated run of the model reaching it) and analyses it exactly otherwise, for at most
--exact-budget seconds a number (past them it stays open between its bounds); --method exact
analyses every number; --method bounds never analyses and says where an undecided answer lies.
With --frontier A,B: for each count of scenario A, the largest count of scenario B below
capacity. Progress goes to stderr, one line per number of
clients started and finished (-q: none). Exit codes: 0 done, 2 invalid input, 3 stopped by a
limit before an answer, 130/143 interrupted by SIGINT/SIGTERM (the curve so far is printed).

A thin layer over :func:`dvecost.saturation.saturate`: SPEC is a bundled template (``--list``)
or a scenario file; the curve comes out as a table (or ``--json``, ``--csv FILE``, a
``--plot FILE``), then the answer and the capacity it was measured against.

A search is a long job, so it reports as it goes: one line on stderr when the evaluation of a
number of clients starts and one when it ends (``-q`` silences them), terminal or not. A signal
(SIGINT, SIGTERM) or ``--timeout`` stops it with the curve found so far, printed and written
like a finished one but marked partial.

Exit codes: 0 (an answer, or none up to ``--max-clients``), 2 (invalid input, a broken scenario
file, ``--plot`` without matplotlib), 3 (a state, memory or time limit stopped the search before
an answer), 130 / 143 (SIGINT / SIGTERM).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import signal
import sys
from fractions import Fraction
from typing import Any, Callable, TextIO

from dve.errors import ConfigurationError
from runtime.errors import RunStopped

from . import (add_backend, add_common, add_limits, frontier, parse_seconds,
               peak_memory_bytes, printing, partial_result, result_is_final, sweep)
from ..capacity_report import answer_cycle, cycle_json, not_monotone
from .files import (check_output_files, save_figure, write_atomic,
                    write_outputs)
from .views import add_view_options, check_view_files, render_cycle, text_width, write_views
from .subcommand import add_command
from .terminal import LiveLines, is_terminal
from .workers import add_resource

__all__ = ["register", "run", "render_table", "render_answer", "render_capacity",
           "render_decisions",
           "render_csv", "progress_printer", "build_figure", "write_plot"]


def _max_clients(text: str) -> int:
    """``--max-clients``: a whole number from 1 to :data:`scenarios.loader.MAX_CLIENTS`, checked
    before any work (argparse reports a bad one with the usage, exit 2)."""
    from scenarios.loader import MAX_CLIENTS
    try:
        value = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got '{text}'") from None
    if not 1 <= value <= MAX_CLIENTS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_CLIENTS:,}, got {value:,}")
    return value


def _exact_budget(text: str) -> float:
    """``--exact-budget``: a duration (:func:`~dvecost.cli.parse_seconds`: ``30``, ``2.5``,
    ``2m``), or ``0`` / ``none`` for no budget (0.0); a bad one is refused by argparse with
    the usage (exit 2).

    >>> _exact_budget("30"), _exact_budget("2m"), _exact_budget("none"), _exact_budget("0")
    (30.0, 120.0, 0.0, 0.0)
    >>> _exact_budget("soon")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: bad duration 'soon': expected seconds, e.g. 90, 2.5, ...
    """
    word = text.strip().lower()
    if word in ("none", "off") or re.fullmatch(r"0+(\.0*)?[smh]?", word):
        return 0.0
    try:
        return float(parse_seconds(text))
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(f"{exc}; or 0 or none for no budget") from None


def _default_budget() -> str:
    from ..saturation import EXACT_BUDGET_SECONDS

    return f"{EXACT_BUDGET_SECONDS:g} s"


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``saturate`` subcommand to ``sub``."""
    from scenarios.loader import MAX_CLIENTS
    from scenarios.saturation import DEFAULT_MAX_CLIENTS

    p = add_command(sub, "saturate", __doc__, run)
    p.add_argument("spec", metavar="SPEC", nargs="?",
                   help="a template name (see --list), a Python file defining system(n), "
                        "or a DVE model (.dve) with --param NAME")
    p.add_argument("--capacity", default=None, metavar="C",
                   help="the load that counts as saturated (e.g. 2, 1.5, 3/2); default, on "
                        "occupancy: the server's workers, all busy on every tick (1 for a "
                        "system with no server); required with --resource server")
    add_resource(p)
    p.add_argument("--max-clients", type=_max_clients, default=DEFAULT_MAX_CLIENTS,
                   metavar="N", help=f"search no further than N clients (default "
                                     f"{DEFAULT_MAX_CLIENTS}, at most {MAX_CLIENTS:,})")
    p.add_argument("--scenario", metavar="NAME",
                   help="grow only this scenario (N clients of it alone) instead of all "
                        "scenarios in their proportions")
    p.add_argument("--linear", action="store_true",
                   help="evaluate every N from 1 up instead of searching (exact even when the "
                        "curve is not monotone)")
    p.add_argument("--method", choices=("auto", "exact", "bounds"), default="auto",
                   help="how each N is decided: auto (default) by certified bounds where they "
                        "meet the capacity (an upper bound from the clients' alone rates "
                        "below it; a simulated run of the model reaching it), by exact "
                        "analysis where they do not; exact: always by exact analysis; "
                        "bounds: by the bounds only, leaving undecided what they do not "
                        "settle")
    p.add_argument("--exact-budget", type=_exact_budget, default=None, metavar="SECONDS",
                   help="with --method auto or bounds: the wall-clock time the exact analysis "
                        "of one number of clients may take (e.g. 30, 2m; 0 or none: no "
                        f"budget; default {_default_budget()}); past it that number is left "
                        "open between its certified bounds, the answer is the certified range "
                        "they leave, and the exit code 3. --method exact has none")
    add_limits(p)
    add_backend(p)
    p.add_argument("--no-witness", action="store_true",
                   help="do not decode the critical cycle of the answer (values only)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--csv", metavar="FILE.csv",
                   help="also write the curve as CSV: one row per evaluated N with its mix")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw the evaluated points, load against clients, with the capacity "
                        "line; with --frontier the staircase over the grid, each point "
                        "coloured by its load (needs matplotlib: pip install 'dvecost[plot]')")
    p.add_argument("--list", action="store_true", help="list the bundled templates and exit")
    add_view_options(p)
    frontier.add_options(p)
    sweep.add_saturate_options(p)   # SPEC a .dve model: --param N --from A --to B, -D, ...
    add_common(p)


def run(args: argparse.Namespace) -> int:
    """Run ``dvecost saturate``; returns the exit code."""
    from scenarios import TEMPLATES
    from scenarios.parallel import check_jobs
    from scenarios.saturation import SaturationResult

    from ..saturation import budget_for, saturate

    if args.list:
        width = max(len(n) for n in TEMPLATES)
        for name, t in TEMPLATES.items():
            print(f"{name:<{width}}  {t.description}")
        return 0
    if not args.spec:
        raise ConfigurationError("saturate needs a SPEC: a template name (dvecost saturate "
                                 "--list) or a scenario file")
    if args.exact_budget is not None and (args.frontier or sweep.is_model(args.spec)):
        # (the frontier and a DVE model's sweep analyse every point exactly, to its end)
        raise ConfigurationError("--exact-budget applies to the search over a scenario spec "
                                 "with --method auto or bounds, not to "
                                 + ("--frontier" if args.frontier else
                                    f"the DVE model {args.spec}, whose sweep analyses every "
                                    "value exactly"))
    if args.frontier:   # a scenario spec's two scenarios, or a DVE model's two inputs
        if args.chart or args.view != "steps":
            raise ConfigurationError("--chart and --view show a critical cycle, which "
                                     "--frontier does not decode")
        return frontier.run(args)
    if sweep.is_model(args.spec):
        return sweep.run_saturate(args)    # a DVE model swept over an input (dvecost.sweep)
    sweep.check_spec_options(args, sweep.model_only_options(args, "--param", "--from", "--to",
                                                            "--bisect"))
    if args.workers is not None:
        raise ConfigurationError("--workers applies to --frontier only")
    jobs = check_jobs(1 if args.jobs is None else args.jobs)
    check_output_files(args.csv, args.plot)
    check_view_files(args)
    exit_code = 0
    show = progress_printer(sys.stderr, quiet=args.quiet, live=is_terminal(sys.stderr),
                            method=args.method)
    try:
        result = saturate(args.spec, args.capacity, max_clients=args.max_clients,
                          scenario=args.scenario, backend=args.backend,
                          max_states=args.max_states, max_memory=args.max_memory,
                          search="linear" if args.linear else "bisect",
                          witness=not args.no_witness, progress=show, phases=show.phase,
                          jobs=jobs, method=args.method, resource=args.resource,
                          exact_budget=args.exact_budget)
        result_is_final()   # a signal from here on stops nothing: the result is printed whole
    except (RunStopped, KeyboardInterrupt) as exc:
        show.clear()
        result, exit_code = partial_result(exc, SaturationResult, args)
        if result is None:   # before the search began: no curve to show
            return exit_code
        print(f"dvecost: {result.stopped}; the curve found so far follows", file=sys.stderr,
              flush=True)
    show.clear()
    if args.timeout:
        # The search is over: the --timeout clock must not cut the report of what it found.
        signal.setitimer(signal.ITIMER_REAL, 0)
    stopped = [p for p in result.curve if p.how == "open"
               and (p.note or "").startswith(STOPPED)]
    if result.status == "limit" and result.saturating_clients is None:
        exit_code = 3
        print(f"dvecost: {result.stopped}; the curve found so far follows", file=sys.stderr,
              flush=True)
    elif exit_code == 0 and stopped:
        # A limit (auto's memory guard) left points open: a certified range, not an N.
        exit_code = 3
        for p in stopped:
            print(f"dvecost: N={p.clients}: {p.note}", file=sys.stderr, flush=True)
    writers = {}
    if args.csv:
        writers["csv"] = lambda: write_atomic(args.csv, render_csv(result))
    if args.plot:
        writers["plot"] = lambda: write_plot(result, args.plot)
    files, failed = write_outputs(writers)
    a = result.witness if getattr(result.witness, "cycle", None) else None
    if a is not None and (args.chart or args.html):
        curve = [(p.clients, str(p.exact), float(p.exact)) for p in result.curve
                 if getattr(p, "exact", None) is not None]
        facts = [("saturating clients", "saturating_clients", result.saturating_clients),
                 ("capacity", "capacity", result.capacity)]
        try:
            written = write_views(args, a, f"dvecost saturate {args.spec} (N = "
                                  f"{result.saturating_clients})", facts=facts, curve=curve)
            for what, path in zip([x for x in ("chart", "html") if getattr(args, x)],
                                  written):
                files[what] = path
        except ConfigurationError as exc:
            failed.append(str(exc))
    elif args.chart or args.html:
        failed.append("--chart and --html show the answer's critical cycle: none was decoded "
                      "(no saturating N, or --no-witness)")
    with printing():
        if args.json:
            print(json.dumps(json_object(result, files, budget_for(args.method,
                                                                  args.exact_budget)),
                             default=str), flush=True)
        else:
            print(render_report(result, linear=args.linear))
            if args.view == "ticks" and a is not None and a.ticks() is not None:
                print(render_cycle(a, width=text_width()))
            print(render_cost(result, peak_memory_bytes()))
            for what, path in files.items():
                print(f"{what}: written to {path}")
    for message in failed:   # after the result, which a failed file must not cost
        print(f"dvecost: error: {message}", file=sys.stderr, flush=True)
    return exit_code or (2 if failed else 0)


# ---------------------------------------------------------------------------- text

def _mix(p) -> str:
    from scenarios.saturation import mix_text

    return mix_text(p.mix)


def _ranges(ns: list[int]) -> str:
    """``[3, 5, 6, 7, 9]`` -> ``'N=3, 5..7, 9'``.

    >>> _ranges([3, 5, 6, 7, 9])
    'N=3, 5..7, 9'
    """
    runs: list[list[int]] = []
    for n in ns:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return "N=" + ", ".join(str(a) if a == b else f"{a}..{b}" for a, b in runs)


def resource_words(resource: str) -> str:
    """What the load of ``resource`` is, in words.

    >>> resource_words("busy"), resource_words("server")
    ("occupancy ('busy': busy workers per tick)", "load of 'server' (cost per tick)")
    """
    if resource == "busy":
        return "occupancy ('busy': busy workers per tick)"
    if resource == "server":
        return "load of 'server' (cost per tick)"
    return f"load of '{resource}' per tick"


def render_capacity(result) -> str:
    """Which capacity was used and why.

    >>> from types import SimpleNamespace as NS
    >>> render_capacity(NS(capacity=Fraction(2), capacity_why="2 workers, all busy on every "
    ...                    "tick"))
    'capacity 2 = 2 workers, all busy on every tick'
    >>> render_capacity(NS(capacity=Fraction(3, 2), capacity_why="given"))
    'capacity 3/2 (given with --capacity)'
    """
    cap = str(result.capacity)
    why = result.capacity_why
    if why == "given":
        return f"capacity {cap} (given with --capacity)"
    if why.startswith("default"):
        return f"capacity {cap} ({why})"
    return f"capacity {cap} = {why}"


def _load_cells(p) -> tuple[str, str]:
    """The table's two load cells: exact and decimal, or the bounds of a point decided by
    them (``84/11..8``, ``<= 7.6364``)."""
    if p.exact is not None:
        return str(p.exact), f"{p.value:.4f}"
    lo, hi = p.lower, p.upper
    if lo is None:
        return f"<= {hi}", f"<= {float(hi):.4f}"
    return f"{lo}..{hi}", f"{float(lo):.4f}..{float(hi):.4f}"


def render_table(result) -> str:
    """The curve as a table: clients, their mix, states, load exact and decimal, seconds;
    and how each point was decided when not every one was analysed exactly (``decided``:
    ``exact``, ``bound``, ``witness``, ``open``; the states of a point not explored are
    ``-``, and a load known only by its bounds is shown as them).

    >>> from scenarios.saturation import SaturationPoint, SaturationResult
    >>> r = SaturationResult("demo", Fraction(1), 2, (
    ...     SaturationPoint(1, Fraction(1, 2), 8, 0.01, mix=(("a", 1),)),
    ...     SaturationPoint(2, Fraction(1), 40, 0.02, mix=(("a", 1), ("b", 1)))),
    ...     True, (), 64, None, "server")
    >>> print(render_table(r))
    clients  mix        states  load (exact)    load  seconds
          1  1 a             8           1/2  0.5000     0.01
          2  1 a + 1 b      40             1  1.0000     0.02
    >>> r = SaturationResult("demo", Fraction(1), 3, (
    ...     SaturationPoint(2, None, None, 0.01, mix=(("a", 2),), how="bound",
    ...                     low=Fraction(1, 2), high=Fraction(3, 4)),
    ...     SaturationPoint(3, Fraction(1), None, 0.02, mix=(("a", 3),), how="witness",
    ...                     low=Fraction(1), high=Fraction(1))), True, (), 64, None, "server")
    >>> print(render_table(r))
    clients  mix  states  load (exact)            load  decided  seconds
          2  2 a       -      1/2..3/4  0.5000..0.7500  bound       0.01
          3  3 a       -             1          1.0000  witness     0.02
    """
    decided = any(p.how != "exact" for p in result.curve)
    rows = [(str(p.clients), _mix(p), "-" if p.n_states is None else str(p.n_states),
             *_load_cells(p), *((p.how,) if decided else ()), f"{p.seconds:.2f}")
            for p in result.curve]
    head = ("clients", "mix", "states", "load (exact)", "load",
            *(("decided",) if decided else ()), "seconds")
    left = {1, 5} if decided else {1}
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    return "\n".join("  ".join(c.ljust(w) if i in left else c.rjust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip()
                     for r in [head, *rows])


#: How the note of a point left open by a limit of its exact analysis begins
#: (:meth:`scenarios.search.SaturationSearch.point`), and what it says when the limit was the
#: budget (:class:`dvecost.saturation.ExactBudgetExceeded`).
STOPPED = "exact analysis stopped"
BUDGET_SPENT = "exact-analysis budget of"


def render_decisions(result) -> list[str]:
    """How the points were decided, when bounds decided any, and what the answer rests on.

    >>> from scenarios.saturation import SaturationPoint, SaturationResult
    >>> pts = (SaturationPoint(1, Fraction(1, 3), None, 0, mix=(("u", 1),), how="bound",
    ...                        low=Fraction(1, 3), high=Fraction(1, 3)),
    ...        SaturationPoint(2, None, None, 0, mix=(("u", 2),), how="open",
    ...                        low=Fraction(1, 2), high=Fraction(1)),
    ...        SaturationPoint(3, Fraction(1), None, 0, mix=(("u", 3),), how="witness",
    ...                        low=Fraction(1), high=Fraction(1)))
    >>> r = SaturationResult("demo", Fraction(1), 3, pts, True, (), 64, None, "server",
    ...                      method="bounds", alone=(("u", Fraction(1, 3)),))
    >>> first, second = render_decisions(r)
    >>> for part in first.split("; "):
    ...     print(part)
    decided: 1 by the upper bound, 1 by a simulated run, 1 left open (method bounds)
    alone rates: u 1/3
    >>> print(second)
    not certified: N=2 left open (load between 1/2 and 1); the answer lies in 2..3
    """
    if not result.curve:
        return []
    counts = {h: sum(p.how == h for p in result.curve) for h in ("bound", "witness",
                                                                 "exact", "open")}
    words = {"bound": "by the upper bound", "witness": "by a simulated run",
             "exact": "by exact analysis", "open": "left open"}
    parts = [f"{k} {words[h]}" for h, k in counts.items() if k]
    lines = []
    if result.method != "exact" or counts["bound"]:
        line = f"decided: {', '.join(parts)} (method {result.method})"
        if result.alone:
            line += "; alone rates: " + ", ".join(f"{name} {rho}"
                                                  for name, rho in result.alone)
        lines.append(line)
    if not result.certified and not (result.partial and result.saturating_clients is None):
        opened = [p for p in result.open_points]
        what = ", ".join(f"N={p.clients}" for p in opened[:5])
        where = ""
        if len(opened) == 1:
            p = opened[0]
            low = "0" if p.lower is None else str(p.lower)
            where = f" (load between {low} and {p.upper})"
            if p.note:
                where += f" [{p.note}]"
        line = f"not certified: {what} left open{where}" if opened else "not certified"
        skipped = [m for m in result.undecided_below if result.point(m) is None]
        if skipped:
            why = ("the search stopped first" if result.partial else
                   "not evaluated, assumed below; --linear decides every N")
            line += ("; " if opened else ": ") + f"{_ranges(skipped)} not decided ({why})"
        rng = result.answer_range
        if rng is not None:
            line += f"; the answer lies in {rng[0]}..{rng[1]}"
            if result.below_upto is not None and result.below_upto + 1 == rng[0]:
                line += (f" (the upper bound keeps every N up to {result.below_upto} "
                         "below)")
        lines.append(line)
        stopped = [p for p in opened if (p.note or "").startswith(STOPPED)]
        if len(opened) > 1:   # (one open point's note is in the line above)
            lines += [f"N={p.clients}: {p.note}" for p in stopped]
        if any(BUDGET_SPENT in p.note for p in stopped):
            lines.append("hint: --exact-budget SECONDS gives the exact analysis of each N "
                         "more time (0 or none: no budget), --method exact no limit but "
                         "memory")
    return lines


def render_answer(result) -> str:
    """The answer in words, with the warnings (non-monotone curve, early stop)."""
    cap = str(result.capacity)
    grown = f"clients of scenario '{result.scenario}'" if result.scenario else "clients"
    what = resource_words(result.resource)
    lines = []
    n = result.saturating_clients
    if n is not None:
        p = result.point(n)
        below = result.point(n - 1)
        mix = f" ({_mix(p)})" if len(p.mix) > 1 else ""
        reached = str(p.exact) if p.exact is not None else f"at least {p.lower}"
        line = (f"saturation: {n} {grown}{mix} bring the {what} to "
                f"{reached}, reaching the capacity {cap}")
        if below is not None and below.exact is not None:
            line += f"; {n - 1} give {str(below.exact)} ({below.value:.4f})"
        elif below is not None and below.reaches(result.capacity) is False:
            line += f"; {n - 1} give at most {below.upper} ({float(below.upper):.4f})"
        elif below is not None:
            line += f"; {n - 1} left open ({_load_cells(below)[0]})"
        lines.append(line)
    elif result.partial:
        lo, hi = result.bracket()
        so_far = (f"so far N={hi} reaches the capacity {cap}" if hi is not None else
                  f"so far no N evaluated reaches the capacity {cap}")
        if hi is not None and lo is not None and hi - lo == 1:
            so_far += f" and N={lo} does not: the answer is {hi}"
        elif hi is not None and lo is not None:
            so_far += (f" and N={lo} does not: the answer lies in {lo + 1}..{hi} (if the load "
                       "is monotone)")
        elif hi is not None:
            so_far += f": the answer is at most {hi}"
        elif lo is not None:
            so_far += f": the answer, if any, is above {lo}"
        lines.append(f"no answer: the search stopped before its end; {so_far}")
    else:
        top = max(result.curve, key=lambda q: q.upper, default=None)
        upto = result.searched_upto or max((q.clients for q in result.curve), default=0)
        if result.curve and not result.open_points:
            lines.append(f"no saturation: up to {upto} {grown} the {what} stays below "
                         f"the capacity {cap} (at most {str(top.upper)}, "
                         f"{float(top.upper):.4f})")
        elif result.curve:
            lines.append(f"no saturation found: up to {upto} {grown} no run found reaches the "
                         f"capacity {cap}, and the bounds leave some points open")
        else:
            lines.append(f"no saturation: no number of {grown} can bring the {what} "
                         f"to the capacity {cap}")
    if result.note:
        lines.append(f"why: {result.note}")
    if result.stopped:
        word = {"limit": "stopped", "timeout": "stopped", "interrupted": "interrupted"}
        lines.append(f"{word.get(result.status, 'stopped')}: {result.stopped}; the curve above "
                     "is what was found so far")
    if result.load_bound is not None and result.resource in ("busy", "server") \
            and not result.note:
        lines.append(f"bound: the {what} never exceeds {str(result.load_bound)} "
                     f"({result.load_bound_why})")
    if result.cost_load is not None:
        lines.append(f"cost: at N={n} the worst load of '{result.cost_resource}' (the "
                     f"requests' cost per tick, its own worst case) is {result.cost_load} "
                     f"({float(result.cost_load):.4f})")
    elif n is not None and result.cost_resource is not None and result.witness is not None:
        mix = ",".join(f"{name}={k}" for name, k in result.point(n).mix)
        lines.append(f"cost: the worst load of '{result.cost_resource}' at N={n} was not "
                     f"computed (N={n} was decided without its state graph); dvecost headroom "
                     f"{result.spec} --clients {mix} gives it")
    lines += render_decisions(result)
    if not result.monotone:
        pairs = ", ".join(f"N={a.clients}: {_load_cells(a)[0]} > N={b.clients}: "
                          f"{_load_cells(b)[0]}" for a, b in result.violations[:5])
        lines.append(not_monotone("the number of clients", pairs, "; the answer does not rely "
                                  "on it: every N below the answer was decided"))
    return "\n".join(lines)


def render_witness(result) -> str | None:
    """One line on the critical cycle of the answer's point, or ``None`` without one."""
    a = result.witness
    cycle = answer_cycle(a)
    if cycle is None:
        return None
    n = result.saturating_clients
    _, ticks, cost = cycle
    if result.point(n) is not None and result.point(n).how == "witness":
        return (f"saturating run at N={n} (found by simulation, replayable): {len(a.prefix)} "
                f"steps from the initial state, then a cycle of {len(a.cycle)} steps "
                f"({ticks} ticks) costing {cost}, load {str(Fraction(cost, len(a.cycle)))}; "
                "its steps are in --json (witness.prefix, witness.cycle)")
    return (f"critical cycle at N={n}: {len(a.cycle)} steps ({ticks} ticks) costing {cost}, "
            f"load {str(Fraction(cost, len(a.cycle)))}; to see it step by step: dvecost "
            f"scenarios render {result.spec} {n}"
            + (f" --scenario {result.scenario}" if result.scenario else "")
            + f" -o m.dve && dvecost analyze m.dve --cost {result.resource}")


def render_report(result, *, linear: bool = False) -> str:
    """The whole text report: header, capacity, table, answer, witness."""
    how = "every N" if linear else "exponential then binary search"
    lines = [f"{result.spec}: worst {resource_words(result.resource)} against the number of "
             f"clients ({how}, up to {result.max_clients})", render_capacity(result)]
    if result.curve:
        lines.append(render_table(result))
    lines.append(render_answer(result))
    w = render_witness(result)
    if w:
        lines.append(w)
    return "\n".join(lines)


def render_cost(result, peak_bytes: int) -> str:
    """What the search cost: time analysing, time decoding the answer's run, peak memory.

    >>> from scenarios.saturation import SaturationPoint, SaturationResult
    >>> r = SaturationResult("demo", Fraction(1), 1, (SaturationPoint(1, Fraction(1), 8, 0.25),),
    ...     True, (), 64, None, "server", witness_seconds=0.05)
    >>> render_cost(r, 300 * 2**20)
    "time: 0.25 s analysing 1 model, 0.05 s decoding the answer's run; peak memory 300 MiB"
    """
    n = len(result.curve)
    line = f"time: {result.seconds:.2f} s analysing {n} model{'s' * (n != 1)}"
    if result.witness is not None or result.witness_seconds:
        line += f", {result.witness_seconds:.2f} s decoding the answer's run"
    return line + f"; peak memory {peak_bytes / 2**20:.0f} MiB"


def json_object(result, files: dict[str, str] | None = None,
                exact_budget: float | None = None) -> dict[str, Any]:
    """The ``--json`` object: ``status`` first, the result's fields, the witness,
    ``exact_budget`` (the seconds each point's exact analysis had, or null), the files
    written, ``timings`` (``search``: the points' seconds; ``witness``: decoding the answer's
    run) and ``peak_memory_bytes`` last (the shape every command shares)."""
    out = result.as_dict()
    seconds = out.pop("seconds")
    a = result.witness
    if answer_cycle(a) is not None:
        p = result.point(result.saturating_clients)
        out["witness"] = {"clients": result.saturating_clients,
                          "decided": None if p is None else p.how, **cycle_json(a)}
        if p is not None and p.how == "witness":
            # A simulated run: the prefix from the initial state too (the exact method's
            # prefix is a shortest run, which `dvecost analyze` prints).
            out["witness"]["initial"] = a.as_dict()["initial"]
            out["witness"]["prefix"] = [s.as_dict() for s in a.prefix]
    c = result.cost_witness
    if answer_cycle(c) is not None:
        # The worst cost load's own critical cycle (beside an occupancy answer).
        out["cost_witness"] = {"clients": result.saturating_clients,
                               **{k: v for k, v in cycle_json(c).items() if k != "cycle_time"}}
    # The budget each point's exact analysis had (seconds; null: none); a point it stopped
    # is open, its note saying so.
    out["exact_budget"] = exact_budget
    out.update(files or {})
    out["timings"] = {"search": round(seconds, 6), "witness": round(result.witness_seconds, 6)}
    out["peak_memory_bytes"] = peak_memory_bytes()
    return out


def render_csv(result) -> str:
    """The curve as CSV: ``clients``, ``mix``, one ``n_SCENARIO`` count column per scenario,
    ``states``, ``load_exact``, ``load``, ``seconds``, ``certified``, ``decided`` (how),
    ``load_low`` and ``load_high`` (the bounds; the exact load twice when known); a value not
    known (the states of a point not explored, the load of one decided by bounds that do not
    meet) is empty.

    >>> from scenarios.saturation import SaturationPoint, SaturationResult
    >>> r = SaturationResult("demo", Fraction(1), 2, (
    ...     SaturationPoint(1, Fraction(1, 2), 8, 0.01, mix=(("a", 1),)),
    ...     SaturationPoint(2, Fraction(1), 40, 0.02, mix=(("a", 1), ("b", 1)))),
    ...     True, (), 64, None, "server")
    >>> print(render_csv(r), end="")
    clients,mix,n_a,n_b,states,load_exact,load,seconds,certified,decided,load_low,load_high
    1,1 a,1,0,8,1/2,0.5,0.01,true,exact,1/2,1/2
    2,1 a + 1 b,1,1,40,1,1.0,0.02,true,exact,1,1
    """
    names: list[str] = []
    for p in result.curve:
        names += [name for name, _ in p.mix if name not in names]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["clients", "mix", *(f"n_{n}" for n in names), "states", "load_exact", "load",
                "seconds", "certified", "decided", "load_low", "load_high"])
    for p in result.curve:
        counts = dict(p.mix)
        w.writerow([p.clients, _mix(p), *(counts.get(n, 0) for n in names),
                    "" if p.n_states is None else p.n_states,
                    "" if p.exact is None else str(p.exact),
                    "" if p.value is None else repr(p.value), round(p.seconds, 4),
                    "true" if p.certified else "false", p.how,
                    "" if p.lower is None else str(p.lower),
                    "" if p.upper is None else str(p.upper)])
    return buf.getvalue()


# ---------------------------------------------------------------------------- plot

def build_figure(result):
    """The plot as a matplotlib figure: one marker per *evaluated* N (no line through the N
    that were not), integer ticks on the clients axis, the capacity line and the answer."""
    known = [p for p in result.curve if p.exact is not None]
    xs = [p.clients for p in result.curve]
    fig, ax = sweep.curve_figure()
    ax.plot([p.clients for p in known], [p.value for p in known], "o", linestyle="none",
            label=f"load ({result.resource}), evaluated N")
    bracketed = [p for p in result.curve if p.exact is None]
    if bracketed:
        # Points known only by their bounds: a bar from the lower to the upper bound.
        ax.vlines([p.clients for p in bracketed],
                  [float(p.lower) if p.lower is not None else 0 for p in bracketed],
                  [float(p.upper) for p in bracketed], color="tab:gray",
                  label="load between its bounds")
    ax.axhline(float(result.capacity), color="tab:red", linestyle="--",
               label=f"capacity {str(result.capacity)}")
    n = result.saturating_clients
    if n is not None:
        ax.plot([n], [float(result.point(n).lower)], "o", markersize=12, markerfacecolor="none",
                color="tab:green", label=f"saturation at {n}")
    return sweep.finish_curve(fig, ax, xs, "clients" + (f" ({result.scenario})"
                                                         if result.scenario else ""),
                              "worst load per tick", f"dvecost saturate {result.spec}"
                              + (" (partial)" if result.partial else ""))


def write_plot(result, path: str) -> str:
    """Draw :func:`build_figure` into ``path`` (atomically); returns the path."""
    return save_figure(build_figure(result), path)


# ---------------------------------------------------------------------------- progress

#: What the line of a point that starts says is being done, by ``--method``.
STARTING = {"exact": "exploring",
            "auto": "checking the bounds (exact analysis if they do not decide)",
            "bounds": "checking the bounds"}


def progress_printer(stream: TextIO, *, quiet: bool = False, live: bool = False,
                     method: str = "exact") -> Callable[[object], None]:
    """The search's ``progress``: on ``stream``, the warnings of the plan (always), and unless
    ``quiet`` one line when a number of clients starts (saying what is done first, by
    ``method``: :data:`STARTING`) and one when it is done.

    With ``live`` (a terminal), ``show.phase(phase, message)`` also shows what the analysis of
    the current point is doing on a line of its own, rewritten in place and wiped before the
    next line (so a terminal ends up showing the same lines as a file). ``show.clear()`` wipes
    it before something else is printed.

    >>> import io
    >>> from scenarios.saturation import PointStarted, SaturationPoint
    >>> out = io.StringIO(); show = progress_printer(out)
    >>> show(PointStarted(6, (("browser", 4), ("buyer", 2))))
    >>> show(SaturationPoint(6, Fraction(2), 5509, 0.33, mix=(("browser", 4), ("buyer", 2))))
    >>> print(out.getvalue(), end="")
    N = 6 (4 browser + 2 buyer): exploring ...
    N = 6 (4 browser + 2 buyer): load 2 (2.0000), 5,509 states, 0.33 s
    """
    from scenarios.saturation import Plan, PointStarted, SaturationPoint, mix_text

    out = LiveLines(stream, live=live, quiet=quiet)
    line = out.line

    def show(event: object) -> None:
        if isinstance(event, Plan):
            for w in event.warnings:
                line(f"warning: {w}")
            return
        if quiet:
            return
        if isinstance(event, PointStarted):
            what = "decoding the critical cycle" if event.witness else STARTING[method]
            line(f"N = {event.clients} ({mix_text(event.mix)}): {what} ...")
        elif isinstance(event, SaturationPoint) and event.how == "exact":
            # (no states: an interleaved load read off the scenarios' alone rates)
            states = ("from the alone rates" if event.n_states is None
                      else f"{event.n_states:,} states")
            line(f"N = {event.clients} ({mix_text(event.mix)}): load {str(event.exact)} "
                 f"({event.value:.4f}), {states}, {event.seconds:.2f} s")
        elif isinstance(event, SaturationPoint):
            how = {"bound": "below by the upper bound", "witness": "saturated by a "
                   "simulated run", "open": "left open by the bounds"}[event.how]
            if event.how == "open" and (event.note or "").startswith(STOPPED):
                # (what stopped its exact analysis: the budget, the memory guard, a limit)
                how = "left open, " + event.note.split("; ", 1)[0]
            load = _load_cells(event)[0]
            line(f"N = {event.clients} ({mix_text(event.mix)}): load {load}, {how}, "
                 f"{event.seconds:.2f} s")

    show.phase = out.phase   # type: ignore[attr-defined]
    show.clear = out.clear   # type: ignore[attr-defined]
    return show
