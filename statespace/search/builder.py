"""The state graph as a search grows it: states numbered in order, edges chunk by chunk.

:class:`GraphBuilder` holds what a breadth-first search has found (the frontier still to
expand, every state's parent, step and level, every expanded state's edges with their palette
rows) as lists of arrays appended once per chunk, and assembles them into one
:class:`~statespace.graph.StateGraph` at the end (:meth:`GraphBuilder.finish`): on the host,
or with its edge arrays left on the device where the search ended there.
"""

from __future__ import annotations

import time as _time

import numpy as np

from runtime.arrays import module_of, on_device
from runtime.device import is_out_of_memory, release_pool, to_host

from ..graph import Palette, StateGraph, charge_dtype, derived, lazy_graph

__all__ = ["FEW_EDGES", "GraphBuilder", "join"]

#: A chunk of at most this many edges numbers its palette rows in Python
#: (:meth:`GraphBuilder.palette_ids`).
FEW_EDGES = 64


class GraphBuilder:
    """The growing outputs of one search (see the module docstring).

    Parameters
    ----------
    cm : CompiledModel
        The model (the graph's metadata: name, slots, resources).
    gen : generator
        The search's next-state generator (:mod:`statespace.next_state`): its charge table,
        action codes, how keys unpack, the dtype of stored states and, when it has one, its
        ``graph_states`` hook.
    sdtype : dtype
        The narrowest dtype of the model's slot values (the graph's ``states``).
    error_successors : bool
        Recorded in the graph.
    xp : module
        Where new pieces are made (changed by the search's device placement).
    """

    #: The lists of arrays that grow chunk by chunk (besides ``pending``).
    GROWING = ("out_idx", "out_act", "out_charge", "out_deg", "states", "parent",
               "parent_action", "level")

    def __init__(self, cm, gen, sdtype, error_successors: bool, xp=np) -> None:
        self.cm, self.gen, self.xp = cm, gen, xp
        self.sdtype = sdtype
        self.store_dtype = getattr(gen, "state_dtype", None) or sdtype
        self.error_successors = error_successors
        self.res = cm.resources
        # Outputs, appended per chunk (concatenated at the end, one array at a time).
        self.out_idx: list = []
        self.out_act: list = []
        self.out_charge: list = []   # per edge its palette row (see palette_ids)
        self.out_deg: list = []
        self.states: list = []
        self.parent: list = []
        self.parent_action: list = []
        self.level: list = []
        # (keys, state matrix) of discovered states not yet expanded, in id order.
        self.pending: list = []
        self.n_edges = 0
        self.n_recorded = 0
        self.error_id = -1
        self.bytes_out = 0
        self.charge_table = gen.charge_table
        self.charge_host = self.charge_table   # the charge table on the host, always
        # The graph is compact (statespace.graph): per edge the row of its (costs, time) in a
        # palette. With constant charges the palette is known now: the distinct rows of the
        # actions' charges and the row of zeros (edges into the error state), in ascending
        # order, ``act_charge`` the row of each action. Otherwise rows are numbered as they are
        # met (``palette_rows``: row -> provisional number), and sorted once at the end.
        self.palette_rows: dict[tuple, int] = {}
        self.act_charge = self.zero_charge = None
        if self.charge_table is not None:
            ct, tt = self.charge_table
            per_action = [tuple(int(v) for v in ct[:, a]) + (int(tt[a]),)
                          for a in range(tt.shape[0])]
            zero = (0,) * (len(self.res) + 1)
            rows = sorted(set(per_action) | {zero})
            self.palette_rows = {r: j for j, r in enumerate(rows)}
            self.act_charge = np.array([self.palette_rows[r] for r in per_action],
                                       charge_dtype(len(rows)))
            self.act_charge_host = self.act_charge
            self.zero_charge = self.palette_rows[zero]

    # ------------------------------------------------------------------ states
    def record_new(self, keys, parent, parent_action, level) -> None:
        """Number the states ``keys`` next (in order): their state matrix joins the
        frontier, their rows, parents, steps and levels the graph."""
        xp = self.xp
        X = self.gen.unpack(keys, xp)
        self.pending.append((keys, X))
        st = xp.ascontiguousarray(X.T).astype(self.store_dtype)
        self.states.append(st)
        self.parent.append(parent)
        self.parent_action.append(parent_action)
        self.level.append(level)
        self.bytes_out += st.nbytes + parent.nbytes + parent_action.nbytes + level.nbytes
        self.n_recorded += keys.shape[0]

    def take_pending(self, k: int):
        """The next ``k`` discovered states to expand: their keys and state matrix."""
        xp = self.xp
        parts, got = [], 0
        while got < k:
            keys, X = self.pending[0]
            need = k - got
            if keys.shape[0] <= need:
                parts.append(self.pending.pop(0))
                got += keys.shape[0]
            else:
                parts.append((keys[:need], X[:, :need]))
                self.pending[0] = (keys[need:], X[:, need:])
                got += need
        if len(parts) == 1:
            return parts[0][0], xp.ascontiguousarray(parts[0][1])
        return (xp.concatenate([p[0] for p in parts]),
                xp.concatenate([p[1] for p in parts], axis=1))

    def level_of(self, ids):
        """The breadth-first levels of states ``ids``."""
        if len(self.level) > 1:
            self.level = [self.xp.concatenate(self.level)]
        return self.level[0][ids]

    # ------------------------------------------------------------------ edges
    def add_chunk(self, deg, edges=None) -> None:
        """One expanded chunk: each state's out-degree, and ``edges`` (none without steps):
        ``(targets, actions, palette rows)`` sorted by (source, target, action)."""
        m = 0
        if edges is not None:
            idx, act_s, chg = edges
            m = idx.shape[0]
            self.out_idx.append(idx)
            self.out_act.append(act_s.astype(np.int32))
            self.out_charge.append(chg)
            self.bytes_out += idx.nbytes + 4 * m + chg.nbytes
        self.out_deg.append(deg)
        self.n_edges += m

    def palette_ids(self, costs: dict, tim):
        """The provisional palette rows (int32, on the module of ``tim``) of edges charging
        ``costs`` (by resource) and ``tim``, numbering rows not met before (``palette_rows``;
        :meth:`finish` sorts them). Computed on the host: a chunk's distinct rows are few."""
        xp = module_of(tim)
        cols = [to_host(costs[r]) for r in self.res] + [to_host(tim)]
        if cols[0].shape[0] == 0:
            return xp.zeros(0, np.int32)
        known = self.palette_rows
        if cols[0].shape[0] <= FEW_EDGES:
            # A thin level's few edges: the same numbering (new rows in ascending order) by
            # Python tuples, not a sort of the rows as records (70 microseconds a chunk).
            edges = list(zip(*(c.tolist() for c in cols)))
            for r in sorted(set(edges)):
                known.setdefault(r, len(known))
            out = np.array([known[r] for r in edges], np.int32)
            return out if xp is np else xp.asarray(out)
        rows, inv = np.unique(np.stack(cols, axis=1), axis=0, return_inverse=True)
        ids = np.array([known.setdefault(tuple(r), len(known)) for r in rows.tolist()],
                       np.int32)
        out = ids[inv.reshape(-1)]
        return out if xp is np else xp.asarray(out)

    # ------------------------------------------------------------------ chunk boundaries
    def snapshot(self):
        """What a chunk changes, as it is at the boundary (lists copied, arrays shared: a
        chunk appends new arrays, never writes into what is there)."""
        return ({name: list(getattr(self, name)) for name in self.GROWING},
                len(self.palette_rows), list(self.pending), self.n_edges, self.n_recorded,
                self.error_id, self.bytes_out)

    def restore(self, snap) -> None:
        """Back to the chunk boundary of :meth:`snapshot` (after a failed allocation)."""
        (lists, n_rows, self.pending, self.n_edges, self.n_recorded, self.error_id,
         self.bytes_out) = snap
        for name, lst in lists.items():
            setattr(self, name, lst)
        # Rows numbered by the failed chunk are forgotten (a dict keeps insertion order).
        self.palette_rows = dict(list(self.palette_rows.items())[:n_rows])

    def to_device(self, xp) -> None:
        """The frontier, the levels and the charge tables onto device module ``xp``; the
        outputs recorded so far stay on the host (:meth:`finish` joins the pieces)."""
        self.xp = xp
        self.pending = [(xp.asarray(k), xp.asarray(X)) for k, X in self.pending]
        self.level = [xp.asarray(join(self.level))] if self.level else []
        if self.charge_table is not None:
            self.charge_table = (xp.asarray(self.charge_table[0]),
                                 xp.asarray(self.charge_table[1]))
            self.act_charge = xp.asarray(self.act_charge_host)

    def to_host(self) -> None:
        """:meth:`to_device` undone, and every piece recorded on the device copied back."""
        self.pending = [(to_host(k), to_host(X)) for k, X in self.pending]
        for name in self.GROWING:
            setattr(self, name, [to_host(a) for a in getattr(self, name)])
        self.charge_table = self.charge_host
        if self.act_charge is not None:
            self.act_charge = self.act_charge_host
        self.xp = np

    def device_bytes(self) -> int:
        """What :meth:`to_device` copies: the frontier and the levels."""
        return (sum(k.nbytes + X.nbytes for k, X in self.pending)
                + sum(a.nbytes for a in self.level))

    # ------------------------------------------------------------------ the graph
    def finish(self, counts: tuple, t0: float) -> StateGraph:
        """The graph of the first ``counts = (states, edges, expanded)`` of what was
        recorded (all of it for a complete search; a partial one stops at a chunk
        boundary), ``complete`` when those are every state's."""
        n, m, expanded, complete = counts
        # The graph is assembled on the host, each piece computed on a device copied once.
        if on_device(self.xp):
            # The pool's cached blocks (the chunks' temporaries) back to the device first: the
            # joined arrays are the largest allocations of the run.
            release_pool(self.xp)
        deg = join(self.out_deg) if self.out_deg else np.zeros(0, np.int64)
        self.out_deg = [deg]
        # The degrees of the expanded states (the first ``expanded`` chunks' worth).
        deg = to_host(deg[:expanded])
        full_deg = np.zeros(n, np.int64)
        full_deg[:deg.shape[0]] = deg
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(full_deg, out=indptr[1:])
        del full_deg

        kept: dict = {}   # the edge arrays still on the device, by name
        up = on_device(self.xp)

        def cat(lst, dtype, k, keep=None):
            """The pieces of ``lst`` as one array of ``k`` entries of ``dtype``: on the
            device when they are there (kept under ``keep`` for the cycle engine)."""
            if not lst:
                return np.zeros(0, dtype)
            a = join(lst, up=up)
            lst[:] = [a]
            if isinstance(a, np.ndarray):
                trim()
            else:
                a = a[:k].astype(dtype, copy=False)   # converted there: one copy at most
                if keep is not None:
                    kept[keep] = a
                return a
            return a[:k].astype(dtype, copy=False)

        error_id = self.error_id if self.error_id < n else -1
        idx_dtype = np.int32 if n < 2**31 else np.int64
        palette, charge = self.palette(cat(self.out_charge, self.charge_dtype(), m))
        if not isinstance(charge, np.ndarray):
            kept["charge"] = charge
        states, width = self.states, self.cm.n_slots
        shown = None
        hook = getattr(self.gen, "graph_states", None)
        if hook is not None:
            # The generator keeps states in a form of its own (counts): it gives the
            # graph's rows (and, where they are too many, rows of no slot in the graph).
            stored = (np.concatenate(states) if states else
                      np.zeros((0, len(self.gen.layout.bits)), self.store_dtype))[:n]
            full, shown = hook(stored, error_id)
            self.states = states = [full]
        big = {"indices": cat(self.out_idx, idx_dtype, m, "indices"),
               "action": cat(self.out_act, np.int32, m), "charge": charge,
               "costs": derived(), "time": derived(),
               "states": cat(states, self.sdtype, n).reshape(n, width),
               "parent": cat(self.parent, np.int64, n),
               "parent_action": cat(self.parent_action, np.int32, n)}
        level = cat(self.level, np.int32, n)
        depth = int(level.max()) if n else 0
        del level
        on_dev = None
        if complete and len(kept) == 2:
            xp = module_of(kept["indices"])
            on_dev = (xp.asarray(indptr), kept["indices"], kept["charge"])
        # Deadlocks are expanded states without successors; in a partial graph the states
        # not expanded yet are unknown, not deadlocks.
        dead = np.flatnonzero(deg == 0)
        if error_id >= 0:
            dead = dead[dead != error_id]
        fields = dict(indptr=indptr, deadlocks=dead.astype(np.int64), error_state=error_id,
                      depth=depth, complete=complete, error_successors=self.error_successors,
                      action_codes=self.gen.action_codes(),
                      n_expanded=expanded, model=self.cm, name=self.cm.name,
                      seconds=_time.perf_counter() - t0, on_device=on_dev,
                      palette=palette)
        if complete and on_device(self.xp):
            # Finished on the device: the arrays stay there and each comes to the host when
            # first read (statespace.graph.lazy_graph), so that a caller reading the answer
            # and a few runs (dvecost analyze) copies none of them. The pieces just joined
            # go back to the device for the cycle engine.
            release_pool(self.xp)
            g = lazy_graph(big, **fields)
        else:
            # Otherwise on the host, one copy from the device per array.
            g = lazy_graph({k: (v if isinstance(v, str) else to_host(v))
                            for k, v in big.items()}, **fields)
        if shown is not None:
            g = g.replace(states=shown)
        return g

    def charge_dtype(self):
        """The dtype of the palette rows recorded per edge: the final one with constant
        charges, int32 while rows are still being numbered."""
        return np.int32 if self.act_charge is None else self.act_charge_host.dtype

    def palette(self, charge):
        """The graph's :class:`~statespace.graph.Palette` and its ``charge`` array (any array
        module) from the rows recorded per edge: with constant charges the palette as
        numbered at the start (sorted already); otherwise the rows met, sorted, and the
        provisional numbers mapped to the sorted ones (a gather from a table of one entry
        per row), so that the palette does not depend on the order rows were met in (a
        CPU and a GPU build give identical arrays)."""
        rows = list(self.palette_rows)
        k = len(self.res)
        table = np.array(rows, np.int64).reshape(len(rows), k + 1)
        if self.act_charge is None and rows:
            order = sorted(range(len(rows)), key=rows.__getitem__)
            table = table[order]
            remap = np.empty(len(rows), charge_dtype(len(rows)))
            remap[order] = np.arange(len(rows))
            xp = module_of(charge)
            charge = (xp.asarray(remap) if xp is not np else remap)[charge]
        elif not rows:
            charge = charge.astype(np.uint8)
        palette = Palette({r: np.ascontiguousarray(table[:, j]) for j, r in enumerate(self.res)},
                          np.ascontiguousarray(table[:, k]))
        return palette, charge


def join(pieces: list, up: bool = False):
    """The pieces as one array: of their module when they share one (NumPy, or CuPy on the
    device); when some are host and some device arrays, on the host, or with ``up`` on the
    device (the host pieces of the first chunks, before the hand-over, are the small ones:
    they go up, and the whole array comes down in one copy, not one per device piece).

    >>> join([np.arange(2), np.arange(3)]).tolist()
    [0, 1, 0, 1, 2]
    """
    if len(pieces) == 1:
        return pieces[0]
    on_host = [isinstance(a, np.ndarray) for a in pieces]
    if all(on_host):
        return np.concatenate(pieces)
    if not any(on_host):
        return module_of(pieces[0]).concatenate(pieces)
    if up:
        xp = module_of(pieces[on_host.index(False)])
        try:
            return xp.concatenate([xp.asarray(a) for a in pieces])
        except Exception as exc:   # noqa: BLE001 - only the device's OOM: join on the host
            if not is_out_of_memory(exc):
                raise
    return np.concatenate([to_host(a) for a in pieces])


def trim() -> None:
    """Hand the memory of freed pieces back to the system (glibc keeps it otherwise)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass
