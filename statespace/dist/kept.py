"""What one process of a distributed search keeps of its levels, for the hand-over.

Each level a process numbers one run of consecutive ids (the new states it expands in the
next level) and expands one run (the states it numbered the level before): of the first it
keeps the states (unpacked from their keys), their breadth-first parents and the parents'
actions; of the second the rows of the graph in CSR order (out-degrees, targets, actions, and
where charges are not constants of the action each edge's row of a palette). The search
(:mod:`statespace.dist.search`) says what to keep; :class:`Kept` keeps it compact and joins
it into a :class:`~statespace.dist.handover.Share` at the end. Everything here is written over
the search's array module ``xp`` (NumPy, or CuPy on a GPU).

Examples
--------
>>> bits(1), bits(2), bits(52), bits(64), bits(65)
(1, 1, 6, 6, 7)
>>> joined(np, [np.arange(2), np.arange(1)]).tolist()
[0, 1, 0]
"""

from __future__ import annotations

import numpy as np

from runtime.arrays import count_values, lexsort
from runtime.comm import Comm
from runtime.device import to_host

from .handover import Share

__all__ = ["Kept", "palette_ids", "bits", "joined"]


class Kept:
    """One process's runs of states and rows, level by level (see the module docstring).

    Parameters
    ----------
    xp : module
        The search's array module.
    layout : statespace.store.KeyLayout
        How a state's slots are packed in its key (to unpack the states kept).
    sdtype : numpy.dtype
        The states' dtype (as the one-process explorer stores them).
    error_key : array
        The error state's key, ``(1, words)``, of module ``xp``.
    charge_constant : bool
        True when every charge is a constant of its action (no palette rows kept).
    """

    def __init__(self, xp, layout, sdtype, error_key, charge_constant: bool) -> None:
        self.xp, self.layout, self.sdtype = xp, layout, sdtype
        self.error_key, self.charge_constant = error_key, charge_constant
        # Per level: the states numbered (ids, states, parents, parent actions) and the rows
        # expanded (ids, out-degrees, targets, actions, palette rows or None).
        self.states: list[tuple] = []
        self.rows: list[tuple] = []
        # Per level the largest id of a kept state that is the error state (-1: none), a 0-d
        # array read once at the end (no wait for the device per level).
        self.error_hits: list = []
        # Charges that are not constants of the action: the distinct rows (costs by resource,
        # then time) met so far, numbered in the order met (see palette_ids).
        self.palette_rows: dict[tuple, int] = {}

    def add_states(self, ids, keys, parent, parent_action) -> None:
        """A level's run of states: their ids, keys (unpacked here, in parallel), parents
        and parents' actions; notes whether the error state is among them."""
        xp = self.xp
        states = xp.ascontiguousarray(self.layout.unpack(keys, xp).T).astype(self.sdtype)
        if ids.shape[0]:
            hit = (keys == self.error_key[0]).all(axis=1)
            self.error_hits.append(xp.where(hit, ids, -1).max())
        self.states.append((ids, states, parent, parent_action))

    def add_rows(self, fgid, local, rel, act, target, charges, span: int, n: int,
                 A: int) -> None:
        """A level's edges in CSR order: by (source, target, action), a unique key, sorted
        as one int64 where it fits. ``fgid``: the ids expanded; per edge ``local`` (its
        source's place among them), ``rel`` (its source's id less the level's first, below
        ``span``), action, target and charges (None when constant); ``n``: the states known,
        ``A``: the actions. Kept compact: targets as int32 while ids fit, actions as int32,
        and where charges are not constants of the action the row of a palette (int32)."""
        xp = self.xp
        F = fgid.shape[0]
        deg = count_values(xp, local, F) if local.shape[0] else xp.zeros(F, np.int64)
        tdt = np.int32 if n < 2**31 else np.int64
        # The key's fields in bits (source, target, action from the top): the same order as
        # the mixed radix (each field is below its radix), taken apart by shifts and masks
        # where divisions cost a third of the phase.
        bt, ba = bits(n), bits(A)
        if bits(span) + bt + ba <= 63:
            key = rel << (bt + ba)
            key |= target << ba
            key |= act
            if charges is None:
                key.sort()
                a = key & ((1 << ba) - 1)
                key >>= ba
                key &= (1 << bt) - 1
                tgt = key
            else:
                order = xp.argsort(key)
                tgt, a, charges = target[order], act[order], charges[order]
        else:
            order = lexsort(xp, (act, target, rel))
            tgt, a = target[order], act[order]
            charges = None if charges is None else charges[order]
        pal = None if charges is None else palette_ids(xp, charges, self.palette_rows)
        self.rows.append((fgid, deg, tgt.astype(tdt), a.astype(np.int32), pal))

    def share(self, comm: Comm, n: int, depth: int) -> Share:
        """Every level's runs joined (and let go here), the error state's id agreed by all
        processes (one ``allreduce``): what this process hands over. Collective."""
        xp = self.xp
        hits = [int(to_host(h)) for h in self.error_hits]
        error_id = int(comm.allreduce(max([-1] + hits), "max"))
        own = [joined(xp, [o[j] for o in self.states]) for j in range(4)]
        rows = [joined(xp, [r[j] for r in self.rows]) for j in range(4)]
        charge = None if self.charge_constant else joined(xp, [r[4] for r in self.rows])
        self.states, self.rows = [], []
        return Share(xp=xp, n=n, depth=depth, error_id=error_id, own_ids=own[0],
                     states=own[1], parent=own[2], parent_action=own[3], row_ids=rows[0],
                     deg=rows[1], targets=rows[2], actions=rows[3], charge=charge,
                     palette_rows=tuple(self.palette_rows))


def palette_ids(xp, charges, known: dict):
    """Per edge the provisional palette row (int32) of its charges (``(edges, resources +
    1)``), rows numbered in the order this process meets them (``known``: row -> number,
    grown here), as the one-GPU explorer records them: the level's distinct rows, few, come
    to the host to be numbered; the per-edge rows stay where they are.

    >>> known = {}
    >>> palette_ids(np, np.array([[3, 1], [0, 2], [3, 1]]), known).tolist(), known
    ([1, 0, 1], {(0, 2): 0, (3, 1): 1})
    """
    m = charges.shape[0]
    if m == 0:
        return xp.zeros(0, np.int32)
    order = lexsort(xp, [charges[:, j] for j in range(charges.shape[1] - 1, -1, -1)])
    srt = charges[order]
    flag = xp.empty(m, bool)
    flag[0] = True
    flag[1:] = (srt[1:] != srt[:-1]).any(axis=1)
    group = xp.cumsum(flag) - 1
    ids = np.array([known.setdefault(tuple(r), len(known))
                    for r in to_host(srt[xp.flatnonzero(flag)]).tolist()], np.int32)
    out = xp.empty(m, np.int32)
    out[order] = (ids if xp is np else xp.asarray(ids))[group]
    return out


def bits(k: int) -> int:
    """The bits that hold every value below ``k`` (at least one)."""
    return max(1, (int(k) - 1).bit_length())


def joined(xp, parts: list):
    """``parts`` (arrays of module ``xp``) as one array: the one part itself, or their
    concatenation."""
    return parts[0] if len(parts) == 1 else xp.concatenate(parts)
