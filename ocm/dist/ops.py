"""The array operations of the engine across processes that NumPy and CuPy spell differently.

The engine (:mod:`ocm.dist.engine`) is written once over the communicator's array module
``xp`` (NumPy for :class:`runtime.comm.MpiComm`, CuPy for :class:`runtime.comm.NcclComm`).
Almost every call means the same in both; the exceptions are here, each with a NumPy form
(``ufunc.at``, ``repeat``, ``reduceat``, stable sorts by kind) and a device form built only
from calls CuPy has (the atomic minimum of :func:`runtime.arrays.scatter_min`,
``searchsorted``, scatters). Which one runs is
decided by the module's name (:func:`ocm.primitives.is_numpy`), so a NumPy stand-in of CuPy
(the tests') runs the device forms on the host.

It also cuts the engine's passes into parts, so that a pass's temporaries are a part's, never
an array per edge beside the graph: :func:`edge_slices` (slices of edges), :func:`edge_groups`
(groups of whole rows, their sources made by :func:`group_rows`, counts per row by
:func:`row_counts`), :func:`range_groups` (groups of ranges) and :func:`id_slices` (parts of
vertex ids asked for).

Examples
--------
>>> import numpy as np
>>> out = np.full(3, -1, np.int64)
>>> scatter_max(np, out, np.array([0, 2, 0]), np.array([5, 7, 9]))
>>> out.tolist()
[9, -1, 7]
>>> edge_rows(np.array([0, 2, 2, 3]), np).tolist()
[0, 0, 2]
>>> expand_ranges(np.array([3, 10]), np.array([5, 11]), np).tolist()
[3, 4, 10]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.arrays import scatter_min

from ..primitives import dense, is_numpy, subset

__all__ = ["scatter_max", "sorted_unique", "edge_rows", "expand_ranges", "row_counts",
           "edge_groups", "group_rows", "first_max_edges", "best_edges_scatter", "edge_slices",
           "id_slices", "range_groups", "ScatterMax", "EDGE_BLOCK", "INT64_MIN"]

INT64_MIN = -2**63


def sorted_unique(xp: Any, a):
    """The distinct values of a 1-D array, ascending: a sort and one comparison of
    neighbours. (NumPy 2's ``unique`` of integers goes by a hash table, which measured 0.69 s
    against this 0.009 s for the 1.3 M remote targets of a process at cs_11: targets come
    nearly sorted, rows after rows.)

    >>> sorted_unique(np, np.array([3, 1, 3, 2, 1])).tolist()
    [1, 2, 3]
    """
    s = xp.sort(a)
    if s.shape[0] < 2:
        return s
    keep = xp.empty(s.shape[0], dtype=bool)
    keep[0] = True
    keep[1:] = s[1:] != s[:-1]
    return s[keep]


def scatter_max(xp: Any, out, idx, vals) -> None:
    """``out[idx[k]] = max(out[idx[k]], vals[k])`` for every ``k``, in place. On a device by
    the atomic minimum of the negated values: neither ``out`` nor ``vals`` may hold
    ``-2**63`` (colours, ranks, costs within ``±(2**63 - 1)``, biases below ``2**62``)."""
    if is_numpy(xp):
        np.maximum.at(out, idx, vals)
    elif idx.shape[0]:
        neg = -out
        scatter_min(xp, neg, idx, -xp.asarray(vals, dtype=out.dtype))
        out[...] = -neg


class ScatterMax:
    """:func:`scatter_max` into one array, call after call (a pass in slices): on a device the
    negation that the atomic minimum needs is made once, not per call; :meth:`read` gives the
    values as raised so far, :meth:`done` writes them back.

    >>> out = np.zeros(2, np.int64)
    >>> s = ScatterMax(np, out); s.add(np.array([1, 1]), np.array([4, 3])); s.done()
    >>> out.tolist(), s.read(np.array([1])).tolist()
    ([0, 4], [4])
    """

    def __init__(self, xp: Any, out) -> None:
        self.xp, self.out = xp, out
        self.neg = None if is_numpy(xp) else -out

    def read(self, idx):
        return self.out[idx] if self.neg is None else -self.neg[idx]

    def add(self, idx, vals) -> None:
        if self.neg is None:
            np.maximum.at(self.out, idx, vals)
        elif idx.shape[0]:
            scatter_min(self.xp, self.neg, idx, -self.xp.asarray(vals, dtype=self.out.dtype))

    def done(self) -> None:
        if self.neg is not None:
            self.out[...] = -self.neg


def edge_rows(indptr, xp: Any):
    """The block-local source of every edge (int32 while rows fit: 4 bytes an edge)."""
    n = indptr.shape[0] - 1
    dt = np.int32 if n < 2**31 else np.int64
    if is_numpy(xp):
        return np.repeat(np.arange(n, dtype=dt), np.diff(indptr))
    # Each non-empty row's first edge holds the step from the previous non-empty row's id
    # (the first: its own id), every other edge 0; the running sum is each edge's row. One
    # streaming pass (a scan), where a search per edge reads the offsets at random
    # (O(m log n)). The starts of non-empty rows are distinct: a plain scatter.
    m = int(indptr[-1]) if n > 0 else 0
    rows = xp.flatnonzero(indptr[1:] > indptr[:-1])
    step = xp.zeros(m, dtype=dt)
    if rows.shape[0]:
        d = rows.astype(dt)
        d[1:] -= d[:-1].copy()
        step[indptr[rows]] = d
    return xp.cumsum(step, dtype=dt)


def expand_ranges(lo, hi, xp: Any):
    """``concatenate([arange(lo[i], hi[i]) for i])`` without a Python loop (int64)."""
    lens = (hi - lo).astype(np.int64)
    if lens.shape[0] == 0:
        return xp.zeros(0, np.int64)
    ends = xp.cumsum(lens)
    total = int(ends[-1])
    pos = xp.arange(total, dtype=np.int64)
    if is_numpy(xp):   # (linear: each range's shift repeated over its length)
        return pos + np.repeat(lo.astype(np.int64) - (ends - lens), lens)
    # The running sum of steps of 1, except at each non-empty range's first place: the jump
    # from the previous non-empty range's last value to this range's first (the first range:
    # its first value). One scan, not a search per place; those first places are distinct.
    del pos
    nz = xp.flatnonzero(lens > 0)
    first = lo.astype(np.int64)[nz]
    jump = first.copy()
    jump[1:] -= first[:-1] + lens[nz[:-1]] - 1
    step = xp.ones(total, dtype=np.int64)
    step[(ends - lens)[nz]] = jump
    return xp.cumsum(step)


def first_max_edges(cost, src, k: int, xp: Any):
    """Per row ``0 .. k - 1`` (every row non-empty) the largest ``cost`` of its edges and the
    lowest edge id attaining it; edges given by their rows ``src`` (CSR order), ``cost`` an
    array or a palette. Two passes a slice of edges at a time (:func:`edge_slices`): the
    scatters combine across slices, so rows may straddle them.

    >>> first_max_edges(np.array([3, 5, 5, 1]), np.array([0, 0, 0, 1]), 2, np)[1].tolist()
    [1, 3]
    """
    m = int(src.shape[0])
    best = xp.full(k, INT64_MIN + 1, np.int64)   # (no cost is below: -2**63 is refused)
    up = ScatterMax(xp, best)
    for sl in edge_slices(m):
        up.add(src[sl], dense(subset(cost, sl)))
    up.done()
    edge = xp.full(k, 2**62, np.int64)
    for sl in edge_slices(m):
        s = src[sl]
        hit = xp.flatnonzero(dense(subset(cost, sl)) == best[s])
        scatter_min(xp, edge, s[hit], hit + sl.start)
        del s, hit
    return best, edge


#: Edges per slice of the passes over every edge on a device (:func:`edge_slices`): their
#: temporaries (int64 ranks, candidates, values: about 40 bytes an edge) take at most a slice's
#: memory beside the graph.
EDGE_BLOCK = 1 << 26


def edge_slices(m: int) -> list:
    """Consecutive slices of ``0 .. m - 1`` of at most :data:`EDGE_BLOCK` edges (one, empty,
    for ``m = 0``).

    >>> edge_slices(0)
    [slice(0, 0, None)]
    """
    return [slice(a, min(a + EDGE_BLOCK, m)) for a in range(0, max(m, 1), EDGE_BLOCK)]


def id_slices(n: int) -> list:
    """Consecutive slices of ``0 .. n - 1`` of at most a quarter of :data:`EDGE_BLOCK` ids (one,
    empty, for ``n = 0``): the parts in which the engine asks for values at vertex ids (a
    fetch's temporaries are about four times an edge slice's per item).

    >>> id_slices(0)
    [slice(0, 0, None)]
    """
    step = max(1, EDGE_BLOCK // 4)
    return [slice(a, min(a + step, n)) for a in range(0, max(n, 1), step)]


def range_groups(lo, hi, xp: Any) -> list:
    """Consecutive slices of the ranges ``lo[i] .. hi[i] - 1`` (non-negative lengths) whose
    lengths add up to at most :data:`EDGE_BLOCK` (a longer range alone in its slice): the
    ranges :func:`expand_ranges` expands a group at a time, so that its int64 places take at
    most a block's memory. One slice, possibly empty, when they all fit.

    >>> range_groups(np.array([0, 5]), np.array([2, 9]), np)
    [slice(0, 2, None)]
    """
    k = int(lo.shape[0])
    if k == 0:
        return [slice(0, 0)]
    ends = xp.cumsum((hi - lo).astype(np.int64))
    if int(ends[-1]) <= EDGE_BLOCK:
        return [slice(0, k)]
    out, a, base = [], 0, 0
    while a < k:
        # (CuPy searches for arrays of values only, not a scalar)
        b = int(xp.searchsorted(ends, xp.asarray(np.array([base + EDGE_BLOCK])),
                                side="right")[0])
        b = min(k, max(b, a + 1))
        out.append(slice(a, b))
        a, base = b, int(ends[b - 1])
    return out


def edge_groups(indptr, xp: Any) -> list:
    """Consecutive groups of rows whose edges add up to at most :data:`EDGE_BLOCK` (a longer
    row alone in its group), as ``(rows, edges)`` pairs of slices: a pass over every edge a
    group at a time sees whole rows, so per-row results need no combining across groups.

    >>> edge_groups(np.array([0, 2, 2, 5]), np)
    [(slice(0, 3, None), slice(0, 5, None))]
    """
    out = []
    for g in range_groups(indptr[:-1], indptr[1:], xp):
        if g.stop > g.start:
            out.append((g, slice(int(indptr[g.start]), int(indptr[g.stop]))))
    return out


def row_counts(indptr, flags, xp: Any, dtype=np.int64):
    """Per row the number of its edges whose flag is set, where ``flags(rows, edges)`` gives
    the flags (booleans) of a group's edges (both slices): a group of rows at a time
    (:func:`edge_groups`), so that no per-edge array but a group's exists (a running sum of
    a group's flags read at its rows' offsets). Empty rows count 0.

    >>> f = np.array([1, 0, 1, 1, 0]) == 1
    >>> row_counts(np.array([0, 2, 2, 5]), lambda rows, e: f[e], np).tolist()
    [1, 0, 2]
    """
    n = indptr.shape[0] - 1
    out = xp.zeros(n, dtype)
    for rows, edges in edge_groups(indptr, xp):
        run = xp.zeros(edges.stop - edges.start + 1, np.int64)
        xp.cumsum(flags(rows, edges), dtype=np.int64, out=run[1:])
        off = indptr[rows.start:rows.stop + 1] - edges.start
        out[rows] = (run[off[1:]] - run[off[:-1]]).astype(dtype, copy=False)
        del run, off
    return out


def group_rows(indptr, rows: slice, edges: slice, xp: Any):
    """The rows (block-local ids) of a group's edges (:func:`edge_groups`): one scan of the
    group's offsets, so that no array of every edge's row is kept."""
    return edge_rows(indptr[rows.start:rows.stop + 1] - edges.start, xp) + rows.start


def best_edges_scatter(indptr, tgt, cost, time, rank_ext, pot_ext, rank_num, rank_den,
                       k: int, xp: Any):
    """Howard's improvement (:func:`ocm.primitives.best_edges`'s contract: per row the
    largest target rank, then the largest scaled value among those edges, lowest edge id on
    ties) by scatters instead of per-row reductions: ``(best_rank, best_val, best_edge)``.
    ``cost`` and ``time`` may be palettes. The caller has bounded every value below
    ``2**62``. Three passes over the edges, a group of rows at a time (:func:`edge_groups`,
    each group's rows made by a scan, :func:`group_rows`: no row per edge kept); with one
    group, the second pass's candidates and values serve the third (computed once)."""
    groups = edge_groups(indptr, xp)
    best_rank = xp.full(k, -1, np.int64)
    up = ScatterMax(xp, best_rank)
    for rows, sl in groups:
        up.add(group_rows(indptr, rows, sl, xp), rank_ext[tgt[sl]])
    up.done()

    def values(rows, sl):
        """The candidate edges of a group (block-local ids), their rows and values."""
        src = group_rows(indptr, rows, sl, xp)
        rk = rank_ext[tgt[sl]]
        cand = xp.flatnonzero(rk == best_rank[src])
        r = rk[cand]
        src = src[cand]
        e = cand + sl.start
        del rk, cand
        t = 1 if time is None else dense(subset(time, e))
        val = rank_den[r] * dense(subset(cost, e)) - rank_num[r] * t + pot_ext[tgt[e]]
        return e, src, val
    best_val = xp.full(k, INT64_MIN + 1, np.int64)   # (values exceed -2**62)
    up = ScatterMax(xp, best_val)
    kept = None
    for rows, sl in groups:
        e, src, val = values(rows, sl)
        up.add(src, val)
        if len(groups) == 1:   # one group: its candidates serve the last pass too
            kept = e, src, val
        del e, src, val
    up.done()
    best_edge = xp.full(k, 2**62, np.int64)
    for rows, sl in groups:
        e, src, val = values(rows, sl) if kept is None else kept
        hit = xp.flatnonzero(val == best_val[src])
        scatter_min(xp, best_edge, src[hit], e[hit].astype(np.int64))
        del e, src, val, hit
    return best_rank, best_val, best_edge
