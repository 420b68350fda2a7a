"""``dvecost saturate SPEC``: how many clients it takes to saturate the server.

A thin layer over :func:`scenarios.saturate`: SPEC is a bundled template (``--list``) or a
scenario file; the curve comes out as a table (or ``--json``, or a ``--plot``), then the answer.
Exit codes: 0 (an answer, or none up to ``--max-clients``), 2 (invalid input, a broken scenario
file, ``--plot`` without matplotlib), 3 (the search stopped at a state limit before an answer).
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from typing import TextIO

from dve.errors import ConfigurationError

from . import add_backend, add_common

__all__ = ["register", "run", "render_table", "render_answer", "write_plot"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``saturate`` subcommand to ``sub``."""
    from scenarios.saturation import DEFAULT_MAX_CLIENTS

    p = sub.add_parser(
        "saturate",
        help="the smallest number of clients whose load reaches the server's capacity",
        description="Grow the number of clients of a system described by scenarios (a bundled "
                    "template or a Python scenario file), compute the server's worst "
                    "sustainable load per tick for each number (the maximal cycle mean of its "
                    "cost under 'system sync'), and report the smallest number whose load "
                    "reaches the capacity, with the curve. Exponential then binary search; it "
                    "checks that the curve is monotone and says so when it is not. Exit codes: "
                    "0 done, 2 invalid input, 3 stopped by a state limit before an answer.")
    p.add_argument("spec", metavar="SPEC", nargs="?",
                   help="a template name (see --list) or a Python file defining system(n)")
    p.add_argument("--capacity", default="1", metavar="C",
                   help="the load that counts as saturated: 1 (default) = one worker busy "
                        "every tick at cost 1; also 2, 1.5, 3/2")
    p.add_argument("--max-clients", type=int, default=DEFAULT_MAX_CLIENTS, metavar="N",
                   help=f"search no further than N clients (default {DEFAULT_MAX_CLIENTS})")
    p.add_argument("--scenario", metavar="NAME",
                   help="grow only this scenario (N clients of it alone) instead of all "
                        "scenarios in their proportions")
    p.add_argument("--linear", action="store_true",
                   help="evaluate every N from 1 up instead of searching (exact even when the "
                        "curve is not monotone)")
    p.add_argument("--max-states", type=int, metavar="N", default=None,
                   help="stop the search at the first model with more than N states")
    add_backend(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw load against clients with the capacity line (needs matplotlib: "
                        "pip install 'dvecost[plot]')")
    p.add_argument("--list", action="store_true", help="list the bundled templates and exit")
    add_common(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``dvecost saturate``; returns the exit code."""
    from scenarios import TEMPLATES, saturate

    if args.list:
        width = max(len(n) for n in TEMPLATES)
        for name, t in TEMPLATES.items():
            print(f"{name:<{width}}  {t.description}")
        return 0
    if not args.spec:
        raise ConfigurationError("saturate needs a SPEC: a template name (dvecost saturate "
                                 "--list) or a scenario file")
    if args.max_states is not None and args.max_states < 1:
        raise ConfigurationError(f"--max-states must be at least 1, got {args.max_states}")
    if args.plot:
        _need_matplotlib()
    progress = _Progress(sys.stderr) if _interactive(sys.stderr, args.quiet) else None
    result = saturate(args.spec, args.capacity, max_clients=args.max_clients,
                      scenario=args.scenario, backend=args.backend, max_states=args.max_states,
                      search="linear" if args.linear else "bisect", progress=progress)
    if args.plot:
        write_plot(result, args.plot)
    if args.json:
        print(json.dumps(result.as_dict(), indent=1))
    else:
        how = ("every N" if args.linear else "exponential then binary search")
        print(f"{result.spec}: worst load of '{result.resource}' per tick against the number of "
              f"clients ({how}, up to {result.max_clients})")
        if result.curve:
            print(render_table(result))
        print(render_answer(result))
    return 3 if result.stopped and result.saturating_clients is None else 0


# ---------------------------------------------------------------------------- text

def _frac(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def render_table(result) -> str:
    """The curve as a table: clients, states, load exact and decimal, seconds.

    >>> from fractions import Fraction
    >>> from scenarios.saturation import SaturationPoint, SaturationResult
    >>> r = SaturationResult("demo", Fraction(1), 2, (SaturationPoint(1, Fraction(1, 2), 8, 0.01),
    ...     SaturationPoint(2, Fraction(1), 40, 0.02)), True, (), 64, None, "server")
    >>> print(render_table(r))
    clients  states  load (exact)    load  seconds
          1       8           1/2  0.5000     0.01
          2      40             1  1.0000     0.02
    """
    rows = [(str(p.clients), str(p.n_states), _frac(p.exact), f"{p.value:.4f}",
             f"{p.seconds:.2f}") for p in result.curve]
    head = ("clients", "states", "load (exact)", "load", "seconds")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
    return "\n".join("  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [head, *rows])


def render_answer(result) -> str:
    """The answer in words, with the warnings (non-monotone curve, early stop)."""
    cap = _frac(result.capacity)
    grown = f"clients of scenario '{result.scenario}'" if result.scenario else "clients"
    what = "the server" if result.resource == "server" else f"resource '{result.resource}'"
    lines = []
    n = result.saturating_clients
    if n is not None:
        p = result.point(n)
        below = result.point(n - 1)
        line = (f"saturation: {n} {grown} bring the load of {what} to {_frac(p.exact)}, "
                f"reaching the capacity {cap}")
        if below is not None:
            line += f"; {n - 1} give {_frac(below.exact)} ({below.value:.4f})"
        lines.append(line)
    else:
        top = max(result.curve, key=lambda q: q.exact, default=None)
        upto = max((q.clients for q in result.curve), default=0)
        if result.curve:
            lines.append(f"no saturation: up to {upto} {grown} the load of {what} stays below "
                         f"the capacity {cap} (at most {_frac(top.exact)}, {top.value:.4f})")
        else:
            lines.append(f"no saturation: no number of {grown} can bring the load of {what} "
                         f"to the capacity {cap}")
    if result.note:
        lines.append(f"why: {result.note}")
    if result.stopped:
        lines.append(f"stopped: {result.stopped}")
    if result.load_bound is not None and result.resource == "server" and not result.note:
        lines.append(f"bound: the load never exceeds {_frac(result.load_bound)} "
                     "(workers x largest cost per tick)")
    if not result.monotone:
        pairs = ", ".join(f"N={a.clients}: {_frac(a.exact)} > N={b.clients}: {_frac(b.exact)}"
                          for a, b in result.violations[:5])
        lines.append("warning: the load is not monotone in the number of clients (" + pairs
                     + "); the search relies on it, so a smaller saturating number may exist "
                     "(--linear evaluates every N)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- plot

def _need_matplotlib():
    try:
        import matplotlib
    except ImportError:
        raise ConfigurationError("--plot needs matplotlib, which is not installed; install it "
                                 "with: pip install 'dvecost[plot]'") from None
    return matplotlib


def write_plot(result, path: str) -> None:
    """Load against clients, with the capacity line and the saturating point, as an image."""
    matplotlib = _need_matplotlib()
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    xs = [p.clients for p in result.curve]
    ys = [p.value for p in result.curve]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, ys, "o-", label=f"load ({result.resource})")
    ax.axhline(float(result.capacity), color="tab:red", linestyle="--",
               label=f"capacity {_frac(result.capacity)}")
    n = result.saturating_clients
    if n is not None:
        ax.axvline(n, color="tab:green", linestyle=":", label=f"saturation at {n}")
    ax.set_xlabel("clients" + (f" ({result.scenario})" if result.scenario else ""))
    ax.set_ylabel("worst load per tick")
    ax.set_title(f"dvecost saturate {result.spec}")
    ax.set_ylim(bottom=0)
    ax.legend(loc="lower right")
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as exc:
        raise ConfigurationError(f"cannot write '{path}': {exc.strerror or exc}") from None
    finally:
        plt.close(fig)


# ---------------------------------------------------------------------------- progress

def _interactive(stream: TextIO, quiet: bool) -> bool:
    isatty = getattr(stream, "isatty", None)
    return not quiet and bool(isatty and isatty())


class _Progress:
    """One line per evaluated point on a terminal."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, point) -> None:
        print(f"  N={point.clients}: load {_frac(point.exact)} ({point.value:.4f}), "
              f"{point.n_states} states, {point.seconds:.2f} s", file=self.stream, flush=True)
