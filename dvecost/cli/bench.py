"""``dvecost bench SUITE``: timed benchmarks, printed as a Markdown table or JSON."""

from __future__ import annotations

import argparse
import importlib
import json
import sys

from ..benchmarks import SUITES
from . import add_common


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bench", help="run a benchmark suite (parse, explore, ocm, analyze, "
                                     "symmetry, saturate)",
                       description="Timed benchmarks. Figures are reported against references "
                                   "measured in the same run.")
    suites = p.add_subparsers(dest="suite", metavar="SUITE")
    for name, module_name in SUITES.items():
        try:
            module = importlib.import_module(f"dvecost.benchmarks.{module_name}")
        except ModuleNotFoundError as exc:  # suite not built yet
            if exc.name != f"dvecost.benchmarks.{module_name}":
                raise
            continue
        sp = suites.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        add_common(sp)
        sp.add_argument("--json", action="store_true", help="print one JSON object")
        module.add_arguments(sp)
        sp.set_defaults(func=_run, _module=module)
    p.set_defaults(func=lambda args: (p.print_help(sys.stderr), 2)[1])


def _run(args: argparse.Namespace) -> int:
    def progress(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    report = args._module.run(args, progress=progress)
    if args.json:
        print(json.dumps(report.as_dict(), indent=1, default=str))
    else:
        print(report.as_markdown())
    return 0
