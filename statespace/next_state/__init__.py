"""The next-state interface: what a model does, apart from how its space is searched.

A *generator* turns a chunk of states into their successors. It is made once per model and
knows nothing of state numbers, visited sets, limits or where arrays live beyond the array
module it is given; a search (:mod:`statespace.explore` today, a distributed one tomorrow)
calls it chunk after chunk. Every generator has:

``successors(keys, X) -> Successors``
    The steps of the states whose keys are ``keys`` (states x words, uint64) and whose
    unpacked slots are ``X`` (slots x states): per step its source row, action id, successor
    key, fault flag and charges (:class:`Successors`). A row whose process 0 is in control
    state -1 has no steps (how a search hides the error state).
``layout``
    The :class:`~statespace.store.KeyLayout` of the keys.
``n_actions()``
    The radix of the action ids so far (a search ranks steps by (source, action)).
``charge_table``
    ``(costs[resource][action], time[action])`` when every action charges constants (then
    ``successors`` computes no costs), else None.
``at(xp)``
    The same generator over arrays of module ``xp`` (NumPy, CuPy): tables shared, an
    evaluator of that module.

The generators: :class:`AsyncGenerator` (``system async``, array form),
:class:`SyncGenerator` (``system sync``; also :meth:`SyncGenerator.enabled` and
:meth:`SyncGenerator.step`, one step of given choices, for a simulator), and
:class:`KernelGenerator` (``system async`` by one generated GPU kernel).
:func:`generator_for` picks the array-form one of a model.

Examples
--------
>>> import numpy as np
>>> from dve import load_model
>>> from statespace import compile_model
>>> gen = generator_for(compile_model(load_model('''
... byte x;
... process P { state a, b; init a; trans a -> b { effect x = 1; cost 2; }, b -> a {}; }
... system async;''')))
>>> X = np.array(gen.cm.initial).reshape(-1, 1)
>>> s = gen.successors(gen.layout.pack(X, np), X)
>>> s.source.tolist(), s.action.tolist(), gen.layout.unpack(s.keys, np)[:, 0].tolist()
([0], [0], [1, 1])
>>> gen.charge_table[0].tolist(), gen.n_actions()
([[2, 0]], 2)
"""

from __future__ import annotations

import numpy as np

from ..model import CompiledModel
from .async_gen import AsyncGenerator, charge_table
from .base import ModelGenerator
from .counted import (CountedGenerator, CountingOverflow, CountLayout, Counts, NotCountable,
                      Untracked, counted_plan)
from .kernel_gen import KernelGenerator
from .record import Successors, SyncStep
from .symmetric import QuotientGenerator, SyncChoiceGenerator
from .sync_gen import MAX_SYNC_STEPS, StepNumbering, SyncGenerator, SyncPairs, reads_own_only
from .transitions import Transitions

__all__ = ["AsyncGenerator", "CountLayout", "CountedGenerator", "Counts", "CountingOverflow",
           "KernelGenerator", "MAX_SYNC_STEPS", "ModelGenerator", "NotCountable",
           "QuotientGenerator", "StepNumbering", "Successors", "SyncChoiceGenerator",
           "SyncGenerator", "SyncPairs", "SyncStep", "Transitions", "Untracked", "charge_table",
           "counted_plan", "generator_for", "reads_own_only"]


def generator_for(cm: CompiledModel, xp=np, *, lazy: bool = False):
    """The array-form generator of ``cm``: :class:`SyncGenerator` for ``system sync``,
    else :class:`AsyncGenerator`."""
    cls = SyncGenerator if cm.system == "sync" else AsyncGenerator
    return cls(cm, xp, lazy=lazy)
