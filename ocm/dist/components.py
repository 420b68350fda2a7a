"""The components of a graph held in blocks: trimming, the zero-time cycle, SCCs by colouring.

The stages of :func:`ocm.dist.optimal_cycle_distributed` before the restriction, each a
function over this process's block and a :class:`~ocm.dist.block.Halo` (the alive flags or
colours of remote targets by a halo exchange, index lists built once), the processes agreeing
to stop by an ``allreduce``:

- :func:`trim`: repeatedly drop the vertices whose out-edges all lead to dropped vertices;
  what is left is the vertices that reach a cycle (among the edges used);
- :func:`zero_time_cycle`: in ratio mode, trimming the zero-time edges; what survives is
  gathered and its cycle named as one process names it;
- :func:`scc_labels`: the strongly connected components by colouring (work per round follows
  the frontier).

Examples
--------
>>> import numpy as np
>>> from runtime.comm import SelfComm
>>> from ocm.dist import split_graph
>>> from ocm.dist.block import Halo
>>> b = split_graph(np.array([0, 1, 2, 3, 3]), np.array([1, 0, 3]), np.array([1, 1, 1]),
...                 None, 0, 1)
>>> comm = SelfComm()
>>> halo = Halo(comm, b.layout, b.indices)
>>> alive = trim(comm, b.indptr, halo, None, {})
>>> alive.tolist()
[True, True, False, False]
>>> trim(comm, b.indptr, halo, np.array([True, False, False]), {}).tolist()  # only 0 -> 1
[False, False, False, False]
>>> scc_labels(comm, b.indptr, halo, alive, b.layout, {}, lambda phase: None).tolist()
[1, 1, -1, -1]

In ratio mode, the cycle 1 -> 2 -> 1 of zero time is named (its vertices and edges):

>>> r = split_graph(np.array([0, 1, 2, 3]), np.array([1, 2, 1]), np.ones(3, np.int64),
...                 np.array([1, 0, 0]), 0, 1)
>>> err = zero_time_cycle(r, comm, Halo(comm, r.layout, r.indices), {})
>>> err.cycle, err.edges
((1, 2), (1, 2))
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from runtime.comm import Comm
from runtime.device import to_host

from .. import primitives as P
from ..errors import ZeroTimeCycleError
from ..scc import find_zero_time_cycle
from .block import GraphBlock, Halo, Layout
from .collective import count
from .ops import (ScatterMax, edge_groups, edge_rows, edge_slices, expand_ranges, group_rows,
                  id_slices, range_groups, row_counts)

__all__ = ["trim", "zero_time_cycle", "scc_labels"]

def trim(comm: Comm, indptr, halo: Halo, use, rounds: dict) -> Any:
    """Alive flags of the block's vertices: the largest set in which every vertex has an
    out-edge (among ``use``, all when None) to a vertex of the set; agreed by ``allreduce``.

    A round counts each row's live out-edges a group of rows at a time
    (:func:`~ocm.dist.ops.row_counts`): no per-edge array but a group's, flags not int64.

    See the module's example.
    """
    xp = comm.xp
    alive = xp.ones(indptr.shape[0] - 1, dtype=bool)
    while True:
        rounds["trim"] = rounds.get("trim", 0) + 1
        ext = halo.pull(alive)[0] == 1

        def live(rows, e, ext=ext):
            f = ext[halo.target[e]]
            return f if use is None else f & use[e]
        dead = alive & (row_counts(indptr, live, xp, np.int32) == 0)
        del ext
        if count(comm, dead) == 0:
            return alive
        alive[dead] = False

def zero_time_cycle(block: GraphBlock, comm: Comm, halo: Halo,
                     rounds: dict) -> Exception | None:
    """The error naming a cycle of zero-time edges, or None: such edges are trimmed; what
    survives (vertices reaching a zero-time cycle) is gathered and named as one process does
    (:func:`ocm.scc.find_zero_time_cycle` on the survivors, in the same order).

    See the module's example.
    """
    xp = comm.xp
    t = block.time
    zero = (t.values == 0)[t.label] if isinstance(t, P.Palette) else t == 0
    if count(comm, zero) == 0:
        return None
    alive = trim(comm, block.indptr, halo, zero, rounds)
    if count(comm, alive) == 0:
        return None
    alive_ext = halo.pull(alive)[0] == 1
    src = edge_rows(block.indptr, xp)
    # (the surviving zero-time edges, a slice at a time: flags, not int64 per edge)
    e = xp.concatenate([xp.flatnonzero(zero[sl] & alive[src[sl]] &
                                       alive_ext[halo.target[sl]]) + sl.start
                        for sl in edge_slices(int(src.shape[0]))])
    del zero, alive_ext
    lay = block.layout
    mine = (to_host(lay.to_global(src[e], xp)).tolist(), to_host(block.indices[e]).tolist(),
            to_host(lay.global_edges(e, xp)).tolist())
    parts = comm.allgather(mine)
    us = np.array([u for p in parts for u in p[0]], dtype=np.int64)
    vs = np.array([v for p in parts for v in p[1]], dtype=np.int64)
    es = np.array([x for p in parts for x in p[2]], dtype=np.int64)
    # In the one-process order (by edge id: by source, then as in its row), whatever the
    # processes' local orders.
    by_edge = np.argsort(es, kind="stable")
    us, vs, es = us[by_edge], vs[by_edge], es[by_edge]
    verts = np.unique(np.concatenate([us, vs]))
    k = verts.shape[0]
    cu, cv = np.searchsorted(verts, us), np.searchsorted(verts, vs)
    indptr = np.zeros(k + 1, dtype=np.int64)
    np.cumsum(np.bincount(cu, minlength=k), out=indptr[1:])
    found = find_zero_time_cycle(indptr, cv, np.zeros(cv.shape[0], np.int64))
    if found is None:   # (cannot happen: the survivors hold a zero-time cycle)
        return None
    cyc = tuple(int(verts[v]) for v in found[0])
    edges = tuple(int(es[x]) for x in found[1])
    shown = " -> ".join(str(v) for v in cyc[:12]) + (" ..." if len(cyc) > 12 else "")
    return ZeroTimeCycleError(f"the cycle ratio is undefined: the cycle {shown} -> {cyc[0]} "
                              f"has total time 0", cycle=cyc, edges=edges)

def scc_labels(comm: Comm, indptr, halo: Halo, alive, layout: Layout, rounds: dict,
               lap: Callable[[str], None]) -> Any:
    """The strongly connected component of every alive vertex, named by its largest vertex
    (-1 for the others), by colouring: in the part not yet labelled, every vertex takes the
    largest id that reaches it (pushed along the edges to a fixed point, remote targets by
    :meth:`Halo.push_max`); a vertex whose colour is its own id is the largest of its SCC,
    whose members are the vertices of its colour that reach it (pulled backwards along the
    edges, by :meth:`Halo.pull`). Each phase labels at least the SCC of the largest id
    left; the processes agree on every fixed point by ``allreduce``.

    Work per round follows the frontier, not the block: forwards only the out-edges of the
    vertices whose colour changed (ranges of the live edges' offsets), backwards only the
    in-edges of the vertices reached last round (the edges inside a colour listed by target
    once a phase, :func:`_in_lists`); a round's vertex-sized work is a few flag passes and
    the halo's values. No source per edge is kept: a group's sources come from its offsets,
    a frontier's from its ranges. Colours are global ids (``layout``): the ids of one
    process, whatever its local order. ``lap(phase)`` is called where each colouring
    phase's forward and backward parts end (``"scc_forward"``, ``"scc_backward"``: the
    engine's clock).

    Examples
    --------
    Two cycles, 0 <-> 1 and 2 <-> 3, and the edge 1 -> 2 between them:

    >>> import numpy as np
    >>> from runtime.comm import SelfComm
    >>> from ocm.dist import split_graph
    >>> from ocm.dist.block import Halo
    >>> b = split_graph(np.array([0, 1, 3, 4, 5]), np.array([1, 0, 2, 3, 2]),
    ...                 np.ones(5, np.int64), None, 0, 1)
    >>> comm, laps = SelfComm(), []
    >>> halo = Halo(comm, b.layout, b.indices)
    >>> alive = np.ones(4, dtype=bool)
    >>> scc_labels(comm, b.indptr, halo, alive, b.layout, {}, laps.append).tolist()
    [1, 1, 3, 3]
    >>> laps
    ['scc_forward', 'scc_backward']
    """
    xp = comm.xp
    n_local = indptr.shape[0] - 1
    tgt = halo.target
    n_remote = halo.remote.shape[0]
    label = xp.full(n_local, -1, dtype=np.int64)
    active = alive.copy()
    while count(comm, active):
        rounds["scc_phases"] = rounds.get("scc_phases", 0) + 1
        act_ext = halo.pull(active)[0] == 1
        # the edges inside the part left and their offsets by source
        lt, lptr = _live_edges(xp, indptr, tgt, active, act_ext)
        del act_ext
        color = xp.where(active, layout.global_ids(xp), -1)
        front = xp.flatnonzero(active)
        n_active = front.shape[0]
        while True:
            rounds["scc_forward"] = rounds.get("scc_forward", 0) + 1
            before = color.copy()
            rem = xp.full(n_remote, -1, dtype=np.int64)
            # A group of edges at a time (their int64 colours and places within a group's
            # memory). A later group may read colours an earlier one raised: every colour
            # is still the id of a vertex reaching it, and the fixed point, the largest, is
            # the same.
            cm, rm = ScatterMax(xp, color), ScatterMax(xp, rem)
            if front.shape[0] == n_active:   # every live edge: no list of them
                for rows, sl in edge_groups(lptr, xp):
                    _push_colours(cm, rm, cm.read(group_rows(lptr, rows, sl, xp)), lt[sl],
                                  n_local, xp)
            else:
                f_lo, f_hi = lptr[front], lptr[front + 1]
                for g in range_groups(f_lo, f_hi, xp):
                    e = expand_ranges(f_lo[g], f_hi[g], xp)
                    # (each edge's source: its frontier vertex, repeated over its range)
                    off = xp.zeros(g.stop - g.start + 1, np.int64)
                    xp.cumsum(f_hi[g] - f_lo[g], out=off[1:])
                    src = front[g][edge_rows(off, xp)]
                    del off
                    _push_colours(cm, rm, cm.read(src), lt[e], n_local, xp)
                    del e, src
                del f_lo, f_hi
            cm.done()
            rm.done()
            del cm, rm
            halo.push_max(color, rem)
            front = xp.flatnonzero(color != before)
            if comm.allreduce(int(front.shape[0])) == 0:
                break
        del before, front
        lap("scc_forward")
        # Backwards from the roots along the edges inside one colour, grouped by target.
        bptr, bs = _in_lists(xp, halo, color, lptr, lt, n_local + n_remote)
        reached = active & (color == layout.global_ids(xp))
        new = reached
        while True:
            rounds["scc_backward"] = rounds.get("scc_backward", 0) + 1
            r_ext = halo.pull(new)[0]         # the reached of last round, remote ones too
            hit = xp.flatnonzero(r_ext)
            del r_ext
            new = xp.zeros(n_local, dtype=bool)
            for part in id_slices(int(hit.shape[0])):   # (a part of the reached at a time,
                h = hit[part]                           # a block of in-edges at a time)
                h_lo, h_hi = bptr[h], bptr[h + 1]
                for g in range_groups(h_lo, h_hi, xp):
                    new[bs[expand_ranges(h_lo[g], h_hi[g], xp)]] = True
                del h, h_lo, h_hi
            del hit
            new &= ~reached
            if count(comm, new) == 0:
                break
            reached |= new
        label[reached] = color[reached]
        active &= ~reached
        # (this phase's lists go before the next phase makes its own)
        del bptr, bs, lt, lptr, color, reached, new
        lap("scc_backward")
    return label

def _live_edges(xp: Any, indptr, tgt, active, act_ext):
    """The edges whose ends are both active, as ``(targets, offsets by source)``: ``tgt``
    and ``indptr`` themselves when every edge is (no copy), else a copy of the targets (of
    ``tgt``'s dtype) written a group of rows at a time and the live edges' offsets (their
    counts per row first: no list of the edges' int64 ids, no source per edge; a group's
    sources come from its offsets, :func:`~ocm.dist.ops.group_rows`)."""
    def inside(rows, sl):
        return active[group_rows(indptr, rows, sl, xp)] & act_ext[tgt[sl]]
    deg = row_counts(indptr, inside, xp)
    total = int(deg.sum())
    if total == tgt.shape[0]:
        return tgt, indptr
    lptr = xp.zeros(indptr.shape[0], np.int64)
    xp.cumsum(deg, out=lptr[1:])
    del deg
    lt = xp.empty(total, tgt.dtype)
    for rows, sl in edge_groups(indptr, xp):
        ins = xp.flatnonzero(inside(rows, sl))
        at = int(lptr[rows.start])
        lt[at:at + ins.shape[0]] = tgt[sl][ins]
        del ins
    return lt, lptr

def _push_colours(color: ScatterMax, rem: ScatterMax, c, t, n_local: int, xp: Any) -> None:
    """Raise the colours of the targets ``t`` (extended indices) to ``c``: the block's own
    in ``color``, the remote ones in ``rem`` (pushed to their owners after)."""
    home = t < n_local
    color.add(t[home], c[home])
    far = xp.flatnonzero(~home)
    rem.add(t[far] - n_local, c[far])

def _in_lists(xp: Any, halo: Halo, color, lptr, lt, n_ext: int):
    """The edges (offsets ``lptr`` by source, targets ``lt``) whose ends have the same
    colour (the targets' colours pulled by ``halo``), as each target's list of sources (a
    CSR of the reverse graph): ``(bptr, bs)``, the sources of target ``t`` being
    ``bs[bptr[t]:bptr[t + 1]]`` (any order; int32 while block-local ids fit).

    A counting placement a group of rows at a time (:func:`~ocm.dist.ops.edge_groups`, each
    group's sources from its offsets): the first pass flags the edges inside a colour (a
    byte an edge; the pulled colours go then) and counts each target's edges, the second
    sorts a group's flagged edges by target and writes each source at its target's start
    plus the edges already placed there plus its rank in its run. So the lists take 4 bytes
    an edge, 8 a target for the offsets and 4 for the placed counts; a group's sort and
    places come and go. Targets are not kept: the offsets say them."""
    groups = edge_groups(lptr, xp)
    n_local = lptr.shape[0] - 1
    c_ext = halo.pull(color)[0]
    same = xp.empty(lt.shape[0], dtype=bool)
    for rows, sl in groups:
        same[sl] = c_ext[lt[sl]] == color[group_rows(lptr, rows, sl, xp)]
    del c_ext
    n_in = xp.zeros(n_ext + 1, np.int64)        # n_in[t + 1]: target t's edges

    def runs(t):
        """The last place of each run of equal values of the sorted ``t`` (non-empty)."""
        return xp.concatenate([xp.flatnonzero(t[1:] != t[:-1]),
                               xp.full(1, t.shape[0] - 1, np.int64)])
    for _, sl in groups:
        t = xp.sort(lt[sl][same[sl]])
        if t.shape[0]:
            last = runs(t)
            # the runs' lengths; their targets are distinct: a plain scatter
            lens = last.copy()
            lens[1:] -= last[:-1]
            lens[0] += 1
            n_in[t[last].astype(np.int64) + 1] += lens
            del last, lens
        del t
    bptr = xp.cumsum(n_in)
    del n_in
    placed = xp.zeros(n_ext, np.int32)          # (a target's in-degree is below 2^31)
    bs = xp.empty(int(bptr[-1]), np.int32 if n_local < 2**31 else np.int64)
    for rows, sl in groups:
        ins = xp.flatnonzero(same[sl])
        t = lt[sl][ins]
        order = xp.argsort(t)
        t = t[order].astype(np.int64)
        src = group_rows(lptr, rows, sl, xp)[ins[order]]
        del ins, order
        if t.shape[0]:
            # place = the target's start + its edges placed before + the rank in its run
            rank = xp.arange(t.shape[0], dtype=np.int64) - xp.searchsorted(t, t, side="left")
            bs[bptr[t] + placed[t] + rank] = src.astype(bs.dtype, copy=False)
            last = runs(t)
            placed[t[last]] += (rank[last] + 1).astype(np.int32)
            del rank, last
        del t, src
    return bptr, bs
