"""``dvecost workers SPEC --clients NAME=COUNT,...``: how many server workers a population of
clients needs.

The smallest number of server workers that the given clients do not saturate: no run keeps
every worker busy on every tick (occupancy below the number of workers). Tries 1, 2, 3, ...
workers and prints the occupancy at each value tried, then the worst cost load (the requests'
cost per tick) with the answer's workers. With --resource server --capacity C (one worker's
capacity) the cost load is judged instead.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time

from dve.errors import ConfigurationError
from runtime.errors import RunStopped

from ..capacity_report import workers_text
from . import (add_backend, add_common, add_limits, peak_memory_bytes, partial_result, printing,
               result_is_final)
from .subcommand import add_command


def parse_clients(text: str) -> dict[str, int]:
    """``'reader=3,exporter=1'`` -> ``{'reader': 3, 'exporter': 1}``.

    >>> parse_clients("reader=3, exporter=1")
    {'reader': 3, 'exporter': 1}
    """
    out: dict[str, int] = {}
    for item in (t.strip() for t in text.split(",")):
        name, eq, count = item.partition("=")
        name, count = name.strip(), count.strip()
        # ASCII digits only: str.isdigit also takes '²' and other digits int() refuses.
        if not eq or not name or not (count.isascii() and count.isdigit()):
            raise ConfigurationError(f"bad client count '{item}': expected NAME=COUNT, e.g. "
                                     "reader=3 (COUNT an integer >= 0)")
        if name in out:
            raise ConfigurationError(f"scenario '{name}' is given twice")
        out[name] = int(count)
    return out


def add_jobs(p: argparse.ArgumentParser, default: str = "one per CPU core") -> None:
    """``--jobs N``: worker processes analysing points side by side (default: the cores)."""
    p.add_argument("--jobs", type=int, metavar="N",
                   help=f"analyse up to N points at once in worker processes (default: "
                        f"{default}; the answer and the output are those of --jobs 1)")


def add_resource(p: argparse.ArgumentParser) -> None:
    """``--resource NAME``: which resource the capacity judges."""
    p.add_argument("--resource", metavar="NAME", default=None,
                   help="the resource judged: busy (occupancy, the default with a server: "
                        "saturated means every worker busy on every tick) or server (the "
                        "requests' cost per tick, against --capacity); the worst cost load "
                        "is reported beside occupancy")


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``workers`` subcommand to ``sub``."""
    from scenarios.capacity import DEFAULT_MAX_WORKERS

    p = add_command(sub, "workers", __doc__, run)
    p.add_argument("spec", metavar="SPEC", help="a template name or a Python scenario file")
    p.add_argument("--clients", metavar="NAME=COUNT,...",
                   help="the population: clients per scenario, e.g. reader=3,exporter=1 "
                        "(required for scenarios; a .dve model sets its inputs with -D)")
    p.add_argument("--max-workers", type=int, default=DEFAULT_MAX_WORKERS, metavar="K",
                   help=f"try at most K workers (1 to 16; default {DEFAULT_MAX_WORKERS})")
    p.add_argument("--capacity", default=None, metavar="C",
                   help="what one worker carries of the resource judged (default 1 on "
                        "occupancy; required with --resource server)")
    add_resource(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    add_jobs(p)
    add_backend(p)
    add_limits(p)
    from . import sweep
    sweep.add_workers_options(p)   # SPEC a .dve model: --param W, --from A, -D, ...
    add_common(p)


def run(args: argparse.Namespace) -> int:
    """Run ``dvecost workers``; returns the exit code (3 when a limit stopped the search,
    130/143 for a signal: the values tried so far are printed)."""
    from scenarios.capacity import WorkersResult

    from ..capacity import workers_needed
    from . import sweep

    if sweep.is_model(args.spec):
        return sweep.run_workers(args)    # the smallest value of a DVE model's input
    sweep.check_spec_options(args, sweep.model_only_options(args, "--param", "--from"))
    if args.clients is None:
        raise ConfigurationError("workers needs --clients NAME=COUNT,... for a scenario spec")
    clients = parse_clients(args.clients)
    exit_code = 0
    t0 = time.perf_counter()
    try:
        result = workers_needed(args.spec, clients, backend=args.backend,
                                max_states=args.max_states, max_memory=args.max_memory,
                                max_workers=args.max_workers, jobs=args.jobs,
                                resource=args.resource, capacity=args.capacity,
                                progress=None if args.quiet else _printer(sys.stderr))
        result_is_final()   # a signal from here on stops nothing: the result is printed whole
    except (RunStopped, KeyboardInterrupt) as exc:
        result, exit_code = partial_result(exc, WorkersResult, args)
        if result is None:   # before the search began: nothing to show
            return exit_code
    if args.timeout:
        signal.setitimer(signal.ITIMER_REAL, 0)
    if result.status == "limit":
        exit_code = 3
    if result.stopped:
        print(f"dvecost: {result.stopped}; the values tried so far follow", file=sys.stderr,
              flush=True)
    with printing():
        if args.json:
            d = result.as_dict()
            # The shape every command's JSON has: phase times under timings, the peak last.
            d["timings"] = {"search": round(time.perf_counter() - t0, 6)}
            d["peak_memory_bytes"] = peak_memory_bytes()
            print(json.dumps(d), flush=True)
        else:
            print(workers_text(result))
    return exit_code


def _printer(stream):
    """One line on ``stream`` per number of workers tried."""
    def show(p) -> None:
        print(f"workers {p.workers}: load {p.exact} ({float(p.exact):.4f}) of capacity "
              f"{p.capacity}, {'saturated' if p.saturated else 'below capacity'}, "
              f"{p.n_states:,} states, {p.seconds:.2f} s", file=stream, flush=True)

    return show
