"""The cycle engine on a device (CuPy): the compact graph read as it is, no per-edge copy.

:func:`ocm.optimal_cycle` hands a CuPy graph here. The graph is read in the form a compact
state graph holds it: ``indptr`` (int64), int32 targets, and the costs and times as a palette
row per edge (:class:`ocm.primitives.Palette`, 1, 2 or 4 bytes an edge) or per-edge arrays.
Every pass over the edges is a kernel of :data:`ocm.kernels.SOURCE` that gathers an edge's
cost and time from the palette's tables by its row (:class:`ocm.kernels.Charges`), so the
engine allocates no array of 8 bytes per edge:

1. **zero-time cycles** (ratios): sinks trimmed from the edges of time 0 (``trim`` with
   ``zero_only``); only if a vertex survives is there such a cycle, which the host then names
   (:func:`ocm.scc.find_zero_time_cycle` on host copies);
2. **restriction**: sinks trimmed repeatedly (a vertex flag each); when every vertex
   survives the graph is used as it is, otherwise the live rows are copied compactly
   (``compact``: int32 targets and the label, 4 + 1 bytes an edge for a byte-wide palette);
3. **Howard** (:func:`ocm.howard_gpu.howard_solve`), 122 bytes a vertex;
4. **certificate**: one pass per row (``certify``), exact int64 where the bound holds, else
   Python ints on host copies (:func:`ocm.certify.check_potentials`);
5. **critical cycle**: walked by one thread (``policy_walk``), its edges mapped back to the
   graph's ids by their position among the live edges of their row (``edges_back``).

The values, cycles and certificates are those of the NumPy engine on the same graph (the
same policies: ``tests/ocm/test_gpu_emulated.py`` runs this module with the kernels compiled
for the host). :func:`device_bytes` estimates the engine's device memory.
"""

from __future__ import annotations

import time as _time
from fractions import Fraction
from typing import Any

import numpy as np

from . import certify as _certify
from . import kernels as K
from . import primitives as P
from .errors import NoCycleError, ZeroTimeCycleError
from .result import CycleResult

__all__ = ["solve_on_device", "device_bytes", "VERTEX_BYTES"]

#: Device bytes per vertex the engine holds at its peak, Howard's iteration
#: (:class:`ocm.howard_gpu._Buffers`: three 16-byte records, whose memory the cycle detection's
#: pairs share, the 16-byte bias records, the classes' two int64, the flag of a
#: representative, the two-slot undo log of 16 bytes, the policy) and the trimming's flag;
#: 48 more with 32-byte records (path times past 2**31).
VERTEX_BYTES = 3 * 16 + 16 + 2 * 8 + 1 + 2 * 16 + 8 + 1


def device_bytes(n: int, m: int, label_bytes: int = 1, restricted: bool = False) -> int:
    """Estimated device bytes the engine allocates at its peak on a graph of ``n`` vertices
    and ``m`` edges whose charges take ``label_bytes`` per edge (8 or 16 for per-edge
    arrays), besides the graph it reads (``indptr``, int32 targets, the charges). With
    ``restricted``, as if the trimming kept nearly all of it but not all (the worst case: the
    live rows are copied, a 4-byte target and the label per edge, 28 bytes of maps and
    offsets per vertex); otherwise the whole graph is one piece and no edge is copied.

    >>> device_bytes(1000, 10000)
    122000
    >>> device_bytes(1000, 10000, restricted=True)
    200000
    """
    total = VERTEX_BYTES * n
    if restricted:
        total += m * (4 + label_bytes) + 28 * n
    return total


def _trim(L: K.Launcher, indptr: Any, indices: Any, ch: K.Charges, zero_only: int, n: int,
          xp: Any) -> Any:
    """The vertices (int8 flags) left when sinks are removed repeatedly; with ``zero_only``
    only edges of time 0 count."""
    alive = xp.ones(n, dtype=xp.int8)
    changed = xp.zeros(1, dtype=xp.int64)
    while True:
        changed[...] = 0
        L.launch("trim" + ch.suffix, n, indptr, indices, ch.lab, ch.ttab, zero_only, alive, n,
                 changed)
        if not int(P.to_host(changed)[0]):
            return alive


def _restrict(L: K.Launcher, indptr: Any, indices: Any, ch: K.Charges, alive: Any, n: int,
              k: int, xp: Any) -> tuple[Any, Any, Any, K.Charges]:
    """The subgraph of the live vertices: (vertices, indptr, int32 targets, charges)."""
    vertices = xp.flatnonzero(alive).astype(xp.int64, copy=False)
    newid = xp.full(n, -1, dtype=xp.int32)
    newid[vertices] = xp.arange(k, dtype=xp.int32)
    deg = xp.zeros(k, dtype=xp.int64)
    L.launch("live_degree", n, indptr, indices, newid, n, deg)
    sub_indptr = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(deg)])
    del deg
    mk = int(P.to_host(sub_indptr[-1:])[0])
    sub_indices = xp.empty(mk, dtype=xp.int32)
    if ch.suffix != "_id":
        sub_lab = xp.empty(mk, dtype=ch.lab.dtype)
        L.launch("compact" + ch.suffix, n, indptr, indices, ch.lab, newid, n, sub_indptr,
                 sub_indices, sub_lab)
        sub = K.Charges(ch.suffix, sub_lab, ch.ctab, ch.ttab, ch.has_time)
    else:
        ids = xp.empty(mk, dtype=xp.int64)
        L.launch("compact_ids", n, indptr, indices, newid, n, sub_indptr, sub_indices, ids)
        sc = ch.ctab[ids]
        sub = K.Charges("_id", sc, sc, ch.ttab[ids] if ch.has_time else sc, ch.has_time)
        del ids
    return vertices, sub_indptr, sub_indices, sub


def edge_values(ch: K.Charges) -> tuple[Any, Any]:
    """``(cost, time)`` of charges as the engine's functions take them: palettes sharing the
    label, or per-edge arrays; time None without times."""
    if ch.suffix == "_id":
        return ch.ctab, (ch.ttab if ch.has_time else None)
    return P.Palette(ch.lab, ch.ctab), (P.Palette(ch.lab, ch.ttab) if ch.has_time else None)


def _walk(L: K.Launcher, st: Any, xp: Any) -> tuple[list[int], list[int]]:
    """The policy cycle of the smallest representative of the top class, as (vertices,
    edges) of the graph Howard ran on (``reps`` ascending: the first of that class)."""
    top = st.rank_num.shape[0] - 1
    n = st.succ.shape[0]
    reps = xp.ascontiguousarray(st.reps, dtype=xp.int64)
    start = xp.where(st.rank[reps] == top, reps, n).min().reshape(1).astype(xp.int64)
    succ = xp.ascontiguousarray(st.succ, dtype=xp.int64)
    pol = xp.ascontiguousarray(st.policy, dtype=xp.int64)
    cap = min(n, 1024)
    while True:
        out = xp.empty(1 + 2 * cap, dtype=xp.int64)
        L.launch("policy_walk", 1, succ, pol, start, cap, out)
        got = P.to_host(out)
        k = int(got[0])
        if k:   # a cycle has at most n vertices, so cap = n always succeeds
            return got[1:1 + k].tolist(), got[1 + cap:1 + cap + k].tolist()
        cap = min(n, 16 * cap)


def solve_on_device(indptr: Any, indices: Any, cost: Any, time: Any | None, kind: str,
                    mode: str, xp: Any, max_iter: int | None, t_start: float,
                    launcher: K.Launcher | None = None) -> CycleResult:
    """:func:`ocm.optimal_cycle` on CuPy arrays already validated (``time`` None for means):
    the same value, critical cycle and certificate as the NumPy engine; no per-SCC optima.

    Raises
    ------
    NoCycleError, ZeroTimeCycleError, ConvergenceError
        As :func:`ocm.optimal_cycle`.
    """
    from .howard_gpu import howard_solve
    from .scc import find_zero_time_cycle

    L = launcher or K.launcher_for(xp)
    n = indptr.shape[0] - 1
    m = indices.shape[0]
    timings: dict[str, float] = {}
    indptr = xp.ascontiguousarray(indptr, dtype=xp.int64)
    indices = xp.ascontiguousarray(indices, dtype=xp.int32)   # a copy only of int64 targets
    ch = K.Charges.of(-cost if mode == "min" else cost, time, xp)

    t0 = _time.perf_counter()
    if time is not None and n and bool(P.to_host(_trim(L, indptr, indices, ch, 1, n, xp)).any()):
        # A cycle of time 0 exists: named by the host (rare; the copies are the host's).
        h = P.to_host
        z = find_zero_time_cycle(h(indptr), h(indices), P.edges_to_host(time))
        verts, edges = z
        shown = " -> ".join(str(v) for v in verts[:12]) + (" ..." if len(verts) > 12 else "")
        raise ZeroTimeCycleError(f"the cycle ratio is undefined: the cycle {shown} -> "
                                 f"{verts[0]} has total time 0", cycle=verts, edges=edges)
    timings["zero_time_check"] = _time.perf_counter() - t0

    t0 = _time.perf_counter()
    alive = _trim(L, indptr, indices, ch, 0, n, xp) if n else xp.zeros(0, dtype=xp.int8)
    k = int(xp.count_nonzero(alive)) if n else 0
    if k == 0:
        raise NoCycleError(f"the graph has no cycle ({n} vertices, {m} edge"
                           f"{'s' * (m != 1)}): every path ends in a vertex without successors")
    if k == n:   # every vertex lies on or reaches a cycle inside the graph: all of it is kept
        vertices, s_indptr, s_indices, s_ch = None, indptr, indices, ch
    else:
        vertices, s_indptr, s_indices, s_ch = _restrict(L, indptr, indices, ch, alive, n, k, xp)
    timings["restrict"] = _time.perf_counter() - t0

    t0 = _time.perf_counter()
    s_cost, s_time = edge_values(s_ch)
    st = howard_solve(s_indptr, s_indices, s_cost, s_time, xp=xp, max_iter=max_iter,
                      launcher=L)
    iterations = st.iterations
    timings["howard"] = _time.perf_counter() - t0
    timings.update({f"howard_{k2}": v for k2, v in st.timings.items()})
    t0 = _time.perf_counter()
    cert = _certify.check_potentials(s_indptr, s_indices, s_cost, s_time, st.rank,
                                     st.rank_num, st.rank_den, st.potential, xp,
                                     launcher=L)
    if not cert.ok:
        # Never report an unproved value: resume from this policy in Python-int arithmetic.
        st = howard_solve(s_indptr, s_indices, s_cost, s_time, xp=xp, policy=st.policy,
                          max_iter=max_iter, exact_objects=True, launcher=L)
        iterations += st.iterations
        cert = _certify.check_potentials(s_indptr, s_indices, s_cost, s_time, st.rank,
                                         st.rank_num, st.rank_den, st.potential, xp,
                                         launcher=L)
    verts, edges = _walk(L, st, xp)
    if vertices is not None:
        # Back to the graph's ids: the vertices through the map, each edge by its position
        # among its row's edges to live vertices (what compact kept, in order).
        sv = xp.asarray(np.array(verts, dtype=np.int64))
        ov = vertices[sv]
        pos = xp.asarray(np.array(edges, dtype=np.int64)) - s_indptr[sv]
        oe = xp.empty(len(edges), dtype=xp.int64)
        L.launch("edges_back", len(edges), indptr, indices, alive, ov, pos, len(edges), oe)
        verts, edges = P.to_host(ov).tolist(), P.to_host(oe).tolist()
    cyc, cyc_edges = tuple(int(v) for v in verts), tuple(int(e) for e in edges)
    c_sum, t_sum = _certify.cycle_sums(indptr, indices, cost, time, cyc, cyc_edges)
    value = Fraction(c_sum, t_sum)
    top = st.rank_num.shape[0] - 1
    top_value = Fraction(int(P.to_host(st.rank_num)[top]), int(P.to_host(st.rank_den)[top]))
    certified = cert.ok and value == (-top_value if mode == "min" else top_value)
    timings["certify"] = _time.perf_counter() - t0
    timings["total"] = _time.perf_counter() - t_start
    return CycleResult(value=value, cycle=cyc, cycle_edges=cyc_edges, kind=kind, mode=mode,
                       certified=bool(certified), iterations=iterations, backend="gpu",
                       timings=timings, scc_optima=None, n_vertices=n, n_edges=m)
