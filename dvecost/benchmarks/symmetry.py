"""Symmetry reduction: N clients -> full states, classes, seconds and peak memory (issue 14).

Families timed:

- ``cs-template``: the client/server family written with a client template
  (``dvecost/examples/client_server_template.dve``, ``-D N=...``), analysed with
  ``--symmetry auto`` (one state per orbit); the full product's size is computed exactly from
  the orbits. Targets on the 2-core CPU: 100 clients in at most 10 s, 1000 in at most 120 s.
- ``paper-server``: the scenario DSL's paper system (``system sync``, one server; a client's
  request in its own variable, a server transition per client), reduced. Target: 100 clients
  analysed in at most 60 s.
- ``cs_N``: the same family expanded, a process and a reply channel per client
  (``cs_N.dve``, the benchmark family's models): nothing to reduce, so the full product is
  explored; only for ``N <= --full-max``.

Each row is one :func:`dvecost.analyze` of the maximal cycle ratio without decoding a run
(``witness=False``), timed, then (unless ``--no-memory``) run again under ``tracemalloc`` for
the peak of NumPy's and Python's allocations. ``value`` is the exact optimum: it must not
depend on the family's form.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import platform
import time
import tracemalloc
from collections.abc import Callable

from . import Report, shared_roots

__all__ = ["add_arguments", "run", "template_path", "FAMILIES"]

#: The families timed, by the name their rows carry (``cs_N`` for the expanded one).
FAMILIES = ("cs-template", "paper-server", "cs_N")


def template_path() -> pathlib.Path:
    """The client/server template model shipped with the examples."""
    return pathlib.Path(__file__).resolve().parents[1] / "examples" / \
        "client_server_template.dve"


def _generator():
    for r in shared_roots():
        p = r / "models" / "gen_client_server.py"
        if p.is_file():
            spec = importlib.util.spec_from_file_location("gen_client_server", p)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return mod
    return None


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``dvecost bench symmetry``."""
    p.add_argument("--n", type=int, action="append", metavar="N",
                   help="a number of clients (repeatable; default 10, 50, 100)")
    p.add_argument("--full-max", type=int, default=8, metavar="N",
                   help="explore the expanded cs_N (full product) up to this N (default 8)")
    p.add_argument("--family", action="append", choices=FAMILIES, metavar="NAME",
                   help="time only this family (repeatable: " + ", ".join(FAMILIES)
                   + "; default all)")
    p.add_argument("--quick", action="store_true", help="N = 3 and 6 only (a smoke test)")
    p.add_argument("--no-memory", action="store_true", help="skip the tracemalloc runs")


def _measure(model, defines, memory: bool, cost: str | None = None):
    from dvecost import analyze
    ratio = cost is None   # paper-server: its load, the maximal cycle mean of 'server'
    t0 = time.perf_counter()
    a = analyze(model, ratio=ratio, cost=cost, defines=defines, witness=False, backend="cpu")
    secs = time.perf_counter() - t0
    peak = None
    if memory:
        tracemalloc.start()
        tracemalloc.reset_peak()
        analyze(model, ratio=ratio, cost=cost, defines=defines, witness=False, backend="cpu")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return a, secs, peak


def _row(name, n, a, secs, peak):
    sym = a.symmetry or {}
    return (name, n, sym.get("full_states", a.n_states), a.n_states, a.n_transitions,
            round(secs, 3), round(a.seconds.get("explore", 0.0), 3),
            None if peak is None else round(peak / 2**20, 1), a.exact)


def _template_row(n, memory, progress):
    progress(f"cs-template N={n}")
    a, secs, peak = _measure(template_path(), {"N": n}, memory)
    return _row("cs-template", n, a, secs, peak)


def _paper_row(n, memory, progress):
    progress(f"paper-server N={n}")
    from scenarios.templates import TEMPLATES
    model = TEMPLATES["paper-server"].family(n).to_model()
    a, secs, peak = _measure(model, None, memory, cost="server")
    return _row("paper-server", n, a, secs, peak)


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    """Time the families for each N; returns the report (never prints)."""
    ns = [3, 6] if getattr(args, "quick", False) else (args.n or [10, 50, 100])
    memory = not getattr(args, "no_memory", False)
    full_max = 6 if getattr(args, "quick", False) else args.full_max
    rows = []
    fams = set(getattr(args, "family", None) or FAMILIES)
    gen = _generator() if "cs_N" in fams else None
    for n in ns:
        if "cs-template" in fams:
            rows.append(_template_row(n, memory, progress))
        if "paper-server" in fams:
            rows.append(_paper_row(n, memory, progress))
        if gen is not None and n <= full_max:
            progress(f"cs_{n} (expanded, full product)")
            a, secs, peak = _measure(gen.model(n), None, memory)
            rows.append((f"cs_{n}", n, a.n_states, a.n_states, a.n_transitions, round(secs, 3),
                         round(a.seconds.get("explore", 0.0), 3),
                         None if peak is None else round(peak / 2**20, 1), a.exact))
    notes = ("full states: the full product's size (exact: the sum of the orbits' sizes for "
             "the template; the explored graph for cs_N); classes: states explored",
             "seconds: one analyze (explore + cycle engine, no run decoded; the maximal cycle "
             "ratio, for paper-server the load: maximal cycle mean of 'server'); explore s: its "
             "exploration phase",
             "peak MiB: tracemalloc peak of a second run (NumPy and Python allocations)",
             "targets (2-core CPU): cs-template 100 clients <= 10 s, 1000 clients <= 120 s; "
             "paper-server 100 clients <= 60 s",
             f"cpu: {os.cpu_count()} cores ({platform.processor() or platform.machine()}); "
             f"load average {os.getloadavg()[0]:.1f} at the end")
    return Report("Symmetry reduction (dvecost bench symmetry)",
                  ("family", "N", "full states", "classes", "edges", "seconds", "explore s",
                   "peak MiB", "value"), tuple(rows), notes,
                  {"python": platform.python_version(), "cpus": os.cpu_count()})
