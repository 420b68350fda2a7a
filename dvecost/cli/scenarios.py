"""``dvecost scenarios``: write a scenario system as DVE; list the templates.

Scenario systems: 'render' writes the DVE model of a template or a scenario file for N clients
(readable, and what 'dvecost saturate' analyses); 'list' lists the bundled templates.
"""

from __future__ import annotations

import argparse
import sys

from dve.errors import ConfigurationError

from . import add_common
from .subcommand import add_command

__all__ = ["register", "run_render", "run_list", "render_spec"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``scenarios`` subcommand (``render``, ``list``) to ``sub``."""
    p = add_command(sub, "scenarios", __doc__, lambda args: (p.print_help(sys.stderr), 2)[1])
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    r = actions.add_parser("render", help="write the DVE model for N clients",
                           description="Write the DVE model of SPEC (a template name or a "
                                       "scenario file) with N clients.")
    r.add_argument("spec", metavar="SPEC", help="a template name or a Python scenario file")
    r.add_argument("n", metavar="N", type=int, help="the number of clients")
    r.add_argument("--scenario", metavar="NAME",
                   help="N clients of this scenario alone, as 'saturate --scenario' grows it")
    r.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    add_common(r)
    r.set_defaults(func=run_render)
    ls = actions.add_parser("list", help="list the bundled templates")
    add_common(ls)
    ls.set_defaults(func=run_list)
    add_common(p)


def render_spec(spec: str, n: int, scenario: str | None = None) -> str:
    """The DVE text of ``spec`` with ``n`` clients, with a comment header saying what it is.

    >>> print(render_spec("paper-server", 1).splitlines()[0])
    // dvecost scenarios render paper-server 1
    """
    import dve
    from scenarios.loader import MAX_CLIENTS
    from scenarios.saturation import one_scenario, resolve_spec

    if not 1 <= n <= MAX_CLIENTS:
        # Checked before anything is built: sharing 10^20 clients out among scenarios hung.
        raise ConfigurationError(f"N must be between 1 and {MAX_CLIENTS:,}, got {n:,}")
    name, family = resolve_spec(spec)
    if scenario is not None:
        family = one_scenario(family, scenario, max(n, 64))
    system = family(n)
    head = f"// dvecost scenarios render {spec} {n}" + (f" --scenario {scenario}"
                                                        if scenario else "")
    return (f"{head}\n// {system.describe()}; load = maximal cycle mean of cost "
            f"'{system.resource}'\n\n" + dve.format_model(system.to_model()))


def run_render(args: argparse.Namespace) -> int:
    text = render_spec(args.spec, args.n, args.scenario)
    if args.output and args.output != "-":
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise ConfigurationError(f"cannot write '{args.output}': "
                                     f"{(exc.strerror or str(exc)).lower()}") from None
    else:
        sys.stdout.write(text)
    return 0


def run_list(args: argparse.Namespace) -> int:
    from scenarios import TEMPLATES

    width = max(len(n) for n in TEMPLATES)
    for name, t in TEMPLATES.items():
        print(f"{name:<{width}}  {t.description}")
    return 0
