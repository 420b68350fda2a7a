"""``dvecost workers SPEC --clients NAME=COUNT,...``: how many workers a population needs.

Tries 1, 2, 3, ... workers (with ``w`` workers the capacity is ``w x`` the largest cost per
tick) and stops at the first whose worst load (the maximal cycle mean of the server's cost) is
below capacity; prints the load at each value tried.
"""

from __future__ import annotations

import argparse
import json
import sys

from dve.errors import ConfigurationError

from . import add_backend, add_common, add_limits


def parse_clients(text: str) -> dict[str, int]:
    """``'reader=3,exporter=1'`` -> ``{'reader': 3, 'exporter': 1}``.

    >>> parse_clients("reader=3, exporter=1")
    {'reader': 3, 'exporter': 1}
    """
    out: dict[str, int] = {}
    for item in (t.strip() for t in text.split(",")):
        name, eq, count = item.partition("=")
        name, count = name.strip(), count.strip()
        if not eq or not name or not count.isdigit():
            raise ConfigurationError(f"bad client count '{item}': expected NAME=COUNT, e.g. "
                                     "reader=3 (COUNT an integer >= 0)")
        if name in out:
            raise ConfigurationError(f"scenario '{name}' is given twice")
        out[name] = int(count)
    return out


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``workers`` subcommand to ``sub``."""
    from scenarios.capacity import DEFAULT_MAX_WORKERS

    p = sub.add_parser("workers", help="how many server workers a population of clients needs",
                       description="The smallest number of server workers whose worst load "
                                   "(maximal cycle mean of the server's cost) stays below "
                                   "capacity (workers x the largest cost per tick) for the "
                                   "given clients; tries 1, 2, 3, ... workers.")
    p.add_argument("spec", metavar="SPEC", help="a template name or a Python scenario file")
    p.add_argument("--clients", required=True, metavar="NAME=COUNT,...",
                   help="the population: clients per scenario, e.g. reader=3,exporter=1")
    p.add_argument("--max-workers", type=int, default=DEFAULT_MAX_WORKERS, metavar="K",
                   help=f"try at most K workers (1 to 16; default {DEFAULT_MAX_WORKERS})")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    add_backend(p)
    add_limits(p)
    add_common(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run ``dvecost workers``; returns the exit code (3 when a limit stopped the search)."""
    from ..capacity import workers_needed

    clients = parse_clients(args.clients)
    result = workers_needed(args.spec, clients, backend=args.backend,
                            max_states=args.max_states, max_memory=args.max_memory,
                            max_workers=args.max_workers)
    if args.json:
        print(json.dumps(result.as_dict()), flush=True)
    else:
        print(result)
    if result.status == "limit":
        print(f"dvecost: {result.stopped}", file=sys.stderr)
        return 3
    return 0
