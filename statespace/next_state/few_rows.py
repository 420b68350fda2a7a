"""``system sync`` chunks of a few rows: a process's enabled pairs made in Python.

A breadth-first level of one or two states (the ``system sync`` models that scenario files
render have thousands) pays a fixed cost for every NumPy call, on arrays of one or two
entries. :func:`few_pairs` makes the enabled (row, transition) pairs of one process for such a
chunk from the rows as lists: per row, the transitions leaving its control state, each guard
evaluated on the row by its scalar form. The pairs are those of
:meth:`SyncGenerator.pairs <statespace.next_state.SyncGenerator.pairs>`'s array path, in the
same (row, place) order (tests/statespace/test_thin_levels.py compares the two).
:func:`present_states` tells a somewhat larger chunk which transitions it need not ask at all.

Examples
--------
>>> import numpy as np
>>> from dve import load_model
>>> from statespace import compile_model
>>> from statespace.next_state import SyncGenerator
>>> gen = SyncGenerator(compile_model(load_model('''
... byte x;
... process P { state a, b; init a;
...   trans a -> b { guard x < 2; }, a -> a { guard x > 0; }, b -> a {}; }
... system sync;''')))
>>> X = np.array([[0, 0, 1], [1, 0, 0]])       # P's state, x: (a, 1), (a, 0), (b, 0)
>>> row, place, tid, fault, start = few_pairs(gen.cm, gen.tr, {}, X, 3, {}, [0, 1, 2])
>>> row.tolist(), place.tolist(), start.tolist(), fault
([0, 0, 1, 2], [0, 1, 0, 2], [0, 2, 3, 4], None)
>>> sorted(present_states(gen.cm, X, [0, 1, 2]))
[0, 1]
"""

from __future__ import annotations

import numpy as np

from ..evaluate import Fault

__all__ = ["few_pairs", "present_states"]


def few_pairs(cm, tr, shared: dict, X, F: int, rows_cache: dict, ts):
    """The enabled (row, transition) pairs of the transitions ``ts`` of one process (all of
    that process's transitions, in order) in the ``F`` host rows of ``X``, sorted by row then
    by place in ``ts``: ``(row, place, transition, faults or None, start)`` as the arrays of
    :class:`~statespace.next_state.SyncPairs`; or None where a transition needs the array form
    (a buffered channel's condition, a guard nested too deeply for the scalar form).

    ``tr`` is the model's :class:`~statespace.next_state.Transitions`; ``shared`` a dictionary
    kept with the model (it holds the transitions by control state, made once per process,
    each guard made when first needed); ``rows_cache`` one per chunk (the rows as lists)."""
    proc = cm.transitions[ts[0]].process
    table = shared.setdefault("leaving", {}).get(proc)
    if table is None:
        # Per control state: [place, transition, scalar guard] of the transitions leaving
        # it; the guard made when first needed (False until then), None where the array
        # form is needed.
        table = {}
        for d, tid in enumerate(ts):
            t = cm.transitions[tid]
            f = None if t.sync_kind in ("bsend", "brecv") else False
            table.setdefault(t.src, []).append([d, tid, f])
        shared["leaving"][proc] = table
    lists = rows_cache.get("row lists")
    if lists is None:
        lists = rows_cache["row lists"] = X.T.tolist()
    slot = cm.processes[proc].slot
    row_l, place_l, tid_l, fault_l = [], [], [], []
    start = [0]
    faulty = False
    for i in range(F):
        row = lists[i]
        for entry in table.get(row[slot], ()):
            d, tid, f = entry
            if f is False:
                f = entry[2] = tr.scalar_guard_of(tid)
            if f is None:
                return None
            try:
                if not f(row):
                    continue
                bad = False
            except Fault:
                # A faulting guard counts as enabled; the step goes to the error state.
                bad = faulty = True
            row_l.append(i)
            place_l.append(d)
            tid_l.append(tid)
            fault_l.append(bad)
        start.append(len(row_l))
    return (np.array(row_l, np.int64), np.array(place_l, np.int64), np.array(tid_l, np.int64),
            np.array(fault_l, bool) if faulty else None, np.array(start, np.int64))


def present_states(cm, X, ts) -> set:
    """The control states that the rows of host chunk ``X`` put the process of transitions
    ``ts`` in: a transition leaving any other is enabled in no row."""
    return set(X[cm.processes[cm.transitions[ts[0]].process].slot].tolist())
