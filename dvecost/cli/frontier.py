"""``dvecost saturate SPEC --frontier A,B``: the saturation frontier over two scenario counts.

Not a subcommand of its own: :mod:`dvecost.cli.saturate` adds the options with
:func:`add_options` and hands the run to :func:`run` when ``--frontier`` is given.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from typing import Callable, TextIO

from dve.errors import ConfigurationError
from runtime.errors import RunStopped

from ..capacity_report import frontier_csv, frontier_text
from . import parse_defines, peak_memory_bytes, printing, partial_result, result_is_final
from .files import (check_output_files, need_matplotlib, save_figure, write_atomic,
                    write_outputs)
from .sweep import check_spec_options, is_model, model_only_options
from .workers import add_jobs, parse_clients


def parse_pair(text: str, what: str) -> tuple[str, str]:
    """``'reader,exporter'`` -> ``('reader', 'exporter')``.

    >>> parse_pair("reader, exporter", "--frontier")
    ('reader', 'exporter')
    """
    parts = [t.strip() for t in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ConfigurationError(f"bad {what} '{text}': expected two scenario names, "
                                 "e.g. reader,exporter")
    return parts[0], parts[1]


def parse_limits(text: str) -> tuple[int, int]:
    """``'8'`` -> ``(8, 8)``; ``'6,10'`` -> ``(6, 10)``.

    >>> parse_limits("6,10"), parse_limits("8")
    ((6, 10), (8, 8))
    """
    parts = [t.strip() for t in text.split(",")]
    if len(parts) not in (1, 2) or not all(p.isascii() and p.isdigit() for p in parts):
        raise ConfigurationError(f"bad --frontier-max '{text}': expected NA or NA,NB "
                                 "(integers >= 0)")
    a = int(parts[0])
    return a, int(parts[-1])


def add_options(p: argparse.ArgumentParser) -> None:
    """``--frontier A,B``, ``--frontier-max NA[,NB]``, ``--fixed NAME=COUNT,...``,
    ``--workers W``, and ``--jobs N`` (for the search too)."""
    from scenarios.capacity import DEFAULT_FRONTIER_MAX

    p.add_argument("--frontier", metavar="A,B",
                   help="instead of the search: for each count of scenario A, the largest "
                        "count of scenario B that does not saturate (a staircase walk)")
    p.add_argument("--frontier-max", metavar="NA[,NB]",
                   default=f"{DEFAULT_FRONTIER_MAX},{DEFAULT_FRONTIER_MAX}",
                   help="with --frontier: the grid 0..NA x 0..NB (default "
                        f"{DEFAULT_FRONTIER_MAX},{DEFAULT_FRONTIER_MAX})")
    p.add_argument("--fixed", metavar="NAME=COUNT,...", default="",
                   help="with --frontier: clients of other scenarios, held fixed")
    p.add_argument("--workers", type=int, metavar="W",
                   help="with --frontier: a server with W workers instead of the spec's (the "
                        "capacity grows with it)")
    add_jobs(p, "1 for the search, one per CPU core with --frontier")


def run(args: argparse.Namespace) -> int:
    """Run the frontier; ``--csv`` and ``--plot`` are written atomically.

    Progress on stderr (one line per point the walk uses, ``-q``: none); a signal or
    ``--timeout`` prints the frontier found so far, marked partial (exit 130/143, or 3), as
    does a state or memory limit (exit 3).
    """
    from scenarios.capacity import FrontierResult
    from scenarios.parallel import check_jobs

    from ..capacity import frontier
    from ..sweep import model_frontier

    a, b = parse_pair(args.frontier, "--frontier")
    model = is_model(args.spec)
    if model:
        # A DVE model's two inputs: the other inputs are held with -D, and its server is the
        # model's own (no --workers to change it).
        check_spec_options(args, {"--fixed (use -D)": bool(args.fixed.strip()),
                                  "--workers": args.workers is not None,
                                  "--scenario": args.scenario is not None})
        given = [f for f, on in (("--param", args.param), ("--from", args.sweep_from),
                                 ("--to", args.sweep_to), ("--bisect", args.bisect)) if on]
        if given:
            raise ConfigurationError(f"{', '.join(given)} sweep{'s' * (len(given) == 1)} one "
                                     "input; --frontier A,B walks two (their ranges: "
                                     "--frontier-max NA,NB)")
    else:
        check_spec_options(args, model_only_options(args, "--param", "--from", "--to",
                                                    "--bisect"))
    others = parse_clients(args.fixed) if args.fixed.strip() else {}
    check_output_files(args.csv, args.plot)
    check_output_files(getattr(args, "html", None), None)
    exit_code = 0
    progress = None if args.quiet else point_printer(sys.stderr, a, b)
    try:
        if model:
            result = model_frontier(args.spec, a, b, max_values=parse_limits(args.frontier_max),
                                    defines=parse_defines(args.defines),
                                    capacity=args.capacity, resource=args.resource,
                                    backend=args.backend, max_states=args.max_states,
                                    max_memory=args.max_memory, jobs=check_jobs(args.jobs),
                                    progress=progress)
        else:
            result = frontier(args.spec, a, b, max_clients=parse_limits(args.frontier_max),
                              others=others, capacity=args.capacity, backend=args.backend,
                              max_states=args.max_states, max_memory=args.max_memory,
                              workers=args.workers, jobs=args.jobs, resource=args.resource,
                              progress=progress)
        result_is_final()   # a signal from here on stops nothing: the result is printed whole
    except (RunStopped, KeyboardInterrupt) as exc:
        result, exit_code = partial_result(exc, FrontierResult, args)
        if result is None:   # before the walk began: nothing to show
            return exit_code
    if args.timeout:
        # The walk is over: the --timeout clock must not cut the report of what it found.
        signal.setitimer(signal.ITIMER_REAL, 0)
    if result.status == "limit":
        exit_code = 3
    if result.stopped:  # a limit, a signal or --timeout: what follows is partial
        print(f"dvecost: {result.stopped}; the frontier found so far follows", file=sys.stderr,
              flush=True)
    writers = {}
    if args.csv:
        writers["csv"] = lambda: write_atomic(args.csv, frontier_csv(result))
    if args.plot:
        writers["plot"] = lambda: save_figure(build_figure(result), args.plot)
    if getattr(args, "html", None):
        from ..html import render_frontier
        writers["html"] = lambda: write_atomic(args.html, render_frontier(
            result, f"dvecost saturate {args.spec} --frontier {args.frontier}"))
    files, failed = write_outputs(writers)
    with printing():
        if args.json:
            d = result.as_dict()
            if files:
                d["files"] = files
            # The shape every command's JSON has: phase times under timings, the peak last.
            d["timings"] = {"search": d.pop("seconds")}
            d["peak_memory_bytes"] = peak_memory_bytes()
            print(json.dumps(d), flush=True)
        else:
            print(frontier_text(result))
            for what, path in files.items():
                print(f"{what}: written to {path}")
    for message in failed:   # after the result, which a failed file must not cost
        print(f"dvecost: error: {message}", file=sys.stderr, flush=True)
    return exit_code or (2 if failed else 0)


def point_printer(stream: TextIO, a: str, b: str) -> Callable[[object], None]:
    """The frontier's ``progress``: one line on ``stream`` per point the walk uses.

    >>> import io
    >>> from fractions import Fraction
    >>> from scenarios.capacity import FrontierPoint
    >>> out = io.StringIO()
    >>> point_printer(out, "reader", "exporter")(FrontierPoint(2, 5, Fraction(1), True, 61355,
    ...                                                        0.08))
    >>> print(out.getvalue(), end="")
    reader 2, exporter 5: load 1 (1.0000), saturated, 61,355 states, 0.08 s
    """
    def show(p) -> None:
        print(f"{a} {p.n_a}, {b} {p.n_b}: load {p.exact} ({float(p.exact):.4f}), "
              f"{'saturated' if p.saturated else 'below capacity'}, {p.n_states:,} states, "
              f"{p.seconds:.2f} s", file=stream, flush=True)

    return show


# ---------------------------------------------------------------------------- plot

def build_figure(result):
    """The frontier as a matplotlib figure: every evaluated point of the grid ``0..max_a x
    0..max_b`` coloured by its load as a fraction of capacity (saturated points as squares),
    the staircase (for each count of A, the largest count of B below capacity) drawn through
    its points, integer ticks on both axes, the axes named after the scenarios."""
    matplotlib = need_matplotlib()
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import Normalize
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(6.5, 5))
    pts = sorted(result.points, key=lambda p: (p.n_a, p.n_b))
    used = [float(p.exact / result.capacity) for p in pts]
    norm = Normalize(0.0, max([1.0, *used]))
    for saturated, marker in ((False, "o"), (True, "s")):
        group = [(p, u) for p, u in zip(pts, used) if p.saturated == saturated]
        if group:
            ax.scatter([p.n_a for p, _ in group], [p.n_b for p, _ in group],
                       c=[u for _, u in group], cmap="viridis", norm=norm, marker=marker,
                       s=40, edgecolors="black", linewidths=0.5, zorder=3)
    steps = [(na, nb) for na, nb in result.stair if nb is not None]
    if steps:
        ax.step([na for na, _ in steps], [nb for _, nb in steps], where="post",
                color="tab:red", zorder=2, label=f"largest {result.b} below capacity")
    ax.set_xlim(-0.5, result.max_a + 0.5)
    ax.set_ylim(-0.5, result.max_b + 0.5)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(f"{result.a} clients")
    ax.set_ylabel(f"{result.b} clients")
    fixed = "".join(f", {n} {k}" for n, k in result.fixed)
    ax.set_title(f"dvecost saturate {result.spec} --frontier {result.a},{result.b}{fixed}"
                 + (" (partial)" if result.status != "ok" else ""), fontsize=9)
    bar = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap="viridis"), ax=ax)
    bar.set_label(f"load / capacity ({result.capacity})")
    # The legend shows the markers' shapes uncoloured: their colour is the load's.
    handles = [Line2D([], [], marker=m, linestyle="none", markerfacecolor="white",
                      markeredgecolor="black", label=t)
               for m, t in (("o", "below capacity"), ("s", "saturated"))]
    ax.legend(handles=handles + ax.get_legend_handles_labels()[0], loc="upper right",
              fontsize=8)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return fig
