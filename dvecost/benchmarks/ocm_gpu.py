"""Cycle engine on the GPU: seconds against the CPU engine and Boost/LEMON Howard, bandwidth.

Behind ``dvecost bench ocm --backend gpu`` (:mod:`dvecost.benchmarks.ocm` delegates here) and
runnable alone as ``python3 -m dvecost.benchmarks.ocm_gpu``. Per graph, in one run on one
machine:

- ``gpu_s``: :func:`ocm.optimal_cycle` with the graph already in GPU memory (CuPy arrays), the
  median of ``--repeat`` runs after one warm-up (``gpu_first_s``: the first run, with kernel
  loading and graph capture). Everything the API does is inside: validation, trimming, Howard,
  the exact certificate, the critical cycle.
- ``cpu_s``: the same call on NumPy arrays (``backend='cpu'``), once.
- ``boost_s``, ``lemon_s``: ``compute_s`` of ``ocmref --algo boost-howard`` and
  ``lemon-howard`` (the library call; reading the text file and building the library's graph
  excluded), run on this machine's CPU in the same command. ``speedup`` = the faster of the two
  over ``gpu_s``.
- ``iters``, ``iter_ms``: Howard iterations and the device loop's time per iteration.
- Bandwidth: an iteration must read the graph once (``indptr`` 8 B per vertex, ``indices`` and
  ``cost`` 8 B per edge each, ``time`` 8 B per edge for ratios) and read and write a few
  arrays per vertex (policy, class, bias: 32 B per vertex); ``GBps`` is those bytes over
  ``iter_ms``, against ``copy_GBps``, a device-to-device copy measured in the same run
  (bytes read plus written). ``x_pass`` = ``iter_ms`` over the time of those bytes at copy
  bandwidth; the target is at most 10.

Graphs come from ``tools/ocmref/gen.py`` (same generator functions, same seeds, so
``python3 gen.py ...`` with the arguments shown in the report writes the same graph); the text
file each reference reads is written in parallel chunks. References run concurrently in the
background (one process per graph and library) while the engines are timed; the report says
so.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import multiprocessing
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from fractions import Fraction
from typing import Any, Callable

import numpy as np

from . import Report

__all__ = ["add_arguments", "run", "GRAPHS", "QUICK_GRAPHS", "main"]

#: name -> (gen.py family, gen.py arguments). 1M/10M random and model-like (the sizes of the
#: issue), and the paper's largest size: 2.1 M states, 24.6 M edges.
GRAPHS: dict[str, tuple[str, dict]] = {
    "random-1M-10M": ("random", dict(n=1_000_000, m=10_000_000, strong=True, sinks=0.0,
                                     cost=[-1000, 1000], time=[1, 5], seed=21)),
    "model-1M-10M": ("model", dict(K=5, L=16, chords=1, mutex=1, jitter=0,
                                   cost=[0, 1000], time=[1, 5], seed=33)),
    "model-2M-25M": ("model", dict(K=7, L=8, chords=1, mutex=2, jitter=0,
                                   cost=[0, 1000], time=[1, 5], seed=34)),
}

#: Small graphs for a smoke run (``--quick``).
QUICK_GRAPHS: dict[str, tuple[str, dict]] = {
    "random-100k-1M": ("random", dict(n=100_000, m=1_000_000, strong=True, sinks=0.0,
                                      cost=[-1000, 1000], time=[1, 5], seed=21)),
    "model-65k-500k": ("model", dict(K=4, L=16, chords=1, mutex=1, jitter=0,
                                     cost=[0, 1000], time=[1, 5], seed=33)),
}

#: Edge counts of the random graphs (10 edges per vertex) timed by ``--sweep``: where the GPU
#: starts to pay (``ocm.backend.AUTO_MIN_EDGES``).
SWEEP_EDGES = (10_000, 30_000, 100_000, 300_000, 1_000_000)

_REFS = ("boost-howard", "lemon-howard")

#: Names of ``dvecost.benchmarks.ocm`` (``--graphs random,model,...``): (full size, small size).
#: ``paper``: the paper's largest size. ``cs10`` (the state graph of ``cs_10.dve``) and paths
#: of edge-list files are accepted as well.
ALIASES = {"random": ("random-1M-10M", "random-100k-1M"),
           "model": ("model-1M-10M", "model-65k-500k"),
           "paper": ("model-2M-25M", "model-65k-500k")}


def _find_model(name: str) -> pathlib.Path:
    root = _here()
    for c in (root / ".bench" / name, root.parent / "shared" / "models" / name,
              pathlib.Path.cwd().parent / "shared" / "models" / name):
        if c.is_file():
            return c
    from dve.errors import ConfigurationError
    raise ConfigurationError(f"{name} not found (looked in .bench and ../shared/models)")


def _here() -> pathlib.Path:
    return pathlib.Path(__file__).resolve().parents[2]


def _find(name: str, explicit: str | None) -> pathlib.Path | None:
    cands = [explicit] if explicit else []
    root = _here()
    cands += [root / ".bench" / "ocmref" / name, root.parent / "shared" / "tools" / "ocmref" / name,
              pathlib.Path.cwd().parent / "shared" / "tools" / "ocmref" / name]
    for c in cands:
        if c and pathlib.Path(c).is_file():
            return pathlib.Path(c)
    return None


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Options of the GPU benchmark (``dvecost bench ocm --backend gpu``)."""
    p.add_argument("--graphs", default=",".join(GRAPHS), metavar="NAMES",
                   help=f"comma-separated graphs among {', '.join({**GRAPHS, **QUICK_GRAPHS})}, "
                        "random, model, paper, cs10, or edge-list files")
    p.add_argument("--quick", action="store_true", help="small graphs only (a smoke test)")
    p.add_argument("--sweep", action="store_true",
                   help="also time both engines on small random graphs (the auto threshold)")
    p.add_argument("--dve", action="append", default=[], metavar="FILE",
                   help="also a model's state graph (explored here, on the CPU)")
    p.add_argument("--kind", choices=("mean", "ratio"), default="mean")
    p.add_argument("--repeat", type=int, default=5, metavar="K", help="timed GPU runs (median)")
    p.add_argument("--ocmref", metavar="PATH", help="the ocmref binary (default: found)")
    p.add_argument("--gen", metavar="PATH", help="ocmref's gen.py (default: found)")
    p.add_argument("--refs", default=",".join(_REFS), help="ocmref algorithms to run")
    p.add_argument("--ref-timeout", type=float, default=540.0, metavar="S")
    p.add_argument("--no-cpu", action="store_true", help="skip the CPU engine")
    p.add_argument("--workdir", metavar="DIR", help="where graph files go (default: a temp dir)")


def _opt(args: argparse.Namespace, name: str, default: Any) -> Any:
    v = getattr(args, name, None)
    return default if v is None else v


# ---- graphs --------------------------------------------------------------------------------

def _load_gen(path: pathlib.Path):
    spec = importlib.util.spec_from_file_location("ocmref_gen", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _gen_command(family: str, p: dict) -> str:
    if family == "random":
        s = f"gen.py random {p['n']} {p['m']}" + (" --strong" if p["strong"] else "")
        s += f" --sinks {p['sinks']}" if p["sinks"] else ""
    else:
        s = f"gen.py model {p['K']} {p['L']} --chords {p['chords']} --mutex {p['mutex']}"
        s += f" --jitter {p['jitter']}" if p["jitter"] else ""
    return s + (f" --cost {p['cost'][0]} {p['cost'][1]} --time {p['time'][0]} {p['time'][1]}"
                f" --seed {p['seed']}")


def _generate(gen, family: str, p: dict):
    """(n, u, v, cost, time) exactly as ``gen.py`` makes them for these arguments."""
    ns = argparse.Namespace(loops=False, shuffle=True, **p)
    rng = np.random.default_rng(p["seed"])
    if family == "random":
        return gen.gen_random(ns, rng)
    return gen.gen_model(ns, rng)


def _csr(n: int, u: np.ndarray, v: np.ndarray, c: np.ndarray, t: np.ndarray):
    """CSR keeping the order of the lines within each source vertex (as ocm.read_edge_list)."""
    order = np.argsort(u, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    return (indptr, v[order].astype(np.int64), c[order].astype(np.int64),
            t[order].astype(np.int64))


_CHUNK: dict = {}


def _format_chunk(bounds: tuple[int, int]) -> bytes:
    a, b = bounds
    flat = np.stack([x[a:b] for x in _CHUNK["uvct"]], axis=1).ravel().tolist()
    return (("%d %d %d %d\n" * (b - a)) % tuple(flat)).encode()


def _write_text(path: pathlib.Path, n: int, u, v, c, t, workers: int) -> None:
    """The ocmref text format, formatted in parallel chunks (fork: the arrays are shared)."""
    m = len(u)
    _CHUNK["uvct"] = (u, v, c, t)
    step = 1 << 20
    bounds = [(a, min(a + step, m)) for a in range(0, m, step)]
    with open(path, "wb") as f:
        f.write(f"{n} {m}\n".encode())
        if workers > 1 and len(bounds) > 1:
            with multiprocessing.get_context("fork").Pool(workers) as pool:
                for part in pool.imap(_format_chunk, bounds):
                    f.write(part)
        else:
            for bd in bounds:
                f.write(_format_chunk(bd))
    _CHUNK.clear()


# ---- measurements --------------------------------------------------------------------------

def copy_bandwidth(nbytes: int = 1 << 30, reps: int = 10) -> float:
    """Median device-to-device copy rate (bytes/s, read plus written) on random data."""
    import cupy as cp

    a = cp.random.random(nbytes // 8)
    b = cp.empty_like(a)
    for _ in range(2):
        cp.copyto(b, a)
    ts = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        cp.copyto(b, a)
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
    del a, b
    cp.get_default_memory_pool().free_all_blocks()
    return 2 * (nbytes // 8) * 8 / statistics.median(ts)


def _start_ref(ocmref: pathlib.Path, algo: str, path: pathlib.Path, kind: str,
               mode: str = "max"):
    cmd = [str(ocmref), "--algo", algo, "--mode", mode, f"--{kind}", str(path)]
    return cmd, (subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True), time.perf_counter())


def _finish_ref(proc_t, timeout: float) -> dict:
    proc, t_start = proc_t
    try:
        out, err = proc.communicate(timeout=max(1.0, timeout))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        # Killed after this long (reading the file included): its compute_s is larger.
        return {"status": "timeout", "killed_after_s": time.perf_counter() - t_start}
    try:
        return json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"status": "error", "stderr": err[-300:]}


def _time_gpu(arrays, kind: str, repeat: int, mode: str = "max"):
    import cupy as cp

    import ocm

    d = [None if a is None else cp.asarray(a) for a in arrays]
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    first = ocm.optimal_cycle(*d, kind=kind, mode=mode)
    t_first = time.perf_counter() - t0
    runs, res = [], first
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        res = ocm.optimal_cycle(*d, kind=kind, mode=mode)
        runs.append(time.perf_counter() - t0)
    del d
    cp.get_default_memory_pool().free_all_blocks()
    return res, statistics.median(runs), t_first, runs


def _time_cpu(arrays, kind: str, mode: str = "max"):
    import ocm

    t0 = time.perf_counter()
    r = ocm.optimal_cycle(*arrays, kind=kind, mode=mode, backend="cpu")
    return r, time.perf_counter() - t0


def _bytes_per_iteration(n: int, m: int, kind: str) -> int:
    return 8 * (n + 1) + 16 * m + (8 * m if kind == "ratio" else 0) + 32 * n


def select_graphs(args: argparse.Namespace) -> tuple[list[str], list[pathlib.Path], list[str]]:
    """(generated graph names, edge-list files, DVE models) asked for by ``--graphs`` etc.

    >>> select_graphs(argparse.Namespace(graphs="random,paper", size="small"))[0]
    ['random-100k-1M', 'model-65k-500k']
    """
    quick = bool(_opt(args, "quick", False)) or getattr(args, "size", "full") == "small"
    items = [s for s in str(_opt(args, "graphs", ",".join(GRAPHS))).split(",") if s]
    if quick and items == list(GRAPHS):  # the default list, small
        items = list(QUICK_GRAPHS)
    table = {**GRAPHS, **QUICK_GRAPHS}
    names, files, dves = [], [], list(_opt(args, "dve", []) or [])
    for s in items:
        if s in ALIASES:
            s = ALIASES[s][1 if quick else 0]
        if s in table:
            names.append(s)
        elif s == "cs10":
            dves.append(str(_find_model("cs_10.dve")))
        elif pathlib.Path(s).is_file():
            files.append(pathlib.Path(s))
        else:
            names.append(s)
    return names, files, dves


def run(args: argparse.Namespace, progress: Callable[[str], None] = lambda m: None) -> Report:
    """Time the GPU engine against the CPU engine and ocmref on each graph (never prints)."""
    from dve.errors import ConfigurationError
    from runtime.errors import BackendUnavailableError
    from runtime.device import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        raise BackendUnavailableError(f"the GPU benchmark needs a GPU: {reason}; install the "
                                      "GPU extra with 'pip install dvecost[gpu]'")
    import cupy as cp

    # Options of dvecost.benchmarks.ocm (--ratio, --min, --size) are honoured too.
    kind = "ratio" if getattr(args, "ratio", False) else _opt(args, "kind", "mean")
    mode = "min" if getattr(args, "min", False) else "max"
    repeat = int(_opt(args, "repeat", 5))
    names, files, dves = select_graphs(args)
    table = {**GRAPHS, **QUICK_GRAPHS}
    unknown = [s for s in names if s not in table]
    if unknown:
        raise ConfigurationError(f"unknown graph(s) {', '.join(unknown)}: expected among "
                                 f"{', '.join(table)}")
    ocmref = _find("ocmref", _opt(args, "ocmref", None))
    genpy = _find("gen.py", _opt(args, "gen", None))
    if genpy is None:
        raise ConfigurationError("ocmref's gen.py not found: pass --gen PATH")
    refs = [] if ocmref is None else [r for r in str(_opt(args, "refs", ",".join(_REFS)))
                                      .split(",") if r]
    timeout = float(_opt(args, "ref_timeout", 540.0))
    workdir = pathlib.Path(_opt(args, "workdir", "") or tempfile.mkdtemp(prefix="ocm-gpu-"))
    workdir.mkdir(parents=True, exist_ok=True)
    workers = max(1, min(16, (os.cpu_count() or 2) - 1))
    gen = _load_gen(genpy)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    progress(f"device: {device}; measuring copy bandwidth")
    copy_bps = copy_bandwidth()
    progress(f"copy bandwidth {copy_bps / 1e9:.0f} GB/s")

    # 1. Graphs (arrays here, text for ocmref) and the references started in the background.
    graphs: list[dict] = []
    t_run = time.perf_counter()
    for name in names:
        family, p = table[name]
        progress(f"{name}: generating ({_gen_command(family, p)})")
        n, u, v, c, t = _generate(gen, family, p)
        g = {"name": name, "source": _gen_command(family, p), "n": int(n), "m": len(u),
             "csr": _csr(n, u, v, c, t), "procs": {}}
        if refs:
            path = workdir / f"{name}.txt"
            _write_text(path, n, u, v, c, t, workers)
            for algo in refs:
                g["procs"][algo] = _start_ref(ocmref, algo, path, kind, mode)
        del u, v, c, t
        graphs.append(g)
    for path in files:
        from ocm import read_edge_list

        el = read_edge_list(str(path))
        g = {"name": path.name, "source": str(path), "n": el.n_vertices, "m": el.n_edges,
             "csr": (el.indptr, el.indices, el.cost, el.time), "procs": {}}
        for algo in refs:
            g["procs"][algo] = _start_ref(ocmref, algo, path, kind, mode)
        graphs.append(g)
    for path in dves:
        graphs.append(_explore(path, workdir, refs, ocmref, kind, workers, progress, mode))

    # 2. The GPU engine, then 3. the CPU engine, while the references run.
    for g in graphs:
        indptr, indices, cost, time_ = g["csr"]
        arrays = [indptr, indices, cost, time_]
        progress(f"{g['name']}: GPU engine")
        r, med, first, runs = _time_gpu(arrays, kind, repeat, mode)
        g.update(gpu=r, gpu_s=med, gpu_first_s=first, gpu_runs=runs, gpu_timings=r.timings,
                 gpu_iterations=r.iterations)
    for g in graphs:
        if _opt(args, "no_cpu", False):
            break
        progress(f"{g['name']}: CPU engine")
        g["cpu"], g["cpu_s"] = _time_cpu(list(g["csr"]), kind, mode)
        g["cpu_timings"], g["cpu_iterations"] = g["cpu"].timings, g["cpu"].iterations
    # 4. References.
    for g in graphs:
        for algo, (cmd, proc) in g["procs"].items():
            progress(f"{g['name']}: waiting for {algo}")
            left = timeout - (time.perf_counter() - t_run)
            g[algo] = _finish_ref(proc, left)
            g[algo]["cmd"] = " ".join(cmd)

    rows, notes = [], []
    for g in graphs:
        rows.append(_row(g, kind, copy_bps))
        notes.append(f"{g['name']}: {g['source']}")
    if _opt(args, "sweep", False):
        rows += _sweep(gen, kind, repeat, copy_bps, progress)
    notes += [f"device: {device}, {props['multiProcessorCount']} SMs; copy bandwidth "
              f"{copy_bps / 1e9:.0f} GB/s (device-to-device, read + write)",
              f"host: {platform.processor() or platform.machine()}, {os.cpu_count()} cores; "
              "Boost and LEMON ran concurrently (one process per graph and library) while the "
              "engines were timed",
              "gpu_s: median of warm runs with the graph in GPU memory; boost_s/lemon_s: "
              "ocmref compute_s; speedup = min(boost_s, lemon_s) / gpu_s; x_pass = iter_ms / "
              "(bytes of one iteration at copy bandwidth), target <= 10"]
    cols = ("graph", "n", "m", "kind", "gpu_s", "gpu_first_s", "cpu_s", "boost_s", "lemon_s",
            "speedup", "iters", "iter_ms", "GBps", "copy_GBps", "x_pass", "value", "same_as_cpu",
            "refs_agree", "certified")
    meta = {"device": device, "copy_Bps": copy_bps, "kind": kind,
            "graphs": {g["name"]: {k: v for k, v in g.items()
                                   if k not in ("csr", "procs", "gpu", "cpu")
                                   and not isinstance(v, np.ndarray)} for g in graphs}}
    return Report("Cycle engine, GPU (issue 5)", cols, tuple(rows), tuple(notes), meta)


def _row(g: dict, kind: str, copy_bps: float) -> tuple:
    r = g["gpu"]
    n, m = g["n"], g["m"]
    iters = r.iterations
    loop = r.timings.get("howard_iterate")
    iter_s = loop / iters if loop and iters else None
    nbytes = _bytes_per_iteration(n, m, kind)
    gbps = nbytes / iter_s / 1e9 if iter_s else None
    x_pass = iter_s / (nbytes / copy_bps) if iter_s else None
    ref_s = [g[a].get("compute_s") for a in _REFS if a in g and g[a].get("status") == "ok"]
    best = min(ref_s) if ref_s else None
    cpu = g.get("cpu")
    same = None
    if cpu is not None:
        # Value and certificate must agree; the cycle too where the optimum is unique (the
        # CPU engine solves per SCC, the GPU engine the trimmed graph: tied cycles may differ).
        same = (cpu.value == r.value and cpu.certified == r.certified)
        same = f"{same}, cycle {'same' if cpu.cycle == r.cycle else 'differs'}"
    agree = None
    vals = [Fraction(g[a]["num"], g[a]["den"]) for a in _REFS
            if a in g and g[a].get("status") == "ok"]
    if vals:
        agree = all(v == r.value for v in vals)
    def get(a):
        if a not in g:
            return None
        if g[a].get("status") == "timeout":
            return f">{g[a]['killed_after_s']:.0f} (killed)"
        return g[a].get("compute_s")
    return (g["name"], n, m, kind, g["gpu_s"], g["gpu_first_s"], g.get("cpu_s"),
            get("boost-howard"), get("lemon-howard"), best / g["gpu_s"] if best else None,
            iters, iter_s * 1e3 if iter_s else None, gbps, copy_bps / 1e9, x_pass,
            r.exact, same, agree, r.certified)


def _sweep(gen, kind: str, repeat: int, copy_bps: float, progress) -> list[tuple]:
    rows = []
    for m in SWEEP_EDGES:
        p = dict(n=m // 10, m=m, strong=True, sinks=0.0, cost=[-1000, 1000], time=[1, 5],
                 seed=5)
        progress(f"sweep: {m} edges")
        n, u, v, c, t = _generate(gen, "random", p)
        g = {"name": f"sweep-{m}", "n": int(n), "m": m, "csr": _csr(n, u, v, c, t)}
        r, med, first, runs = _time_gpu(list(g["csr"]), kind, repeat)
        cpu, cpu_s = _time_cpu(list(g["csr"]), kind)
        g.update(gpu=r, gpu_s=med, gpu_first_s=first, cpu=cpu, cpu_s=cpu_s)
        rows.append(_row(g, kind, copy_bps))
    return rows


def _explore(path: str, workdir: pathlib.Path, refs, ocmref, kind, workers, progress,
             mode: str = "max") -> dict:
    """A model's state graph (built here on the CPU), as a benchmark graph."""
    import dve
    import statespace

    progress(f"{path}: exploring")
    sg = statespace.build_state_graph(statespace.compile_model(dve.load_model(path)))
    indptr = np.asarray(sg.indptr, dtype=np.int64)
    indices = np.asarray(sg.indices, dtype=np.int64)
    cost = np.asarray(sg.cost(), dtype=np.int64)
    time_ = np.asarray(sg.time, dtype=np.int64)
    n, m = indptr.shape[0] - 1, indices.shape[0]
    name = pathlib.Path(path).name
    g = {"name": name, "source": f"state graph of {name}", "n": int(n), "m": int(m),
         "csr": (indptr, indices, cost, time_), "procs": {}}
    if refs:
        u = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
        txt = workdir / f"{name}.txt"
        _write_text(txt, n, u, indices, cost, time_, workers)
        for algo in refs:
            g["procs"][algo] = _start_ref(ocmref, algo, txt, kind, mode)
    return g


def main(argv: list[str] | None = None) -> int:
    """``python3 -m dvecost.benchmarks.ocm_gpu [options] [--json-out F] [--md-out F]``."""
    p = argparse.ArgumentParser(prog="python3 -m dvecost.benchmarks.ocm_gpu",
                                description=__doc__.splitlines()[0])
    add_arguments(p)
    p.add_argument("--json-out", metavar="FILE")
    p.add_argument("--md-out", metavar="FILE")
    args = p.parse_args(argv)
    from dve.errors import DvecostError
    from ocm.errors import OcmError

    try:
        rep = run(args, progress=lambda s: print(s, file=sys.stderr, flush=True))
    except (DvecostError, OcmError) as exc:
        print(f"dvecost: error: {exc}", file=sys.stderr)
        return 2
    md = rep.as_markdown()
    print(md)
    if args.md_out:
        pathlib.Path(args.md_out).write_text(md + "\n")
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(rep.as_dict(), indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
