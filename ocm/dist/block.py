"""A graph split over processes in runs of consecutive vertex ids, and its exchanges.

Process ``q`` of ``P`` holds the CSR rows of a set of runs of consecutive vertex ids (a
:class:`GraphBlock`), one after the other in its own numbering: their out-edges with
**global** target ids, costs and times. Which process holds which runs is a
:class:`runtime.layout.Layout`, the same on every process; edge ids stay those of the whole
graph (each vertex run's edges are consecutive in it, so the layout holds the edge runs too).
Blocks of consecutive ids balanced by vertices (``q * n // P`` the first of process ``q``'s,
:func:`block_starts`) are the special case of one run a process; a distributed search leaves
one run a level on each process (:mod:`statespace.dist.blocks`), which the engine reads where
it is.

Two exchanges serve every step of the engine (:mod:`ocm.dist.engine`):

- :class:`Halo`: the values of the remote targets of a block's edges, pulled from their
  owners. Its index lists are built once (one ``alltoallv`` of the ids wanted), then each pull
  is one ``alltoallv`` of values;
- :func:`fetch`: values at arbitrary global ids (the pointers of pointer doubling), routed to
  the owners of the ids and back: two ``alltoallv`` per call.

Both find an id's owner and its place there by the layout (:meth:`Layout.locate`: a search
of the runs' first ids), and send the owner the place, not the id.

Examples
--------
>>> import numpy as np
>>> from runtime.comm import SelfComm
>>> b = split_graph(np.array([0, 1, 2]), np.array([1, 0]), np.array([3, 4]), None, 0, 1)
>>> b.n_local, b.n, b.indices.tolist(), b.layout.global_ids().tolist()
(2, 2, [1, 0], [0, 1])
>>> fetch(SelfComm(), b.layout, np.array([1, 1, 0]), np.array([10, 20]))[0].tolist()
[20, 20, 10]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from runtime.arrays import stable_argsort
from runtime.comm import Comm
from runtime.device import to_host
from runtime.layout import Layout

from .ops import edge_slices, scatter_max, sorted_unique

__all__ = ["GraphBlock", "Layout", "block_starts", "owner_of_ids", "split_graph", "Halo",
           "fetch", "route"]


def block_starts(n: int, size: int) -> np.ndarray:
    """The first vertex id of every process's block, and ``n`` last (``size + 1`` entries):
    blocks of ``n // size`` or ``n // size + 1`` consecutive ids, in rank order.

    >>> block_starts(10, 3).tolist()
    [0, 3, 6, 10]
    """
    return (np.arange(size + 1, dtype=np.int64) * n) // size


def owner_of_ids(ids: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """The process whose block holds each global vertex id.

    >>> owner_of_ids(np.array([0, 2, 3, 9]), block_starts(10, 3)).tolist()
    [0, 0, 1, 2]
    """
    return np.searchsorted(starts, ids, side="right").astype(np.int64) - 1


@dataclass(frozen=True)
class GraphBlock:
    """One process's share of a graph: the rows of its runs of vertices.

    Attributes
    ----------
    n, m : int
        Vertices and edges of the whole graph.
    layout : runtime.layout.Layout
        Which process holds which runs of vertex and edge ids (the same on every process,
        seen from this block's process).
    indptr : int64 array, shape (n_local + 1,)
        The block's CSR offsets, from 0, its vertices in local order.
    indices : int array
        Global target ids of the block's edges (int32 while they fit).
    cost : int64 array or ocm.Palette
    time : int64 array, ocm.Palette or None
        Per edge of the block (None: time 1 everywhere); a palette holds one row per edge
        and the rows' values (:class:`ocm.primitives.Palette`: 1 or 2 bytes an edge).
    """

    n: int
    m: int
    layout: Layout
    indptr: np.ndarray
    indices: np.ndarray
    cost: np.ndarray
    time: np.ndarray | None

    @property
    def rank(self) -> int:
        return self.layout.rank

    @property
    def n_local(self) -> int:
        return int(self.indptr.shape[0]) - 1

    @property
    def m_local(self) -> int:
        return int(self.indices.shape[0])


def split_graph(indptr: Any, indices: Any, cost: Any, time: Any | None, rank: int,
                size: int, runs: Sequence | None = None) -> GraphBlock:
    """Process ``rank``'s block of a one-process CSR graph (``cost``/``time`` arrays or
    ``ocm.Palette``; expanded per edge here). What every test of the distributed engine starts
    from: the same graph cut in ``size`` shares, one per process.

    ``runs``, when given, is every process's runs: ``runs[q]`` a sequence of ``(first id,
    length)`` in process ``q``'s local order, the runs of all processes covering the ids
    once; by default blocks of consecutive ids (:func:`block_starts`).

    >>> b = split_graph(np.array([0, 2, 3, 3]), np.array([1, 2, 0]), np.array([1, 2, 3]),
    ...                 None, 1, 2)
    >>> b.layout.global_ids().tolist(), b.indptr.tolist(), b.indices.tolist(), b.cost.tolist()
    ([1, 2], [0, 1, 1], [0], [3])
    >>> b = split_graph(np.array([0, 2, 3, 3]), np.array([1, 2, 0]), np.array([1, 2, 3]),
    ...                 None, 0, 2, runs=[[(2, 1), (0, 1)], [(1, 1)]])
    >>> b.layout.global_ids().tolist(), b.indptr.tolist(), b.indices.tolist()
    ([2, 0], [0, 0, 2], [1, 2])
    """
    from ..primitives import dense, subset

    indptr = np.asarray(indptr, dtype=np.int64)
    if runs is None:
        layout = Layout.blocks(indptr, rank, size)
    else:
        table = []
        for r in runs:
            s = np.array([a for a, _ in r], np.int64)
            ln = np.array([b for _, b in r], np.int64)
            table.append((s, ln, indptr[s + ln] - indptr[s]))
        layout = Layout.of_runs(rank, table)
    starts, lengths, _ = layout.runs_of(rank)
    # This process's edges: its runs' edges in its local order.
    edges = np.concatenate([np.arange(indptr[a], indptr[a + k], dtype=np.int64)
                            for a, k in zip(starts.tolist(), lengths.tolist())]) \
        if starts.shape[0] else np.zeros(0, np.int64)
    verts = layout.global_ids()
    deg = indptr[verts + 1] - indptr[verts]
    local_ptr = np.zeros(verts.shape[0] + 1, np.int64)
    np.cumsum(deg, out=local_ptr[1:])
    return GraphBlock(
        n=indptr.shape[0] - 1, m=int(indptr[-1]), layout=layout, indptr=local_ptr,
        indices=np.asarray(indices, np.int64)[edges],
        cost=np.asarray(dense(subset(cost, edges)), dtype=np.int64),
        time=None if time is None else np.asarray(dense(subset(time, edges)), dtype=np.int64))


def _as_rows(values: tuple, xp: Any = np):
    """One int64 matrix of the values given (one column each), for one exchange."""
    return xp.stack([v.astype(np.int64, copy=False) for v in values], axis=1) \
        if values else xp.zeros((0, 0), np.int64)


def route(comm: Comm, layout: Layout, ids):
    """Send the global vertex ids ``ids`` (of ``comm.xp``) to their owners: ``(got, order,
    counts, recv_counts)``, where ``got`` are the local indices of this process's vertices
    that others asked for (grouped by asker, each asker's in the order it grouped them),
    ``order`` the permutation that grouped ``ids`` by owner (None: ``ids`` kept their order)
    and the counts both ways (NumPy: to send answers back, :func:`fetch`)."""
    xp = comm.xp
    owner, local = layout.locate(ids, xp)
    return _send(comm, owner, local)


def _send(comm: Comm, owner, local):
    """:func:`route` of ids already located (their owners and places there)."""
    xp = comm.xp
    if comm.size == 1:   # every id is this process's: nothing to group
        got, rcounts = comm.alltoallv(local, np.array([local.shape[0]], np.int64))
        return got, None, rcounts, rcounts
    # (a stable sort of small integers: NumPy's radix sort; ids of one owner keep their
    # order, so a list sorted by id stays sorted within each owner)
    order = stable_argsort(xp, owner.astype(np.int16 if comm.size < 2**15 else np.int64))
    # The counts by searches in the sorted owners, not a bincount: on a device its atomic
    # additions on P counters serialise.
    at = xp.searchsorted(owner[order], xp.arange(comm.size + 1, dtype=owner.dtype),
                         side="left")
    counts = np.diff(to_host(at)).astype(np.int64)
    got, rcounts = comm.alltoallv(xp.ascontiguousarray(local[order]), counts)
    return got, order, counts, rcounts


def fetch(comm: Comm, layout: Layout, ids, *arrays, seen=None) -> list:
    """``[a[ids] for a in arrays]`` where each ``a`` is a per-vertex array held by the
    processes of ``layout`` (this process's part given, in its local order): every id goes
    to its owner, which answers from its part. Collective: every process calls it (with its
    own ``ids``, possibly none). The answers are read before any caller changes its arrays,
    which is what pointer doubling needs. Ids of this process's own vertices are answered
    here: only the others travel. ``seen`` (flags of the block's vertices), when given, is
    set at every vertex of the block that some process asked for."""
    xp = comm.xp
    ids = ids.astype(np.int64, copy=False)
    owner, local = layout.locate(ids, xp)
    out = xp.empty((ids.shape[0], len(arrays)), np.int64)
    if comm.size == 1:
        far = None
        near = local
    else:
        mine = owner == comm.rank
        at_home = xp.flatnonzero(mine)
        far = xp.flatnonzero(~mine)
        near = local[at_home]
        owner, local = owner[far], local[far]
    got, order, counts, rcounts = _send(comm, owner, local)
    del owner, local
    if seen is not None:
        seen[got] = True
        if far is not None:
            seen[near] = True
    reply = _as_rows(tuple(a[got] for a in arrays), xp)
    back, _ = comm.alltoallv(reply, rcounts, counts)
    if far is None:
        return [back[:, j] for j in range(len(arrays))]
    out[at_home] = _as_rows(tuple(a[near] for a in arrays), xp)
    where = far if order is None else far[order]
    out[where] = back
    return [out[:, j] for j in range(len(arrays))]


class Halo:
    """The remote targets of a block's edges and how their values come (see the module
    docstring). Arrays of ``comm.xp``.

    Attributes
    ----------
    target : int array, shape (m_local,)
        Each edge's target as an index into an *extended* vertex array: the block's own
        vertices first (``0 .. n_local - 1``, local order), then the distinct remote targets
        grouped by owner, in id order within an owner (int32 while they fit: 4 bytes an
        edge).
    remote : int64 array
        The global ids of those remote targets, in that order (the order of the exchanges:
        a pull's answers land in place).
    """

    def __init__(self, comm: Comm, layout: Layout, targets) -> None:
        xp = comm.xp
        self.comm, self.xp = comm, xp
        self.n_local = layout.n_local
        rank = comm.rank
        m = int(targets.shape[0])
        # A slice of edges at a time (edge_slices), so that the int64 temporaries take a
        # slice's memory beside the graph, not several copies of every edge: each edge's
        # owner and place (one search of the layout), its place kept where it is this
        # block's (-1 where remote), and the distinct remote targets of each slice, then of
        # all of them; then the remote edges' places (a second pass over those alone).
        # (the extended ids are distinct global ids: fewer than n, and than n_local + m)
        n_ext_max = min(layout.n, self.n_local + m)
        self.target = xp.empty(m, np.int32 if n_ext_max < 2**31 else np.int64)
        parts = []
        for sl in edge_slices(m):
            t = targets[sl].astype(np.int64)
            own, loc = layout.locate(t, xp)
            far = own != rank
            parts.append(sorted_unique(xp, t[far]))
            loc[far] = -1
            self.target[sl] = loc.astype(self.target.dtype, copy=False)
            del t, own, loc, far
        by_id = sorted_unique(xp, xp.concatenate(parts)) if len(parts) > 1 else parts[0]
        del parts
        # Grouped by owner (the order of the exchanges), by id within each owner.
        owner, local = layout.locate(by_id, xp)
        if comm.size > 1:
            order = stable_argsort(xp, owner.astype(np.int16 if comm.size < 2**15
                                                    else np.int64))
        else:
            order = xp.arange(by_id.shape[0], dtype=np.int64)
        self.remote = by_id[order]
        place = xp.empty(by_id.shape[0], np.int64)   # id-sorted position -> grouped one
        place[order] = xp.arange(by_id.shape[0], dtype=np.int64)
        if by_id.shape[0]:
            for sl in edge_slices(m):
                far = xp.flatnonzero(self.target[sl] < 0) + sl.start
                ext = self.n_local + place[xp.searchsorted(by_id, targets[far].astype(np.int64))]
                self.target[far] = ext.astype(self.target.dtype, copy=False)
                del ext
                del far
        if self.n_local + self.remote.shape[0] < 2**31 and self.target.dtype != np.int32:
            self.target = self.target.astype(np.int32)
        # Built once: which of this block's vertices each other process wants, in the order
        # it wants them (its remote list is grouped by owner).
        self.want, _, self.req_counts, self.want_counts = _send(comm, owner[order],
                                                                local[order])
        del owner, local, order, place

    def push_max(self, local, remote) -> None:
        """The reverse of :meth:`pull`: ``remote`` (one value per remote target, in the
        order of :attr:`remote`) goes to the targets' owners, each of which raises its
        ``local`` values to the largest it received (in place). One ``alltoallv``."""
        got, _ = self.comm.alltoallv(self.xp.ascontiguousarray(remote, dtype=np.int64),
                                     self.req_counts, self.want_counts)
        scatter_max(self.xp, local, self.want, got)

    def pull(self, *local) -> list:
        """Per array of the block's vertices, the extended array: the block's values then the
        remote targets' (int64), by one ``alltoallv`` for all of them."""
        xp = self.xp
        reply = _as_rows(tuple(a[self.want] for a in local), xp)
        got, _ = self.comm.alltoallv(reply, self.want_counts, self.req_counts)
        return [xp.concatenate([a.astype(np.int64, copy=False), got[:, j]])
                for j, a in enumerate(local)]
