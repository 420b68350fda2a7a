"""The restricted graph of a graph held in blocks: the edges inside the kept components.

After trimming (and, with ``per_scc``, the SCC colouring) of :mod:`ocm.dist.components`,
every vertex has a label (-1: dropped); Howard's iteration runs on the edges whose ends share
a label. :class:`Restricted` is this process's share of that graph: the kept vertices are
renumbered in id order (each run of the block's layout keeps its kept vertices: one
``allgather`` of the kept counts per run), so the restricted graph is again held in runs,
where its vertices were, and its ids are those of the one-process restriction.

Examples
--------
Vertex 2 only reaches the cycle 0 <-> 1; labelled -1, it and its edge are dropped:

>>> import numpy as np
>>> from runtime.comm import SelfComm
>>> from ocm.dist import split_graph
>>> from ocm.dist.block import Halo
>>> b = split_graph(np.array([0, 1, 2, 3]), np.array([1, 0, 0]), np.array([4, 5, 6]),
...                 None, 0, 1)
>>> comm = SelfComm()
>>> R = Restricted(b, comm, Halo(comm, b.layout, b.indices), np.array([1, 1, -1]), b.cost)
>>> R.k, R.indptr.tolist(), R.cost.tolist(), R.targets(np.array([0, 1])).tolist()
(2, [0, 1, 2], [4, 5], [1, 0])
>>> R.copied, R.vertices(np.array([1])).tolist()
(True, [1])
"""

from __future__ import annotations

import numpy as np

from runtime.comm import Comm
from runtime.device import to_host

from .. import primitives as P
from .block import GraphBlock, Halo
from .collective import fetch_parts
from .ops import edge_groups, edge_slices, group_rows, row_counts

__all__ = ["Restricted"]


class Restricted:
    """The block's share of the restricted graph: the edges whose ends share a ``label``
    (-1: dropped), the vertices keeping an edge renumbered in id order, each process keeping
    its own in its local order (:meth:`runtime.layout.Layout.restrict`: the runs of the
    block's layout with the kept counts), so that the restricted graph's ids are those of
    the one-process restriction.

    Built a group of rows at a time (flags, then int32 edge ids and targets: no int64 per
    edge). Its targets are kept only as its halo's index (:meth:`targets` reads the global
    ids back from it), not beside it as global ids too; which original edge a restricted
    edge is, is not kept either (4 bytes an edge through Howard) but found again, for the
    critical cycle's few edges, from the labels (:meth:`original_edges`)."""

    def __init__(self, block: GraphBlock, comm: Comm, halo: Halo, label,
                 work_cost) -> None:
        xp = self.xp = comm.xp
        self.block, self.label = block, label
        lay = block.layout
        label_ext = halo.pull(label)[0]
        keep = xp.empty(block.m_local, dtype=bool)
        for rows, sl in edge_groups(block.indptr, xp):
            lu = label[group_rows(block.indptr, rows, sl, xp)]
            keep[sl] = (lu >= 0) & (lu == label_ext[halo.target[sl]])
            del lu
        del label_ext
        deg = row_counts(block.indptr, lambda rows, e: keep[e], xp)
        kept = xp.flatnonzero(deg > 0)
        k_local = int(kept.shape[0])
        indptr = xp.concatenate([xp.zeros(1, np.int64), xp.cumsum(deg[kept])]).astype(np.int64)
        del deg
        # Per run of the block (local order) the kept vertices and edges: searches of the
        # runs' local bounds among the kept vertices, and their offsets.
        bounds = np.concatenate([[0], np.cumsum(lay.length[lay.mine])]).astype(np.int64)
        at = xp.searchsorted(kept, xp.asarray(bounds), side="left")
        self.layout = lay.restrict(comm, np.diff(to_host(at)), np.diff(to_host(indptr[at])))
        del at
        self.k = self.layout.n
        self.n_local = k_local
        newid = xp.full(block.n_local, -1, dtype=np.int64)
        newid[kept] = self.layout.global_ids(xp)            # restricted ids, local order
        # (each kept vertex's original row, int32 while rows fit: global ids when needed)
        self.rows = kept.astype(np.int32 if block.n_local < 2**31 else np.int64)
        del kept
        n_keep = int(xp.count_nonzero(keep))
        if comm.allreduce(int(n_keep == keep.shape[0] and k_local == block.n_local), "min"):
            # Nothing dropped anywhere: the block itself (no copy of its edges; its halo).
            self.copied, self.label = False, None
            self.indptr = block.indptr
            self.cost, self.time, self.halo = work_cost, block.time, halo
            return
        # Block-local original edges and targets narrow while they fit (4 bytes an edge).
        self.copied = True
        edges = xp.empty(n_keep, np.int32 if keep.shape[0] < 2**31 else np.int64)
        at = 0
        for sl in edge_slices(block.m_local):
            e = xp.flatnonzero(keep[sl])
            edges[at:at + e.shape[0]] = (e + sl.start).astype(edges.dtype)
            at += e.shape[0]
            del e
        keep = None
        self.indptr = indptr
        del indptr
        newid_ext = halo.pull(newid)[0]
        del newid
        indices = xp.empty(n_keep, np.int32 if self.k < 2**31 else np.int64)
        for sl in edge_slices(n_keep):
            indices[sl] = newid_ext[halo.target[edges[sl]]].astype(indices.dtype)
        del newid_ext
        self.cost = P.subset(work_cost, edges)
        self.time = P.subset(block.time, edges)
        del edges
        self.halo = Halo(comm, self.layout, indices)

    def vertices(self, local):
        """The global original ids of restricted vertices ``local`` (block-local)."""
        return self.block.layout.to_global(self.rows[local], self.xp)

    def targets(self, local):
        """The global (restricted) targets of restricted edges ``local``, int64: read from the
        halo's index (the block's own vertices first, in local order, then the remote
        targets in the halo's order)."""
        xp = self.xp
        t = self.halo.target[local].astype(np.int64)
        out = xp.empty(t.shape[0], np.int64)
        far = xp.flatnonzero(t >= self.n_local)
        near = xp.flatnonzero(t < self.n_local)
        out[near] = self.layout.to_global(t[near], xp)
        out[far] = self.halo.remote[t[far] - self.n_local]
        return out

    def original_edges(self, comm: Comm, local):
        """The block-local original ids of restricted edges ``local`` (a few: the critical
        cycle's), found again from the labels: restricted edge ``j`` of a row is the row's
        ``j``-th original edge whose target has the row's label (the targets' labels by one
        :func:`~ocm.dist.collective.fetch_parts`, on the host). Collective: every process
        calls it once."""
        if not self.copied:
            return local
        xp, blk = self.xp, self.block
        rows = xp.searchsorted(self.indptr, local.astype(np.int64), side="right") - 1
        j = to_host(local - self.indptr[rows]).astype(np.int64)
        orig = self.rows[rows].astype(np.int64)
        e_lo, e_hi = to_host(blk.indptr[orig]), to_host(blk.indptr[orig + 1])
        cand = np.concatenate([np.zeros(0, np.int64)] +
                              [np.arange(a, b, dtype=np.int64) for a, b in zip(e_lo, e_hi)])
        owner = np.repeat(np.arange(e_lo.shape[0]), e_hi - e_lo)
        got = fetch_parts(comm, blk.layout, blk.indices[xp.asarray(cand)].astype(np.int64),
                     self.label)[0]
        lu = to_host(self.label[orig])[owner]
        kept = np.flatnonzero((lu >= 0) & (to_host(got) == lu))
        first = np.searchsorted(owner[kept], np.arange(e_lo.shape[0]))
        return xp.asarray(cand[kept[first + j]])
