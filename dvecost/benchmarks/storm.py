"""Against Storm: ``dvecost analyze`` and Storm's long-run average on the same client/server
model, each as a whole process, in one run (issue 26's CPU target: at least 6x on cs_10).

Storm (through its Python bindings, ``pip install stormpy``) reads PRISM, not DVE, so the suite
writes the client/server family in PRISM itself (:func:`prism_client_server`): the same
processes, the same rendezvous and the same costs as the bundled
``client_server_template.dve`` at ``-D N`` (the ``cs_N`` models), explored in full
(``--symmetry off`` for dvecost: Storm has no symmetry reduction). The table shows both tools'
state and transition counts, so a reader sees that both built the same graph, and their
values: dvecost's exact maximal cycle mean (cost per step) and Storm's maximal long-run average
reward per step (``R{"cost"}max=? [LRA]``, by Storm's default method, to its default precision),
which for this deterministic-cost model is the same quantity.

Each tool runs in a fresh process (``--repeat`` interleaved rounds, the best kept), timed as a
whole: start-up and imports included, as a user meets them. Storm builds only the reward model
the property needs (its fastest build). ``--python`` chooses the interpreter that has stormpy
(default: this one), so Storm need not be installed beside dvecost.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable

from . import Report

__all__ = ["add_arguments", "run", "prism_client_server", "COLUMNS"]

#: The bundled template of the client/server family (``-D N``).
FAMILY = pathlib.Path(__file__).resolve().parents[1] / "examples" / \
    "client_server_template.dve"

COLUMNS = ("tool", "clients", "states", "transitions", "value", "process s", "build s",
           "check s", "vs dvecost")

#: Run in the interpreter that has stormpy: builds the model for the property, checks it,
#: prints one JSON line with the counts, the value and the phases' seconds.
_STORM_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
import stormpy
prog = stormpy.parse_prism_program(sys.argv[1])
props = stormpy.parse_properties('R{"cost"}max=? [LRA]', prog)
t1 = time.perf_counter()
model = stormpy.build_model(prog, props)
t2 = time.perf_counter()
res = stormpy.model_checking(model, props[0])
value = res.get_value(model.initial_states[0])
t3 = time.perf_counter()
print(json.dumps({"states": model.nr_states, "transitions": model.nr_transitions,
                  "choices": model.nr_choices, "value": value, "parse": t1 - t0,
                  "build": t2 - t1, "check": t3 - t2}))
"""


def prism_client_server(n: int) -> str:
    """The client/server family for ``n`` clients as a PRISM MDP with a ``cost`` reward.

    The DVE template's rendezvous ``reqL!id`` / ``reqL?who`` becomes one action per client
    (``reqL_i``) shared by the client and the server, which stores ``i``; the reply's guard
    ``Server->who == id`` becomes the server's guard on ``rep_i``. Every step of the DVE model
    is one choice here, with the same cost (the two sides of a rendezvous added).

    >>> text = prism_client_server(2)
    >>> text.splitlines()[0], text.count("module client_")
    ('mdp', 2)
    >>> "[reqH_2] s=0 -> (s'=1)&(who'=2)&(typ'=1);" in text
    True
    """
    if n < 1:
        raise ValueError("at least one client")
    out = ["mdp", "", "module server",
           "  s : [0..2] init 0;   // idle, work, reply",
           f"  who : [0..{n}] init 0;",
           "  typ : [0..1] init 0;"]
    for i in range(1, n + 1):
        out += [f"  [reqL_{i}] s=0 -> (s'=1)&(who'={i})&(typ'=0);",
                f"  [reqH_{i}] s=0 -> (s'=1)&(who'={i})&(typ'=1);",
                f"  [rep_{i}] s=2 & who={i} -> (s'=0)&(who'=0)&(typ'=0);"]
    out += ["  [workL] s=1 & typ=0 -> (s'=2);",
            "  [workH] s=1 & typ=1 -> (s'=2);",
            "endmodule"]
    for i in range(1, n + 1):
        out += ["", f"module client_{i}",
                f"  c_{i} : [0..3] init 0;   // think, ready, wait, post",
                f"  [think_{i}] c_{i}=0 -> (c_{i}'=1);",
                f"  [reqL_{i}] c_{i}=1 -> (c_{i}'=2);",
                f"  [reqH_{i}] c_{i}=1 -> (c_{i}'=2);",
                f"  [rep_{i}] c_{i}=2 -> (c_{i}'=3);",
                f"  [post_{i}] c_{i}=3 -> (c_{i}'=0);",
                "endmodule"]
    # Costs as in the DVE template: 1 for a request (the client's side), 1 or 9 for the
    # server's work, 1 for the reply (the client's side), 2 for the client's post step.
    out += ["", 'rewards "cost"', "  [workL] true : 1;", "  [workH] true : 9;"]
    for i in range(1, n + 1):
        out += [f"  [reqL_{i}] true : 1;", f"  [reqH_{i}] true : 1;",
                f"  [rep_{i}] true : 1;", f"  [post_{i}] true : 2;"]
    out += ["endrewards", ""]
    return "\n".join(out)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--clients", default="10", metavar="N[,N...]",
                   help="client counts of the family (default 10: cs_10)")
    p.add_argument("--repeat", type=int, default=3, metavar="K",
                   help="interleaved rounds; the best of each tool is kept (default 3)")
    p.add_argument("--python", default=sys.executable, metavar="PATH",
                   help="the Python interpreter that has stormpy (default: this one)")
    p.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                   help="stop a tool's run after this long (default 600)")


def _stormpy_check(python: str) -> None:
    from dve.errors import ConfigurationError

    try:
        res = subprocess.run([python, "-c", "import stormpy"], capture_output=True, text=True,
                             timeout=120)
    except OSError as exc:
        raise ConfigurationError(f"--python {python}: cannot run it ({exc.strerror})") from None
    if res.returncode != 0:
        raise ConfigurationError(
            f"stormpy cannot be imported by {python}: install Storm's Python bindings "
            "(pip install stormpy), or name an interpreter that has them with --python")


def _timed(label: str, cmd: list[str], timeout: float) -> tuple[float, dict]:
    """Run ``cmd`` as a whole process: its wall seconds and the JSON object it prints last."""
    from dve.errors import ConfigurationError

    t0 = time.perf_counter()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise ConfigurationError(f"{label}: over {timeout:g} s "
                                 "(raise --timeout)") from None
    wall = time.perf_counter() - t0
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        tail = (res.stderr or res.stdout).strip().splitlines()[-3:]
        raise ConfigurationError(f"{label} failed (exit {res.returncode}): "
                                 + " / ".join(tail))
    return wall, json.loads(lines[-1])


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    from dve.errors import ConfigurationError

    try:
        counts = [int(x) for x in str(args.clients).split(",")]
    except ValueError:
        raise ConfigurationError(f"--clients {args.clients}: expected N[,N...], e.g. 8,10") \
            from None
    if not counts or min(counts) < 1 or args.repeat < 1:
        raise ConfigurationError("--clients needs counts >= 1 and --repeat at least 1")
    _stormpy_check(args.python)
    rows, notes = [], []
    with tempfile.TemporaryDirectory(prefix="dvecost-storm-") as tmp:
        for n in counts:
            prism = pathlib.Path(tmp) / f"cs_{n}.prism"
            prism.write_text(prism_client_server(n))
            ours = [sys.executable, "-m", "dvecost", "analyze", "--backend", "cpu",
                    "--symmetry", "off", "--no-witness", "--json", "-q", "-D", f"N={n}",
                    str(FAMILY)]
            theirs = [args.python, "-c", _STORM_CHILD, str(prism)]
            best: dict[str, tuple[float, dict]] = {}
            for k in range(args.repeat):
                for tool, cmd in (("dvecost", ours), ("Storm", theirs)):
                    progress(f"cs_{n}: {tool} {k + 1}/{args.repeat}")
                    wall, out = _timed(f"cs_{n}: {tool}", cmd, args.timeout)
                    if tool not in best or wall < best[tool][0]:
                        best[tool] = (wall, out)
            d_wall, d = best["dvecost"]
            s_wall, s = best["Storm"]
            if (d["n_states"], d["n_transitions"]) != (s["states"], s["choices"]):
                notes.append(f"cs_{n}: the two graphs differ (dvecost {d['n_states']:,} states, "
                             f"{d['n_transitions']:,} transitions; Storm {s['states']:,} "
                             f"states, {s['choices']:,} choices): not a fair comparison")
            rows.append(("dvecost", n, d["n_states"], d["n_transitions"], d["exact"],
                         round(d_wall, 3), round(d["timings"].get("explore", 0.0), 3),
                         round(sum(d["timings"].get(k, 0.0) for k in ("scc", "howard")), 3),
                         1.0))
            rows.append(("Storm", n, s["states"], s["choices"], round(s["value"], 6),
                         round(s_wall, 3), round(s["build"], 3), round(s["check"], 3),
                         round(s_wall / max(d_wall, 1e-9), 2)))
    notes.append("process s: the whole process (start-up, imports, parsing included), the "
                 "best of the rounds; vs dvecost: that tool's process seconds over dvecost's "
                 "(Storm slower: above 1)")
    notes.append("dvecost: exact maximal cycle mean, certified, --symmetry off; build s is its "
                 "explore phase, check s its SCC and Howard phases. Storm: R{\"cost\"}max=? "
                 "[LRA] by its default method (approximate), transitions = its choices")
    meta = {"python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(), "repeat": args.repeat, "storm_python": args.python}
    return Report(title="Against Storm: analyze vs Storm's long-run average, whole processes",
                  columns=COLUMNS, rows=tuple(rows), notes=tuple(notes), meta=meta)
