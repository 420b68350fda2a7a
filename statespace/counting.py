"""The quotient explored by counting, and the size of the full product it stands for.

:func:`explore_counted` runs a breadth-first search (:mod:`statespace.search`) over the
counting generator (:class:`~statespace.next_state.CountedGenerator`: a class as counts of
local states, see :mod:`statespace.next_state.counted` for the idea), widening its layout
while a class has more distinct local vectors than it counts; a ``system sync`` model is
searched with the per-class joint choices of
:class:`~statespace.next_state.SyncChoiceGenerator`. :func:`counted_orbit_total` tells how
many states of the full model the classes stand for.

Examples
--------
Six clients handing their key to a server that holds one at a time: 256 states of the full
model, 13 classes.

>>> from dve import load_model
>>> from statespace import compile_model
>>> from statespace.symmetry import detect_symmetry
>>> cm = compile_model(load_model(
...     "channel go; process S { byte who; state i, w; init i; trans i -> w { sync go?who; }, "
...     "w -> i { effect who = 0; }; } process C(key id) { state a, b; init a; "
...     "trans a -> b { sync go!id; }, b -> a { guard S.i; }; } "
...     "for (k : 1 .. 6) { process C(k); } system async;"))
>>> sym = detect_symmetry(cm)
>>> g, counts = explore_counted(cm, sym, (np, None, None, None, None, False))
>>> g.n_states, counted_orbit_total(sym, counts)
(13, 256)
"""

from __future__ import annotations

import math

import numpy as np

from .model import CompiledModel
from .next_state import (AsyncGenerator, CountedGenerator, Counts, CountingOverflow,
                         NotCountable, QuotientGenerator, SyncChoiceGenerator, SyncGenerator,
                         Untracked)
from .search import BreadthFirstSearch
from .symmetry import Symmetry

__all__ = ["Counts", "CountingOverflow", "FIRST_WIDTH", "MAX_WIDTH", "counted_orbit_total",
           "explore_counted"]

#: Distinct local vectors per group that the first layout counts (four times more on
#: each overflow).
FIRST_WIDTH = 8
#: The widest layout tried before giving up on counting.
MAX_WIDTH = 256


def explore_counted(cm: CompiledModel, sym: Symmetry, args: tuple, *, transitions=None):
    """The quotient graph explored by counting and its :class:`Counts`, or ``None`` when the
    model is not one :func:`~statespace.next_state.counted_plan` accepts (or a step reaches
    a member the window does not hold: checked while exploring). A ``system sync`` model
    gets the graph of :class:`~statespace.next_state.SyncChoiceGenerator` and no counts.
    ``args`` are the search's ``(xp, chunk_size, max_states, max_memory, progress,
    error_successors)``. ``transitions``: the :class:`~statespace.next_state.Transitions`
    (NumPy, prepared) a ``system sync`` model's generator runs, when the caller keeps it."""
    if cm.system == "sync":
        gen = SyncChoiceGenerator(SyncGenerator(cm, transitions=transitions), sym)
        return BreadthFirstSearch(gen, *args).run(), None
    if cm.property_process is not None or sym.families:
        return None           # (checked again by counted_plan; this spares building one)
    width = FIRST_WIDTH
    while True:
        try:
            gen = CountedGenerator(QuotientGenerator(AsyncGenerator(cm), sym), width,
                                   error_successors=args[5])
            g = BreadthFirstSearch(gen, *args).run()
        except NotCountable:
            return None
        except CountingOverflow:
            if width >= MAX_WIDTH:
                return None
            width *= 4
            continue
        except Untracked:
            return None
        return g, gen.counts


def counted_orbit_total(sym: Symmetry, counts: Counts) -> int:
    """The number of states of the full product: for each class, the product over groups of
    ``n! / prod(count!)`` (each referred member is alone in its run). The size depends only on
    the multiset of each group's counts, so it is computed once per distinct multiset."""
    k = counts.compact.shape[0]
    if k == 0:
        return 0
    keep = np.ones(k, bool)
    total = 0
    if 0 <= counts.error < k:
        keep[counts.error] = False
        total += 1
    parts = []
    for gi, g in enumerate(sym.groups):
        c = -np.sort(-counts.counts(gi)[keep], axis=1)        # each row descending
        c = c[:, c.any(axis=0)] if c.shape[0] else c
        parts.append(c)
    sig = np.concatenate(parts, axis=1) if parts else np.zeros((int(keep.sum()), 0), np.int64)
    base = max(g.size for g in sym.groups) + 1
    if sig.shape[1] == 0:
        uniq, mult = np.zeros((1, 0), np.int64), np.array([sig.shape[0]])
    elif sig.shape[1] * math.log2(base) < 62:
        # One int64 per row (mixed radix) sorts far faster than rows.
        code = np.zeros(sig.shape[0], np.int64)
        for j in range(sig.shape[1]):
            code = code * base + sig[:, j]
        _, first, mult = np.unique(code, return_index=True, return_counts=True)
        uniq = sig[first]
    else:
        uniq, mult = np.unique(sig, axis=0, return_counts=True)
    fact = [1]
    for i in range(1, base):
        fact.append(fact[-1] * i)
    widths = [p.shape[1] for p in parts]
    starts = np.concatenate([[0], np.cumsum(widths)]).astype(int).tolist()
    for row, m in zip(uniq.tolist(), mult.tolist()):
        size = 1
        for gi, g in enumerate(sym.groups):
            den = 1
            for c in row[starts[gi]:starts[gi + 1]]:
                if c > 1:
                    den *= fact[c]
            size *= fact[g.size] // den
        total += m * size
    return total
