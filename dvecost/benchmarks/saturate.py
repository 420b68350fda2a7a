"""Saturation: how many clients saturate a server, per scenario file, with the seconds and peak
memory of each search (issue 14's 8-worker targets).

Each row is one search as ``dvecost saturate SPEC [--scenario NAME]`` runs it (``--method auto``,
the answer's run decoded, ``--backend cpu``), in a fresh process of its own (``spawn``: its peak
memory, ``VmHWM``, is its own), timed from the call to the result. The reference, where exact
analysis can reach every point, is the same search with ``--method exact`` in the same run;
elsewhere the row has none (``-``), and its seconds stand against the target: a saturating
``N >= 20`` on a server with eight workers, exact and certified, in at most 5 minutes on the
2-core machine, for the editor's scenarios together and each alone.

Cases (``--case`` picks; ``--quick``: the two small ones):

- ``analysts``: ``dvecost/examples/analysts.py`` (8 workers, one admission per tick);
- ``editor``: the bundled template on one worker;
- ``editor-farm``: ``dvecost/examples/editor_farm.py``, the editor's three scenarios (5:3:2)
  on 8 workers admitting 8 per tick;
- ``editor-farm:reader``, ``:writer``, ``:exporter``: one scenario of it alone;
- ``converters``: ``dvecost/examples/converters.py``, viewers and converters (a choice of
  request) 3:1 on 8 workers admitting 8 per tick;
- ``editor-w2``, ``editor-w4``: the editor's scenarios on 2 and 4 workers admitting as many
  per tick (8: ``editor-farm``).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pathlib
import platform
import time
from collections import Counter
from collections.abc import Callable

from . import Report

__all__ = ["add_arguments", "run", "CASES", "QUICK"]

_EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"

#: Case -> (spec, scenario, whether the exact reference is run).
CASES: dict[str, tuple[str, str | None, bool]] = {
    "analysts": (str(_EXAMPLES / "analysts.py"), None, True),
    "editor": ("editor", None, True),
    "editor-farm": (str(_EXAMPLES / "editor_farm.py"), None, False),
    "editor-farm:reader": (str(_EXAMPLES / "editor_farm.py"), "reader", False),
    "editor-farm:writer": (str(_EXAMPLES / "editor_farm.py"), "writer", False),
    "editor-farm:exporter": (str(_EXAMPLES / "editor_farm.py"), "exporter", False),
    "converters": (str(_EXAMPLES / "converters.py"), None, False),
    "editor-w2": ("editor_on_2", None, False),
    "editor-w4": ("editor_on_4", None, False),
}


def editor_on(workers: int, n: int):
    """The editor's scenarios (5:3:2) on ``workers`` workers admitting as many per tick."""
    from scenarios import Server, System, apportion
    from scenarios.templates import EDITOR_SCENARIOS, EDITOR_WEIGHTS

    return System(apportion(dict(zip(EDITOR_SCENARIOS, EDITOR_WEIGHTS)), n),
                  server=Server(workers=workers, admissions=workers),
                  name=f"editor on {workers} workers")


def editor_on_2(n: int):
    """:func:`editor_on` 2 workers (a module-level function: a spawned process takes it)."""
    return editor_on(2, n)


def editor_on_4(n: int):
    """:func:`editor_on` 4 workers."""
    return editor_on(4, n)


#: Specs named in :data:`CASES` that are functions of this module.
_FUNCTIONS = {"editor_on_2": editor_on_2, "editor_on_4": editor_on_4}
QUICK = ("analysts", "editor")

#: The target on the 2-core machine for the 8-worker cases, in seconds.
TARGET_SECONDS = 300.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of ``dvecost bench saturate``."""
    p.add_argument("--case", action="append", choices=tuple(CASES), metavar="NAME",
                   help="time only this case (repeatable: " + ", ".join(CASES)
                   + "; default all)")
    p.add_argument("--quick", action="store_true",
                   help="the small cases only (" + ", ".join(QUICK) + ")")


def _search(spec: str, scenario: str | None, method: str) -> dict:
    """One search, in the worker process: its figures as plain values."""
    from dvecost.saturation import saturate
    from runtime.memory import peak_rss

    t0 = time.perf_counter()
    r = saturate(_FUNCTIONS.get(spec, spec), scenario=scenario, backend="cpu", method=method)
    secs = time.perf_counter() - t0
    return {"answer": r.saturating_clients, "certified": r.certified,
            "range": r.answer_range, "decided": dict(Counter(p.how for p in r.curve)),
            "seconds": secs, "peak": peak_rss()}


def _in_fresh_process(spec: str, scenario: str | None, method: str) -> dict:
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as pool:
        return pool.apply(_search, (spec, scenario, method))


def _decided(d: dict) -> str:
    return ", ".join(f"{v} {k}" for k, v in sorted(d.items()))


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    """Time each case; returns the report (never prints)."""
    from dvecost.saturation import EXACT_BUDGET_SECONDS

    names = QUICK if getattr(args, "quick", False) else (getattr(args, "case", None)
                                                          or tuple(CASES))
    rows = []
    for name in names:
        spec, scenario, reference = CASES[name]
        progress(f"{name}: saturate --method auto")
        got = _in_fresh_process(spec, scenario, "auto")
        exact = None
        if reference:
            progress(f"{name}: saturate --method exact (the reference)")
            exact = _in_fresh_process(spec, scenario, "exact")
            if exact["answer"] != got["answer"]:
                raise AssertionError(f"{name}: --method auto answers {got['answer']}, "
                                     f"--method exact {exact['answer']}")
        answer = got["answer"]
        if got["range"] is not None:
            answer = f"{answer} ({got['range'][0]}..{got['range'][1]})"
        rows.append((name, answer, got["certified"], _decided(got["decided"]),
                     round(got["seconds"], 2),
                     None if exact is None else round(exact["seconds"], 2),
                     None if exact is None else round(got["seconds"] / exact["seconds"], 3),
                     round(got["peak"] / 2**20, 1)))
    notes = ("answer: the smallest N that saturates (with the range it lies in when not "
             "certified); certified: the answer's point and the one below it decided",
             "decided: how the points of the search were decided (bound, witness, exact, open)",
             "seconds: the search with --method auto, the answer's run decoded; exact s: the "
             "same search with --method exact (the reference, where exact analysis reaches "
             "every point); ratio: auto / exact",
             f"auto analyses a point exactly under its default budget of "
             f"{EXACT_BUDGET_SECONDS:g} s (--exact-budget): a point past it stays open, the "
             "answer then a range",
             "peak MiB: VmHWM of the fresh process that ran the search",
             f"target (2-core CPU): editor-farm and each of its scenarios certified with N >= 20 "
             f"in at most {TARGET_SECONDS:.0f} s",
             f"cpu: {os.cpu_count()} cores ({platform.processor() or platform.machine()}); "
             f"load average {os.getloadavg()[0]:.1f} at the end")
    return Report("Saturation (dvecost bench saturate)",
                  ("case", "answer", "certified", "decided", "seconds", "exact s", "ratio",
                   "peak MiB"), tuple(rows), notes,
                  {"python": platform.python_version(), "cpus": os.cpu_count()})
