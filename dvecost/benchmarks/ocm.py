"""Cycle engine (CPU) against Boost's and LEMON's Howard (ocmref) on the same graphs.

For every graph: our engine's seconds (:func:`ocm.optimal_cycle`, the graph already in memory,
certificate included) and iterations; ``ocmref --algo boost-howard`` and ``--algo
lemon-howard`` run in the same command on the same edge-list file (their ``compute_s``: the
algorithm after parsing, SCC decomposition included); the ratio of our time to the faster of the
two; and whether all three exact values agree. The target (``docs/benchmarks.md``, issue 4) is a
ratio of at most 2.

Graphs (``--graphs``, comma-separated):

- ``random``: ``gen.py random N M --strong --cost -1000 1000 --time 1 5 --seed 21``;
- ``model``: ``gen.py model K L --chords 1 --mutex 1 --cost 0 1000 --time 1 5 --seed 33``
  (an interleaving product: many tied cycles, a giant SCC plus transient states);
- ``cs10``: the reachable state graph of ``models/cs_10.dve`` (the paper's client/server system
  with 10 clients), built by :func:`statespace.build_state_graph`;
- any path to an edge-list file.

``--size full`` is 1M vertices / 10M edges (``model 5 16``); ``--size small`` 100k / 1M
(``model 4 18``). Generated files are cached under ``--workdir``. With ``--backend gpu`` the
suite is :mod:`dvecost.benchmarks.ocm_gpu` (issue 5).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import shutil
import subprocess
import sys
import time
from fractions import Fraction
from typing import Callable

from dve.errors import ConfigurationError

from . import Report

__all__ = ["add_arguments", "run", "find_ocmref", "GRAPHS"]

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED = pathlib.Path(os.environ.get("DVECOST_SHARED", ROOT.parent / "shared"))
OCMREF_SRC = SHARED / "tools" / "ocmref"

#: name -> (gen.py arguments for --size full, for --size small)
GRAPHS = {
    "random": (["random", "1000000", "10000000", "--strong", "--cost", "-1000", "1000",
                "--time", "1", "5", "--seed", "21"],
               ["random", "100000", "1000000", "--strong", "--cost", "-1000", "1000",
                "--time", "1", "5", "--seed", "21"]),
    "model": (["model", "5", "16", "--chords", "1", "--mutex", "1", "--cost", "0", "1000",
               "--time", "1", "5", "--seed", "33"],
              ["model", "4", "18", "--chords", "1", "--mutex", "1", "--cost", "0", "1000",
               "--time", "1", "5", "--seed", "33"]),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--graphs", default="random,model,cs10",
                        help="comma-separated: random, model, cs10, or edge-list paths "
                             "(default: random,model,cs10)")
    parser.add_argument("--size", choices=("full", "small"), default="full",
                        help="full: 1M vertices / 10M edges; small: 100k / 1M (default: full)")
    parser.add_argument("--ratio", action="store_true", help="cycle ratio instead of the mean")
    parser.add_argument("--min", action="store_true", help="minimise instead of maximise")
    parser.add_argument("--backend", choices=("cpu", "gpu"), default="cpu",
                        help="cpu: this suite; gpu: the GPU suite on the device")
    parser.add_argument("--ocmref", metavar="PATH",
                        help="the ocmref binary (default: $OCMREF, else .bench/ocmref/ocmref, "
                             "built there from tools/ocmref if missing)")
    parser.add_argument("--no-ref-iters", action="store_true",
                        help="do not ask ocmref for iteration counts (saves LEMON re-runs)")
    parser.add_argument("--workdir", default=str(ROOT / ".bench" / "ocm"),
                        help="where generated graphs are cached (default: .bench/ocm)")


def find_ocmref(path: str | None = None, build: bool = True,
                progress: Callable[[str], None] = lambda s: None) -> str | None:
    """The ocmref binary: ``path``, ``$OCMREF``, ``.bench/ocmref/ocmref``, or a fresh build.

    Builds from ``tools/ocmref`` (its ``build.sh`` installs the Debian packages it needs) into
    ``.bench/ocmref`` when nothing else is found and ``build`` is true. Returns None when no
    binary can be had.
    """
    for cand in (path, os.environ.get("OCMREF"), str(ROOT / ".bench" / "ocmref" / "ocmref")):
        if cand and os.access(cand, os.X_OK):
            return cand
    if not build or not (OCMREF_SRC / "build.sh").exists():
        return None
    dest = ROOT / ".bench" / "ocmref"
    dest.mkdir(parents=True, exist_ok=True)
    for f in ("build.sh", "ocmref.cpp"):
        shutil.copy(OCMREF_SRC / f, dest / f)
    progress(f"building ocmref in {dest} (bash build.sh)")
    res = subprocess.run(["bash", "build.sh"], cwd=dest, capture_output=True, text=True)
    binary = dest / "ocmref"
    if res.returncode != 0 or not binary.exists():
        progress(f"ocmref build failed: {res.stderr.strip()[-300:]}")
        return None
    return str(binary)


def _cs10_edge_list(out: pathlib.Path, progress) -> None:
    import numpy as np
    from ocm.edgelist import write_edge_list
    from dve import load_model
    from statespace import build_state_graph

    model = SHARED / "models" / "cs_10.dve"
    progress(f"exploring {model}")
    g = build_state_graph(load_model(model))
    write_edge_list(out, g.indptr, g.indices, g.cost(), np.asarray(g.time))


def _graph_file(name: str, args, progress) -> pathlib.Path:
    if name not in GRAPHS and name != "cs10":
        p = pathlib.Path(name)
        if not p.exists():
            raise ConfigurationError(f"unknown graph '{name}': expected random, model, cs10 or "
                                     "an edge-list file")
        return p
    work = pathlib.Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    if name == "cs10":
        out = work / "cs10.txt"
        if not out.exists():
            _cs10_edge_list(out, progress)
        return out
    gen_args = GRAPHS[name][0 if args.size == "full" else 1]
    out = work / f"{name}_{args.size}.txt"
    if not out.exists():
        progress(f"generating {out.name}: gen.py {' '.join(gen_args)}")
        subprocess.run([sys.executable, str(OCMREF_SRC / "gen.py"), *gen_args, "-o",
                        str(out) + ".tmp"], check=True, capture_output=True)
        os.replace(str(out) + ".tmp", out)
    return out


def _ocmref(binary: str, algo: str, path: pathlib.Path, args) -> dict:
    cmd = [binary, "--algo", algo, "--mode", "min" if args.min else "max",
           "--ratio" if args.ratio else "--mean"]
    if not args.no_ref_iters:
        cmd.append("--iters")
    res = subprocess.run([*cmd, str(path)], capture_output=True, text=True)
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        return {"status": "error", "error": (res.stderr or res.stdout).strip()[-200:]}


def _load() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda s: None) -> Report:
    """Run the suite; see the module docstring."""
    if getattr(args, "backend", "cpu") == "gpu":
        from . import ocm_gpu
        return ocm_gpu.run(args, progress)
    import ocm

    binary = find_ocmref(args.ocmref, progress=progress)
    if binary is None:
        progress("ocmref not available: reference columns left empty")
    kind = "ratio" if args.ratio else "mean"
    mode = "min" if args.min else "max"
    load_before = _load()
    rows = []
    for name in [g.strip() for g in args.graphs.split(",") if g.strip()]:
        try:
            path = _graph_file(name, args, progress)
        except Exception as exc:  # noqa: BLE001 - one missing graph must not lose the others
            progress(f"{name}: skipped ({exc})")
            rows.append((name, None, None, f"skipped: {exc}", *([None] * 9)))
            continue
        progress(f"{name}: reading {path}")
        g = ocm.read_edge_list(path)
        progress(f"{name}: {g.n_vertices} vertices, {g.n_edges} edges; our engine")
        t0 = time.perf_counter()
        r = ocm.optimal_cycle(g.indptr, g.indices, g.cost, g.time if args.ratio else None,
                              kind=kind, mode=mode, backend="cpu")
        ours = time.perf_counter() - t0
        progress(f"{name}: ours {ours:.2f} s, {r.iterations} iterations, {r.exact}")
        ref = {}
        if binary is not None:
            for algo in ("boost-howard", "lemon-howard"):
                progress(f"{name}: ocmref --algo {algo}")
                ref[algo] = _ocmref(binary, algo, path, args)
                j = ref[algo]
                progress(f"{name}: {algo} {j.get('status')} {j.get('compute_s')} s, "
                         f"iters {j.get('iters')}")
        times = [j["compute_s"] for j in ref.values() if j.get("status") == "ok"]
        faster = min(times) if times else None
        agree = None
        if ref:
            vals = [Fraction(int(j["num"]), int(j["den"])) for j in ref.values()
                    if j.get("status") == "ok"]
            agree = bool(vals) and all(v == r.value for v in vals)
        b, lm = ref.get("boost-howard", {}), ref.get("lemon-howard", {})
        rows.append((name, g.n_vertices, g.n_edges, r.exact, r.certified, round(ours, 3),
                     r.iterations, b.get("compute_s"), b.get("iters"), lm.get("compute_s"),
                     lm.get("iters"), None if faster is None else round(ours / faster, 2),
                     agree))
    cols = ("graph", "n", "m", "value", "certified", "ours_s", "ours_iters", "boost_s",
            "boost_iters", "lemon_s", "lemon_iters", "ratio_vs_faster", "values_agree")
    notes = (f"maximal cycle {kind}" if mode == "max" else f"minimal cycle {kind}",
             "ours: ocm.optimal_cycle on the CPU (NumPy/SciPy), graph in memory, SCC "
             "decomposition and certificate included; references: ocmref compute_s",
             f"load average before/after: {load_before} | {_load()} on {os.cpu_count()} CPUs",
             "ratio_vs_faster = ours_s / min(boost_s, lemon_s); target <= 2")
    meta = {"machine": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "ocmref": binary, "size": args.size}
    return Report(title="Cycle engine (CPU) vs Boost and LEMON Howard", columns=cols,
                  rows=tuple(rows), notes=notes, meta=meta)
