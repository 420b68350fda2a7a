"""Strongly connected components, the restriction of a graph to its cycles, zero-time cycles.

Every cycle of a directed graph lies inside one strongly connected component (SCC), so the
optimal cycle of the whole graph is the best of the per-SCC optima, and edges between SCCs (or
into vertices with no successor) never matter. :func:`restrict_to_sccs` keeps exactly the edges
inside nontrivial SCCs and renumbers their vertices compactly; Howard then runs on a graph in
which every vertex has an out-edge and every vertex lies in a strongly connected piece, so that
its fixed point gives each SCC's own optimum.

CPU only (SciPy's ``connected_components(connection='strong')``, an iterative Pearce/Tarjan in
C; for small graphs Tarjan's algorithm over Python lists, which costs less than importing
SciPy). :func:`restrict_by_trimming` is the array-only alternative for other backends: it removes
sinks repeatedly (:func:`ocm.primitives.trim_sinks`), keeps every cycle and lets the multichain
iteration handle several components at once, but gives no per-SCC optima.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import primitives as P
from .ops import ops

__all__ = ["Restriction", "strong_components", "small_strong_components", "restrict_to_sccs",
           "restrict_by_trimming", "find_zero_time_cycle"]


@dataclass(frozen=True)
class Restriction:
    """A subgraph on compact vertex ids, with the maps back to the original graph.

    Attributes
    ----------
    vertices : int64 array, shape (k,)
        Original id of every kept vertex (ascending).
    edges : int array, shape (m_k,), or None
        Original id of every kept edge (ascending, so rows stay in CSR order): int64, or on
        the host int32 below 2**31 edges; None on the host when every edge is kept (see
        :meth:`edge_ids`).
    indptr, indices : int arrays
        The subgraph's CSR on ids ``0..k-1``; every row is non-empty. ``indptr`` is int64;
        ``indices`` int64 on a device, on the host the original targets' dtype when every
        edge is kept, else int32 where the ids fit.
    label : int array, shape (k,), or None
        SCC label of every kept vertex (None when restricted by trimming).
    """

    vertices: Any
    edges: Any
    indptr: Any
    indices: Any
    label: Any = None

    def edge_ids(self, sub: Any) -> Any:
        """The original ids of the subgraph's edges ``sub``.

        >>> r = restrict_to_sccs(np.array([0, 1, 2]), np.array([1, 0]))
        >>> r.edges is None, r.edge_ids([1]).tolist()
        (True, [1])
        """
        return np.asarray(sub, dtype=np.int64) if self.edges is None else self.edges[sub]


def strong_components(indptr: np.ndarray, indices: np.ndarray) -> tuple[int, np.ndarray]:
    """Number of SCCs and the SCC label of every vertex (SciPy, NumPy arrays; the labels are
    int32 below 2**31 vertices).

    >>> strong_components(np.array([0, 1, 2, 2]), np.array([1, 0, 0]))[1].tolist()
    [0, 0, 1]
    """
    n = indptr.shape[0] - 1
    m = indices.shape[0]
    if not P.scipy_pays(m):
        return small_strong_components(indptr, indices)
    # SciPy is imported here, not at the top: it takes about 0.3 s, which every command
    # (check, --help) would otherwise pay at start-up.
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    if m < 2**31 and indices.dtype == np.int32:
        # int32 offsets with int32 targets: SciPy keeps the targets as they are (with int64
        # offsets it copies both to int64, 8 bytes per edge more).
        indptr = indptr.astype(np.int32)
    g = csr_array((np.ones(m, dtype=np.int8), indices, indptr), shape=(n, n))
    n_comp, label = connected_components(g, directed=True, connection="strong")
    return int(n_comp), label


def small_strong_components(indptr: np.ndarray, indices: np.ndarray) -> tuple[int, np.ndarray]:
    """:func:`strong_components` by Tarjan's algorithm over Python lists, without recursion:
    for small graphs, where importing SciPy costs more than the walk
    (:func:`ocm.primitives.scipy_pays`). Labels number the
    components in the order they are completed (a component before every component that
    reaches it); any numbering serves, as only "same component or not" is read.

    >>> small_strong_components(np.array([0, 1, 2, 2]), np.array([1, 0, 0]))
    (2, array([0, 0, 1], dtype=int32))
    """
    n = indptr.shape[0] - 1
    ptr = indptr.tolist()
    tgt = indices.tolist()
    index = [-1] * n       # discovery order of each vertex, -1 before it is reached
    low = [0] * n
    label = [-1] * n       # component, once its root completes it
    stack: list[int] = []  # vertices of components not yet complete
    count = seen = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        index[root] = low[root] = seen
        seen += 1
        stack.append(root)
        # The walk's path: a vertex and the position of its next out-edge to try.
        path = [[root, ptr[root]]]
        while path:
            top = path[-1]
            v, e = top
            if e < ptr[v + 1]:
                top[1] = e + 1
                w = tgt[e]
                if index[w] < 0:
                    index[w] = low[w] = seen
                    seen += 1
                    stack.append(w)
                    path.append([w, ptr[w]])
                elif label[w] < 0 and index[w] < low[v]:
                    low[v] = index[w]   # w is on the stack: a way back up
                continue
            path.pop()
            if path:
                u = path[-1][0]
                if low[v] < low[u]:
                    low[u] = low[v]
            if low[v] == index[v]:      # v roots a component: pop it
                while True:
                    w = stack.pop()
                    label[w] = count
                    if w == v:
                        break
                count += 1
    return count, np.array(label, dtype=np.int32)


def _none_set(flags: Any, xp: Any) -> bool:
    """True when no element of the boolean array ``flags`` is set. On a device by a scan (the
    one the explorer's ``flatnonzero`` has already loaded) instead of CuPy's ``any``, a CUB
    reduction whose first use in a process costs 30 ms (its own compiler option set,
    measured on the H100 machine, see docs/history/).

    >>> _none_set(np.array([False, False]), np), _none_set(np.array([False, True]), np)
    (True, False)
    """
    if xp is np:
        return not bool(flags.any())
    return int(xp.flatnonzero(flags).shape[0]) == 0


def _subgraph(indptr: Any, indices: Any, keep_edge: Any, xp: Any,
              label: Any = None) -> Restriction:
    n = indptr.shape[0] - 1
    host = P.is_numpy(xp)
    if host:
        return _host_subgraph(indptr, indices, keep_edge, label)
    if _none_set(~keep_edge, xp) and (n == 0 or _none_set(indptr[1:] == indptr[:-1], xp)):
        # Nothing to drop (e.g. a strongly connected graph): the identity restriction.
        ar = xp.arange(n, dtype=xp.int64)
        return Restriction(ar, xp.arange(indices.shape[0], dtype=xp.int64),
                           indptr.astype(xp.int64, copy=False),
                           indices.astype(xp.int64, copy=False), label)
    deg = ops(xp).segment_sum(keep_edge.astype(xp.int64), indptr, xp)
    vertices = xp.flatnonzero(deg > 0).astype(xp.int64)
    newid = xp.full(n, -1, dtype=xp.int64)
    newid[vertices] = xp.arange(vertices.shape[0], dtype=xp.int64)
    edges = xp.flatnonzero(keep_edge).astype(xp.int64)
    sub_indptr = xp.concatenate([xp.zeros(1, dtype=xp.int64), xp.cumsum(deg[vertices])])
    sub_indices = newid[indices[edges]]
    return Restriction(vertices, edges, sub_indptr, sub_indices,
                       None if label is None else label[vertices])


def _host_subgraph(indptr: np.ndarray, indices: np.ndarray, keep_edge: np.ndarray,
                   label: Any) -> Restriction:
    """:func:`_subgraph` on the host, a block of rows at a time: besides the subgraph itself
    (int32 targets and edge ids where they fit) no array of the edges is made."""
    n = indptr.shape[0] - 1
    m = indices.shape[0]
    if bool(keep_edge.all()) and (n == 0 or int(np.diff(indptr).min()) > 0):
        # Nothing to drop (e.g. a strongly connected graph): the identity restriction. Its
        # edges are None (no array of m ids) and the targets keep their dtype.
        return Restriction(np.arange(n, dtype=np.int64), None,
                           indptr.astype(np.int64, copy=False), indices, label)
    blocks = P.row_blocks(indptr)
    deg = np.zeros(n, dtype=np.int64)
    for r0, r1 in blocks:
        lo, hi = int(indptr[r0]), int(indptr[r1])
        if hi > lo:   # per-row counts of the kept edges (empty rows count 0)
            cs = np.concatenate([[0], np.cumsum(keep_edge[lo:hi], dtype=np.int64)])
            deg[r0:r1] = cs[indptr[r0 + 1:r1 + 1] - lo] - cs[indptr[r0:r1] - lo]
    vertices = np.flatnonzero(deg > 0).astype(np.int64)
    k = vertices.shape[0]
    idt = np.int32 if k < 2**31 else np.int64
    newid = np.full(n, -1, dtype=idt)
    newid[vertices] = np.arange(k, dtype=idt)
    sub_indptr = np.concatenate([np.zeros(1, dtype=np.int64), np.cumsum(deg[vertices])])
    del deg
    mk = int(sub_indptr[-1])
    edt = np.int32 if m < 2**31 else np.int64
    edges = np.empty(mk, dtype=edt)
    sub_indices = np.empty(mk, dtype=idt)
    at = 0
    for r0, r1 in blocks:
        lo, hi = int(indptr[r0]), int(indptr[r1])
        e = np.flatnonzero(keep_edge[lo:hi])
        edges[at:at + e.shape[0]] = e + lo
        sub_indices[at:at + e.shape[0]] = newid[indices[lo:hi][e]]
        at += e.shape[0]
    return Restriction(vertices, edges, sub_indptr, sub_indices,
                       None if label is None else label[vertices])


def restrict_to_sccs(indptr: np.ndarray, indices: np.ndarray,
                     row: np.ndarray | None = None) -> Restriction:
    """Keep the edges inside nontrivial SCCs (self-loops included), renumbered compactly.

    >>> r = restrict_to_sccs(np.array([0, 2, 3, 3, 4]), np.array([1, 2, 0, 3]))
    >>> r.vertices.tolist(), r.edges.tolist(), r.indptr.tolist(), r.indices.tolist()
    ([0, 1, 3], [0, 2, 3], [0, 1, 2, 3], [1, 0, 2])
    """
    _, label = strong_components(indptr, indices)
    # A block of rows at a time: the labels gathered at both ends are a block's.
    keep = np.empty(indices.shape[0], dtype=bool)
    for r0, r1 in P.row_blocks(indptr):
        lo, hi = int(indptr[r0]), int(indptr[r1])
        src = np.repeat(label[r0:r1], np.diff(indptr[r0:r1 + 1]))
        np.equal(src, label[indices[lo:hi]], out=keep[lo:hi])
    return _subgraph(indptr, indices, keep, np, label)


def restrict_by_trimming(indptr: Any, indices: Any, xp: Any,
                         row: Any | None = None) -> Restriction:
    """Keep the vertices that can reach a cycle and the edges between them (any ``xp``).

    >>> r = restrict_by_trimming(np.array([0, 2, 3, 3, 4]), np.array([1, 2, 0, 3]), np)
    >>> r.vertices.tolist(), r.edges.tolist()
    ([0, 1, 3], [0, 2, 3])
    """
    if row is None:
        row = ops(xp).edge_rows(indptr, xp)
    n = indptr.shape[0] - 1
    alive = ops(xp).trim_sinks(indptr, indices, xp.ones(n, dtype=bool), xp)
    keep = alive[row] & alive[indices]
    return _subgraph(indptr, indices, keep, xp)


def find_zero_time_cycle(indptr: np.ndarray, indices: np.ndarray,
                         time: np.ndarray) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """A cycle whose edges all have time 0, as (vertices, edge ids), or None (NumPy arrays).

    The cycle starts at its smallest vertex. Linear time: SCCs of the zero-time edges, then a
    walk inside the first nontrivial one.

    >>> find_zero_time_cycle(np.array([0, 1, 2, 3]), np.array([1, 2, 1]), np.array([0, 0, 0]))
    ((1, 2), (1, 2))
    >>> find_zero_time_cycle(np.array([0, 1, 2]), np.array([1, 0]), np.array([0, 1])) is None
    True
    """
    if isinstance(time, P.Palette):   # one flag per row, then per edge (1 byte, not 8)
        zero = (time.values == 0)[time.label]
    else:
        zero = time == 0
    if not bool(zero.any()):
        return None
    z_edges = np.flatnonzero(zero)
    z_indptr = np.concatenate([[0], np.cumsum(P.segment_sum(zero.astype(np.int64), indptr, np))])
    z_indices = indices[z_edges]
    r = restrict_to_sccs(z_indptr, z_indices)
    if r.vertices.shape[0] == 0:
        return None
    # First edge of every row stays inside the SCC: a functional graph whose cycles are
    # zero-time cycles of the original graph.
    policy = r.indptr[:-1]
    succ = r.indices[policy]
    rep = P.cycle_reps(succ, np)
    start = int(np.flatnonzero(rep >= 0)[0])
    start = int(rep[start])
    s = succ.tolist()
    verts, edges = [], []
    v = start
    while True:
        verts.append(int(r.vertices[v]))
        edges.append(int(z_edges[r.edge_ids(policy[v])]))
        v = s[v]
        if v == start:
            break
    k = verts.index(min(verts))
    return tuple(verts[k:] + verts[:k]), tuple(edges[k:] + edges[:k])
