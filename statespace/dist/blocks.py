"""The graph of a distributed search left in blocks, and the few runs process 0 shows.

:func:`hand_over_blocks` is the hand-over (:mod:`statespace.dist.handover`) that gathers
nothing: process ``q`` of ``P`` receives, by one ``alltoallv`` per array, the CSR rows and
the states of the ids ``starts[q] .. starts[q + 1] - 1``, blocks of consecutive ids balanced
by states (``starts[q] = q * n // P``, which every process computes from ``n``). That is
what the cycle engine across processes (``ocm.dist``) reads; no process holds the whole
graph.

What a report shows of the graph is a few runs: the critical cycle, the shortest run to it,
the runs to the first deadlock and to the error state. :func:`witness_graph` gathers to
process 0 what those runs read (the rows and states of their states, found by following the
breadth-first parents across the blocks, one ``allgather`` per step) and makes a
:class:`~statespace.StateGraph` of it: the offsets of every state (8 bytes a state, so that
edge ids keep their meaning), the deadlocks' ids, and of the other arrays only the entries
gathered (:class:`Entries`); reading any other entry is an error that says so.

Examples
--------
>>> from dve import load_model
>>> from runtime.comm import SelfComm
>>> from statespace.dist import explore_distributed
>>> m = load_model("process P { state a, b, c; init a; trans a -> b { cost 2; }, "
...                "b -> c {}, c -> b { cost 4; }; } system async;")
>>> b = explore_distributed(m, SelfComm(), handover=hand_over_blocks)
>>> b.n, b.m, b.indptr.tolist(), b.targets.tolist(), b.lo, b.hi
(3, 3, [0, 1, 2, 3], [1, 2, 1], 0, 3)
>>> g = witness_graph(b, SelfComm(), [1, 2])
>>> g.n_states, g.n_edges, int(g.peek("indices", 2)), g.peek("states", 2).tolist()
(3, 3, 1, [2])
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from runtime.arrays import count_values, module_of, stable_argsort
from runtime.comm import Comm
from runtime.device import device_free_bytes, to_host

from ..graph import Palette, StateGraph, derived, lazy_graph
from .handover import Share, agree_palette, constant_palette, hand_over

__all__ = ["StateBlock", "Entries", "hand_over_blocks", "hand_over_auto", "gather_fits",
           "GATHER_BYTES_PER_EDGE", "HANDOVER_SLICE", "witness_graph", "block_bounds",
           "GatheredGraphError"]


class GatheredGraphError(LookupError):
    """An entry of a graph's array that was not gathered to process 0 was read (see
    :func:`witness_graph`)."""


def block_bounds(n: int, size: int) -> np.ndarray:
    """The first id of every process's block, then ``n``: ``q * n // size``.

    >>> block_bounds(7, 3).tolist()
    [0, 2, 4, 7]
    """
    return (np.arange(size + 1, dtype=np.int64) * n) // size


@dataclass(frozen=True, eq=False)
class StateBlock:
    """One process's block of the explored graph: the states ``lo .. hi - 1``.

    Attributes
    ----------
    n, m, depth, error_id : int
        The whole graph's states, edges, breadth-first depth and error state (-1: none).
    starts : int64 array, shape (P + 1,)
        :func:`block_bounds`.
    rank : int
    edge_base : int
        Global id of the block's first edge.
    indptr : int64 array, shape (hi - lo + 1,)
        The block's offsets, from 0.
    targets : int array
        Global target ids of the block's edges (rows sorted by (target, action)), as the
        search gave them (int32 while ids fit).
    actions : int32 array
    charge : int array
        Each edge's row of ``palette`` (numbered as the one-process explorer numbers it).
        These four are of the search's array module: on its GPU after a search on one.
    palette : statespace.graph.Palette
    states, parent, parent_action : arrays
        Of the block's states.
    deadlocks : int64 array
        Global ids of the block's deadlocks (the error state excluded).
    action_codes : array or None
        ``system sync``: the code of each step id (the same on every process).
    model : CompiledModel
    error_successors : bool
    seconds : float
        The search's wall time up to the hand-over's end.
    """

    n: int
    m: int
    depth: int
    error_id: int
    starts: np.ndarray
    rank: int
    edge_base: int
    indptr: np.ndarray
    targets: np.ndarray
    actions: np.ndarray
    charge: np.ndarray
    palette: Palette
    states: np.ndarray
    parent: np.ndarray
    parent_action: np.ndarray
    deadlocks: np.ndarray
    action_codes: Any
    model: Any
    error_successors: bool
    seconds: float

    @property
    def lo(self) -> int:
        return int(self.starts[self.rank])

    @property
    def hi(self) -> int:
        return int(self.starts[self.rank + 1])

    def costs(self, resource: str):
        """Each edge's cost of ``resource`` (int64, in the rows' array module)."""
        return _per_edge(self.palette.costs[resource], self.charge)

    def times(self):
        """Each edge's time (int64, in the rows' array module)."""
        return _per_edge(self.palette.time, self.charge)


def _per_edge(column: np.ndarray, charge):
    """A palette column read per edge, where the edges' rows are (host or device)."""
    xp = module_of(charge)
    return (column if xp is np else xp.asarray(column))[charge]


def _to_owners(comm: Comm, xp, dest, *arrays) -> list:
    """Each array's rows (of ``xp``) sent to ``dest`` (one process per row): what this process
    received, grouped by sender, and the counts received (NumPy)."""
    order = stable_argsort(xp, dest)
    counts = to_host(count_values(xp, dest, comm.size)).astype(np.int64)
    out, rc = [], None
    for a in arrays:
        got, rc = comm.alltoallv(xp.ascontiguousarray(a[order]), counts, rc)
        out.append(got)
    return out + [rc]


#: Edges a process sends per round of the block hand-over (:func:`_move_rows`): what the
#: hand-over takes beyond the rows themselves is about 40 bytes per edge of a round (its
#: owners, their order, the copies sent and received, the places), so a round of 2^25 edges
#: takes about 1.3 GB, whatever the graph's size.
HANDOVER_SLICE = 2**25


def _move_rows(comm: Comm, xp, starts: np.ndarray, lo: int, hi: int, row_ids, deg,
               edges: list):
    """CSR rows (sources ``row_ids`` with out-degrees ``deg``, each row's edges together and
    in order in every array of ``edges``) moved to the owner of their source and put in id
    order there: ``(indptr, arrays)`` of this process's block ``lo .. hi - 1``.

    The rows' ids and degrees go first (one exchange: a few bytes a state); each receiver
    then knows where every row it will get goes. The edges follow in rounds of at most
    :data:`HANDOVER_SLICE` edges a process, cut at row ends: a round sends each process the
    rows of the round that it owns, in the sender's order (the order of the first exchange,
    so the receiver's row cursor per sender says whose edges came), and the receiver writes
    them to their places in the preallocated arrays. A round's temporaries are bounded: no
    copy of every edge is sent and received at once. Collective: the processes agree on the
    rounds by an ``allreduce`` of the rows left.

    >>> from runtime.comm import SelfComm
    >>> ptr, (tgt,) = _move_rows(SelfComm(), np, np.array([0, 2]), 0, 2, np.array([1, 0]),
    ...                          np.array([1, 2]), [np.array([7, 8, 9])])
    >>> ptr.tolist(), tgt.tolist()
    ([0, 2, 3], [8, 9, 7])
    """
    P = comm.size
    rid = row_ids.astype(np.int64)
    deg = deg.astype(np.int64)
    rdest = xp.searchsorted(xp.asarray(starts), rid, side="right") - 1
    got_rid, got_deg, row_counts = _to_owners(comm, xp, rdest, rid, deg)
    k = hi - lo
    out_deg = xp.zeros(k, np.int64)
    out_deg[got_rid - lo] = got_deg
    indptr = xp.zeros(k + 1, np.int64)
    indptr[1:] = xp.cumsum(out_deg)
    del out_deg
    first = indptr[got_rid - lo]        # where each received row's first edge goes
    del got_rid
    out = [xp.empty(int(indptr[-1]), a.dtype) for a in edges]
    ends = xp.cumsum(deg)               # each sent row's end among this process's edges
    n_rows = int(rid.shape[0])
    del rid
    at = np.concatenate([[0], np.cumsum(row_counts)[:-1]]).astype(np.int64)  # by sender
    a, e0 = 0, 0
    while comm.allreduce(n_rows - a, "max") > 0:
        # This round's rows a .. b - 1: whole rows, at least one, at most HANDOVER_SLICE
        # edges unless one row alone has more.
        b = a
        if a < n_rows:
            # (CuPy searches for arrays of values only, not a scalar)
            b = int(xp.searchsorted(ends, xp.asarray(np.array([e0 + HANDOVER_SLICE])),
                                    side="right")[0])
            b = min(n_rows, max(b, a + 1))
        e1 = int(ends[b - 1]) if b > a else e0
        rd = rdest[a:b]
        # Each edge's owner: its row's, found among the round's row ends.
        row_of = xp.searchsorted(ends[a:b], xp.arange(e0, e1, dtype=np.int64), side="right")
        edest = rd[row_of]
        del row_of
        rows_to = to_host(count_values(xp, rd, P)).astype(np.int64)
        rows_from = comm.allgather(rows_to.tolist())          # (P counts a process)
        nr = np.array([rows_from[q][comm.rank] for q in range(P)], np.int64)
        got = _to_owners(comm, xp, edest, *(x[e0:e1] for x in edges))
        del edest
        got = got[:-1]
        # The received rows: from each sender, the next nr[q] of its rows (in its order).
        idx = xp.concatenate([xp.arange(at[q], at[q] + nr[q], dtype=np.int64)
                              for q in range(P)])
        at += nr
        if idx.shape[0]:
            d = got_deg[idx]
            r_end = xp.cumsum(d)
            shift = first[idx] - (r_end - d)
            del d
            j = xp.arange(int(got[0].shape[0]), dtype=np.int64)
            spot = shift[xp.searchsorted(r_end, j, side="right")] + j
            del j, r_end, shift
            for src, dst in zip(got, out):
                dst[spot] = src
            del spot
        del got, idx
        a, e0 = b, e1
    return indptr, out


def hand_over_blocks(share: Share, comm: Comm, cm, *, charge_table,
                     error_successors: bool = False, action_codes=None,
                     t0: float | None = None) -> StateBlock:
    """The hand-over that leaves the graph in blocks (see the module docstring): this
    process's :class:`StateBlock`, on every process. Same parameters as
    :func:`~statespace.dist.handover.hand_over`. The rows stay in the search's array module
    (a search on a device keeps them on its GPU, exchanged by the communicator's own
    transport: NCCL); the states, parents and parent actions, which the runs shown read a
    few of, come to the host."""
    h = to_host
    xp = share.xp
    n = share.n
    size, rank = comm.size, comm.rank
    host = getattr(comm, "mpi", comm) if comm.xp is not np else comm   # NumPy exchanges
    starts = block_bounds(n, size)
    lo, hi = int(starts[rank]), int(starts[rank + 1])
    if charge_table is None:
        table, charge = agree_palette(share, comm, len(cm.resources) + 1)
    else:
        table, charge = None, None
    # States, parents and parent actions to their block's owner, on the host.
    own = h(share.own_ids).astype(np.int64)
    dest = np.searchsorted(starts, own, side="right") - 1
    ids, states, parent, par_action, _ = _to_owners(
        host, np, dest, own, h(share.states), h(share.parent).astype(np.int64),
        h(share.parent_action).astype(np.int32))
    place = np.empty(ids.shape[0], np.int64)
    place[ids - lo] = np.arange(ids.shape[0])
    states, parent, par_action = states[place], parent[place], par_action[place]
    # Whole rows to their source's owner: the rows (ids, degrees), then the edges in slices
    # (_move_rows), in the search's array module.
    # (a search on the host under NCCL exchanges its rows over MPI)
    ex = comm if xp is not np or comm.xp is np else host
    # (the search's rows stay whole until the hand-over ends: a round's slices are views)
    edges = [share.targets, share.actions.astype(np.int32, copy=False)]
    if charge is not None:
        edges.append(charge)
    indptr, placed = _move_rows(ex, xp, starts, lo, hi, share.row_ids, share.deg, edges)
    del edges, charge
    m_local = int(indptr[-1])
    targets, actions = placed[0], placed[1]
    if charge_table is not None:
        table, charge = constant_palette(cm, xp, actions, targets, share.error_id,
                                         charge_table)
    else:
        charge = placed[2]
    kres = len(cm.resources)
    palette = Palette({r: np.ascontiguousarray(table[:, j]) for j, r in enumerate(cm.resources)},
                      np.ascontiguousarray(table[:, kres]))
    dead = lo + np.flatnonzero(h(indptr[1:] - indptr[:-1]) == 0)
    if share.error_id >= 0:
        dead = dead[dead != share.error_id]
    m = comm.allreduce(m_local)
    return StateBlock(n=n, m=int(m), depth=share.depth, error_id=share.error_id, starts=starts,
                      rank=rank, edge_base=comm.exscan(m_local), indptr=indptr,
                      targets=targets, actions=actions, charge=charge, palette=palette,
                      states=states, parent=parent, parent_action=par_action,
                      deadlocks=dead.astype(np.int64), action_codes=action_codes, model=cm,
                      error_successors=error_successors,
                      seconds=0.0 if t0 is None else _time.perf_counter() - t0)


#: Bytes of the first GPU per transition that the gathered graph and the one-GPU engine take
#: at their peak (cs_15 gathered on the first of two H200s: 140 GB for 3.25 G transitions,
#: 43, with its share of the search).
GATHER_BYTES_PER_EDGE = 48


def gather_fits(comm: Comm, xp, m: int, budget: int | None = None) -> bool:
    """Whether a graph of ``m`` transitions gathered to process 0 fits its device: ``m`` times
    :data:`GATHER_BYTES_PER_EDGE` within ``budget`` (default: what process 0's device can
    still allocate; a search on the host always fits: its memory is watched by the search's
    own limits). The same answer on every process. Collective."""
    if budget is None:
        budget = comm.allgather(device_free_bytes(xp) if comm.rank == 0 else None)[0]
    return budget is None or m * GATHER_BYTES_PER_EDGE <= budget


def hand_over_auto(share: Share, comm: Comm, cm, *, budget: int | None = None, **options):
    """The gathering hand-over (:func:`statespace.dist.handover.hand_over`) where the graph
    fits process 0's device (:func:`gather_fits`), else the block hand-over
    (:func:`hand_over_blocks`): a :class:`~statespace.StateGraph` on process 0 (None
    elsewhere) or every process's :class:`StateBlock`. Same parameters, and ``budget`` (bytes;
    default: process 0's device's free memory)."""
    m = comm.allreduce(int(share.targets.shape[0]))
    if gather_fits(comm, share.xp, m, budget):
        return hand_over(share, comm, cm, **options)
    return hand_over_blocks(share, comm, cm, **options)


class Entries:
    """Some entries of an array too large to gather (``shape`` its whole shape): reading a
    gathered entry (an int, a slice of gathered entries, an array of them) gives it; any
    other read raises :class:`GatheredGraphError`.

    >>> e = Entries((10,), np.array([3, 4]), np.array([30, 40]))
    >>> int(e[3]), e[3:5].tolist(), e.shape
    (30, [30, 40], (10,))
    """

    def __init__(self, shape: tuple, index: np.ndarray, values: np.ndarray) -> None:
        order = np.argsort(index, kind="stable")
        self.shape = tuple(shape)
        self.index = np.asarray(index, np.int64)[order]
        self.values = np.asarray(values)[order]
        self.dtype = self.values.dtype
        self.ndim = len(self.shape)

    def _at(self, i: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.index, i)
        pos = np.minimum(pos, max(self.index.shape[0] - 1, 0))
        if self.index.shape[0] == 0 or not np.array_equal(self.index[pos], i):
            raise GatheredGraphError("this graph is held in blocks across processes; only "
                                     "the entries of the runs shown were gathered")
        return pos

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self.values[self._at(np.arange(*key.indices(self.shape[0])))]
        if isinstance(key, (int, np.integer)):
            return self.values[int(self._at(np.array([int(key)]))[0])]
        return self.values[self._at(np.asarray(key, np.int64))]

    def get(self):
        raise GatheredGraphError("this graph is held in blocks across processes: its arrays "
                                 "were not gathered (run with DVECOST_DIST_ENGINE=gather)")

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes)


def _chains(block: StateBlock, comm: Comm, ends: list[int]) -> set:
    """Every state on the breadth-first tree's paths from the initial state to ``ends``,
    their parents followed across the blocks (one ``allgather`` per step)."""
    seen, now = set(), {int(v) for v in ends if v >= 0}
    lo, hi = block.lo, block.hi
    while comm.allreduce(len(now), "max"):
        seen |= now
        mine = [(v, int(block.parent[v - lo])) for v in sorted(now) if lo <= v < hi]
        nxt = {p for part in comm.allgather(mine) for _, p in part}
        now = {p for p in nxt if p >= 0 and p not in seen}
    return seen


def witness_graph(block: StateBlock, comm: Comm, edges: Sequence[int]) -> StateGraph | None:
    """What the runs shown of ``edges`` read, gathered to process 0 as a
    :class:`~statespace.StateGraph` (see the module docstring); None elsewhere. Collective.

    The runs: the edges' own (the critical cycle, or a zero-time cycle), the shortest run
    to the smallest of their sources, to the first deadlock and to the error state."""
    lo, hi = block.lo, block.hi
    ip = to_host(block.indptr)
    xp = module_of(block.targets)
    # Offsets of every state and the deadlocks, to process 0 (8 bytes a state).
    to0 = np.zeros(comm.size, np.int64)
    to0[0] = hi - lo
    deg, _ = comm.alltoallv(np.diff(ip), to0)
    to0[0] = block.deadlocks.shape[0]
    dead, _ = comm.alltoallv(block.deadlocks, to0)
    first_dead = comm.allreduce(int(block.deadlocks[0]) if block.deadlocks.shape[0]
                                else block.n, "min")
    # The sources of the edges (their owners find them) and the runs' states.
    edges = np.asarray(edges, np.int64)
    eb = block.edge_base
    mine = edges[(edges >= eb) & (edges < eb + ip[-1])]
    src = lo + np.searchsorted(ip, mine - eb, side="right") - 1
    sources = sorted({int(s) for part in comm.allgather(src.tolist()) for s in part})
    ends = [sources[0] if sources else -1, first_dead if first_dead < block.n else -1,
            block.error_id, 0]
    need = _chains(block, comm, ends) | set(sources)
    # The rows of those states and their targets' states.
    mine_v = np.array(sorted(v for v in need if lo <= v < hi), np.int64)
    rows = [(int(v), ip[v - lo], ip[v - lo + 1]) for v in mine_v.tolist()]
    e_ids = np.concatenate([np.arange(a, b, dtype=np.int64) for _, a, b in rows]) \
        if rows else np.zeros(0, np.int64)
    d_ids = e_ids if xp is np else xp.asarray(e_ids)
    tg_e, ac_e, ch_e = (to_host(a[d_ids]) for a in (block.targets, block.actions, block.charge))
    tg = set(tg_e.tolist())
    need_states = need | {int(t) for part in comm.allgather(sorted(tg)) for t in part}
    sv = np.array(sorted(v for v in need_states if lo <= v < hi), np.int64)
    piece = (sv, block.states[sv - lo], block.parent[sv - lo], block.parent_action[sv - lo],
             e_ids + eb, tg_e, ac_e, ch_e)
    parts = comm.allgather(piece)
    if comm.rank != 0:
        return None
    j = [np.concatenate([p[i] for p in parts]) for i in range(8)]
    n, m = block.n, block.m
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    slots = block.states.shape[1]
    big = {"indices": Entries((m,), j[4], j[5]), "action": Entries((m,), j[4], j[6]),
           "charge": Entries((m,), j[4], j[7]), "costs": derived(), "time": derived(),
           "states": Entries((n, slots), j[0], j[1]),
           "parent": Entries((n,), j[0], j[2]), "parent_action": Entries((n,), j[0], j[3])}
    return lazy_graph(big, indptr=indptr, deadlocks=np.sort(dead).astype(np.int64),
                      error_state=block.error_id, depth=block.depth, complete=True,
                      error_successors=block.error_successors,
                      action_codes=block.action_codes, n_expanded=n, model=block.model,
                      name=block.model.name, seconds=block.seconds, on_device=None,
                      palette=block.palette)
