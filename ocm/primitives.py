"""Array primitives of Howard's policy iteration, written over ``xp`` (NumPy or CuPy).

Every step of :mod:`ocm.howard` is one of the functions below. Each has a precise contract so
that a CuPy twin (in :mod:`ocm.kernels`, a few raw kernels) can replace it and give **identical**
results: all arithmetic here is on integers (or on floats only where the result is compared
for order, never summed), and every tie is broken by the lowest index, so no result depends on
the order in which threads run.

Conventions
-----------
- A graph is CSR: ``indptr`` (int64, ``n + 1``), ``indices`` (int64, ``m``); edge ``e`` goes
  from the row ``u`` with ``indptr[u] <= e < indptr[u + 1]`` to ``indices[e]``. Edge ids are
  positions in ``indices``.
- ``row`` is the source vertex of every edge (:func:`edge_rows`), int64, ``m``.
- Functions marked *non-empty rows* require every vertex to have at least one out-edge (Howard
  runs on graphs trimmed so; see :func:`trim_sinks`).
- A *functional graph* is an array ``succ`` of length ``n`` with ``0 <= succ[v] < n``: each
  vertex has exactly one successor, so each vertex reaches exactly one cycle.
- A *forest* is an array ``parent`` with ``parent[r] == r`` exactly at its roots and no other
  cycle.

Backends
--------
The functions here are the generic versions, written over ``xp``; NumPy always runs them.
Several have a CuPy twin of the same name and contract in :mod:`ocm.kernels`; which one runs
for a given ``xp`` is decided in one place, :func:`ocm.ops.ops`, and nothing here knows of the
twins.

Examples
--------
>>> import numpy as np
>>> indptr = np.array([0, 2, 3, 5]); indices = np.array([1, 2, 0, 0, 2])
>>> row = edge_rows(indptr, np)
>>> row.tolist()
[0, 0, 1, 2, 2]
>>> segment_argmax(np.array([5, 5, 1, 7, 9]), indptr, row, np)[1].tolist()
[0, 2, 4]
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any, Callable, Sequence

import numpy as np

from runtime.device import to_host   # the run's one way back to the host (P.to_host)

__all__ = [
    "Array",
    "INT_SAFE",
    "Palette",
    "dense",
    "edges_to_host",
    "edge_rows",
    "segment_sum",
    "segment_max",
    "segment_argmax",
    "best_edges",
    "packed_argmax",
    "row_blocks",
    "cycle_reps",
    "tree_sums",
    "policy_sums",
    "trim_sinks",
    "rank_fractions",
    "fits_int64",
    "is_numpy",
    "to_host",
]

#: Backend-generic array (CuPy is untyped).
Array = Any

#: Largest magnitude we let an int64 intermediate reach; anything that might exceed it is
#: computed on Python ints (object arrays) instead. 2**62 leaves room for one more addition.
INT_SAFE = 2 ** 62


def is_numpy(xp: Any) -> bool:
    """Whether the array module ``xp`` is NumPy (the host), not CuPy.

    >>> is_numpy(np)
    True
    """
    return getattr(xp, "__name__", "numpy") == "numpy"


class Palette:
    """Per-edge integers as a table and one row per edge: edge ``e`` has ``values[label[e]]``.

    A state graph whose charges are constants per step holds its costs and times so (one
    byte per edge for a table of up to 256 rows, rather than eight); the engine reads them
    through this class. Indexing gathers values (``p[idx]`` is ``values[label[idx]]``, an
    array); :meth:`take` keeps the form for a subset of the edges; :func:`dense` expands.
    ``label`` and ``values`` live in one array module (NumPy or CuPy).

    Parameters
    ----------
    label : unsigned or signed int array, shape (m,)
        The row of every edge, in ``0 .. len(values) - 1``.
    values : int64 array, shape (k,)

    Examples
    --------
    >>> p = Palette(np.array([1, 0, 1], np.uint8), np.array([4, -2]))
    >>> p[np.array([0, 1])].tolist(), dense(-p).tolist(), p.take(np.array([2])).label.tolist()
    ([-2, 4], [2, -4, 2], [1])
    >>> p.shape, p.dtype, p.nbytes
    ((3,), dtype('int64'), 19)
    """

    __slots__ = ("label", "values")
    ndim = 1

    def __init__(self, label: Array, values: Array) -> None:
        self.label, self.values = label, values

    @property
    def shape(self) -> tuple[int]:
        return (int(self.label.shape[0]),)

    @property
    def dtype(self):
        return self.values.dtype

    @property
    def nbytes(self) -> int:
        return int(self.label.nbytes + self.values.nbytes)

    def __getitem__(self, idx: Any) -> Array:
        return self.values[self.label[idx]]

    def __neg__(self) -> "Palette":
        return Palette(self.label, -self.values)

    def take(self, idx: Any) -> "Palette":
        """The same values on the edges ``idx`` (a subset, or a reordering)."""
        return Palette(self.label[idx], self.values)

    def dense(self) -> Array:
        """One value per edge (an int64 array as long as ``label``). On a device one
        elementwise kernel reads the rows as they are (indexing would first widen them)."""
        if not isinstance(self.label, np.ndarray):
            gather = _device_gather(self.label)
            if gather is not None:
                return gather(self.label, self.values)
        return self.values[self.label]

    def __repr__(self) -> str:
        return f"Palette({self.shape[0]} edges, {self.values.shape[0]} rows)"


def _device_gather(label: Any):
    """CuPy's elementwise kernel ``out = values[label]`` (int64 values, rows of the label's
    dtype), or None for a module without elementwise kernels."""
    import sys
    xp = sys.modules.get(type(label).__module__.split(".")[0])
    kernel = getattr(xp, "ElementwiseKernel", None)
    if kernel is None:
        return None
    return kernel("L label, raw int64 values", "int64 out", "out = values[label]",
                  "ocm_palette_gather")


def dense(a: Any) -> Any:
    """``a`` with one value per edge: a :class:`Palette` expanded, anything else as it is.

    >>> dense(np.array([3])).tolist(), dense(Palette(np.array([0, 0]), np.array([7]))).tolist()
    ([3], [7, 7])
    """
    return a.dense() if isinstance(a, Palette) else a


def edges_to_host(a: Any) -> Any:
    """Per-edge values on the host: a :class:`Palette` (both its arrays) or an array
    (:func:`to_host`); None stays None.

    >>> edges_to_host(Palette(np.array([1, 0], np.uint8), np.array([5, 6]))).values.tolist()
    [5, 6]
    """
    if a is None:
        return None
    if isinstance(a, Palette):
        return Palette(to_host(a.label), to_host(a.values))
    return to_host(a)


def subset(a: Any, edges: Any) -> Any:
    """The entries of ``a`` (an array or a :class:`Palette`, or None) on ``edges``."""
    if a is None:
        return None
    return a.take(edges) if isinstance(a, Palette) else a[edges]


def fits_int64(*bounds: int) -> bool:
    """True when the sum of the given non-negative magnitudes stays below :data:`INT_SAFE`.

    Bounds are Python ints, so the test itself cannot overflow.

    >>> fits_int64(2**61, 2**60)
    True
    >>> fits_int64(2**61, 2**61)
    False
    """
    return sum(int(b) for b in bounds) < INT_SAFE


def edge_rows(indptr: Array, xp: Any) -> Array:
    """Source vertex of every edge: ``row[e] = u`` for ``indptr[u] <= e < indptr[u + 1]``.

    Parameters
    ----------
    indptr : int array, shape (n + 1,)
    xp : module

    Returns
    -------
    row : int array, shape (m,)
        int32 below 2**31 vertices (4 bytes per edge rather than 8), else int64.

    >>> edge_rows(np.array([0, 0, 2, 3]), np).tolist()
    [1, 1, 2]
    """
    n = indptr.shape[0] - 1
    deg = xp.diff(indptr)
    return xp.repeat(xp.arange(n, dtype=xp.int32 if n < 2**31 else xp.int64), deg)


def segment_sum(values: Array, indptr: Array, xp: Any) -> Array:
    """Per-row sum of ``values`` (empty rows give 0), exact for integer dtypes.

    >>> segment_sum(np.array([1, 2, 3]), np.array([0, 2, 2, 3]), np).tolist()
    [3, 0, 3]
    """
    cs = xp.concatenate([xp.zeros(1, dtype=values.dtype), xp.cumsum(values)])
    return cs[indptr[1:]] - cs[indptr[:-1]]


def segment_max(key: Array, indptr: Array, xp: Any) -> Array:
    """Per-row maximum of ``key``. *Non-empty rows.*

    >>> segment_max(np.array([3, 1, 4, 1, 5]), np.array([0, 2, 3, 5]), np).tolist()
    [3, 4, 5]
    """
    return xp.maximum.reduceat(key, indptr[:-1])


def segment_argmax(key: Array, indptr: Array, row: Array, xp: Any) -> tuple[Array, Array]:
    """Per-row maximum of ``key`` and the **lowest** edge id attaining it. *Non-empty rows.*

    Parameters
    ----------
    key : array, shape (m,)
        Integers (any width, or Python ints in an object array) or floats without NaN.
    indptr : int array, shape (n + 1,)
    row : int64 array, shape (m,)
        :func:`edge_rows` of ``indptr``.
    xp : module

    Returns
    -------
    best : array, shape (n,)
        ``best[u] = max(key[indptr[u]:indptr[u + 1]])``.
    edge : int64 array, shape (n,)
        The smallest ``e`` in row ``u`` with ``key[e] == best[u]``.

    >>> segment_argmax(np.array([2, 7, 7, 0]), np.array([0, 3, 4]), np.array([0, 0, 0, 1]), np)
    (array([7, 0]), array([1, 3]))
    """
    best = xp.maximum.reduceat(key, indptr[:-1])
    hits = xp.flatnonzero(key == best[row])
    # hits is sorted and every row has at least one hit (its maximum): the first hit at or
    # after the row's start is the row's lowest-index maximiser.
    edge = hits[xp.searchsorted(hits, indptr[:-1])]
    return best, edge.astype(xp.int64, copy=False)


def best_edges(indptr: Array, indices: Array, cost: Array, time: Array | None, row: Array,
               rank: Array, potential: Array, rank_num: Array, rank_den: Array,
               xp: Any, aux: dict | None = None) -> tuple[Array, Array, Array]:
    """Howard's improvement pass: the best out-edge of every vertex. *Non-empty rows.*

    For every vertex ``u``, over its out-edges ``e = (u, w)``:

    - ``best_rank[u] = max rank[w]`` (the best value class reachable in one step);
    - among the edges with ``rank[w] == best_rank[u]``, with ``r = best_rank[u]``,
      ``val(e) = rank_den[r] * cost[e] - rank_num[r] * time[e] + potential[w]``
      (``time[e]`` read as 1 when ``time`` is None), and
      ``best_val[u] = max val(e)``;
    - ``best_edge[u]`` = the lowest edge id attaining ``best_val[u]`` among those edges.

    This is the lexicographic argmax of ``(rank[w], val(e))`` with ties to the lowest edge id.
    ``val`` is the scaled bias of ``u`` if it followed ``e``: with ``lambda = num/den`` the value
    of class ``r``, ``val(e) / den = cost[e] - lambda * time[e] + potential[w] / den``.

    Parameters
    ----------
    indptr, indices : int arrays
        The graph.
    cost : int64 array, shape (m,)
    time : int64 array, shape (m,), or None
        None means every edge has time 1 (cycle mean).
    row : int array, shape (m,), or None
        :func:`edge_rows` of ``indptr`` (computed when needed: the NumPy fast path does not
        read it).
    rank : int64 array, shape (n,)
        Dense rank (0, 1, ...) of every vertex's value class, increasing with the value.
    potential : int64 or object array, shape (n,)
        Scaled biases (exact integers).
    rank_num, rank_den : int64 or object arrays, shape (n_ranks,)
        The reduced fraction of every rank's value, ``rank_den > 0``.
    xp : module
    aux : dict, optional
        A cache the caller keeps across calls on the same graph (the NumPy path stores
        per-edge constants there); implementations may ignore it.

    Returns
    -------
    best_rank : int64 array, shape (n,)
    best_val : array, shape (n,), dtype of ``potential``
    best_edge : int64 array, shape (n,)

    Notes
    -----
    The caller guarantees (overflow guard) that every ``val(e)`` fits in int64 when
    ``potential`` is int64; the sentinel for non-candidate edges is ``-2**63``.

    Examples
    --------
    Vertex 0 has edges to 1 (rank 0) and 2 (rank 1); vertex 1 and 2 have self-loops:

    >>> indptr = np.array([0, 2, 3, 4]); indices = np.array([1, 2, 1, 2])
    >>> cost = np.array([5, 0, 1, 2]); row = edge_rows(indptr, np)
    >>> r, v, e = best_edges(indptr, indices, cost, None, row, np.array([1, 0, 1]),
    ...                      np.array([0, 0, 0]), np.array([1, 2]), np.array([1, 1]), np)
    >>> r.tolist(), v.tolist(), e.tolist()
    ([1, 0, 1], [-2, 0, 0], [1, 2, 3])
    """
    if is_numpy(xp) and potential.dtype != object:
        packed = _best_edges_packed(indptr, indices, cost, time, rank, potential, rank_num,
                                    rank_den, aux, row)
        if packed is not None:
            return packed
    if row is None:
        row = edge_rows(indptr, xp)
    cost, time = dense(cost), dense(time)
    rk = rank[indices]
    best_rank = xp.maximum.reduceat(rk, indptr[:-1])
    br = best_rank[row]
    cand = rk == br
    num = rank_num[br]
    den = rank_den[br]
    if time is None:
        val = den * cost - num + potential[indices]
    else:
        val = den * cost - num * time + potential[indices]
    if val.dtype == object:
        floor = min(val.min(), 0) - 1
    else:
        floor = np.iinfo(val.dtype).min
    val = xp.where(cand, val, floor)
    best_val, best_edge = segment_argmax(val, indptr, row, xp)
    return best_rank.astype(xp.int64, copy=False), best_val, best_edge


#: Edges per block of the host engine's passes over the edges (:func:`row_blocks`).
_BLOCK = 1 << 20


def row_blocks(indptr: np.ndarray, size: int | None = None) -> list[tuple[int, int]]:
    """Consecutive ranges of rows ``(r0, r1)`` holding about ``size`` edges each (a longer
    row alone), covering every row: the host engine's passes over the edges go a block at a
    time, so that their temporaries are those of a block, never one array per edge.

    >>> row_blocks(np.array([0, 2, 3, 9, 10]), 3)
    [(0, 2), (2, 3), (3, 4)]
    """
    size = _BLOCK if size is None else size
    n = indptr.shape[0] - 1
    out, r0 = [], 0
    while r0 < n:
        r1 = int(np.searchsorted(indptr, int(indptr[r0]) + size, side="right")) - 1
        r1 = min(max(r1, r0 + 1), n)
        out.append((r0, r1))
        r0 = r1
    return out


def _block_rev(indptr: np.ndarray, r0: int, r1: int, d: int, dt) -> np.ndarray:
    """``d - 1 -`` (offset of the edge in its row) for the edges of rows ``r0:r1``."""
    lo, hi = int(indptr[r0]), int(indptr[r1])
    start = indptr[r0:r1] - lo + (d - 1)
    rev = np.repeat(start.astype(np.int64), np.diff(indptr[r0:r1 + 1]))
    rev -= np.arange(hi - lo, dtype=np.int64)
    return rev.astype(dt)


def _rev_offsets(indptr: np.ndarray, aux: dict) -> tuple[int, list]:
    """The largest out-degree ``d`` and, per row block, ``d - 1 -`` the offset of every edge
    in its row, in the narrowest unsigned dtype (a byte while rows have at most 256 edges),
    kept in ``aux`` for the iterations on one graph."""
    if "rev" not in aux:
        n = indptr.shape[0] - 1
        d = int(np.diff(indptr).max()) if n else 1
        dt = np.uint8 if d <= 1 << 8 else np.uint16 if d <= 1 << 16 else \
            np.uint32 if d <= 1 << 32 else np.int64
        blocks = row_blocks(indptr)
        aux["d"], aux["blocks"] = d, blocks
        aux["rev"] = [_block_rev(indptr, r0, r1, d, dt) for r0, r1 in blocks]
    return aux["d"], aux["rev"]


def packed_argmax(indptr: np.ndarray, gather: Callable[[int, int], np.ndarray],
                  aux: dict | None = None) -> np.ndarray:
    """Per row, the lowest edge with the largest key, where ``gather(lo, hi)`` gives the
    (non-negative int64) keys of edges ``lo:hi``, small enough that ``key * d + d - 1`` fits
    int64 (``d`` the largest out-degree). *Non-empty rows.* Row blocks at a time: the key
    packs the edge's reversed offset in its row below the value, one ``reduceat`` per block.

    >>> packed_argmax(np.array([0, 3, 4]), lambda lo, hi: np.array([2, 7, 7, 0])[lo:hi])
    array([1, 3])
    """
    aux = {} if aux is None else aux
    d, revs = _rev_offsets(indptr, aux)
    n = indptr.shape[0] - 1
    edge = np.empty(n, dtype=np.int64)
    for (r0, r1), rev in zip(aux["blocks"], revs):
        lo, hi = int(indptr[r0]), int(indptr[r1])
        key = gather(lo, hi) * d
        key += rev
        best = np.maximum.reduceat(key, indptr[r0:r1] - lo)
        edge[r0:r1] = indptr[r0:r1] + (d - 1) - best % d
    return edge


def _best_edges_packed(indptr, indices, cost, time, rank, potential, rank_num, rank_den,
                       aux=None, row=None):
    """NumPy fast path of :func:`best_edges`: the lexicographic key in one int64, one reduceat
    per block of rows.

    For an edge ``e = (u, w)`` with ``r = rank[w]`` the key is
    ``(r * span + val_w(e) - lo) * D + (D - 1 - offset of e in its row)``, where
    ``val_w(e) = den[r] * cost[e] - num[r] * time[e] + potential[w]`` uses the class of ``w``
    (equal to the row's best class on the edges that matter), ``lo`` bounds ``val`` below,
    ``span`` bounds its range and ``D`` is the largest out-degree. The row maximum of the key
    is the lexicographic maximum of ``(rank[w], val, -e)``. Only one random gather per edge
    (``z[w]``, the per-vertex part of the key); the rank of ``w`` is decoded from it. Returns
    None when the key could exceed int64 (the generic path then runs). ``aux`` (a dict kept by
    the caller across iterations on one graph) caches the per-edge constants: the reversed
    offsets, one byte an edge while rows have at most 256 edges. The keys are those of a
    block of rows at a time (about a million edges), never an array per edge; ``row`` is
    not needed.
    """
    if aux is None:
        aux = {}
    n = indptr.shape[0] - 1
    m = indices.shape[0]
    d, revs = _rev_offsets(indptr, aux)
    if "cmax" not in aux:
        cv = cost.values if isinstance(cost, Palette) else cost
        aux["cmax"] = int(np.abs(cv).max()) if m and cv.shape[0] else 0
        tv = time.values if isinstance(time, Palette) else time
        aux["tmax"] = int(tv.max()) if time is not None and m and tv.shape[0] else 1
    cmax, tmax = aux["cmax"], aux["tmax"]
    amax = int(np.abs(rank_num).max())
    bmax = int(rank_den.max())
    xmax = int(np.abs(potential).max()) if n else 0
    lo = -(bmax * cmax + amax * tmax + xmax)
    span = 2 * -lo + 1
    n_ranks = rank_num.shape[0]
    if n_ranks * span * d >= INT_SAFE:
        return None
    vd = span * d
    z = rank * vd + (potential - lo) * d            # per target vertex
    shared = isinstance(cost, Palette) and (time is None or (
        isinstance(time, Palette) and time.label is cost.label))
    table = None
    if n_ranks == 1 and shared:
        # One class, and costs and times in one palette: the edge term is a table of one
        # entry per row, gathered per edge.
        a0, b0 = int(rank_num[0]), int(rank_den[0])
        table = d * b0 * cost.values - d * a0 * (1 if time is None else time.values)
    best = np.empty(n, dtype=np.int64)
    for (r0, r1), rev in zip(aux["blocks"], revs):
        e0, e1 = int(indptr[r0]), int(indptr[r1])
        key = z[indices[e0:e1]]   # (fancy indexing reads int32 targets as they are)
        if table is not None:
            key += table[cost.label[e0:e1]]
        else:
            cb = dense(subset(cost, slice(e0, e1)))
            tb = dense(subset(time, slice(e0, e1)))
            if n_ranks == 1:
                key += d * int(rank_den[0]) * cb
                key -= d * int(rank_num[0]) * (1 if tb is None else tb)
            else:
                rk = key // vd
                key += d * np.take(rank_den, rk) * cb
                key -= d * np.take(rank_num, rk) * (1 if tb is None else tb)
        key += rev
        best[r0:r1] = np.maximum.reduceat(key, indptr[r0:r1] - e0)
    starts = indptr[:-1]
    best_rank = best // vd
    rem = best - best_rank * vd
    best_val = rem // d + lo
    best_edge = starts + (d - 1) - rem % d
    return best_rank, best_val, best_edge


def cycle_reps(succ: Array, xp: Any) -> Array:
    """For a functional graph, the representative of every vertex that lies on a cycle.

    Parameters
    ----------
    succ : int64 array, shape (n,)
        ``0 <= succ[v] < n``.
    xp : module

    Returns
    -------
    rep : int64 array, shape (n,)
        ``rep[v]`` = the smallest vertex of the cycle through ``v`` when ``v`` lies on a cycle
        (``succ^k(v) == v`` for some ``k >= 1``), else ``-1``.

    Notes
    -----
    Generic version: pointer doubling. With ``J_k = succ^(2^k)`` and ``M_k(v)`` the minimum of
    the ``2^k`` vertices ``v, succ(v), ..., succ^(2^k - 1)(v)``:
    ``M_{k+1} = min(M_k, M_k[J_k])``, ``J_{k+1} = J_k[J_k]``. After ``K = ceil(log2 n)``
    rounds ``J_K(v)`` lies on a cycle for every ``v`` (``2^K >= n`` exceeds every tail), the
    vertices on cycles are exactly the image of ``J_K`` (a cycle is a permutation of itself), and
    for ``v`` on a cycle of length ``L <= 2^K`` the window covers the whole cycle, so
    ``M_K(v)`` is its minimum. NumPy uses SciPy's strongly connected components instead (same
    result, one pass in C).

    Examples
    --------
    >>> cycle_reps(np.array([1, 2, 1, 3, 3]), np).tolist()
    [-1, 1, 1, 3, -1]
    """
    n = succ.shape[0]
    if n == 0:
        return xp.zeros(0, dtype=xp.int64)
    if is_numpy(xp) and scipy_pays(n):
        return _cycle_reps_scipy(succ)
    ar = xp.arange(n, dtype=xp.int64)
    jump = succ.astype(xp.int64, copy=True)
    low = ar.copy()
    for _ in range(max(1, math.ceil(math.log2(n)))):
        low = xp.minimum(low, low[jump])
        jump = jump[jump]
    on = xp.zeros(n, dtype=bool)
    on[jump] = True
    return xp.where(on, low, -1)


def _cycle_reps_scipy(succ: np.ndarray) -> np.ndarray:
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    n = succ.shape[0]
    ar = np.arange(n, dtype=np.int64)
    g = csr_array((np.ones(n, dtype=np.int8), succ.astype(np.int32 if n < 2**31 else np.int64),
                   np.arange(n + 1, dtype=np.int64)), shape=(n, n))
    n_comp, label = connected_components(g, directed=True, connection="strong")
    size = np.bincount(label, minlength=n_comp)
    on = (size[label] > 1) | (succ == ar)
    low = np.full(n_comp, n, dtype=np.int64)
    np.minimum.at(low, label[on], ar[on])
    return np.where(on, low[label], -1)


#: Graphs of at most this many vertices or edges are walked by the array code here (or by
#: :func:`ocm.scc.small_strong_components`) rather than by SciPy's routines in C, unless the
#: process has already imported SciPy's sparse graphs: below it the walk takes milliseconds and
#: the import 0.3 s or more, most of a small model's whole analysis.
SCIPY_FROM = 50_000


def scipy_pays(size: int) -> bool:
    """Whether a graph of ``size`` vertices or edges is worth SciPy's sparse-graph routines:
    when it is large, or when SciPy is already imported (its cost already paid).

    >>> scipy_pays(10 * SCIPY_FROM)
    True
    """
    return size > SCIPY_FROM or "scipy.sparse.csgraph" in sys.modules


def tree_sums(parent: Array, weights: Sequence[Array], xp: Any) -> tuple[Array, list[Array]]:
    """Root of every vertex of a forest and the sums of weights along its path to the root.

    Parameters
    ----------
    parent : int64 array, shape (n,)
        A forest: ``parent[r] == r`` exactly at roots, no other cycle.
    weights : sequence of arrays, shape (n,)
        Integer (int64 or object) weights; ``weights[j][v]`` is the weight of the step from
        ``v`` to ``parent[v]``. The weight at a root is ignored (treated as 0).
    xp : module

    Returns
    -------
    root : int64 array, shape (n,)
        The root ``parent^k(v)`` reaches.
    sums : list of arrays
        ``sums[j][v] = sum(weights[j][u] for u on the path v, parent(v), ... up to, not
        including, the root)``; 0 at roots. Exact (integer arithmetic).

    Notes
    -----
    Pointer doubling, O(n log depth) work: ``S <- S + S[J]``, ``J <- J[J]``. The NumPy version
    keeps only the vertices whose jump has not yet reached a root (a vertex whose jump target
    is a root is final: its sums cover its whole path), so shallow vertices stop early.

    Examples
    --------
    >>> root, (s,) = tree_sums(np.array([1, 2, 2, 3]), [np.array([10, 20, 99, 7])], np)
    >>> root.tolist(), s.tolist()
    ([2, 2, 2, 3], [30, 20, 0, 0])
    """
    n = parent.shape[0]
    ar = xp.arange(n, dtype=xp.int64)
    is_root = parent == ar
    sums = [xp.where(is_root, 0, w).astype(w.dtype, copy=False) for w in weights]
    jump = parent.astype(xp.int64, copy=True)
    if is_numpy(xp):
        by_levels = _tree_sums_levels(parent, sums, is_root) if scipy_pays(n) else None
        if by_levels is not None:
            return by_levels
        act = np.flatnonzero(~is_root[jump])
        while act.size:
            ja = jump[act]
            for s in sums:
                s[act] = s[act] + s[ja]
            jj = jump[ja]
            jump[act] = jj
            act = act[~is_root[jj]]
        return jump, sums
    while True:
        jj = jump[jump]
        if bool(xp.all(jj == jump)):
            return jump, sums
        sums = [s + s[jump] for s in sums]
        jump = jj


#: The level-by-level NumPy path of :func:`tree_sums` gives up beyond this many levels (one
#: Python step per level); pointer doubling takes over.
MAX_LEVELS = 4096


def _tree_sums_levels(parent, sums, is_root):
    """NumPy path of :func:`tree_sums`: breadth-first levels from the roots (SciPy, in C),
    then one vectorised step per level, O(n) work. None when the forest is too deep."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import breadth_first_order

    n = parent.shape[0]
    roots = np.flatnonzero(is_root)
    nonroot = np.flatnonzero(~is_root)
    # Child lists of the forest plus a super root n whose children are the roots, as CSR
    # (counting sort by parent, done by SciPy's CSR construction in C).
    src = np.concatenate([parent[nonroot], np.full(roots.shape[0], n, dtype=np.int64)])
    dst = np.concatenate([nonroot, roots])
    g = csr_array((np.ones(n, dtype=np.int8), (src, dst)), shape=(n + 1, n + 1))
    order = breadth_first_order(g, n, directed=True, return_predecessors=False)[1:]
    pos = np.empty(n, dtype=np.int64)
    pos[order] = np.arange(n, dtype=np.int64)
    par_ord = np.take(parent, order)
    predpos = np.take(pos, par_ord)
    n_roots = roots.shape[0]
    predpos[:n_roots] = -1
    # BFS order: each level is contiguous and the parents' positions never decrease, so the
    # next level ends where the parents stop lying in the current one.
    bounds = [0, n_roots]
    while bounds[-1] < n:
        if len(bounds) > MAX_LEVELS:
            return None
        bounds.append(int(np.searchsorted(predpos, bounds[-1], side="left")))
    root_ord = np.empty(n, dtype=np.int64)
    root_ord[:n_roots] = order[:n_roots]
    w_ord = [np.take(s, order) for s in sums]
    for a, b in zip(bounds[1:-1], bounds[2:]):
        pp = predpos[a:b]
        root_ord[a:b] = np.take(root_ord, pp)
        for w in w_ord:
            w[a:b] += np.take(w, pp)
    root = np.empty(n, dtype=np.int64)
    root[order] = root_ord
    out = []
    for w, s in zip(w_ord, sums):
        r = np.empty_like(s)
        r[order] = w
        out.append(r)
    return root, out


def policy_sums(succ: Array, weights: Sequence[Array], xp: Any, *,
                reps: Callable | None = None,
                sums: Callable | None = None) -> tuple[Array, Array, list]:
    """Value determination of a policy: cycles, their representatives, and path sums.

    Parameters
    ----------
    succ : int64 array, shape (n,)
        A functional graph (the policy's successor of every vertex).
    weights : sequence of int arrays, shape (n,)
        ``weights[j][v]``: weight of the step ``v -> succ[v]``.
    xp : module
    reps, sums : callable, optional
        The :func:`cycle_reps` and :func:`tree_sums` of the generic version (default: the
        ones here; :mod:`ocm.ops` passes a backend's twins).

    Returns
    -------
    root : int64 array, shape (n,)
        The representative (smallest vertex) of the cycle ``v`` reaches.
    is_rep : bool array, shape (n,)
        ``root == arange(n)``: the representatives.
    sums : list of arrays
        ``sums[j][v]``: sum of ``weights[j]`` over the steps from ``v`` until the first visit
        of ``root[v]`` (0 at representatives; for a representative's own cycle, the cycle is
        cut just before the representative).

    Notes
    -----
    Generic version: :func:`cycle_reps`, cut every cycle at its representative, then
    :func:`tree_sums`. NumPy version: peel the vertices of in-degree 0 round by round (what is
    left is the cycles), find the cycles' representatives on the (usually small) cycle part,
    then accumulate the sums in reverse peeling order, one vectorised step per round: O(n)
    work. It falls back to the generic version beyond :data:`MAX_LEVELS` rounds.

    Examples
    --------
    >>> root, is_rep, (s,) = policy_sums(np.array([1, 2, 1, 3, 3]),
    ...                                  [np.array([10, 20, 30, 40, 50])], np)
    >>> root.tolist(), is_rep.tolist(), s.tolist()
    ([1, 1, 1, 3, 3], [False, True, False, True, False], [10, 0, 30, 0, 50])
    """
    if is_numpy(xp):
        out = _policy_sums_peel(succ, weights)
        if out is not None:
            return out
    n = succ.shape[0]
    ar = xp.arange(n, dtype=xp.int64)
    rep = (reps or cycle_reps)(succ, xp)
    is_rep = rep == ar
    parent = xp.where(is_rep, ar, succ)
    root, out = (sums or tree_sums)(parent, weights, xp)
    return root, is_rep, out


def _policy_sums_peel(succ, weights):
    n = succ.shape[0]
    indeg = np.bincount(succ, minlength=n)
    frontier = np.flatnonzero(indeg == 0)
    rounds = []
    while frontier.shape[0]:
        if len(rounds) >= MAX_LEVELS:
            return None
        t = np.take(succ, frontier)
        rounds.append((frontier, t))
        np.subtract.at(indeg, t, 1)
        cand = t[np.take(indeg, t) == 0]
        if cand.shape[0] > 1:
            # Several children of one vertex leave in the same round: drop the repeats (a
            # sort of the small candidate list; np.unique's hashing is slower here).
            cand.sort()
            cand = cand[np.concatenate(([True], cand[1:] != cand[:-1]))]
        frontier = cand
    on_cycle = indeg > 0
    cyc = np.flatnonzero(on_cycle)
    # The cycle part: a permutation of ``cyc``; cut each cycle at its smallest vertex.
    pos = np.empty(n, dtype=np.int64)
    pos[cyc] = np.arange(cyc.shape[0], dtype=np.int64)
    sub_succ = np.take(pos, np.take(succ, cyc))
    sub_rep = cycle_reps(sub_succ, np)                  # smallest position = smallest vertex
    sub_ar = np.arange(cyc.shape[0], dtype=np.int64)
    sub_is_rep = sub_rep == sub_ar
    sub_parent = np.where(sub_is_rep, sub_ar, sub_succ)
    sub_w = [np.where(sub_is_rep, 0, np.take(w, cyc)) for w in weights]
    sub_root, sub_sums = tree_sums(sub_parent, sub_w, np)
    root = np.empty(n, dtype=np.int64)
    root[cyc] = np.take(cyc, sub_root)
    sums = []
    for w, ss in zip(weights, sub_sums):
        out = np.empty(n, dtype=w.dtype)
        out[cyc] = ss
        sums.append(out)
    # Trees, in reverse peeling order: a vertex's successor is peeled later or is on a cycle.
    for f, t in reversed(rounds):
        root[f] = np.take(root, t)
        for w, out in zip(weights, sums):
            out[f] = np.take(w, f) + np.take(out, t)
    is_rep = np.zeros(n, dtype=bool)
    is_rep[cyc[sub_is_rep]] = True
    return root, is_rep, sums


def trim_sinks(indptr: Array, indices: Array, alive: Array, xp: Any) -> Array:
    """Remove, repeatedly, the vertices with no out-edge to a live vertex.

    Parameters
    ----------
    indptr, indices : int arrays
        The graph.
    alive : bool array, shape (n,)
        The vertices to start from (e.g. all True).
    xp : module

    Returns
    -------
    alive : bool array, shape (n,)
        The largest subset of the input in which every vertex has an out-edge to a vertex of
        the subset: exactly the vertices (of the input set) that can reach a cycle inside it.

    Examples
    --------
    >>> indptr = np.array([0, 1, 2, 2, 4]); indices = np.array([1, 0, 2, 3])
    >>> trim_sinks(indptr, indices, np.ones(4, bool), np).tolist()
    [True, True, False, True]
    """
    alive = alive.copy()
    while True:
        live_out = segment_sum(alive[indices].astype(xp.int64), indptr, xp)
        dead = alive & (live_out == 0)
        if not bool(dead.any()):
            return alive
        alive &= ~dead


def rank_fractions(num: Array, den: Array, xp: Any) -> tuple[Array, Array, Array]:
    """Exact dense ranks of the fractions ``num / den`` (``den > 0``), smallest value rank 0.

    Parameters
    ----------
    num, den : int64 arrays, shape (k,)
        Not necessarily reduced; ``den > 0``.
    xp : module

    Returns
    -------
    rank : int64 array, shape (k,)
        Equal fractions (as rationals) get equal ranks; ``rank[i] < rank[j]`` iff
        ``num[i]/den[i] < num[j]/den[j]``.
    rank_num, rank_den : int64 arrays, shape (n_ranks,)
        The reduced fraction of every rank, in increasing order.

    Notes
    -----
    Sorted by the float quotient (correctly rounded division is monotone, so a strict float
    order is the true order), then runs of equal floats holding different reduced fractions are
    reordered exactly with :class:`fractions.Fraction` (rare). Above 2**53 floats are not
    exact and everything is ordered with ``Fraction``.

    Examples
    --------
    >>> r, a, b = rank_fractions(np.array([2, 1, -3, 4]), np.array([4, 2, 1, 3]), np)
    >>> r.tolist(), a.tolist(), b.tolist()
    ([1, 1, 0, 2], [-3, 1, 4], [1, 2, 3])
    """
    # Few classes (one per policy cycle): done on the host with NumPy whatever xp is.
    a = np.asarray(to_host(num), dtype=np.int64)
    b = np.asarray(to_host(den), dtype=np.int64)
    g = np.gcd(a, b)
    g[g == 0] = 1
    a = a // g
    b = b // g
    k_items = a.shape[0]
    if k_items == 0:
        z = np.zeros(0, dtype=np.int64)
        return xp.asarray(z), xp.asarray(z), xp.asarray(z)
    big = max(int(np.abs(a).max()), int(b.max())) >= 2 ** 53
    if big:
        keys = [Fraction(int(x), int(y)) for x, y in zip(a.tolist(), b.tolist())]
        order = np.array(sorted(range(k_items), key=keys.__getitem__), dtype=np.int64)
    else:
        f = a / b
        order = np.lexsort((b, a, f))
        fs = f[order]
        same_f = fs[1:] == fs[:-1]
        differ = (a[order][1:] != a[order][:-1]) | (b[order][1:] != b[order][:-1])
        if bool((same_f & differ).any()):
            # Distinct rationals with the same float: reorder each run exactly.
            order = order.copy()
            starts = np.flatnonzero(np.r_[True, ~same_f])
            ends = np.r_[starts[1:], k_items]
            for s, e in zip(starts.tolist(), ends.tolist()):
                if e - s > 1:
                    seg = order[s:e].tolist()
                    seg.sort(key=lambda i: (Fraction(int(a[i]), int(b[i])), i))
                    order[s:e] = seg
    sa = a[order]
    sb = b[order]
    new = np.r_[True, (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])]
    dense = np.cumsum(new) - 1
    rank = np.empty(k_items, dtype=np.int64)
    rank[order] = dense
    return xp.asarray(rank), xp.asarray(sa[new]), xp.asarray(sb[new])
