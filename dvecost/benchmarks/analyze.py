"""End to end: ``dvecost analyze`` against exploration alone (target: at most 5x), on cs_10.dve.

For each model, the best of ``--repeat`` runs of:

- *explore*: :func:`statespace.build_state_graph` on the compiled model (what ``dvecost
  explore`` spends its time on; loading and compiling the model are timed apart as *parse*);
- *analyze*: the whole of :func:`dvecost.analyze` (parse, explore, SCCs, Howard, certificate,
  decoding the critical cycle and the traces), for the cycle mean and for the cycle ratio.

The ratio ``analyze / explore`` is the figure the first target is about: the analysis on top of
a state space should cost little more than building it. The column ``report_pct`` is the second
target's figure: the *report* phase of ``analyze`` (decoding the witness: the critical cycle,
the run reaching it, the deadlock and error runs) as a percentage of that run's own *explore*
phase; target at most 5 %. ``--template editor:8`` adds a bundled scenario template rendered
for N clients (:mod:`scenarios.templates`), analysed for its server's resource.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import time
from typing import Callable

from . import Report, shared_roots

__all__ = ["add_arguments", "run", "default_models"]


def default_models() -> list[pathlib.Path]:
    """``cs_10.dve`` from the shared models folder (``$DVECOST_SHARED/models``, else
    ``../shared/models`` next to the working directory or the source tree)."""
    for r in shared_roots():
        p = r / "models" / "cs_10.dve"
        if p.is_file():
            return [p]
    return []


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", action="append", type=pathlib.Path, metavar="FILE",
                   help="a model to time (repeatable; default: ../shared/models/cs_10.dve "
                        "unless --template is given)")
    p.add_argument("--template", action="append", metavar="NAME:N", default=[],
                   help="a bundled scenario template for N clients, e.g. editor:8 "
                        "(repeatable; the cycle mean only)")
    p.add_argument("--scenario", action="append", metavar="SPEC:NAME=K,...[@W]", default=[],
                   help="a template or scenario file with these clients (and W workers), as "
                        "'headroom' renders it, e.g. editor:reader=6,exporter=3@4 (repeatable; "
                        "the cycle mean only)")
    p.add_argument("--issue27", action="store_true",
                   help="the report cases of issue 27: the 25-client shop (20 browsers, 5 "
                        "buyers, 3 workers; needs --shop FILE), the editor with 6 readers and "
                        "3 exporters on 4 workers, paper-server 7")
    p.add_argument("--shop", metavar="FILE", help="the shop scenario file for --issue27")
    p.add_argument("--repeat", type=int, default=3, metavar="K",
                   help="runs per measurement; the best is reported (default 3)")
    p.add_argument("--backend", choices=("auto", "cpu", "gpu"), default="cpu",
                   help="cycle engine backend (default cpu)")


def _templates(specs: list[str]):
    """``['editor:8']`` -> ``[(label, syntax model, resource)]``."""
    import scenarios
    from dve.errors import ConfigurationError

    out = []
    for spec in specs:
        name, _, n = spec.partition(":")
        if not n.isdigit() or int(n) < 1:
            raise ConfigurationError(f"--template {spec}: expected NAME:N, e.g. editor:8")
        system = scenarios.template(name).family(int(n))
        out.append((f"{name} {n}", system.to_model(), system.resource))
    return out


def _scenarios(specs: list[str]):
    """``['editor:reader=6,exporter=3@4']`` -> ``[(label, syntax model, resource)]``: the
    system ``dvecost headroom`` analyses for that population."""
    from dve.errors import ConfigurationError
    from scenarios.capacity import system_for

    out = []
    for spec in specs:
        head, _, workers = spec.partition("@")
        name, _, mix = head.rpartition(":")
        try:
            counts = {k: int(v) for k, v in (x.split("=") for x in mix.split(","))}
            w = int(workers) if workers else None
        except ValueError:
            raise ConfigurationError(f"--scenario {spec}: expected SPEC:NAME=K,...[@W], e.g. "
                                     "editor:reader=6,exporter=3@4") from None
        _, build = system_for(name, counts, workers=w)
        system = build(counts)
        out.append((f"{name.rsplit('/', 1)[-1]} {mix}" + (f" @{w}" if w else ""),
                    system.to_model(), system.resource))
    return out


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    import dve
    import statespace
    from dve.errors import ConfigurationError

    from statespace.quotient import build_quotient_graph

    from ..analysis import analyze

    items = [(p.name, p, None, ("mean", "ratio"))
             for p in (args.model or ([] if args.template or args.scenario or args.issue27
                                     else default_models()))]
    scen = list(args.scenario)
    templates = list(args.template)
    if args.issue27:
        if args.shop:
            scen.append(f"{args.shop}:browser=20,buyer=5@3")
        scen.append("editor:reader=6,exporter=3@4")
        templates.append("paper-server:7")
    items += [(label, model, resource, ("mean",))
              for label, model, resource in _templates(templates) + _scenarios(scen)]
    if not items:
        raise ConfigurationError("cs_10.dve not found: pass --model FILE or set DVECOST_SHARED")
    rows = []
    notes = []
    for label, source, resource, kinds in items:
        progress(f"{label}: parse + compile")
        t0 = time.perf_counter()
        model = dve.load_model(source) if isinstance(source, pathlib.Path) else source
        compiled = statespace.compile_model(model)
        t_parse = time.perf_counter() - t0
        t_explore = float("inf")
        graph = None
        for k in range(args.repeat):
            progress(f"{label}: explore {k + 1}/{args.repeat}")
            graph = None  # free the previous graph before building the next
            t0 = time.perf_counter()
            # A scenario system explores one state per orbit, as analyze does.
            graph = (statespace.build_state_graph(compiled) if resource is None else
                     build_quotient_graph(compiled).graph)
            t_explore = min(t_explore, time.perf_counter() - t0)
        n_states, n_edges = graph.n_states, graph.n_edges
        del graph
        best = {}
        for kind in kinds:
            t_best, a_best = float("inf"), None
            for k in range(args.repeat):
                progress(f"{label}: analyze --{kind} {k + 1}/{args.repeat}")
                t0 = time.perf_counter()
                a = analyze(source, ratio=kind == "ratio", cost=resource, backend=args.backend)
                t = time.perf_counter() - t0
                if t < t_best:
                    t_best, a_best = t, a
                del a
            best[kind] = (t_best, a_best)
        for kind, (t, a) in best.items():
            phases = ", ".join(f"{k} {v:.3f}" for k, v in a.seconds.items())
            report_pct = 100 * a.seconds["report"] / max(a.seconds["explore"], 1e-9)
            rows.append((label, kind, n_states, n_edges, round(t_parse, 3),
                         round(t_explore, 3), round(t, 3),
                         round(t / max(t_explore, 1e-9), 2), round(a.seconds["report"], 4),
                         round(report_pct, 2), a.exact, a.iterations, a.backend))
            notes.append(f"{label} --{kind}: phases (s): {phases}")
    notes.append("ratio = analyze (whole pipeline, parse included) / explore "
                 "(build_state_graph alone); target <= 5")
    notes.append("report_pct = the report phase (decoding the witness) / that run's explore "
                 "phase, in %; target <= 5")
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "repeat": args.repeat}
    return Report(title="End to end: analyze vs exploration alone",
                  columns=("model", "kind", "states", "edges", "parse_s", "explore_s",
                           "analyze_s", "ratio", "report_s", "report_pct", "optimum",
                           "iterations", "backend"),
                  rows=tuple(rows), notes=tuple(notes), meta=meta)
