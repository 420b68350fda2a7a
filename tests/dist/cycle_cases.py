"""Graphs and answers shared by the tests of the distributed cycle engine and their
``mpiexec`` worker: state graphs of models, random multigraphs with several SCCs, value
classes, zero-time edges and ties, and the answer as the tests compare it."""

from __future__ import annotations

import os

import numpy as np

from ocm.errors import OcmError
from runtime.comm import Comm, Forwarding

#: Every (kind, mode, per_scc) the engine answers: per SCC (the default) or by trimming.
CASES = [(k, m, s) for s in (True, False) for k in ("mean", "ratio") for m in ("max", "min")]


def random_case(seed: int):
    """A random multigraph (CSR, cost, time) of a few SCCs: some vertices without successors,
    costs in a small range (ties), times 0..3 (zero-time edges; some seeds have zero-time
    cycles), chains between the components (long policy paths)."""
    rng = np.random.default_rng(seed)
    parts, off = [], 0
    for _ in range(int(rng.integers(1, 4))):
        k = int(rng.integers(1, 12))
        m = int(rng.integers(k, 3 * k + 1))
        u = rng.integers(0, k, size=m) + off
        v = rng.integers(0, k, size=m) + off
        parts.append((u, v))
        off += k
    tail = int(rng.integers(0, 8))        # a chain into the components
    u = np.concatenate([p[0] for p in parts] + [np.arange(off, off + tail)])
    v = np.concatenate([p[1] for p in parts] +
                       [np.r_[np.arange(off + 1, off + tail), 0][:tail]])
    n = off + tail + int(rng.integers(0, 3))   # and a few vertices without successors
    bridges = int(rng.integers(0, 4))          # edges between components, and to sinks
    u = np.concatenate([u, rng.integers(0, n, size=bridges)])
    v = np.concatenate([v, rng.integers(0, n, size=bridges)])
    order = np.argsort(u, kind="stable")
    u, v = u[order], v[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    m = u.shape[0]
    time = rng.integers(0 if seed % 3 == 0 else 1, 4, size=m)
    return indptr, v.astype(np.int64), rng.integers(-4, 5, size=m), time


def random_runs(n: int, size: int, seed: int) -> list:
    """A random layout of ``n`` ids over ``size`` processes (for ``split_graph(runs=)``):
    ``[0, n)`` cut at random places into runs, each given to a random process, each
    process's runs in a random local order (so that local order is not id order); about one
    process in four holds nothing when there are several."""
    rng = np.random.default_rng(seed)
    cuts = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, size=int(
        rng.integers(0, 2 * size + 4)))]))
    runs: list = [[] for _ in range(size)]
    idle = {int(q) for q in rng.integers(0, size, size=size // 4)} if size > 1 else set()
    busy = [q for q in range(size) if q not in idle] or [0]
    for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
        runs[int(rng.choice(busy))].append((a, b - a))
    for r in runs:
        order = rng.permutation(len(r))
        r[:] = [r[i] for i in order]
    return runs


def graph_of(spec: str):
    """``(indptr, indices, cost, time)`` of a spec: ``random:SEED`` or a model
    (``dist_worker.load``), its cost and time as the engine reads them (palettes)."""
    if spec.startswith("random:"):
        return random_case(int(spec.split(":")[1]))
    from dist_worker import load
    from dvecost import pipeline
    from statespace import build_state_graph
    g = build_state_graph(load(spec))
    costs = g.palette.costs
    resource = "cost" if "cost" in costs else sorted(costs)[0]
    return pipeline.engine_arrays(g, resource, ratio=True, backend="cpu")


def answer(r) -> dict:
    """What is compared of a result (every field but timings), or of an error."""
    if isinstance(r, OcmError):
        return {"error": type(r).__name__, "message": str(r),
                "cycle": list(getattr(r, "cycle", ()) or ()),
                "edges": list(getattr(r, "edges", ()) or ())}
    if isinstance(r, Exception):
        raise r
    return {"value": str(r.value), "cycle": list(r.cycle), "edges": list(r.cycle_edges),
            "iterations": r.iterations, "certified": r.certified, "backend": r.backend,
            "n": r.n_vertices, "m": r.n_edges}


class DeviceComm(Forwarding):
    """``comm``'s collectives with another array module ``xp``: the NumPy stand-in of CuPy
    (``tests/statespace/device_stand_in.py``), whose arrays are NumPy's, so that the engine
    across processes takes its device branches on the host."""


def worker_comm(comm: Comm) -> Comm:
    """``comm``, or with ``DIST_XP`` set (any value) the same processes over the stand-in of
    CuPy (:class:`DeviceComm`)."""
    if not os.environ.get("DIST_XP"):
        return comm
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "statespace"))
    from device_stand_in import stand_in

    class _Patch:
        @staticmethod
        def setitem(mapping, key, value):
            mapping[key] = value
    return DeviceComm(comm, stand_in(_Patch()))


def comparable(a: dict) -> dict:
    """An answer less the backend that computed it (the device path says ``gpu``)."""
    return {k: v for k, v in a.items() if k != "backend"}
