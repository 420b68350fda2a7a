"""``dvecost bench SUITE``: run a benchmark suite (parse, explore, ocm, analyze, symmetry,
saturate).

Timed benchmarks. Figures are reported against references measured in the same run.

Each suite prints its figures as a Markdown table, or with ``--json`` as one JSON object.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
import time

from ..benchmarks import SUITES
from . import add_common, peak_memory_bytes
from .subcommand import add_command


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``bench`` subcommand (one sub-subcommand per suite) to ``sub``."""
    p = add_command(sub, "bench", __doc__, lambda args: (p.print_help(sys.stderr), 2)[1])
    suites = p.add_subparsers(dest="suite", metavar="SUITE")
    for name, module_name in SUITES.items():
        try:
            module = importlib.import_module(f"dvecost.benchmarks.{module_name}")
        except ModuleNotFoundError as exc:  # suite not built yet
            if exc.name != f"dvecost.benchmarks.{module_name}":
                raise
            continue
        sp = suites.add_parser(name, help=suite_help(module.__doc__))
        add_common(sp)
        sp.add_argument("--json", action="store_true", help="print one JSON object")
        module.add_arguments(sp)
        sp.set_defaults(func=_run, _module=module)


def suite_help(doc: str | None) -> str:
    """A suite's line in ``dvecost bench --help``: the first sentence of its module's
    docstring, on one line, code spans in single quotes, without the references to the
    project's issues that the docstring keeps for its readers.

    >>> suite_help("Saturation: how many clients, per file, with the peak\\n"
    ...            "memory of each search (issue 14's 8-worker targets). More text.")
    'Saturation: how many clients, per file, with the peak memory of each search.'
    >>> suite_help("End to end: ``dvecost analyze`` (target: 5x), on cs_10.dve.")
    "End to end: 'dvecost analyze' (target: 5x), on cs_10.dve."
    """
    text = " ".join((doc or "").strip().split("\n\n")[0].split())
    text = re.sub(r"\s*\(issues? \d+[^)]*\)", "", text)
    first = re.match(r".*?\.(?=\s|$)", text)
    return (first.group(0) if first else text).replace("``", "'")


def _run(args: argparse.Namespace) -> int:
    def progress(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    t0 = time.perf_counter()
    report = args._module.run(args, progress=progress)
    if args.json:
        # The shape every command's JSON has: status first, timings, the peak last.
        d = {"status": "ok", **report.as_dict(),
             "timings": {"total": round(time.perf_counter() - t0, 6)},
             "peak_memory_bytes": peak_memory_bytes()}
        print(json.dumps(d, indent=1, default=str))
    else:
        print(report.as_markdown())
    return 0
