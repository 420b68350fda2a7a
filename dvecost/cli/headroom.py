"""``dvecost headroom SPEC --clients NAME=COUNT,...``: how much of the server a population uses.

The worst occupancy of the server (the most workers some run of the given clients keeps busy
per tick) as a fraction of its workers (or of --capacity), what is left, and the critical cycle
that produces it, as a run of the rendered model; beside it, the worst cost load (the requests'
cost per tick), its own worst case. With --resource server --capacity C the cost load is judged
instead.
"""

from __future__ import annotations

import argparse

from dve.errors import ConfigurationError
from runtime.errors import ExplorationLimit, RunStopped

from ..capacity_report import headroom_text
from . import (add_backend, add_common, add_limits, emit_json, printing, report_stop,
               result_is_final, sweep)
from .subcommand import add_command
from .views import add_view_options, check_view_files, text_width, write_views
from .workers import add_resource, parse_clients


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``headroom`` subcommand to ``sub``."""
    p = add_command(sub, "headroom", __doc__, run)
    p.add_argument("spec", metavar="SPEC", help="a template name or a Python scenario file")
    p.add_argument("--clients", metavar="NAME=COUNT,...",
                   help="the population: clients per scenario, e.g. reader=3,exporter=1 "
                        "(required for scenarios; a .dve model sets its inputs with -D)")
    p.add_argument("--workers", type=int, metavar="W",
                   help="a server with W workers instead of the spec's (the capacity grows "
                        "with it)")
    p.add_argument("--capacity", default=None, metavar="C",
                   help="the load that counts as saturated (e.g. 2, 1.5, 3/2); default, on "
                        "occupancy: the number of workers; required with --resource server")
    add_resource(p)
    p.add_argument("--trace", action="store_true",
                   help="also show the run from the initial state to the critical cycle")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    add_view_options(p)
    add_backend(p)
    add_limits(p)
    sweep.add_headroom_options(p)   # SPEC a .dve model: -D NAME=VALUE, --resource NAME
    add_common(p)


def run(args: argparse.Namespace) -> int:
    """Run ``dvecost headroom``; returns the exit code (a state or memory limit, a signal or
    ``--timeout`` ends it as it ends ``dvecost analyze``: exit 3, 130 or 143, the counts)."""
    from ..capacity import headroom
    from ..report import render_text

    if sweep.is_model(args.spec):
        return sweep.run_headroom(args)    # one DVE model against its capacity
    sweep.check_spec_options(args, sweep.model_only_options(args))
    if args.clients is None:
        raise ConfigurationError("headroom needs --clients NAME=COUNT,... for a scenario spec")
    check_view_files(args)
    try:
        result = headroom(args.spec, parse_clients(args.clients), backend=args.backend,
                          max_states=args.max_states, max_memory=args.max_memory,
                          workers=args.workers, capacity=args.capacity,
                          resource=args.resource)
        result_is_final()   # a signal from here on stops nothing: the result is printed whole
    except (ExplorationLimit, RunStopped) as exc:
        if args.debug:
            raise
        return report_stop(exc, args)  # as `dvecost analyze` stops
    d = result.as_dict()
    with printing():
        if args.json:
            seconds = d.pop("seconds")
            status = d.pop("status")
            cost = result.cost_witness
            emit_json(status, **d, analysis=result.witness.as_dict(),
                      cost_analysis=None if cost is None else cost.as_dict(),
                      timings={"total": seconds})
        else:
            print(headroom_text(result))
            print()
            print(render_text(result.witness, trace=args.trace, view=args.view,
                              width=text_width()))
    facts = [(k.replace("_", " "), k, v) for k, v in d.items()
             if isinstance(v, (int, float, str)) and k not in ("status", "seconds")]
    for path in write_views(args, result.witness, f"dvecost headroom {args.spec} "
                            f"--clients {args.clients}", facts=facts):
        if not args.json:
            print(f"written to {path}")
    return 0
