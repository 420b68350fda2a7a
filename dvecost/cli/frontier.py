"""``dvecost saturate SPEC --frontier A,B``: the saturation frontier over two scenario counts.

Not a subcommand of its own: :mod:`dvecost.cli.saturate` adds the options with
:func:`add_options` and hands the run to :func:`run` when ``--frontier`` is given.
"""

from __future__ import annotations

import argparse
import json
import sys

from dve.errors import ConfigurationError

from .workers import parse_clients


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
    if len(parts) not in (1, 2) or not all(p.isdigit() for p in parts):
        raise ConfigurationError(f"bad --frontier-max '{text}': expected NA or NA,NB "
                                 "(integers >= 0)")
    a = int(parts[0])
    return a, int(parts[-1])


def add_options(p: argparse.ArgumentParser) -> None:
    """``--frontier A,B``, ``--frontier-max NA[,NB]`` and ``--fixed NAME=COUNT,...``."""
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


def run(args: argparse.Namespace, write_atomic) -> int:
    """Run the frontier; ``write_atomic(path, text)`` writes ``--csv``. Exit 3 on a limit."""
    from ..capacity import frontier

    a, b = parse_pair(args.frontier, "--frontier")
    others = parse_clients(args.fixed) if args.fixed.strip() else {}
    result = frontier(args.spec, a, b, max_clients=parse_limits(args.frontier_max),
                      others=others, capacity=args.capacity, backend=args.backend,
                      max_states=args.max_states, max_memory=args.max_memory)
    written = None
    if args.csv:
        written = write_atomic(args.csv, result.csv())
    if args.json:
        d = result.as_dict()
        if written:
            d["files"] = {"csv": str(written)}
        print(json.dumps(d), flush=True)
    else:
        print(result)
        if written:
            print(f"csv: written to {written}")
    if result.status == "limit":
        print(f"dvecost: {result.stopped}; the frontier found so far is above", file=sys.stderr)
        return 3
    return 0
