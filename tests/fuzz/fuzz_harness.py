"""The fuzzing harness: build a case, run it through the command line, judge the outcome.

Run as a script for a campaign (the figures of docs/reliability.md come from here)::

    .venv/bin/python tests/fuzz/fuzz_harness.py --cases 10000 --seed 1 --minutes 15
    .venv/bin/python tests/fuzz/fuzz_harness.py --replay 1:model:42   # one case, in full
    .venv/bin/python tests/fuzz/fuzz_harness.py --minimize 1:model:42 --klass wrong-value

Each case runs in this process through :func:`dvecost.cli.main` with stdout and stderr
captured, under a wall-clock bound (an interval timer raising :class:`Hang`, a
``BaseException`` that dvecost does not catch) and an address-space limit (``RLIMIT_AS``, so
a runaway allocation ends as the tool's own out-of-memory handling rather than taking the
machine); ``--subprocess-every K`` also runs every K-th case as ``python -m dvecost`` in a
child process with a hard timeout, which sees what an in-process run cannot (a hang in C code,
an exit through ``sys.exit`` or ``os._exit``, a fatal signal).

The rules every case must keep (:func:`judge`), with the failure class named in brackets:

- no Python traceback and no "internal error" in the output [traceback];
- exit code 0, 2 or 3 [exit-code]; the case ends within the bound [hang];
- no Python warning reaches the user [warning];
- every ``FILE:LINE:COL`` naming the input lies inside it: ``LINE`` at most the number of lines,
  ``COL`` at most that line's length + 1 [position];
- when the case carries an oracle value and the tool exits 0, the printed exact value equals it
  and is marked certified [wrong-value]; for a model or graph with no values near a limit,
  the tool must answer (exit 0) exactly when the oracle has a value, and exit 3 when it has
  no cycle or a zero-time cycle [refused-valid, wrong-outcome]; the state and transition counts
  of ``analyze --json`` equal the oracle's [wrong-count];
- the snippet under a diagnostic shows the reported line with the caret under its column
  [caret]; the critical cycle of a JSON answer is a closed walk whose sums give the value
  [witness];
- a run stopped by a limit or a signal reports the counts found so far [stop-report], and a
  graph file it leaves behind reads back completely [lost-file]; under ``--max-memory`` the
  reported peak stays within the limit + 25 % [memory-limit].
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import random
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction

import fuzz_gen as G
import fuzz_oracle as O

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("DVECOST_SHARED", ROOT.parent / "shared"))
BEEM_MODELS = SHARED / "beem" / "models"
EXAMPLES = ROOT / "dvecost" / "examples"

#: Category -> weight in a campaign (how often it is drawn).
WEIGHTS = {"beem-mutant": 30, "model": 30, "model-big": 10, "model-mutant": 10,
           "graph-text": 8, "graph-npz": 6, "graph-bad": 5, "saved-graph": 5, "model-sym": 8,
           "limits": 4, "stress": 1, "signal": 0.3}
#: Largest reachable graph the model oracle builds (Karp is O(V * E) in Python).
ORACLE_STATES = 250
#: ``--max-states`` given to explore/analyze of mutated models.
MAX_STATES = 3000
#: Address space a case may add to this process (bytes).
MEMORY_HEADROOM = 3 << 30

FAILURE_CLASSES = ("traceback", "exit-code", "hang", "warning", "position", "wrong-value",
                   "wrong-outcome", "refused-valid", "wrong-count", "stop-report", "lost-file",
                   "caret", "witness", "memory-limit")


class Hang(BaseException):
    """The per-case clock ran out (a BaseException, so that dvecost's handlers let it pass)."""


@dataclass
class Outcome:
    rc: int | None
    out: str
    err: str
    seconds: float
    hang: bool = False
    warnings: list = field(default_factory=list)
    how: str = "in-process"


@dataclass
class Failure:
    klass: str
    message: str
    case: G.Case
    outcome: Outcome

    def report(self, limit: int = 1500) -> str:
        """What to paste into an issue: the class, how to replay it, the input and output."""
        c = self.case
        lines = [f"[{self.klass}] {self.message}",
                 f"  case {c.category} seed {c.seed!r}: replay with "
                 f"`.venv/bin/python tests/fuzz/fuzz_harness.py --replay '{c.seed}'`",
                 f"  argv: dvecost {' '.join(c.argv)}  -> exit {self.outcome.rc} in "
                 f"{self.outcome.seconds:.2f} s ({self.outcome.how})"]
        for name, data in c.files.items():
            shown = data if isinstance(data, str) else repr(data[:300])
            if len(shown) > limit:
                shown = shown[:limit] + f"... ({len(data)} characters)"
            lines.append(f"  --- {name} ---\n{shown}")
        lines.append(f"  --- stdout ---\n{self.outcome.out[-limit:]}")
        lines.append(f"  --- stderr ---\n{self.outcome.err[-limit:]}")
        return "\n".join(lines)


# ------------------------------------------------------------------------------------ cases
_BEEM_LIST: list | None = None


def beem_models() -> list[pathlib.Path]:
    global _BEEM_LIST
    if _BEEM_LIST is None:
        # The few files over 100 kB (plc's 1.9 MB property products) take seconds to parse
        # alone; the stress inputs cover size, so cases stay fast and many.
        _BEEM_LIST = sorted(p for p in BEEM_MODELS.glob("*.dve")
                            if p.stat().st_size <= 100_000) if BEEM_MODELS.is_dir() else []
    return _BEEM_LIST


def make_case(seed: str) -> G.Case:
    """The case of ``seed`` (``"MASTER:CATEGORY:INDEX"``; the category is its second field).

    The same seed gives the same case on every run and machine (``random.Random`` seeded with a
    string is deterministic), so a failure is reproduced from its seed alone.
    """
    category = seed.split(":")[1]
    rng = random.Random(seed)
    return MAKERS[category](rng, seed)


def _model_case(rng, seed, big):
    category = "model-big" if big else "model"
    model = G.gen_model(rng, big)
    text = G.render(model)
    kind = "ratio" if rng.random() < 0.4 else "mean"
    mode = "min" if rng.random() < 0.2 else "max"
    argv = ["analyze", "{file}", "--json", "--max-states", str(MAX_STATES)]
    argv += ["--ratio"] * (kind == "ratio") + ["--min"] * (mode == "min")
    named = G.resources(model)
    if named:
        argv += ["--cost", rng.choice(named)]
    r = rng.random()
    if r < 0.1:  # explore only: the counts are what the user reads
        argv = ["explore", "{file}", "--json", "--max-states", str(MAX_STATES)]
    elif r < 0.25:  # the text report: value line and state-space line
        argv = [a for a in argv if a != "--json"]
    case = G.Case(category, seed, {"model.dve": text}, argv, hazard=big)
    case.extra["model"] = model
    inputs = [d for d in model.globals if d[0].startswith("input")]
    if inputs and rng.random() < 0.7:
        typ, name = inputs[0][0].split()[1], inputs[0][1]
        lo, hi = O.RANGE[typ]
        v = rng.choice([rng.randint(0, 5), lo, hi, lo - 1, hi + 1, 2**31, -2**40])
        argv += ["-D", f"{name}={v}"]
        if not lo <= v <= hi:
            case.extra["must_refuse"] = True  # a -D value the input cannot hold: exit 2
            return case
        import copy
        model = copy.deepcopy(model)
        model.globals = [(t, n, sz, [v] if n == name else ini)
                         for t, n, sz, ini in model.globals]
        if v > 20:
            case.hazard = True  # a large bound can make the graph pass --max-states
    res = O.explore(model, ORACLE_STATES, _resource(argv))
    if res is None:
        case.note = "larger than the oracle's limit: generic checks only"
        return case
    n_states, n_trans, edges = res
    case.counts = (n_states, n_trans)
    lo, hi = O.INT64
    if any(not (lo <= c <= hi and lo <= t <= hi) for _, _, c, t in edges):
        case.hazard = True  # a cost or time beyond 64 bits: an error, or the exact value
    if kind == "mean" and any(t < 0 for *_, t in edges):
        case.hazard = True  # negative times: refusing them in mean mode is fair too
    case.expect = O.cycle_value(n_states, edges, kind, mode)
    return case


def _resource(argv) -> str:
    """The resource a command line analyses: ``--cost NAME``, else ``cost``."""
    return argv[argv.index("--cost") + 1] if "--cost" in argv else "cost"


def model_case(model, argv, category="model", seed="", hazard=False,
               limit=ORACLE_STATES) -> G.Case:
    """A case for a given model description (what :func:`_model_case` builds; the minimizer
    rebuilds cases from shrunk descriptions with it)."""
    kind = "ratio" if "--ratio" in argv else "mean"
    mode = "min" if "--min" in argv else "max"
    case = G.Case(category, seed, {"model.dve": G.render(model)}, argv, hazard=hazard)
    case.extra["model"] = model
    res = O.explore(model, limit, _resource(argv))
    if res is not None:
        n_states, n_trans, edges = res
        case.counts = (n_states, n_trans)
        lo, hi = O.INT64
        if any(not (lo <= c <= hi and lo <= t <= hi) for _, _, c, t in edges):
            case.hazard = True
        if kind == "mean" and any(t < 0 for *_, t in edges):
            case.hazard = True
        case.expect = O.cycle_value(n_states, edges, kind, mode)
    return case


def minimize_model(case: G.Case, klass: str, bound: float = 20.0) -> G.Case:
    """Shrink a generated model while a failure of class ``klass`` persists: drop whole
    transitions, then guards, effects, costs and times, then processes' extra variables."""
    import copy

    model = case.extra["model"]
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)

        def fails(m):
            c = model_case(m, case.argv, case.category, case.seed, case.hazard)
            return any(f.klass == klass for f in run_case(c, folder, bound)[1])

        changed = True
        while changed:
            changed = False
            for pi in range(len(model.procs)):
                for ti in range(len(model.procs[pi].trans) - 1, -1, -1):
                    m = copy.deepcopy(model)
                    del m.procs[pi].trans[ti]
                    if fails(m):
                        model, changed = m, True
                        continue
                    for attr in ("guard", "sync", "cost", "time"):
                        m = copy.deepcopy(model)
                        if getattr(m.procs[pi].trans[ti], attr) is not None:
                            setattr(m.procs[pi].trans[ti], attr, None)
                            if attr == "sync" or not fails(m):
                                continue
                            model, changed = m, True
                    for ei in range(len(model.procs[pi].trans[ti].effects) - 1, -1, -1):
                        m = copy.deepcopy(model)
                        del m.procs[pi].trans[ti].effects[ei]
                        if fails(m):
                            model, changed = m, True
    return model_case(model, case.argv, case.category, case.seed, case.hazard)


def _sym_case(rng, seed):
    """Instances of a template through ``analyze`` (symmetry reduction on, or off): the value
    of the full model, and the full product's size where the report gives it."""
    model = G.gen_sym_model(rng)
    argv = ["analyze", "{file}", "--json", "--max-states", str(MAX_STATES)]
    argv += ["--ratio"] * (rng.random() < 0.4) + ["--min"] * (rng.random() < 0.2)
    argv += ["--symmetry", "off"] if rng.random() < 0.2 else []
    return model_case(model, argv, "model-sym", seed, limit=400)


def _saved_graph_case(rng, seed):
    """``explore --save`` of a generated model, then ``cycle`` on the saved graph: the value
    must be the oracle's; or the saved file damaged first (truncated, a byte changed), and
    ``cycle`` must refuse it cleanly."""
    model = G.gen_model(rng, False)
    kind = "ratio" if rng.random() < 0.4 else "mean"
    case = model_case(model, ["explore", "{file}", "--save", "{dir}/g.npz", "--max-states",
                              str(MAX_STATES)], "saved-graph", seed)
    case.extra["then"] = ["cycle", "{dir}/g.npz", "--json"] + ["--ratio"] * (kind == "ratio")
    named = G.resources(model)
    if named:
        case.extra["then"] += ["--cost", rng.choice(named)]
    if case.counts is not None:
        n, _, edges = O.explore(model, ORACLE_STATES, _resource(case.extra["then"]))
        case.expect = O.cycle_value(n, edges, kind)
    r = rng.random()
    if r < 0.3:
        case.extra["damage"] = (rng.choice(["truncate", "flip"]), rng.random(), rng.randrange(256))
        case.expect, case.hazard = None, True
    elif r < 0.5 and case.counts is not None and case.counts[0] > 2:
        # Stopped by --max-states: `cycle` must say the graph is incomplete (exit 3), and any
        # value it prints is a lower bound of the model's maximum.
        k = rng.randint(1, case.counts[0] - 2)
        case.argv = case.argv[:-1] + [str(k)]
        case.extra["partial"] = True
    return case


def _beem_case(rng, seed):
    models = beem_models()
    if not models:
        return _model_mutant_case(rng, seed)
    path = rng.choice(models)
    text, how = G.mutate(path.read_text(errors="replace"), rng)
    r = rng.random()
    if r < 0.6:
        argv = ["check", "{file}"] + ["--json"] * (rng.random() < 0.25)
    elif r < 0.8:
        argv = ["explore", "{file}", "--json", "--max-states", str(MAX_STATES)]
    else:
        argv = ["analyze", "{file}", "--json", "--max-states", str(MAX_STATES)]
        argv += ["--ratio"] * (rng.random() < 0.3)
    case = G.Case("beem-mutant", seed, {"model.dve": text}, argv, hazard=True,
                  note=f"{path.name} {how}")
    if not re.search(r"\bcost\b", text):
        case.expect = ("value", Fraction(0))  # no cost anywhere: every cycle costs 0
    return case


def _model_mutant_case(rng, seed):
    if rng.random() < 0.3:
        base = rng.choice(sorted(EXAMPLES.glob("*.dve"))).read_text()
    else:
        base = G.render(G.gen_model(rng, rng.random() < 0.3))
    text, how = G.mutate(base, rng)
    argv = rng.choice([["check", "{file}"], ["analyze", "{file}", "--max-states",
                                             str(MAX_STATES)],
                       ["analyze", "{file}", "--json", "--max-states", str(MAX_STATES)],
                       ["analyze", "{file}", "--ratio", "--json", "--max-states",
                        str(MAX_STATES)]])
    return G.Case("model-mutant", seed, {"model.dve": text}, argv, hazard=True, note=how)


def _graph_argv(rng):
    kind = "ratio" if rng.random() < 0.4 else "mean"
    mode = "min" if rng.random() < 0.2 else "max"
    argv = ["cycle", "{file}"] + ["--ratio"] * (kind == "ratio") + ["--min"] * (mode == "min")
    if rng.random() < 0.8:
        argv.append("--json")
    return argv, kind, mode


def _graph_case(rng, seed, npz):
    big = rng.random() < 0.4
    n, edges = G.gen_graph(rng, big)
    argv, kind, mode = _graph_argv(rng)
    category = "graph-npz" if npz else "graph-text"
    if npz:
        data, held = G.npz_graph(rng, n, edges)
        if data is None:  # values no integer dtype holds: write them as an edge list
            npz, category = False, "graph-text"
        else:
            edges = held
    if not npz:
        data = G.edge_list_text(n, edges)
    name = "graph.npz" if npz else "graph.txt"
    case = G.Case(category, seed, {name: data}, argv, hazard=big)
    if not npz and rng.random() < 0.05:  # an edge list has one cost column: --cost is refused
        case.argv = argv + ["--cost", rng.choice(["cost", "cpu"])]
        case.extra["must_refuse"] = True
    # Edge ids of the answer index the CSR order: by source, file order kept within a source.
    case.extra["csr"] = sorted(edges, key=lambda e: e[0]) if not npz else list(edges)
    if not npz:
        case.extra["lines"] = list(edges)
    lo, hi = O.INT64
    if any(not (lo <= c <= hi and lo <= t <= hi) for *_, c, t in edges):
        case.hazard = True
    if kind == "mean" and any(t < 0 for *_, t in edges):
        case.hazard = True
    case.expect = O.cycle_value(n, edges, kind, mode)
    return case


def _bad_graph_case(rng, seed):
    argv, kind, mode = _graph_argv(rng)
    if rng.random() < 0.5:
        text = rng.choice(G.BAD_TEXT)
        case = G.Case("graph-bad", seed, {"graph.txt": text}, argv, hazard=True)
        ints = re.fullmatch(r"\s*(-?\d{1,100}(?:\s+-?\d{1,100})*)\s*", text)
        if ints:  # well-formed integers: the oracle knows the answer if the shape is right
            vals = [int(x) for x in ints.group(1).split()]
            n, m = vals[0], vals[1] if len(vals) > 1 else -1
            if 0 <= n <= 100 and m >= 0 and len(vals) == 2 + 4 * m:
                es = [tuple(vals[2 + 4 * i: 6 + 4 * i]) for i in range(m)]
                if all(0 <= u < n and 0 <= v < n for u, v, *_ in es):
                    case.expect = O.cycle_value(n, es, kind, mode)
        return case
    return G.Case("graph-bad", seed, {"graph.npz": G.bad_npz(rng)}, argv, hazard=True)


#: BEEM models large enough that a limit or a signal meets them mid-run (and small enough to
#: parse quickly).
BIG_BEEM = ("anderson.6.dve", "bakery.7.dve", "elevator2.3.dve", "peterson.5.dve",
            "lamport.7.dve", "msmie.4.dve", "brp.5.dve", "at.6.dve")
SIZES = ["1K", "1M", "16M", "64M", "100M", "1G", "0", "-1", "1.5G", "10X", "1T", "512m", "4G",
         "999999999999999999999G", "1e3", ""]


def _limits_case(rng, seed):
    """An unmutated BEEM model under ``--max-states`` / ``--max-memory`` / ``--save``."""
    models = beem_models()
    if not models:
        return _model_mutant_case(rng, seed)
    path = rng.choice(models)
    cmd = rng.choice(["explore", "explore", "analyze"])
    argv = [cmd, "{file}"]
    r = rng.random()
    if r < 0.5:
        argv += ["--max-states", str(rng.choice([0, -3, 1, 2, 10, 100, 1000, 5000, 10000,
                                                 rng.randint(1, 10000)]))]
    elif r < 0.8:
        argv += ["--max-memory", rng.choice(SIZES), "--max-states", "10000"]
    else:
        argv += ["--max-states", "10000"]
        if cmd == "explore":
            argv += ["--save", rng.choice(["{dir}/g.npz", "{dir}/g", "{dir}", "{dir}/no/g.npz",
                                           "/nonexistent/d/g.npz", "{dir}/g.npz"])]
    if rng.random() < 0.3:
        argv.append("--json")
    text = path.read_text()
    case = G.Case("limits", seed, {"model.dve": text}, argv, hazard=True, note=path.name)
    if not re.search(r"\bcost\b", text):
        case.expect = ("value", Fraction(0))
    return case


def _signal_case(rng, seed):
    """A large exploration stopped by SIGINT or SIGTERM (always run as a subprocess)."""
    models = [p for p in beem_models() if p.name in BIG_BEEM]
    if not models:
        return _model_mutant_case(rng, seed)
    path = rng.choice(models)
    sig = rng.choice([signal.SIGINT, signal.SIGTERM])
    argv = [rng.choice(["explore", "analyze"]), "{file}"]
    if argv[0] == "explore" and rng.random() < 0.6:
        argv += ["--save", "{dir}/g.npz"]
    if rng.random() < 0.3:
        argv.append("--json")
    case = G.Case("signal", seed, {"model.dve": path.read_text()}, argv, hazard=True,
                  note=f"{path.name} {sig.name}")
    case.extra["signal"] = (int(sig), rng.uniform(2.0, 4.5))
    if rng.random() < 0.25:  # no signal: the --timeout clock stops it (exit 3)
        case.extra["signal"] = (0, 0.0)
        argv += ["--timeout", rng.choice(["1.5", "2", "0.5s", "3"])]
        case.note = path.name + " --timeout"
    if rng.random() < 0.4:  # a memory limit as well: the peak must stay near it
        size = rng.choice(["150M", "200M", "300M", "512M"])
        argv += ["--max-memory", size, "--json"] if "--json" not in argv else \
            ["--max-memory", size]
        case.extra["max_memory"] = int(size[:-1]) << 20
    return case


STRESS_EXPECT = {
    "cost-1e15": ("value", Fraction(10**15)),
    "cost-cube": ("value", Fraction(32767**3)),
    "flat-sum-1000": ("value", Fraction(1000)),
    "doubling-macros": ("value", Fraction(2**19)),
    "short-circuit": ("value", Fraction(2)),
    "deep-not": ("no-cycle",),
    "byte-array-16000": ("no-cycle",),
    "chain-16000": ("no-cycle",),
    "byte-array-65536": ("value", Fraction(3, 2)),
}
#: Stress cases whose input is legal and small enough that refusing it is a bug.
STRESS_MUST_ANSWER = {"flat-sum-1000", "short-circuit", "byte-array-16000", "chain-16000",
                      "byte-array-65536"}
#: Stress cases that are invalid input: exit 2 is the only right answer.
STRESS_MUST_REFUSE = {"multi-file-5000-digits", "multi-file-binary", "blanks-then-bad-char",
                      "long-comment-unclosed", "5000-digit-literal", "5000-digit-cost",
                      "effect-2p32", "cr-only", "max-states-0", "byte-array-2e9",
                      "byte-array-2e9-analyze", "channel-2e9", "const-array-2e9"}


def _stress_case(rng, seed):
    cases = G.stress_cases()
    name, text, argv = cases[int(seed.split(":")[2]) % len(cases)]
    argv = [argv[0], "{file}", *argv[1:]] + (["--json"] if argv[0] == "analyze" else [])
    case = G.Case("stress", seed, {"model.dve": text}, argv, note=name,
                  expect=STRESS_EXPECT.get(name), hazard=name not in STRESS_MUST_ANSWER)
    case.extra["must_refuse"] = name in STRESS_MUST_REFUSE
    if name.startswith("multi-file"):
        # A second, valid file after the broken one: `check` must still report it.
        case.files["ok.dve"] = G.SIMPLE
        case.argv = case.argv + ["{dir}/ok.dve"]
        case.extra["stdout_has"] = ["ok.dve: ok"]
    return case


MAKERS = {
    "beem-mutant": _beem_case,
    "model": lambda rng, seed: _model_case(rng, seed, False),
    "model-big": lambda rng, seed: _model_case(rng, seed, True),
    "model-mutant": _model_mutant_case,
    "graph-text": lambda rng, seed: _graph_case(rng, seed, False),
    "graph-npz": lambda rng, seed: _graph_case(rng, seed, True),
    "graph-bad": _bad_graph_case,
    "stress": _stress_case,
    "limits": _limits_case,
    "saved-graph": _saved_graph_case,
    "model-sym": _sym_case,
    "signal": _signal_case,
}


# ------------------------------------------------------------------------------------ running
def write_files(case: G.Case, folder: pathlib.Path) -> list[str]:
    """Write the case's files into ``folder``; returns the argv with ``{file}`` filled in."""
    first = None
    for name, data in case.files.items():
        p = folder / name
        if isinstance(data, bytes):
            p.write_bytes(data)
        else:
            with open(p, "w", encoding="utf-8", errors="surrogateescape", newline="") as fh:
                fh.write(data)
        first = first or str(p)
    for stale in ("g.npz", "g"):  # outputs of an earlier case
        if (folder / stale).is_file():
            (folder / stale).unlink()
    return [a.replace("{file}", first).replace("{dir}", str(folder)) for a in case.argv]


def _vm_size() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_in_process(argv: list[str], bound: float) -> Outcome:
    """``dvecost.cli.main(argv)`` with captured output, a clock and an address-space limit."""
    from dvecost.cli import main

    out, err = io.StringIO(), io.StringIO()
    old_as = resource.getrlimit(resource.RLIMIT_AS)
    vm = _vm_size()
    limit = vm + MEMORY_HEADROOM if vm else resource.RLIM_INFINITY
    if old_as[1] != resource.RLIM_INFINITY:
        limit = min(limit, old_as[1])

    def on_alarm(signum, frame):
        raise Hang()

    old_handler = signal.signal(signal.SIGALRM, on_alarm)
    rc, hang = None, False
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            resource.setrlimit(resource.RLIMIT_AS, (limit, old_as[1]))
            signal.setitimer(signal.ITIMER_REAL, bound)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                rc = main(argv)
        except Hang:
            hang = True
        except SystemExit as exc:  # main() promises never to exit
            rc = exc.code if isinstance(exc.code, int) else 1
            err.write(f"\n[harness] SystemExit({exc.code!r}) escaped dvecost.cli.main\n")
        except BaseException as exc:  # noqa: BLE001 - anything escaping main is a crash
            import traceback
            err.write("".join(traceback.format_exception(exc)))
            rc = 1
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            resource.setrlimit(resource.RLIMIT_AS, old_as)
            signal.signal(signal.SIGALRM, old_handler)
    seconds = time.perf_counter() - t0
    shown = [f"{w.category.__name__}: {w.message}" for w in caught
             if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning,
                                            ImportWarning, ResourceWarning))]
    return Outcome(rc, out.getvalue(), err.getvalue(), seconds, hang, shown)


def run_subprocess(argv: list[str], bound: float, send: tuple | None = None) -> Outcome:
    """``python -m dvecost ARGV`` in a child process (address space capped, hard timeout);
    ``send = (signum, delay)`` sends that signal ``delay`` seconds after the start."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    env = dict(os.environ, NO_COLOR="1", PYTHONWARNINGS="default")
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+b") as fo, tempfile.TemporaryFile("w+b") as fe:
        p = subprocess.Popen([sys.executable, "-m", "dvecost", *argv], stdout=fo, stderr=fe,
                             env=env, preexec_fn=cap, stdin=subprocess.DEVNULL)
        hang = False
        try:
            if send is not None and send[0]:
                try:
                    p.wait(timeout=send[1])
                except subprocess.TimeoutExpired:
                    p.send_signal(send[0])
            p.wait(timeout=bound + 2.0)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            hang = True
        seconds = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        out = fo.read().decode(errors="replace")
        err = fe.read().decode(errors="replace")
    warn = [ln for ln in err.splitlines() if re.search(r"\w+Warning: ", ln)]
    return Outcome(None if hang else p.returncode, out, err, seconds, hang, warn,
                   how="subprocess" + (f" + signal {send[0]} at {send[1]:.1f} s"
                                       if send and send[0] else ""))


# ------------------------------------------------------------------------------------ judging
def _line_tables(text: str):
    """The file's lines under the two conventions a reader may use: ``\\n`` only (what dvecost
    documents), and universal newlines (``\\r\\n``, ``\\r`` or ``\\n``)."""
    a = [ln.removesuffix("\r") for ln in text.split("\n")]
    b = re.split(r"\r\n|\r|\n", text)
    return a, b


def position_errors(text: str, path: str, output: str) -> list[str]:
    """Every ``path:LINE:COL`` in ``output`` that lies outside ``text``."""
    bad = []
    tables = _line_tables(text)
    for m in re.finditer(re.escape(path) + r":(\d+):(\d+)", output):
        line, col = int(m.group(1)), int(m.group(2))
        if not any(1 <= line <= len(t) and 1 <= col <= len(t[line - 1]) + 1 for t in tables):
            n = len(tables[0])
            width = len(tables[0][line - 1]) if 1 <= line <= n else None
            bad.append(f"{m.group(0)} is outside the file ({n} lines"
                       + (f", line {line} has {width} characters)" if width is not None else ")"))
    return bad


def json_position_errors(text: str, out: str) -> list[str]:
    """``check --json``: every diagnostic's ``line``/``column`` (and end) inside the file."""
    bad = []
    tables = _line_tables(text)
    for ln in out.splitlines():
        try:
            obj = json.loads(ln)
        except ValueError:
            return [f"check --json printed a line that is not JSON: {ln[:80]!r}"]
        for d in obj.get("diagnostics", ()) if isinstance(obj, dict) else ():
            line, col = d.get("line"), d.get("column")
            if line is None:
                continue
            if not any(1 <= line <= len(t) and 1 <= col <= len(t[line - 1]) + 1
                       for t in tables):
                bad.append(f"diagnostic {d.get('code')} at line {line}, column {col} is "
                           f"outside the file")
            # The end is exclusive; an error at the end of the file may underline one column
            # past it, so only its order is checked.
            end = (d.get("end_line") or line, d.get("end_column") or col)
            if end < (line, col):
                bad.append(f"diagnostic {d.get('code')} ends at {end} before it starts")
    return bad


def caret_errors(text: str, path: str, output: str) -> list[str]:
    """Snippets under a ``path:LINE:COL: severity[code]: ...`` header that do not show that
    line (tabs expanded to 4 columns, as documented) or whose caret is not under ``COL``."""
    bad = []
    tables = _line_tables(text)
    lines = output.splitlines()
    head = re.compile(re.escape(path) + r":(\d+):(\d+): \w+\[")
    for i, ln in enumerate(lines[:-2]):
        m = head.match(ln)
        g = re.match(r"\s*(\d+) \| (.*)$", lines[i + 1])
        c = re.match(r"\s* \| ( *)\^", lines[i + 2])
        if not (m and g and c):
            continue
        line, col = int(m.group(1)), int(m.group(2))
        ok = False
        for t in tables:
            if 1 <= line <= len(t) and int(g.group(1)) == line:
                raw = t[line - 1]
                ok = ok or _snippet_ok(raw.expandtabs(4), len(raw[:col - 1].expandtabs(4)),
                                       g.group(2), len(c.group(1)))
        if not ok:
            bad.append(f"snippet under {m.group(0)[:-2]} shows line {g.group(1)} "
                       f"{g.group(2)[:60]!r} with the caret at {len(c.group(1)) + 1}")
    return bad


def _snippet_ok(line: str, start: int, shown: str, caret: int) -> bool:
    """Whether ``shown`` is ``line``, or a window of it marked by ``...`` at a cut end (long
    lines), with the caret at display column ``caret`` under character ``start``."""
    if shown == line:
        return caret == start
    for left in ((0, 3) if shown.startswith("...") else (0,)):
        for right in ((0, 3) if shown.endswith("...") else (0,)):
            w = shown[left:len(shown) - right]
            o = line.find(w)
            while w and o >= 0:
                if (o > 0) == bool(left) and (o + len(w) < len(line)) == bool(right) \
                        and caret == start - o + left:
                    return True
                o = line.find(w, o + 1)
    return False


_TEXT_VALUE = re.compile(r"cycle (?:mean|ratio)(?: of '[^']*')?:? =? ?(-?\d+(?:/\d+)?)"
                         r"(?: = | \()")


def printed_value(out: str):
    """``(Fraction, certified)`` printed by ``analyze``/``cycle`` (JSON or text), or None."""
    s = out.strip()
    if s.startswith("{"):
        try:
            obj = json.loads(s) if s.count("\n{") == 0 else json.loads(s.splitlines()[0])
        except ValueError:
            return None
        if not isinstance(obj, dict) or obj.get("exact") is None:
            return None
        return Fraction(str(obj["exact"])), bool(obj.get("certified")), obj
    m = _TEXT_VALUE.search(out)
    if not m:
        return None
    line = out[m.start(): out.find("\n", m.start()) if "\n" in out[m.start():] else None]
    return Fraction(m.group(1)), "(certified)" in line, None


#: Largest answer (states) that :func:`ss_oracle_value` re-explores for mutated models.
SS_ORACLE_STATES = 300
_SS_ORACLE = None


def _ss_oracle():
    """``tests/statespace/ss_oracle.py``, the project's per-state interpreter with its own
    arithmetic, loaded by path (it is a helper module of another test folder)."""
    global _SS_ORACLE
    if _SS_ORACLE is None:
        import importlib.util
        path = ROOT / "tests" / "statespace" / "ss_oracle.py"
        spec = importlib.util.spec_from_file_location("ss_oracle", path)
        _SS_ORACLE = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_SS_ORACLE)
    return _SS_ORACLE


def ss_oracle_value(text: str, obj: dict, bound: float = 20.0):
    """For a mutated model that ``analyze`` answered: the value by ``ss_oracle`` (which takes
    only the slot layout from the compiler and evaluates every guard, effect, cost and time
    itself) and Karp/Dinkelbach, or None when it does not apply (large, reduced by symmetry,
    or a different state count: then the counts are what differs, not the value)."""
    if obj.get("n_states", SS_ORACLE_STATES + 1) > SS_ORACLE_STATES or \
            (obj.get("symmetry") or {}).get("reduced"):
        return None
    from dve.expand import expand_model
    from dve.parser import parse_model
    from statespace import compile_model

    def on_alarm(signum, frame):
        raise Hang()

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, bound)
    try:
        cm = compile_model(expand_model(parse_model(text, "<fuzz>"), {}), property=True)
        states, edges = _ss_oracle().explore(cm)
    except Hang:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    if len(states) != obj.get("n_states"):
        return None
    err = tuple(cm.error_state)
    ids = {st: i for i, st in enumerate(states)}
    bad = ids.get(err, -1)
    res = obj.get("cost")
    es = [(u, v, c.get(res, 0), t) for u, v, _, c, t in edges if v != bad]
    return O.cycle_value(len(states), es, obj.get("kind", "mean"), obj.get("mode", "max"))


def witness_errors(case: G.Case, obj: dict, value: Fraction) -> list[str]:
    """The critical cycle of a JSON answer is a closed walk whose own sums give the value:
    for ``cycle``, its edge ids (and edge-list line numbers) against the input graph; for
    ``analyze``, its steps' states, costs and times."""
    ratio = "--ratio" in case.argv
    walks = []
    if case.argv[0] == "cycle" and "csr" in case.extra:
        csr = case.extra["csr"]
        ids = obj.get("cycle_edges") or []
        if any(not 0 <= i < len(csr) for i in ids):
            return [f"cycle_edges {ids} outside 0..{len(csr) - 1}"]
        walks.append(("cycle_edges", [csr[i] for i in ids]))
        if obj.get("cycle") != [csr[i][0] for i in ids]:
            walks.append(("cycle", None))
        if "lines" in case.extra and "cycle_edge_lines" in obj:
            lines = case.extra["lines"]
            nums = obj["cycle_edge_lines"]
            if any(not 2 <= k < 2 + len(lines) for k in nums):
                return [f"cycle_edge_lines {nums} outside the file's edge lines"]
            walks.append(("cycle_edge_lines", [lines[k - 2] for k in nums]))
    elif case.argv[0] == "analyze" and isinstance(obj.get("cycle"), list):
        steps = obj["cycle"]
        walks.append(("cycle steps", [(st.get("from"), st.get("to"), st.get("cost"),
                                       st.get("time")) for st in steps]))
    bad = []
    for what, walk in walks:
        if walk is None:
            bad.append("'cycle' does not list the sources of 'cycle_edges'")
            continue
        if not walk:
            bad.append(f"{what}: empty critical cycle")
            continue
        if any(a[1] != b[0] for a, b in zip(walk, walk[1:] + walk[:1])):
            bad.append(f"{what}: not a closed walk: {[(e[0], e[1]) for e in walk][:8]}")
            continue
        try:
            total = sum(e[2] for e in walk)
            steps = sum(e[3] for e in walk) if ratio else len(walk)
            got = Fraction(total, steps)
        except (TypeError, ZeroDivisionError):
            bad.append(f"{what}: sums not computable from {walk[:4]}")
            continue
        if got != value:
            bad.append(f"{what}: the walk's sums give {got}, the value printed is {value}")
    return bad


def judge(case: G.Case, oc: Outcome, path: str) -> list[tuple[str, str]]:
    """The rules broken by this outcome: ``[(failure class, message)]`` (empty: passed)."""
    bad = []
    both = oc.out + "\n" + oc.err
    if oc.hang:
        return [("hang", f"no end within the bound ({oc.seconds:.1f} s)")]
    if "Traceback (most recent call last)" in both or "internal error" in both:
        exc = [ln for ln in both.splitlines()
               if re.match(r"\w+(\.\w+)*(Error|Exception|Exit|Interrupt|Warning)\b", ln)]
        tail = exc[-1:] or [ln for ln in both.splitlines() if ln.strip()][-3:]
        bad.append(("traceback", " | ".join(tail)[:300]))
    allowed = (0, 2, 3)
    if case.extra.get("signal", (0,))[0]:
        allowed += (128 + case.extra["signal"][0],)
    if oc.rc not in allowed:
        bad.append(("exit-code", f"exit code {oc.rc}"))
    elif "[harness] SystemExit" in oc.err:
        bad.append(("exit-code", "SystemExit escaped dvecost.cli.main (it must return)"))
    if oc.warnings:
        bad.append(("warning", oc.warnings[0][:200]))
    text = next(iter(case.files.values()))
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    for msg in position_errors(text, path, both):
        bad.append(("position", msg))
    for msg in caret_errors(text, path, oc.err):
        bad.append(("caret", msg))
    if case.argv[0] == "check" and "--json" in case.argv:
        for msg in json_position_errors(text, oc.out):
            bad.append(("position", msg))
    if bad:
        return bad
    if case.category in ("limits", "signal"):
        bad += _judge_stop(case, oc)
    exp = case.expect
    if case.argv[0] == "explore" and case.counts is not None and oc.rc == 0 \
            and "--json" in case.argv:
        try:
            obj = json.loads(oc.out.strip().splitlines()[-1])
            mine = (obj.get("n_states"), obj.get("n_transitions"))
        except (ValueError, IndexError, AttributeError):
            mine = None
        if mine != case.counts:
            bad.append(("wrong-count", f"explore: states/transitions {mine}, oracle "
                                       f"{case.counts}"))
    for want in case.extra.get("stdout_has", ()):
        if want not in oc.out:
            bad.append(("wrong-outcome", f"{want!r} missing from stdout"))
    if case.extra.get("must_refuse"):
        if oc.rc != 2:
            bad.append(("wrong-outcome", f"invalid input accepted: exit {oc.rc}, expected 2"))
        return bad
    if exp is None and oc.rc == 0 and case.argv[0] == "analyze" and "--json" in case.argv \
            and case.category in ("beem-mutant", "model-mutant", "limits"):
        got = printed_value(oc.out)
        if got is not None and got[2] is not None:
            exp = ss_oracle_value(text, got[2])
            case.extra["ss_oracle"] = exp is not None
    if exp is not None and oc.rc == 0 and case.argv[0] in ("analyze", "cycle"):
        got = printed_value(oc.out)
        if exp[0] != "value":
            bad.append(("wrong-outcome", f"exit 0 although the oracle says {exp[0]}"))
        elif got is None:
            bad.append(("wrong-outcome", "exit 0 without a readable value on stdout"))
        else:
            value, certified, obj = got
            if value != exp[1]:
                bad.append(("wrong-value", f"printed {value}, oracle {exp[1]}"))
            elif not certified:
                bad.append(("wrong-value", f"value {value} not marked certified"))
            elif obj is not None:
                bad += [("witness", m) for m in witness_errors(case, obj, value)]
            sym = (obj or {}).get("symmetry") or {}
            if sym.get("reduced") and case.counts is not None:
                # Reduced: n_states counts classes; the full product's size is full_states.
                if sym.get("full_states") != case.counts[0]:
                    bad.append(("wrong-count", f"full_states {sym.get('full_states')}, oracle "
                                               f"{case.counts[0]} states"))
            elif obj is not None and case.counts is not None and "n_states" in obj:
                mine = (obj.get("n_states"), obj.get("n_transitions"))
                if mine != case.counts:
                    bad.append(("wrong-count", f"states/transitions {mine}, oracle "
                                               f"{case.counts}"))
            elif obj is None and case.counts is not None:
                m = re.search(r"state space: ([\d,]+) states?, ([\d,]+) transitions?", oc.out)
                mine = m and tuple(int(x.replace(",", "")) for x in m.groups())
                if mine != case.counts:
                    bad.append(("wrong-count", f"text report: states/transitions {mine}, "
                                               f"oracle {case.counts}"))
    if exp is not None and not case.hazard and case.argv[0] in ("analyze", "cycle"):
        if exp[0] == "value" and oc.rc != 0:
            bad.append(("refused-valid", f"exit {oc.rc} but the oracle has the value {exp[1]}: "
                        + (oc.err.strip().splitlines() or [""])[0][:200]))
        elif exp[0] in ("no-cycle", "zero-time") and oc.rc != 3:
            bad.append(("wrong-outcome", f"exit {oc.rc}, expected 3 ({exp[0]})"))
    return bad


def _judge_stop(case, oc) -> list[tuple[str, str]]:
    """A run stopped by a limit or a signal says so with the counts found so far, and a graph
    file it leaves behind is complete (written atomically)."""
    bad = []
    if oc.rc in (130, 143) or (oc.rc == 3 and case.argv[0] == "explore"):
        if "so far" not in oc.err and "so far" not in oc.out:
            bad.append(("stop-report", f"exit {oc.rc} without the counts found so far: "
                        + (oc.err.strip().splitlines() or ["(no message)"])[-1][:200]))
    limit = case.extra.get("max_memory")
    if limit and oc.how.startswith("subprocess"):
        try:
            peak = json.loads(oc.out.strip().splitlines()[-1]).get("peak_memory_bytes")
        except (ValueError, IndexError, AttributeError):
            peak = None
        if peak is None:
            bad.append(("memory-limit", "no peak_memory_bytes in the JSON output"))
        elif peak > 1.25 * limit:
            bad.append(("memory-limit", f"peak {peak / 2**20:.0f} MiB over --max-memory "
                        f"{limit / 2**20:.0f} MiB + 25 %"))
    saved = case.extra.get("saved")
    if saved and saved.is_file():
        import numpy as np
        try:
            with np.load(saved, allow_pickle=False) as z:
                for k in z.files:
                    z[k]
        except Exception as exc:  # noqa: BLE001 - any failure to read back is the finding
            bad.append(("lost-file", f"{saved.name} left unreadable: {exc}"[:200]))
    return bad


def run_case(case: G.Case, folder: pathlib.Path, bound: float, subprocess_: bool = False):
    """Write, run and judge one case; returns ``(outcome, [Failure])``."""
    argv = write_files(case, folder)
    if "--save" in argv:
        case.extra["saved"] = pathlib.Path(argv[argv.index("--save") + 1])
    if "signal" in case.extra:
        oc = run_subprocess(argv, bound, case.extra["signal"])
    else:
        oc = run_subprocess(argv, bound) if subprocess_ else run_in_process(argv, bound)
    path = str(folder / next(iter(case.files)))
    then = case.extra.get("then")
    if then is None:
        return oc, [Failure(k, m, case, oc) for k, m in judge(case, oc, path)]
    # Two steps: the first is judged by the generic rules only, the second also by the value.
    first = G.Case(case.category, case.seed, case.files, case.argv, hazard=True)
    fails = [Failure(k, m, case, oc) for k, m in judge(first, oc, path)]
    partial = case.extra.get("partial")
    if partial and oc.rc == 0:
        fails.append(Failure("wrong-outcome", f"explore stopped by {case.argv[-2:]} exits 0",
                             case, oc))
    if oc.rc != (3 if partial else 0) or fails:
        return oc, fails
    saved = folder / "g.npz"
    if "damage" in case.extra and saved.is_file():
        how, where, byte = case.extra["damage"]
        data = bytearray(saved.read_bytes())
        k = int(where * len(data))
        if how == "truncate":
            data = data[:k]
        elif data:
            data[min(k, len(data) - 1)] ^= byte or 1
        saved.write_bytes(bytes(data))
    argv2 = [a.replace("{dir}", str(folder)) for a in then]
    oc2 = run_subprocess(argv2, bound) if subprocess_ else run_in_process(argv2, bound)
    if partial:
        second = G.Case(case.category, case.seed, {"g.npz": b""}, argv2, hazard=True)
        fails = [Failure(k, m, case, oc2) for k, m in judge(second, oc2, str(saved))]
        if oc2.rc != 3 or "incomplete" not in oc2.out + oc2.err:
            fails.append(Failure("wrong-outcome", f"cycle on a partial graph: exit {oc2.rc}, "
                                 "expected 3 and the word 'incomplete'", case, oc2))
        got = printed_value(oc2.out)
        exp = case.expect
        # (When the model has a zero-time cycle its ratio has no value to bound.)
        if got is not None and exp is not None and exp[0] != "zero-time" and (
                exp[0] != "value" or got[0] > exp[1]):
            fails.append(Failure("wrong-value", f"partial graph's value {got[0]} is no lower "
                                 f"bound of the model's {exp}", case, oc2))
        return oc2, fails
    second = G.Case(case.category, case.seed, {"g.npz": b""}, argv2, case.expect, case.hazard)
    return oc2, [Failure(k, m, case, oc2) for k, m in judge(second, oc2, str(saved))]


# ----------------------------------------------------------------------------------- campaign
def seeds(master: int, n: int, categories=None, start: int = 0) -> list[str]:
    """``n`` case seeds drawn by weight (deterministic in ``master``)."""
    cats = [c for c in WEIGHTS if categories is None or c in categories]
    weights = [WEIGHTS[c] for c in cats]
    rng = random.Random(f"campaign:{master}")
    picks = rng.choices(cats, weights, k=start + n)[start:]
    return [f"{master}:{c}:{start + i}" for i, c in enumerate(picks)]


@dataclass
class Stats:
    cases: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)  # (category, class)
    exits: Counter = field(default_factory=Counter)  # (category, rc)
    valued: Counter = field(default_factory=Counter)  # values compared with an oracle
    seconds: float = 0.0
    subprocess_cases: int = 0
    slowest: tuple = (0.0, "")
    examples: dict = field(default_factory=dict)  # class -> first Failure

    def add(self, case, oc, fails):
        self.cases[case.category] += 1
        self.exits[(case.category, oc.rc)] += 1
        if (case.expect is not None and case.expect[0] == "value" or
                case.extra.get("ss_oracle")) and oc.rc == 0:
            self.valued[case.category] += 1
        if oc.seconds > self.slowest[0]:
            self.slowest = (oc.seconds, case.seed)
        for f in fails:
            self.failures[(case.category, f.klass)] += 1
            self.examples.setdefault((case.category, f.klass), f)

    def table(self) -> str:
        rows = ["| category | cases | exit 0 | exit 2 | exit 3 | other exits | values checked "
                "| failures |", "|---|---:|---:|---:|---:|---|---:|---|"]
        for c in WEIGHTS:
            if not self.cases[c]:
                continue
            fails = ", ".join(f"{k} {n}" for (cc, k), n in sorted(self.failures.items())
                              if cc == c) or "none"
            other = ", ".join(
                f"{'stopped at the bound' if r is None else r}: {n}"
                for (cc, r), n in sorted(self.exits.items(), key=lambda x: str(x[0][1]))
                if cc == c and r not in (0, 2, 3))
            rows.append(f"| {c} | {self.cases[c]} | {self.exits[(c, 0)]} | "
                        f"{self.exits[(c, 2)]} | {self.exits[(c, 3)]} | {other or '-'} | "
                        f"{self.valued[c]} | {fails} |")
        total = sum(self.cases.values())
        rows.append(f"| all | {total} | {sum(v for (c, r), v in self.exits.items() if r == 0)} | "
                    f"{sum(v for (c, r), v in self.exits.items() if r == 2)} | "
                    f"{sum(v for (c, r), v in self.exits.items() if r == 3)} | "
                    f"{sum(v for (c, r), v in self.exits.items() if r not in (0, 2, 3))} | "
                    f"{sum(self.valued.values())} | {sum(self.failures.values())} |")
        return "\n".join(rows)


def campaign(case_seeds, bound: float = 20.0, subprocess_every: int = 0, deadline=None,
             on_failure=None, folder=None) -> Stats:
    """Run the cases of ``case_seeds`` (until ``deadline``, a ``time.monotonic()`` value)."""
    stats = Stats()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="dvecost-fuzz-") as tmp:
        folder = pathlib.Path(folder or tmp)
        for i, seed in enumerate(case_seeds):
            if deadline is not None and time.monotonic() > deadline:
                break
            case = make_case(seed)
            sub = bool(subprocess_every) and i % subprocess_every == 0
            oc, fails = run_case(case, folder, bound, sub)
            stats.subprocess_cases += sub or "signal" in case.extra
            stats.add(case, oc, fails)
            if fails and on_failure:
                for f in fails:
                    on_failure(f)
    stats.seconds = time.perf_counter() - t0
    return stats


def minimize(case: G.Case, bound: float = 20.0, klass: str | None = None):
    """Shrink a failing text case by deleting lines, then characters runs, while the first
    failure keeps its class and the start of its message; returns the smallest text found."""
    name = next(iter(case.files))
    text = case.files[name]
    if isinstance(text, bytes):
        return text, None
    with tempfile.TemporaryDirectory() as tmp:
        folder = pathlib.Path(tmp)

        def fails(t):
            c = G.Case(case.category, case.seed, {name: t}, case.argv, case.expect, case.hazard,
                       case.counts, case.note, case.extra)
            f = [x for x in run_case(c, folder, bound)[1] if klass in (None, x.klass)]
            return f[0] if f else None

        first = fails(text)
        if first is None:
            return text, None
        # Messages naming numbers (counts, values) change as the input shrinks: keep the class.
        key = (first.klass, first.message[:40] if first.klass == "traceback" else "")

        def same(t):
            f = fails(t)
            return f is not None and (f.klass, f.message[:40] if f.klass == "traceback"
                                      else "") == key

        for unit in ("\n", " "):
            parts = text.split(unit)
            i = 0
            while i < len(parts):
                trial = unit.join(parts[:i] + parts[i + 1:])
                if same(trial):
                    parts = parts[:i] + parts[i + 1:]
                else:
                    i += 1
            text = unit.join(parts)
        return text, fails(text)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="dvecost fuzzing campaign (see module docstring)")
    ap.add_argument("--cases", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="index of the first case")
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long")
    ap.add_argument("--bound", type=float, default=20.0, help="seconds per case")
    ap.add_argument("--only", action="append", help="category (repeatable)")
    ap.add_argument("--subprocess-every", type=int, default=0, metavar="K")
    ap.add_argument("--with-stress", action="store_true",
                    help="run every stress input first (as the slow test does)")
    ap.add_argument("--replay", metavar="SEED", help="run one case and show it in full")
    ap.add_argument("--show", metavar="SEED", help="print one case's input and command only")
    ap.add_argument("--minimize", metavar="SEED", help="shrink a failing case (text inputs; "
                    "the expected value is the original case's, so use it for crashes)")
    ap.add_argument("--klass", help="with --minimize: the failure class to keep")
    ap.add_argument("--save-failures", metavar="DIR", help="write failing inputs there")
    ap.add_argument("--quiet", action="store_true", help="no failure reports, only the table")
    a = ap.parse_args(argv)
    if a.show:
        case = make_case(a.show)
        print(f"dvecost {' '.join(case.argv)}   # {case.note} expect={case.expect}")
        for name, data in case.files.items():
            print(f"--- {name} ---")
            print(data if isinstance(data, str) else repr(data))
        return 0
    if a.minimize and "model" in make_case(a.minimize).extra and a.klass:
        small = minimize_model(make_case(a.minimize), a.klass, a.bound)
        with tempfile.TemporaryDirectory() as tmp:
            oc, fails = run_case(small, pathlib.Path(tmp), a.bound)
        print(small.files["model.dve"])
        print(f"dvecost {' '.join(small.argv)}; expect {small.expect}, counts {small.counts}")
        for f in fails:
            print(f"[{f.klass}] {f.message}")
        return 0
    if a.minimize:
        text, f = minimize(make_case(a.minimize), a.bound, a.klass)
        print(text)
        print(f.report(limit=4000) if f else "(passes)")
        return 0
    if a.replay:
        case = make_case(a.replay)
        with tempfile.TemporaryDirectory() as tmp:
            oc, fails = run_case(case, pathlib.Path(tmp), a.bound)
            for f in fails:
                print(f.report(limit=100_000))
            if not fails:
                print(f"passed: exit {oc.rc} in {oc.seconds:.2f} s; expect={case.expect}")
                print(oc.out[-3000:], oc.err[-3000:], sep="\n")
        return 1 if fails else 0
    per_class: Counter = Counter()

    def on_failure(f: Failure):
        per_class[f.klass] += 1
        if a.save_failures:
            d = pathlib.Path(a.save_failures) / f.klass / f.case.seed.replace(":", "_")
            d.mkdir(parents=True, exist_ok=True)
            for name, data in f.case.files.items():
                (d / name).write_bytes(data if isinstance(data, bytes)
                                       else data.encode("utf-8", "surrogateescape"))
            (d / "report.txt").write_text(f.report(limit=100_000))
        if not a.quiet and per_class[f.klass] <= 3:
            print(f.report(), flush=True)

    deadline = time.monotonic() + 60 * a.minutes if a.minutes else None
    run = seeds(a.seed, a.cases, a.only, a.start)
    if a.with_stress:
        run = [f"{a.seed}:stress:{i}" for i in range(len(G.stress_cases()))] + run
    stats = campaign(run, a.bound, a.subprocess_every, deadline, on_failure)
    print(stats.table())
    print(f"{sum(stats.cases.values())} cases ({stats.subprocess_cases} as subprocesses) in "
          f"{stats.seconds:.0f} s; slowest {stats.slowest[0]:.2f} s ({stats.slowest[1]})")
    for (cat, k), f in sorted(stats.examples.items()):
        print(f"first {cat}/{k}: {f.case.seed} {f.message[:150]}")
    return 1 if stats.failures else 0


if __name__ == "__main__":
    sys.exit(main())
