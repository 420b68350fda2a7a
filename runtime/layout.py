"""Which process holds which ids of a graph spread over processes: runs of consecutive ids.

A distributed search (:mod:`statespace.dist.search`) numbers one run of consecutive
breadth-first ids a level on each process and keeps those states and their rows where they
were numbered; the cycle engine across processes (:mod:`ocm.dist`) reads the rows where they
are. Both need the same small table: process ``q`` holds a set of **runs** of consecutive
global vertex ids, stored one after the other in its own (local) numbering, in an order of
its choosing. A run's out-edges are consecutive in the one-process graph's CSR too (rows are
in id order there), so each vertex run is also a run of global edge ids, and the table holds
those as well. Blocks of consecutive ids, one per process, are the special case of one run a
process (:meth:`Layout.blocks`).

The table has one entry per non-empty run (a few hundred: depth times processes), the same on
every process (built from every process's runs, one ``allgather``). Lookups are a search of the
sorted run starts per id (:meth:`Layout.locate`), written over an array module ``xp`` so that
they run where the ids are (NumPy, or CuPy on a GPU: every search takes an array of values).

This module knows no model and no graph: only ids, counts and processes.

Examples
--------
>>> import numpy as np
>>> # process 0 holds ids 0..1 and 5..6, process 1 holds 2..4 (rows of 1 edge each)
>>> L = Layout.of_runs(1, [([0, 5], [2, 2], [2, 2]), ([2], [3], [3])])
>>> L.n, L.m, L.n_local, L.m_local
(7, 7, 3, 3)
>>> owner, local = L.locate(np.array([6, 3, 0]))
>>> owner.tolist(), local.tolist()
([0, 1, 0], [3, 1, 0])
>>> L.global_ids().tolist(), L.global_edges(np.array([0, 2])).tolist()
([2, 3, 4], [2, 4])
>>> [x.tolist() for x in L.locate_edges(np.array([6, 2]))]
[[0, 1], [3, 0]]
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

__all__ = ["Layout"]


class Layout:
    """The runs of every process (see the module docstring), seen from process ``rank``.

    Immutable: build one with :meth:`of_runs` or :meth:`blocks`; :meth:`restrict` gives the
    layout of a subset of the vertices. Host arrays, one entry per non-empty run, sorted by
    first id:

    Attributes
    ----------
    rank, size : int
        This process and the number of processes.
    n, m : int
        Vertices and edges of the whole graph.
    start : int64 array, shape (R + 1,)
        Each run's first global id, then ``n``.
    owner : int64 array, shape (R,)
        The process holding each run.
    first : int64 array, shape (R,)
        The local index of each run's first vertex in its owner's numbering.
    edge_start : int64 array, shape (R + 1,)
        The global id of each run's first edge, then ``m``.
    edge_first : int64 array, shape (R,)
        The local index of each run's first edge in its owner's numbering.
    n_local, m_local : int
        This process's vertices and edges.
    """

    def __init__(self, rank: int, size: int, start, length, owner, first, edges) -> None:
        start, length, owner, first, edges = (np.asarray(a, np.int64).reshape(-1)
                                              for a in (start, length, owner, first, edges))
        keep = np.flatnonzero(length > 0)
        order = keep[np.argsort(start[keep], kind="stable")]
        self.rank, self.size = int(rank), int(size)
        s, ln = start[order], length[order]
        if s.shape[0] and (s[0] != 0 or np.any(s[1:] != s[:-1] + ln[:-1])):
            raise ValueError("the runs must cover the ids 0 .. n - 1 once each")
        self.n = int(ln.sum())
        self.start = np.append(s, self.n)
        self.owner, self.first = owner[order], first[order]
        self.length = ln
        e = edges[order]
        self.m = int(e.sum())
        self.edge_start = np.concatenate([[0], np.cumsum(e)]).astype(np.int64)
        # Each run's first edge in its owner's numbering: the edges of the owner's runs
        # before it in its local order (the order of their first vertices there).
        self.edge_first = np.zeros(order.shape[0], np.int64)
        for q in np.unique(self.owner):
            at = np.flatnonzero(self.owner == q)
            by_local = at[np.argsort(self.first[at], kind="stable")]
            self.edge_first[by_local] = np.concatenate([[0], np.cumsum(e[by_local])[:-1]])
        # This process's runs in its local order.
        mine = np.flatnonzero(self.owner == self.rank)
        self.mine = mine[np.argsort(self.first[mine], kind="stable")]
        self.n_local = int(self.length[self.mine].sum())
        self.m_local = int(e[self.mine].sum())
        self.edge_length = e
        for a in (self.start, self.owner, self.first, self.length, self.edge_start,
                  self.edge_first, self.mine, self.edge_length):
            a.setflags(write=False)
        self._on: dict = {}
        # On the host, an id's run by a table per bucket of 2^shift ids (the run holding the
        # bucket's first id; about 64 buckets a run, so that most buckets hold no run's start)
        # and a step on where the id is past the next run's start: a gather and a comparison
        # per id, about 5 times faster than a binary search of the starts on the CPU.
        runs = max(int(self.owner.shape[0]), 1)
        self.shift = max(0, int(self.n // (64 * runs)).bit_length() - 1)
        self.bucket = (np.searchsorted(self.start[:-1], np.arange(0, self.n, 1 << self.shift,
                                                                    dtype=np.int64),
                                       side="right") - 1).astype(np.int32)
        self.bucket.setflags(write=False)

    # ---------------------------------------------------------------- construction
    @classmethod
    def of_runs(cls, rank: int, runs: Sequence) -> "Layout":
        """The layout of every process's runs: ``runs[q] = (starts, lengths, edges)`` of
        process ``q``'s runs in its local order (first ids, vertex counts, edge counts)."""
        parts = [[np.asarray(x, np.int64).reshape(-1) for x in r] for r in runs]
        owner = [np.full(p[0].shape[0], q, np.int64) for q, p in enumerate(parts)]
        first = [np.concatenate([[0], np.cumsum(p[1])[:-1]]).astype(np.int64)
                 if p[1].shape[0] else np.zeros(0, np.int64) for p in parts]
        cat = np.concatenate
        return cls(rank, len(parts), cat([p[0] for p in parts]), cat([p[1] for p in parts]),
                   cat(owner), cat(first), cat([p[2] for p in parts]))

    @classmethod
    def gather(cls, comm: Any, starts, lengths, edges) -> "Layout":
        """:meth:`of_runs` of this process's runs and the others', by one ``allgather``
        (collective). Host arrays."""
        mine = tuple(np.asarray(a, np.int64).reshape(-1) for a in (starts, lengths, edges))
        return cls.of_runs(comm.rank, comm.allgather(mine))

    @classmethod
    def blocks(cls, indptr, rank: int, size: int) -> "Layout":
        """Blocks of consecutive ids, ``q * n // size`` the first of process ``q``'s, of
        the graph with CSR offsets ``indptr`` (host).

        >>> Layout.blocks(np.array([0, 2, 3, 3]), 1, 2).start.tolist()
        [0, 1, 3]
        """
        indptr = np.asarray(indptr, np.int64)
        n = indptr.shape[0] - 1
        b = (np.arange(size + 1, dtype=np.int64) * n) // size
        return cls(rank, size, b[:-1], np.diff(b), np.arange(size), np.zeros(size, np.int64),
                   indptr[b[1:]] - indptr[b[:-1]])

    def runs_of(self, q: int) -> tuple:
        """Process ``q``'s runs in its local order: ``(starts, lengths, edges)``."""
        at = np.flatnonzero(self.owner == q)
        at = at[np.argsort(self.first[at], kind="stable")]
        return self.start[at], self.length[at], self.edge_length[at]

    def restrict(self, comm: Any, kept, kept_edges) -> "Layout":
        """The layout of a subset of the vertices renumbered in id order (a kept vertex's new
        id is the number of kept vertices of lower id), each process keeping its own in its
        local order: ``kept[j]``, ``kept_edges[j]`` are the vertices and edges kept of this
        process's ``j``-th run in local order (:attr:`mine`). One ``allgather``.

        >>> from runtime.comm import SelfComm
        >>> L = Layout.of_runs(0, [([3, 0], [2, 3], [4, 1])])
        >>> R = L.restrict(SelfComm(), [1, 2], [1, 1])
        >>> R.start.tolist(), R.first.tolist(), R.edge_start.tolist(), R.edge_first.tolist()
        ([0, 2, 3], [1, 0], [0, 1, 2], [1, 0])
        """
        got = comm.allgather((np.asarray(kept, np.int64).reshape(-1),
                              np.asarray(kept_edges, np.int64).reshape(-1)))
        k = np.zeros(self.owner.shape[0], np.int64)
        ke = np.zeros(self.owner.shape[0], np.int64)
        first = np.zeros(self.owner.shape[0], np.int64)
        for q, (kq, keq) in enumerate(got):
            at = np.flatnonzero(self.owner == q)
            at = at[np.argsort(self.first[at], kind="stable")]
            k[at], ke[at] = kq, keq
            first[at] = np.concatenate([[0], np.cumsum(kq)[:-1]]) if kq.shape[0] else kq
        new_start = np.concatenate([[0], np.cumsum(k)[:-1]]) if k.shape[0] else k
        return Layout(self.rank, self.size, new_start, k, self.owner, first, ke)

    # ---------------------------------------------------------------- lookups
    @property
    def single(self) -> bool:
        """True when this process's ids are one run from local index 0 and no other process
        holds any (one process): ids are their own local indices."""
        return self.size == 1 and self.mine.shape[0] <= 1

    def tables(self, xp: Any = np) -> dict:
        """The run tables as arrays of ``xp`` (copied to a device once, then kept)."""
        name = getattr(xp, "__name__", str(id(xp)))
        got = self._on.get(name)
        if got is None:
            mine = self.mine
            got = {k: xp.asarray(v) for k, v in (
                ("start", self.start[:-1]), ("owner", self.owner),
                ("shift", self.first - self.start[:-1]),
                ("own_start", self.start[mine]), ("own_first", self.first[mine]),
                ("own_edge_start", self.edge_start[mine]),
                ("own_edge_first", self.edge_first[mine]))}
            self._on[name] = got
        return got

    def run_of(self, ids, xp: Any = np):
        """The run (an index of :attr:`start`) holding each global vertex id (int64 ids of
        ``xp``): a search of the runs' first ids on a device; on the host the bucket table
        and a step on while an id is past its run (few steps, on fewer and fewer ids)."""
        if xp is not np:
            return xp.searchsorted(self.tables(xp)["start"], ids, side="right") - 1
        r = self.bucket[ids >> self.shift]
        start = self.start
        move = np.flatnonzero(ids >= start[r + 1])   # (start[R] = n: no id passes the last)
        while move.shape[0]:
            r[move] += 1
            move = move[ids[move] >= start[r[move] + 1]]
        return r

    def locate(self, ids, xp: Any = np) -> tuple:
        """``(owner, local)`` of global vertex ids (int64 arrays of ``xp``): the process
        holding each and its index in that process's numbering."""
        ids = ids.astype(np.int64, copy=False)
        if self.single:
            return xp.zeros(ids.shape[0], np.int64), ids
        t = self.tables(xp)
        r = self.run_of(ids, xp)
        # (a run's places are its ids shifted by one amount: first - start)
        return t["owner"][r], t["shift"][r] + ids

    def owner_of(self, ids, xp: Any = np):
        """The process holding each global vertex id (a run's search and one gather per id:
        cheaper than :meth:`locate` where the places are not needed)."""
        if self.single:
            return xp.zeros(ids.shape[0], np.int64)
        return self.tables(xp)["owner"][self.run_of(ids.astype(np.int64, copy=False), xp)]

    def local(self, ids, xp: Any = np):
        """The local indices of global ids that this process holds."""
        return self.locate(ids, xp)[1]

    def to_global(self, local, xp: Any = np):
        """The global ids of this process's vertices at local indices ``local``."""
        local = local.astype(np.int64, copy=False)
        if self.single:
            return local
        t = self.tables(xp)
        r = xp.searchsorted(t["own_first"], local, side="right") - 1
        return t["own_start"][r] + (local - t["own_first"][r])

    def global_ids(self, xp: Any = np):
        """The global id of each of this process's vertices, in local order (int64)."""
        return self.to_global(xp.arange(self.n_local, dtype=np.int64), xp)

    def global_edges(self, local, xp: Any = np):
        """The global ids of this process's edges at local indices ``local`` (int64). A run
        without edges shares its first edge with the next run of the process: the search
        takes the last run starting at or before each edge, the one holding it."""
        local = local.astype(np.int64, copy=False)
        t = self.tables(xp)
        r = xp.searchsorted(t["own_edge_first"], local, side="right") - 1
        return t["own_edge_start"][r] + (local - t["own_edge_first"][r])

    def locate_edges(self, edges) -> tuple:
        """``(owner, local)`` of global edge ids (host): the process holding each edge and
        its index in that process's numbering. (A run without edges starts where the next
        run's edges start: the search takes the last run starting at or before each edge.)"""
        edges = np.asarray(edges, np.int64)
        r = np.searchsorted(self.edge_start[:-1], edges, side="right") - 1
        return self.owner[r], self.edge_first[r] + (edges - self.edge_start[r])

    def __repr__(self) -> str:
        return (f"Layout(rank={self.rank}, size={self.size}, n={self.n}, m={self.m}, "
                f"runs={self.owner.shape[0]})")
