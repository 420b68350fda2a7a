"""A graph split over processes in blocks of consecutive vertex ids, and its exchanges.

Process ``q`` of ``P`` holds the CSR rows of the vertices ``starts[q] .. starts[q + 1] - 1``
(a :class:`GraphBlock`): their out-edges with **global** target ids, costs and times, and
the global id of its first edge (edge ids stay those of the whole graph: a block's edges are
consecutive in it). The blocks are balanced by vertices (``starts[q] = q * n // P``), which
every process computes from ``n`` alone; see :func:`block_starts`.

Two exchanges serve every step of the engine (:mod:`ocm.dist.engine`):

- :class:`Halo`: the values of the remote targets of a block's edges, pulled from their
  owners. Its index lists are built once (one ``alltoallv`` of the ids wanted), then each pull
  is one ``alltoallv`` of values;
- :func:`fetch`: values at arbitrary global ids (the pointers of pointer doubling), routed to
  the owners of the ids and back: two ``alltoallv`` per call.

Examples
--------
>>> import numpy as np
>>> from runtime.comm import SelfComm
>>> b = split_graph(np.array([0, 1, 2]), np.array([1, 0]), np.array([3, 4]), None, 0, 1)
>>> b.lo, b.hi, b.n, b.indices.tolist(), b.edge_base
(0, 2, 2, [1, 0], 0)
>>> fetch(SelfComm(), b.starts, np.array([1, 1, 0]), np.array([10, 20]))[0].tolist()
[20, 20, 10]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from runtime.arrays import stable_argsort
from runtime.comm import Comm
from runtime.device import to_host

from .ops import edge_slices, scatter_max

__all__ = ["GraphBlock", "block_starts", "owner_of_ids", "split_graph", "Halo", "fetch",
           "route"]


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
    """One process's share of a graph: the rows of vertices ``lo .. hi - 1``.

    Attributes
    ----------
    n, m : int
        Vertices and edges of the whole graph.
    starts : int64 array, shape (P + 1,)
        Every process's first vertex, then ``n`` (:func:`block_starts`).
    rank : int
        This block's process.
    indptr : int64 array, shape (hi - lo + 1,)
        The block's CSR offsets, from 0.
    indices : int array
        Global target ids of the block's edges (int32 while they fit).
    cost : int64 array or ocm.Palette
    time : int64 array, ocm.Palette or None
        Per edge of the block (None: time 1 everywhere); a palette holds one row per edge
        and the rows' values (:class:`ocm.primitives.Palette`: 1 or 2 bytes an edge).
    edge_base : int
        Global id of the block's first edge (its edge ``j`` is edge ``edge_base + j`` of the
        graph).
    """

    n: int
    m: int
    starts: np.ndarray
    rank: int
    indptr: np.ndarray
    indices: np.ndarray
    cost: np.ndarray
    time: np.ndarray | None
    edge_base: int

    @property
    def lo(self) -> int:
        return int(self.starts[self.rank])

    @property
    def hi(self) -> int:
        return int(self.starts[self.rank + 1])

    @property
    def n_local(self) -> int:
        return self.hi - self.lo

    @property
    def m_local(self) -> int:
        return int(self.indices.shape[0])


def split_graph(indptr: Any, indices: Any, cost: Any, time: Any | None, rank: int,
                size: int) -> GraphBlock:
    """Process ``rank``'s block of a one-process CSR graph (``cost``/``time`` arrays or
    ``ocm.Palette``; expanded per edge here). What every test of the distributed engine starts
    from: the same graph cut in ``size`` blocks, one per process.

    >>> b = split_graph(np.array([0, 2, 3, 3]), np.array([1, 2, 0]), np.array([1, 2, 3]),
    ...                 None, 1, 2)
    >>> b.lo, b.hi, b.indptr.tolist(), b.indices.tolist(), b.cost.tolist(), b.edge_base
    (1, 3, [0, 1, 1], [0], [3], 2)
    """
    from ..primitives import dense, subset

    indptr = np.asarray(indptr, dtype=np.int64)
    n = indptr.shape[0] - 1
    starts = block_starts(n, size)
    lo, hi = int(starts[rank]), int(starts[rank + 1])
    e0, e1 = int(indptr[lo]), int(indptr[hi])
    part = slice(e0, e1)
    return GraphBlock(
        n=n, m=int(indptr[-1]), starts=starts, rank=rank,
        indptr=indptr[lo:hi + 1] - e0,
        indices=np.asarray(indices[part], dtype=np.int64),
        cost=np.asarray(dense(subset(cost, part)), dtype=np.int64),
        time=None if time is None else np.asarray(dense(subset(time, part)), dtype=np.int64),
        edge_base=e0)


def _as_rows(values: tuple, xp: Any = np):
    """One int64 matrix of the values given (one column each), for one exchange."""
    return xp.stack([v.astype(np.int64, copy=False) for v in values], axis=1) \
        if values else xp.zeros((0, 0), np.int64)


def route(comm: Comm, starts: np.ndarray, ids):
    """Send the global ids ``ids`` (of ``comm.xp``) to their owners: ``(got, order, counts,
    recv_counts)``, where ``got`` are the ids this process owns that others asked for
    (grouped by asker), ``order`` the permutation that grouped ``ids`` by owner and the
    counts both ways (NumPy: to send answers back, :func:`fetch`)."""
    xp = comm.xp
    if comm.size == 1:   # every id is this process's: nothing to group
        got, rcounts = comm.alltoallv(ids, np.array([ids.shape[0]], np.int64))
        return got, None, rcounts, rcounts
    owner = xp.searchsorted(xp.asarray(starts), ids, side="right") - 1
    # (a stable sort of small integers: NumPy's radix sort)
    order = stable_argsort(xp, owner.astype(np.int16 if comm.size < 2**15 else np.int64))
    # The counts by searches in the sorted owners, not a bincount: on a device its atomic
    # additions on P counters serialise.
    at = xp.searchsorted(owner[order], xp.arange(comm.size + 1, dtype=owner.dtype),
                         side="left")
    counts = np.diff(to_host(at)).astype(np.int64)
    got, rcounts = comm.alltoallv(xp.ascontiguousarray(ids[order]), counts)
    return got, order, counts, rcounts


def fetch(comm: Comm, starts: np.ndarray, ids, *arrays, seen=None) -> list:
    """``[a[ids] for a in arrays]`` where each ``a`` is a per-vertex array held in blocks
    (this process's part given): every id goes to its owner, which answers from its part.
    Collective: every process calls it (with its own ``ids``, possibly none). The answers are
    read before any caller changes its arrays, which is what pointer doubling needs. Ids of
    this process's own block are answered here: only the others travel (and are sorted).
    ``seen`` (flags of the block's vertices), when given, is set at every vertex of the
    block that some process asked for."""
    xp = comm.xp
    ids = ids.astype(np.int64, copy=False)
    lo, hi = int(starts[comm.rank]), int(starts[comm.rank + 1])
    out = xp.empty((ids.shape[0], len(arrays)), np.int64)
    if comm.size == 1:
        far = None
        near = ids - lo
    else:
        mine = (ids >= lo) & (ids < hi)
        at_home = xp.flatnonzero(mine)
        far = xp.flatnonzero(~mine)
        near = ids[at_home] - lo
        ids = ids[far]
    got, order, counts, rcounts = route(comm, starts, ids)
    if seen is not None:
        seen[got - lo] = True
        if far is not None:
            seen[near] = True
    reply = _as_rows(tuple(a[got - lo] for a in arrays), xp)
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
        vertices first (``0 .. n_local - 1``), then the distinct remote targets in id order
        (int32 while they fit: 4 bytes an edge).
    remote : int64 array
        The global ids of those remote targets.
    """

    def __init__(self, comm: Comm, starts: np.ndarray, targets) -> None:
        xp = comm.xp
        self.comm, self.xp = comm, xp
        lo, hi = int(starts[comm.rank]), int(starts[comm.rank + 1])
        self.n_local = hi - lo
        m = int(targets.shape[0])
        # A slice of edges at a time (edge_slices), so that the int64 temporaries take a
        # slice's memory beside the graph, not several copies of every edge: the distinct
        # remote targets of each slice, then of all of them; then each edge's place.
        parts = []
        for sl in edge_slices(m):
            t = targets[sl].astype(np.int64)
            parts.append(xp.unique(t[(t < lo) | (t >= hi)]))
            del t
        self.remote = xp.unique(xp.concatenate(parts)) if len(parts) > 1 else parts[0]
        del parts
        n_ext = self.n_local + self.remote.shape[0]
        self.target = xp.empty(m, np.int32 if n_ext < 2**31 else np.int64)
        for sl in edge_slices(m):
            t = targets[sl].astype(np.int64)
            far = (t < lo) | (t >= hi)
            self.target[sl] = xp.where(far, self.n_local + xp.searchsorted(self.remote, t),
                                       t - lo)
            del t, far
        # Built once: which of this block's vertices each other process wants, in the order
        # it wants them (its remote list is sorted by id, so grouped by owner).
        want, _, self.req_counts, self.want_counts = route(comm, starts, self.remote)
        self.want = want - lo

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
