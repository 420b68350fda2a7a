"""The hand-over of a distributed search: every process's share of the graph to the cycle engine.

When the levels are done each process holds a :class:`Share`: the states it owns (their ids,
slot values, parents and parent actions) and the CSR rows of the states it expanded (the
rows' sources, out-degrees, and per edge its target, action and, where charges are not
constants of the action, its row of a palette of charges), as arrays of the search's array
module (NumPy, or CuPy when the search ran on the device). :func:`hand_over` is the one place
a share leaves its process: today it gathers every share to process 0 and assembles the graph
there exactly as the one-process explorer assembles it (a cycle engine working across the
processes replaces this one function).

Examples
--------
>>> import numpy as np
>>> from dve import load_model
>>> from runtime.comm import SelfComm
>>> from statespace import compile_model
>>> cm = compile_model(load_model("process P { state a, b; init a; "
...                               "trans a -> b {}, b -> a {}; } system async;"))
>>> e = np.zeros(0, np.int64)
>>> share = Share(xp=np, n=2, depth=1, error_id=-1, own_ids=np.array([0, 1]),
...               states=np.array([[0], [1]], np.int8), parent=np.array([-1, 0]),
...               parent_action=np.array([-1, 0], np.int32), row_ids=np.array([0, 1]),
...               deg=np.array([1, 1]), targets=np.array([1, 0], np.int32),
...               actions=np.array([0, 1], np.int32), charge=None)
>>> from statespace.dist.successors import NextStates
>>> g = hand_over(share, SelfComm(), cm, charge_table=NextStates(cm).charge_table)
>>> g.n_states, g.indices.tolist(), g.action.tolist()
(2, [1, 0], [0, 1])
"""

from __future__ import annotations

import time as _time
from dataclasses import dataclass

import numpy as np

from runtime.arrays import count_values
from runtime.comm import Comm
from runtime.device import to_host

from ..graph import Palette, StateGraph, charge_dtype, derived, lazy_graph

__all__ = ["Share", "hand_over", "agree_palette", "constant_palette", "exchange", "place_states",
           "place_rows", "row_places", "host_rows", "id_runs"]


@dataclass(frozen=True, eq=False)
class Share:
    """One process's share of the explored graph when the levels are done (see the module
    docstring). Arrays are of module ``xp``; the counts are the whole search's.

    Attributes
    ----------
    xp : module
        The array module of the arrays.
    n, depth, error_id : int
        States in the whole graph, its breadth-first depth, the error state's id (-1: none),
        the same on every process.
    own_ids, states, parent, parent_action
        The owned states: global ids, slot values (rows), parents, parent actions. The
        search gives them level by level, each level's run of ids in id order.
    row_ids, deg
        The expanded states whose rows this process keeps (global ids) and their
        out-degrees. The search expands the states it numbered: ``row_ids`` is ``own_ids``,
        in the same order, which the block hand-over (:mod:`statespace.dist.blocks`) relies
        on (it checks it) to leave rows and states where they are.
    targets, actions : arrays
        Per edge, rows one after the other in ``row_ids`` order and each row sorted by
        (target, action): the target id (int32 while ids fit) and action (int32).
    charge : array of int32, or None
        Per edge its row of ``palette_rows``; None when the model's charges are constants of
        the action (read from the action table).
    palette_rows : tuple of tuples
        The distinct charges (costs by resource, then time) met by this process, in its own
        numbering (:func:`agree_palette` numbers them for the graph).
    """

    xp: object
    n: int
    depth: int
    error_id: int
    own_ids: object
    states: object
    parent: object
    parent_action: object
    row_ids: object
    deg: object
    targets: object
    actions: object
    charge: object
    palette_rows: tuple = ()

    @property
    def edge_bytes(self) -> int:
        """Bytes this share's edges take (targets, actions and palette rows)."""
        return int(self.targets.nbytes + self.actions.nbytes
                   + (0 if self.charge is None else self.charge.nbytes))


def exchange(comm: Comm, xp, a, counts, recv_counts=None):
    """``comm.alltoallv`` of an array of module ``xp``, the answer of module ``xp``: passed
    as it is where the communicator takes that module's arrays (or NumPy's, for a NumPy
    stand-in of a device module in tests), else through the communicator's device and back.

    >>> from runtime.comm import SelfComm
    >>> got, counts = exchange(SelfComm(), np, np.arange(3), [3])
    >>> got.tolist(), counts.tolist()
    ([0, 1, 2], [3])
    """
    cx = comm.xp
    if cx is np or cx is xp:
        return comm.alltoallv(a, counts, recv_counts)
    got, rcounts = comm.alltoallv(cx.asarray(a), counts, recv_counts)
    return (to_host(got) if xp is np else got), rcounts


def hand_over(share: Share, comm: Comm, cm, *, charge_table, error_successors: bool = False,
              action_codes=None, t0: float | None = None) -> StateGraph | None:
    """The graph of every process's ``share``, on process 0 (None on the others), identical
    array for array to :func:`statespace.build_state_graph`'s.

    Each process sends process 0 its states and CSR rows with their ids (one exchange per
    array, the counts exchanged once), and process 0 puts them in id order: each array
    crosses once. (Placing the shares in parallel first, then concatenating at process 0,
    crossed every array twice and cost more than process 0's placing saved.) On a device the
    arrays go through the communicator's device and are placed there, and the graph keeps
    its edges on the device for the cycle engine (:func:`statespace.graph.lazy_graph`).

    Parameters
    ----------
    share : Share
    comm : runtime.comm.Comm
    cm : CompiledModel
    charge_table : tuple or None
        The model's constant charges (``NextStates.charge_table``), None when each edge has
        its palette row in ``share.charge`` (numbered for the graph by
        :func:`agree_palette`).
    error_successors : bool
        Recorded in the graph.
    action_codes : array, optional
        ``system sync``: the code of each step id.
    t0 : float, optional
        When the search started (the graph's ``seconds``).
    """
    xp, n = share.xp, share.n
    table, charge = None, None
    if charge_table is None:
        table, charge = agree_palette(share, comm, len(cm.resources) + 1)
    if comm.size == 1:   # one process: its states and rows are in id order already
        states, parent, par_action = share.states, share.parent, share.parent_action
        deg, tgt, act = share.deg, share.targets, share.actions
    else:
        to0 = np.zeros(comm.size, np.int64)

        def gather(a, known=None):
            to0[0] = a.shape[0]
            return exchange(comm, xp, a, to0, known)

        ids, n_own = gather(share.own_ids)
        states, parent, par_action = (place_states(xp, gather(a, n_own)[0], ids, n)
                                      for a in (share.states, share.parent,
                                                share.parent_action))
        del ids
        rid, n_rows = gather(share.row_ids)
        rdeg = gather(share.deg, n_rows)[0]
        # One edge array at a time, received and placed, so that process 0 holds the
        # graph's edges once plus one array in transit (and, on the host, how rows are
        # placed, found once for every array).
        n_edges = None   # (the first gather exchanges the counts)
        placed = []
        place = None
        for a in [share.targets, share.actions] + ([] if charge is None else [charge]):
            got, n_edges = gather(a, n_edges)
            if xp is np and rid.shape[0]:
                if place is None:
                    deg, place = host_rows(rid, rdeg, n)
                done = place(got)
            else:
                deg, done = place_rows(xp, rid, rdeg, n, [got])
            del got
            placed.append(done)
        del place
        tgt, act = placed[0], placed[1]
        charge = placed[2] if charge is not None else None
        del placed
    if comm.rank != 0:
        return None
    return _assemble(cm, share, states, parent, par_action, deg, tgt, act, charge, table,
                     charge_table, error_successors, action_codes,
                     _time.perf_counter() if t0 is None else t0)


def agree_palette(share: Share, comm: Comm, width: int):
    """The graph's palette where charges are not constants of the action, and this share's
    edges' rows of it: ``(table, charge)``, the table (``(rows, width)`` int64, costs by
    resource then time) the same on every process. As one process numbers it: the distinct
    charges of the edges, those into the error state charging zeros, in ascending order (each
    process's rows that its edges use, gathered; a few, on the host).

    >>> from runtime.comm import SelfComm
    >>> s = Share(xp=np, n=3, depth=1, error_id=2, own_ids=None, states=None, parent=None,
    ...           parent_action=None, row_ids=None, deg=None, targets=np.array([1, 2, 0]),
    ...           actions=None, charge=np.array([1, 2, 0], np.int32),
    ...           palette_rows=((5, 1), (3, 1), (9, 9)))
    >>> table, charge = agree_palette(s, SelfComm(), 2)
    >>> table.tolist(), charge.tolist()     # (9, 9) went into the error state
    ([[0, 0], [3, 1], [5, 1]], [1, 0, 2])
    """
    xp = share.xp
    rows = list(share.palette_rows)
    pal = share.charge
    if share.error_id >= 0 and pal.shape[0]:
        # A faulting step's charge is no value: every edge into the error state charges 0.
        zero = (0,) * width
        if zero not in rows:
            rows.append(zero)
        pal = xp.where(share.targets == share.error_id, np.int32(rows.index(zero)), pal)
    used = (to_host(count_values(xp, pal, len(rows))) > 0 if rows and pal.shape[0]
            else np.zeros(len(rows), bool))
    met = set()
    for part in comm.allgather([rows[i] for i in np.flatnonzero(used).tolist()]):
        met.update(part)
    table = sorted(met)
    number = {r: j for j, r in enumerate(table)}
    # Rows no edge uses any more (all into the error state) map anywhere: never read.
    remap = np.array([number.get(r, 0) for r in rows], charge_dtype(len(table)))
    charge = ((remap if xp is np else xp.asarray(remap))[pal] if rows
              else xp.zeros(0, charge_dtype(0)))
    return np.array(table, np.int64).reshape(len(table), width), charge


def _assemble(cm, share, states, parent, par_action, deg, tgt, act, charge, table,
              charge_table, error_successors, action_codes, t0):
    xp, n, error_id = share.xp, share.n, share.error_id
    dev = xp.zeros(n + 1, np.int64)
    if n:
        dev[1:] = xp.cumsum(deg)
    indptr = to_host(dev)
    idx_dtype = np.int32 if n < 2**31 else np.int64
    indices = tgt.astype(idx_dtype, copy=False)
    action = act.astype(np.int32, copy=False)
    if charge_table is not None:
        table, charge = constant_palette(cm, xp, action, indices, error_id, charge_table)
    k = len(cm.resources)
    palette = Palette({r: np.ascontiguousarray(table[:, j])
                       for j, r in enumerate(cm.resources)}, np.ascontiguousarray(table[:, k]))
    dead = to_host(xp.flatnonzero(deg == 0)).astype(np.int64)
    if error_id >= 0:
        dead = dead[dead != error_id]
    big = {"indices": indices, "action": action, "charge": charge,
           "costs": derived(), "time": derived(), "states": states,
           "parent": parent.astype(np.int64, copy=False),
           "parent_action": par_action.astype(np.int32, copy=False)}
    # Finished on a device: the edges stay there for the cycle engine (as the one-GPU
    # explorer leaves them), every array coming to the host when first read.
    on_dev = None
    if not isinstance(indices, np.ndarray) and not isinstance(charge, np.ndarray):
        on_dev = (dev, indices, charge)
    return lazy_graph(big, indptr=indptr, deadlocks=dead, error_state=error_id,
                      depth=share.depth, complete=True, error_successors=error_successors,
                      action_codes=action_codes, n_expanded=n, model=cm, name=cm.name,
                      seconds=_time.perf_counter() - t0, on_device=on_dev, palette=palette)


def constant_palette(cm, xp, action, indices, error_id, charge_table):
    """With constant charges, the palette as the one-process explorer numbers it (the
    actions' rows and the row of zeros, sorted) and each edge's row, read from its action
    (edges into the error state charge zeros)."""
    k = len(cm.resources)
    ct, tt = charge_table
    per_action = [tuple(int(v) for v in ct[:, a]) + (int(tt[a]),) for a in range(tt.shape[0])]
    zero = (0,) * (k + 1)
    rows = sorted(set(per_action) | {zero})
    number = {r: j for j, r in enumerate(rows)}
    act_row = np.array([number[r] for r in per_action], charge_dtype(len(rows)))
    charge = (act_row if xp is np else xp.asarray(act_row))[action]
    if error_id >= 0:
        # A mask's assignment of a constant: no count leaves the device.
        charge = xp.where(indices == error_id, charge.dtype.type(number[zero]), charge)
    return np.array(rows, np.int64).reshape(len(rows), k + 1), charge


def place_states(xp, got, ids, n: int):
    """Rows ``got`` of the states with ids ``ids`` (every id of ``0 .. n - 1`` once, on
    process 0; none elsewhere) in id order.

    >>> place_states(np, np.array([[30], [10], [20]]), np.array([2, 0, 1]), 3).ravel().tolist()
    [10, 20, 30]
    """
    if ids.shape[0] == 0:
        return got
    out = xp.empty((n,) + got.shape[1:], got.dtype)
    if xp is np:
        at, first, length = id_runs(ids)
        if at.shape[0] * FEW_RUNS <= ids.shape[0]:
            # A few runs of consecutive ids (each process numbers one run a level): copied
            # as slices, no index per state.
            for a, f, k in zip(at.tolist(), first.tolist(), length.tolist()):
                out[f:f + k] = got[a:a + k]
            return out
    out[ids] = got
    return out


#: Received rows (or states) are placed as slices of runs of consecutive ids where there are
#: at most one run per this many of them (a Python step per run), else each by its id.
FEW_RUNS = 64


def id_runs(ids):
    """The runs of consecutive values in ``ids`` (host, non-empty): where each starts in
    ``ids``, its first value, its length.

    >>> at, first, length = id_runs(np.array([4, 5, 6, 0, 1, 9]))
    >>> at.tolist(), first.tolist(), length.tolist()
    ([0, 3, 5], [4, 0, 9], [3, 2, 1])
    """
    at = np.flatnonzero(ids[1:] != ids[:-1] + 1) + 1
    at = np.concatenate([np.zeros(1, at.dtype), at])
    length = np.diff(np.append(at, ids.shape[0]))
    return at, ids[at], length


def host_rows(rid, deg, n: int):
    """On the host: the out-degree of each of ``0 .. n - 1`` and a function placing an edge
    array received as rows (sources ``rid``, out-degrees ``deg``) in CSR order. Where the
    rows come in a few runs of consecutive ids (as the search keeps them: one run a level
    and process), each run's edges are one slice; otherwise each edge goes to its place
    (:func:`row_places`)."""
    at, first, length = id_runs(rid)
    if at.shape[0] * FEW_RUNS > rid.shape[0]:
        out_deg, spot = row_places(rid, deg, n)
        return out_deg, lambda a: _placed(a, spot)
    out_deg = np.zeros(n, np.int64)
    out_deg[rid] = deg
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(out_deg, out=ptr[1:])
    ends = np.zeros(rid.shape[0] + 1, np.int64)
    np.cumsum(deg, out=ends[1:])
    runs = list(zip(ends[at].tolist(), ends[at + length].tolist(), ptr[first].tolist()))

    def place(a):
        out = np.empty_like(a)
        for s0, s1, d0 in runs:
            out[d0:d0 + s1 - s0] = a[s0:s1]
        return out
    return out_deg, place


#: Edges placed at a time by :func:`place_rows` on a device (its temporaries: three int64 per
#: edge).
PLACE_BLOCK = 1 << 26


def row_places(rid, deg, n: int):
    """On the host: where each edge of rows received as whole rows (sources ``rid`` with
    out-degrees ``deg``, each row's edges together) goes in CSR order, and the out-degree of
    each of ``0 .. n - 1``: ``(out_deg, spot)``, ``spot`` int32 while the edges' count fits.
    Every edge of a row moves by the same distance (its row's place in the graph less its
    place received): one repeat of the rows' shifts, plus the edges' positions. (A search
    of each edge among the rows' ends, as on a device, costs about five times more.)

    >>> deg, spot = row_places(np.array([1, 0]), np.array([1, 2]), 2)
    >>> deg.tolist(), spot.tolist()
    ([2, 1], [2, 0, 1])
    """
    out_deg = np.zeros(n, np.int64)
    out_deg[rid] = deg
    ptr = np.zeros(n + 1, np.int64)
    np.cumsum(out_deg, out=ptr[1:])
    m = int(deg.sum())
    dt = np.int32 if m < 2**31 else np.int64
    # Per received row, where its first edge goes less where it was received.
    shift = ptr[rid]
    del ptr
    shift -= np.cumsum(deg)
    shift += deg
    spot = np.repeat(shift.astype(dt), deg)
    spot += np.arange(m, dtype=dt)
    return out_deg, spot


def _placed(a, spot):
    out = np.empty_like(a)
    out[spot] = a
    return out


def place_rows(xp, rid, deg, n: int, edges: list) -> list:
    """CSR rows received as whole rows (sources ``rid`` with out-degrees ``deg``, each row's
    edges together and in order in every array of ``edges``) in id order: the out-degree of
    each of ``0 .. n - 1`` and each array of ``edges`` in CSR order. Elsewhere than process 0
    (nothing received) the arrays as they are. On the host by :func:`host_rows`; on a device
    each edge's place is found by a search among the rows' ends (CuPy's ``repeat`` takes no
    array of counts), a block of edges at a time.

    >>> deg, tgt = place_rows(np, np.array([1, 0]), np.array([1, 2]), 2,
    ...                       [np.array([7, 8, 9])])
    >>> deg.tolist(), tgt.tolist()
    ([2, 1], [8, 9, 7])
    """
    if rid.shape[0] == 0:
        return [deg] + list(edges)
    if xp is np:
        out_deg, place = host_rows(rid, deg, n)
        return [out_deg] + [place(a) for a in edges]
    out_deg = xp.zeros(n, np.int64)
    out_deg[rid] = deg
    ptr = xp.zeros(n + 1, np.int64)
    ptr[1:] = xp.cumsum(out_deg)
    ends = xp.cumsum(deg)
    # Per received row, where its first edge goes less where it was received.
    shift = ptr[rid] - (ends - deg)
    del ptr
    m = edges[0].shape[0]
    placed = [out_deg] + [xp.empty_like(a) for a in edges]
    # Edge j of the received order goes to its row's first place plus its offset in the row:
    # its row is the received row whose end is the first past j (a search, not a repeat by
    # counts, which CuPy's ``repeat`` does not take as an array). A block of edges at a time,
    # so that the positions (int64) never take more than a block's memory beside the graph.
    for a in range(0, m, PLACE_BLOCK):
        j = xp.arange(a, min(a + PLACE_BLOCK, m), dtype=np.int64)
        spot = shift[xp.searchsorted(ends, j, side="right")] + j
        del j
        for src, dst in zip(edges, placed[1:]):
            dst[spot] = src[a:a + spot.shape[0]]
        del spot
    return placed
