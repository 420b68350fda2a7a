"""The graph of a distributed search left where it was found, and the few runs process 0 shows.

:func:`hand_over_blocks` is the hand-over (:mod:`statespace.dist.handover`) that gathers
nothing and moves nothing: each process of the search numbered one run of consecutive
breadth-first ids a level, kept those states and expanded them, so its states and its CSR
rows are already in one order (its **local** order), a run of ids after another. The
hand-over makes that a :class:`StateBlock`: the rows' offsets from the out-degrees, and the
:class:`runtime.layout.Layout` of every process's runs (which process holds which ids and
edges), for which only the run tables travel (one ``allgather`` of a few numbers a run). That
is what the cycle engine across processes (``ocm.dist``) reads; no process holds the whole
graph, and no row or state crosses between processes.

What a report shows of the graph is a few runs: the critical cycle, the shortest run to it,
the runs to the first deadlock and to the error state. :func:`witness_graph` gathers to
process 0 what those runs read (the rows and states of their states, found by following the
breadth-first parents across the blocks, one ``allgather`` per step) and makes a
:class:`~statespace.StateGraph` of it whose arrays hold only the entries gathered
(:class:`Entries`), the offsets too: those of the rows held (a row's state's and the next
state's, in global edge ids, so that edge ids keep their meaning); reading any other entry is
an error that says so. Of the whole graph process 0 holds only counts, agreed by collectives
of a few numbers: the states and edges, the deadlocks' count and the first deadlock
(:func:`counts_graph` alone, for the report's counts before the engine's answer). Nothing
process 0 holds grows with the graph: only with the runs shown.

Examples
--------
>>> from dve import load_model
>>> from runtime.comm import SelfComm
>>> from statespace.dist import explore_distributed
>>> m = load_model("process P { state a, b, c; init a; trans a -> b { cost 2; }, "
...                "b -> c {}, c -> b { cost 4; }; } system async;")
>>> b = explore_distributed(m, SelfComm(), handover=hand_over_blocks)
>>> b.n, b.m, b.indptr.tolist(), b.targets.tolist(), b.layout.global_ids().tolist()
(3, 3, [0, 1, 2, 3], [1, 2, 1], [0, 1, 2])
>>> g = witness_graph(b, SelfComm(), [1, 2])
>>> g.n_states, g.n_edges, int(g.peek("indices", 2)), g.peek("states", 2).tolist()
(3, 3, 1, [2])
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from runtime.arrays import module_of
from runtime.comm import Comm
from runtime.device import device_free_bytes, synchronize, to_host
from runtime.guard import agreed
from runtime.layout import Layout

from ..graph import Palette, StateGraph, derived, lazy_graph
from .handover import Share, agree_palette, constant_palette, hand_over

__all__ = ["StateBlock", "Entries", "hand_over_blocks", "hand_over_auto", "gather_fits",
           "GATHER_BYTES_PER_EDGE", "witness_graph", "counts_graph", "share_runs",
           "GatheredGraphError"]


class GatheredGraphError(LookupError):
    """An entry of a graph's array that was not gathered to process 0 was read (see
    :func:`witness_graph`)."""


@dataclass(frozen=True, eq=False)
class StateBlock:
    """One process's share of the explored graph: the states of its runs of ids, in its
    local order (the search's: level by level, each level's run in id order).

    Attributes
    ----------
    n, m, depth, error_id : int
        The whole graph's states, edges, breadth-first depth and error state (-1: none).
    layout : runtime.layout.Layout
        Every process's runs of state ids and of edge ids, seen from this process.
    indptr : int64 array, shape (n_local + 1,)
        The block's offsets, from 0, its states in local order.
    targets : int array
        Global target ids of the block's edges (rows sorted by (target, action)), as the
        search gave them (int32 while ids fit).
    actions : int32 array
    charge : int array
        Each edge's row of ``palette`` (numbered as the one-process explorer numbers it).
        These four are of the search's array module: on its GPU after a search on one.
    palette : statespace.graph.Palette
    states, parent, parent_action : arrays
        Of the block's states, in local order, in the search's array module too (the runs
        shown read a few entries).
    deadlocks : int64 array
        Global ids of the block's deadlocks (the error state excluded), ascending.
    action_codes : array or None
        ``system sync``: the code of each step id (the same on every process).
    model : CompiledModel
    error_successors : bool
    seconds : float
        The search's wall time up to the hand-over's end.
    steps : tuple of (str, float)
        The hand-over's steps on this process and their wall seconds, in order (what
        ``DVECOST_DIST_TRACE`` shows).
    """

    n: int
    m: int
    depth: int
    error_id: int
    layout: Layout
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
    steps: tuple = ()

    @property
    def rank(self) -> int:
        return self.layout.rank

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


def share_runs(own_ids, indptr) -> tuple:
    """The runs of consecutive ids of a share's states (the states in the share's order, their
    rows' offsets ``indptr``; arrays of any module, found where they are):
    ``(starts, lengths, edges)`` on the host, each run as long as the ids go on by one
    (adjacent levels' runs of one process join), its edges the sum of its states' degrees.

    >>> [a.tolist() for a in share_runs(np.array([0, 4, 5, 6, 9]),
    ...                                 np.array([0, 2, 2, 3, 4, 7]))]
    [[0, 4, 9], [1, 3, 1], [2, 2, 3]]
    """
    xp = module_of(own_ids)
    n = int(own_ids.shape[0])
    if n == 0:
        return tuple(np.zeros(0, np.int64) for _ in range(3))
    own = own_ids.astype(np.int64, copy=False)
    cut = xp.flatnonzero(own[1:] != own[:-1] + 1).astype(np.int64) + 1
    first = xp.concatenate([xp.zeros(1, np.int64), cut])
    end = xp.concatenate([cut, xp.full(1, n, np.int64)])
    ptr = indptr.astype(np.int64, copy=False)
    return (to_host(own[first]).astype(np.int64), to_host(end - first).astype(np.int64),
            to_host(ptr[end] - ptr[first]).astype(np.int64))


def hand_over_blocks(share: Share, comm: Comm, cm, *, charge_table,
                     error_successors: bool = False, action_codes=None,
                     t0: float | None = None) -> StateBlock:
    """The hand-over that leaves the graph where the search left it (see the module
    docstring): this process's :class:`StateBlock`, on every process. Same parameters as
    :func:`~statespace.dist.handover.hand_over`. The rows stay in the search's array module
    (a search on a device keeps them on its GPU), and so do the states, parents and parent
    actions, of which the runs shown read a few. Collective: the run tables (one
    ``allgather``), the palette where charges are not constants, the counts."""
    xp = share.xp
    host = getattr(comm, "mpi", comm) if comm.xp is not np else comm   # NumPy exchanges
    steps, t = [], _time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        synchronize(xp)
        now = _time.perf_counter()
        steps.append((name, now - t))
        t = now

    # The search keeps a state's row where it numbered the state: the same ids in the same
    # order (a share that broke this would put rows under the wrong states). Checked where
    # the ids are (on a device: no copy of them to the host).
    # (a count of differences, not xp.all: on a fresh machine CuPy compiles each new
    # reduction, seconds for the first; the search has compiled the count already)
    own = share.own_ids
    if own.shape[0] != share.row_ids.shape[0] or int(xp.count_nonzero(share.row_ids != own)):
        raise AssertionError("the search's owned states and kept rows differ")
    lap("rows_check")
    if charge_table is None:
        table, charge = agree_palette(share, comm, len(cm.resources) + 1)
    else:
        table, charge = constant_palette(cm, xp, share.actions, share.targets,
                                         share.error_id, charge_table)
    lap("palette")
    indptr = xp.zeros(share.deg.shape[0] + 1, np.int64)
    indptr[1:] = xp.cumsum(share.deg.astype(np.int64, copy=False))
    lap("offsets")
    layout = Layout.gather(host, *share_runs(own, indptr))
    lap("layout")
    kres = len(cm.resources)
    palette = Palette({r: np.ascontiguousarray(table[:, j]) for j, r in enumerate(cm.resources)},
                      np.ascontiguousarray(table[:, kres]))
    dead = to_host(own[xp.flatnonzero(indptr[1:] == indptr[:-1])]).astype(np.int64)
    if share.error_id >= 0:
        dead = dead[dead != share.error_id]
    actions = share.actions.astype(np.int32, copy=False)
    lap("deadlocks")
    return StateBlock(n=share.n, m=layout.m, depth=share.depth, error_id=share.error_id,
                      layout=layout, indptr=indptr, targets=share.targets,
                      actions=actions, charge=charge, palette=palette, states=share.states,
                      parent=share.parent, parent_action=share.parent_action,
                      deadlocks=np.sort(dead).astype(np.int64), action_codes=action_codes,
                      model=cm, error_successors=error_successors,
                      seconds=0.0 if t0 is None else _time.perf_counter() - t0,
                      steps=tuple(steps))


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
    other read raises :class:`GatheredGraphError`, and so does making it a NumPy array
    (``np.asarray``), so that no reader takes the entries held for the whole array.

    Entries of a graph's offsets (``indptr``, ascending) also answer ``np.searchsorted(e,
    edges, side="right")`` for edges in rows held whole (both offsets of the row's state
    held): the edge's source plus one, what the whole offsets give (:meth:`searchsorted`).

    >>> e = Entries((10,), np.array([3, 4]), np.array([30, 40]))
    >>> int(e[3]), e[3:5].tolist(), e.shape, len(e)
    (30, [30, 40], (10,), 10)
    >>> int(np.searchsorted(e, 35, side="right"))   # edge 35 is in row 3: [30, 40)
    4
    """

    def __init__(self, shape: tuple, index: np.ndarray, values: np.ndarray) -> None:
        # An index given twice (the offsets of adjacent rows are) is held once; both must
        # give it one value.
        index, values = np.asarray(index, np.int64), np.asarray(values)
        held, first, back = np.unique(index, return_index=True, return_inverse=True)
        if held.shape[0] < index.shape[0] and not np.array_equal(values[first][back], values):
            raise ValueError("Entries: an index given twice with different values")
        self.shape = tuple(shape)
        self.index = held
        self.values = values[first]
        self.dtype = self.values.dtype
        self.ndim = len(self.shape)

    def _at(self, i: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.index, i)
        pos = np.minimum(pos, max(self.index.shape[0] - 1, 0))
        if self.index.shape[0] == 0 or not np.array_equal(self.index[pos], i):
            raise GatheredGraphError(_NOT_HELD)
        return pos

    def __getitem__(self, key):
        if isinstance(key, slice):
            return self.values[self._at(np.arange(*key.indices(self.shape[0])))]
        if isinstance(key, (int, np.integer)):
            return self.values[int(self._at(np.array([int(key)]))[0])]
        return self.values[self._at(np.asarray(key, np.int64))]

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, dtype=None, copy=None):
        raise GatheredGraphError(_NOT_HELD + " (the whole array was read)")

    def searchsorted(self, v, side: str = "left", sorter=None):
        """``np.searchsorted`` of the whole array, for these entries of a graph's offsets
        and ``side="right"`` only: for each edge id of ``v``, its row's state plus one,
        where that row's two offsets are held (its state's and the next state's); any
        other edge raises :class:`GatheredGraphError`. (The held offsets are ascending, so
        the last held one at or below an edge is its row's start when the row is held:
        the row's end, held too, is above the edge, and every held offset after it as
        well.)

        >>> e = Entries((6,), np.array([0, 1, 3, 4]), np.array([0, 2, 5, 5]))
        >>> np.searchsorted(e, [0, 1], side="right").tolist()
        [1, 1]
        >>> np.searchsorted(e, 5, side="right")
        Traceback (most recent call last):
        ...
        statespace.dist.blocks.GatheredGraphError: ... (edge 5 is in no row held)
        """
        if side != "right" or sorter is not None:
            raise ValueError("Entries.searchsorted: side='right' without a sorter only")
        e = np.asarray(v, np.int64)
        pos = np.searchsorted(self.values, e, side="right") - 1
        k = self.index.shape[0]
        ok = (pos >= 0) & (pos + 1 < k)
        p = np.where(ok, pos, 0)
        nxt = np.minimum(p + 1, max(k - 1, 0))
        ok &= (self.index[nxt] == self.index[p] + 1) & (e < self.values[nxt]) \
            if k else np.zeros(e.shape, bool)
        if not np.all(ok):
            bad = int(e.reshape(-1)[np.flatnonzero(~np.asarray(ok).reshape(-1))[0]])
            raise GatheredGraphError(f"{_NOT_HELD} (edge {bad} is in no row held)")
        return self.index[p] + 1

    def get(self):
        raise GatheredGraphError("this graph is held in blocks across processes: its arrays "
                                 "were not gathered (run with DVECOST_DIST_ENGINE=gather)")

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + self.index.nbytes)


_NOT_HELD = ("this graph is held in blocks across processes; only the entries of the runs "
             "shown were gathered")


def _chains(block: StateBlock, comm: Comm, ends: list[int]) -> set:
    """Every state on the breadth-first tree's paths from the initial state to ``ends``,
    their parents followed across the processes (one ``allgather`` per step)."""
    seen, now = set(), {int(v) for v in ends if v >= 0}
    L = block.layout
    while comm.allreduce(len(now), "max"):
        seen |= now
        v = np.array(sorted(now), np.int64)
        owner, local = L.locate(v)
        mine = owner == L.rank
        xp = module_of(block.parent)
        got = to_host(block.parent[xp.asarray(local[mine])]).tolist()
        nxt = {int(p) for part in comm.allgather(got) for p in part}
        now = {p for p in nxt if p >= 0 and p not in seen}
    return seen


def witness_graph(block: StateBlock, comm: Comm, edges: Sequence[int]) -> StateGraph | None:
    """What the runs shown of ``edges`` read, gathered to process 0 as a
    :class:`~statespace.StateGraph` (see the module docstring); None elsewhere. Collective.

    The runs: the edges' own (the critical cycle, or a zero-time cycle), the shortest run
    to the smallest of their sources, to the first deadlock and to the error state. Process
    0 holds the rows of those runs' states (their offsets, the row's state's and the next
    one's, and their edges) and the states of the rows' targets, and of the whole graph only
    its counts (:func:`counts_graph`'s). A failed allocation on any process is agreed by all
    (:func:`runtime.guard.agreed`)."""
    with agreed(comm, "witness", known=_counts(block)) as comm:
        return _witness(block, comm, edges)


def counts_graph(block: StateBlock, comm: Comm) -> StateGraph | None:
    """The whole graph's counts on process 0 (None elsewhere), as a
    :class:`~statespace.StateGraph` holding no entry of any array (reading one raises
    :class:`GatheredGraphError`): its states and edges, its deadlocks' count and first
    deadlock (``deadlocks[0]``, the one entry of ``deadlocks`` held), its error state and
    depth. Collective: one ``allgather`` of two numbers a process.

    >>> from dve import load_model
    >>> from runtime.comm import SelfComm
    >>> from statespace.dist import explore_distributed
    >>> m = load_model("process P { state a, b, c; init a; trans a -> b {}, a -> c {}; } "
    ...                "system async;")
    >>> g = counts_graph(explore_distributed(m, SelfComm(), handover=hand_over_blocks),
    ...                  SelfComm())
    >>> g.n_states, g.n_edges, g.n_deadlocks, int(g.deadlocks[0])
    (3, 2, 2, 1)
    """
    with agreed(comm, "counts", known=_counts(block)) as comm:
        dead = _deadlocks(block, comm)
        return None if comm.rank != 0 else _partial_graph(block, dead, [_pieces(block)])


def _counts(block: StateBlock) -> dict:
    """The counts an agreed failure reports: the graph's."""
    return {"states": block.n, "transitions": block.m}


def _deadlocks(block: StateBlock, comm: Comm) -> tuple[int, int]:
    """The number of deadlocks and the first one (``block.n`` where there is none), agreed
    by one ``allgather``."""
    d = block.deadlocks
    parts = comm.allgather((int(d.shape[0]), int(d[0]) if d.shape[0] else block.n))
    return sum(c for c, _ in parts), min(f for _, f in parts)


def _pieces(block: StateBlock, rows=None, offsets=None, states=None, edges=None) -> tuple:
    """What one process sends process 0 of the runs shown, on the host: ``(row states,
    their first offsets, their last offsets, state ids, their vectors, parents, parent
    actions, edge ids, their targets, actions, palette rows)``, each empty where not given
    (``offsets``: a pair, ``states``: ids and vectors, parents, parent actions; ``edges``:
    ids, targets, actions, rows)."""
    none = np.zeros(0, np.int64)
    slots = block.states.shape[1]
    offsets = offsets or (none, none)
    states = states or (none, np.zeros((0, slots), block.states.dtype), none,
                        np.zeros(0, np.int32))
    edges = edges or (none, np.zeros(0, block.targets.dtype), np.zeros(0, np.int32),
                      np.zeros(0, block.charge.dtype))
    return (none if rows is None else rows, *offsets, *states, *edges)


def _partial_graph(block: StateBlock, dead: tuple[int, int], parts: list) -> StateGraph:
    """Process 0's :class:`~statespace.StateGraph` of every process's :func:`_pieces`:
    the whole graph's shape, and of each array only the entries sent (:class:`Entries`)."""
    j = [np.concatenate([p[i] for p in parts]) for i in range(11)]
    n, m = block.n, block.m
    slots = block.states.shape[1]
    # The offsets of a row held: its state's and the next state's (a row's end is the next
    # row's start: where both rows are held, the two agree; Entries checks it).
    indptr = Entries((n + 1,), np.concatenate([j[0], j[0] + 1]), np.concatenate([j[1], j[2]]))
    n_dead, first_dead = dead
    deadlocks = (Entries((n_dead,), np.zeros(1, np.int64), np.array([first_dead], np.int64))
                 if n_dead else np.zeros(0, np.int64))
    big = {"indices": Entries((m,), j[7], j[8]), "action": Entries((m,), j[7], j[9]),
           "charge": Entries((m,), j[7], j[10]), "costs": derived(), "time": derived(),
           "states": Entries((n, slots), j[3], j[4]),
           "parent": Entries((n,), j[3], j[5]), "parent_action": Entries((n,), j[3], j[6])}
    return lazy_graph(big, indptr=indptr, deadlocks=deadlocks,
                      error_state=block.error_id, depth=block.depth, complete=True,
                      error_successors=block.error_successors,
                      action_codes=block.action_codes, n_expanded=n, model=block.model,
                      name=block.model.name, seconds=block.seconds, on_device=None,
                      palette=block.palette)


def _witness(block: StateBlock, comm: Comm, edges: Sequence[int]) -> StateGraph | None:
    """:func:`witness_graph` (``comm`` guarded)."""
    L = block.layout
    rank = L.rank
    xp = module_of(block.targets)
    ip = block.indptr   # (read at a few places: it stays where it is)
    dead = _deadlocks(block, comm)
    first_dead = dead[1]
    # The sources of the edges (their owners find them) and the runs' states.
    edges = np.asarray(edges, np.int64)
    e_owner, e_local = L.locate_edges(edges)
    mine = e_local[e_owner == rank]
    src = L.to_global(to_host(xp.searchsorted(ip, xp.asarray(mine), side="right")) - 1)
    sources = sorted({int(s) for part in comm.allgather(src.tolist()) for s in part})
    ends = [sources[0] if sources else -1, first_dead if first_dead < block.n else -1,
            block.error_id, 0]
    need = _chains(block, comm, ends) | set(sources)
    # The rows of those states (their global offsets: the run's first edge, plus the row's
    # place among the run's edges here) and their targets' states.
    want = np.array(sorted(need), np.int64)
    owner, local = L.locate(want)
    rows_g, rows_l = want[owner == rank], local[owner == rank]
    firsts = to_host(ip[xp.asarray(rows_l)]).astype(np.int64)
    lasts = to_host(ip[xp.asarray(rows_l + 1)]).astype(np.int64)
    run = L.run_of(rows_g)
    starts = L.edge_start[run] + (firsts - L.edge_first[run])
    e_ids = np.concatenate([np.arange(a, b, dtype=np.int64)
                            for a, b in zip(firsts.tolist(), lasts.tolist())]) \
        if rows_l.shape[0] else np.zeros(0, np.int64)
    d_ids = e_ids if xp is np else xp.asarray(e_ids)
    tg_e, ac_e, ch_e = (to_host(a[d_ids]) for a in (block.targets, block.actions, block.charge))
    tg = set(tg_e.tolist())
    need_states = need | {int(t) for part in comm.allgather(sorted(tg)) for t in part}
    want = np.array(sorted(need_states), np.int64)
    owner, local = L.locate(want)
    sv, lv = want[owner == rank], local[owner == rank]
    at = xp.asarray(lv) if module_of(block.states) is not np else lv
    piece = _pieces(block, rows_g, (starts, starts + (lasts - firsts)),
                    (sv, to_host(block.states[at]), to_host(block.parent[at]).astype(np.int64),
                     to_host(block.parent_action[at]).astype(np.int32)),
                    (L.global_edges(e_ids), tg_e, ac_e, ch_e))
    parts = comm.allgather(piece)
    return None if comm.rank != 0 else _partial_graph(block, dead, parts)
