"""The one place the distributed search meets the successor function of a model.

A narrow adapter over the public next-state interface (:mod:`statespace.next_state`):
:class:`NextStates` gives the successors of a batch of packed states as plain arrays, the same
successors, in the same (source, action) order, with the same error handling, as the
one-process explorer computes (the error state has no successors unless ``error_successors``;
a faulting step leads to the error state's key). The search (:mod:`.search`) reads nothing else
of the model's semantics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..evaluate import INT
from ..model import CompiledModel
from ..next_state import generator_for

__all__ = ["NextStates", "Successors"]


@dataclass(frozen=True)
class Successors:
    """The successors of a batch: per successor its source (a row of the batch), action,
    packed key (the error state's key where ``err``), and, unless the model's charges are
    constants per action, its charges as int64 columns (costs by resource, then time)."""

    src: np.ndarray
    act: np.ndarray
    keys: np.ndarray
    err: np.ndarray
    charges: np.ndarray | None


class NextStates:
    """The successor function of one compiled ``system async`` model on the host.

    Attributes
    ----------
    layout : KeyLayout
    n_actions : int
        Actions are numbered ``0 .. n_actions - 1``.
    initial_key, error_key : ndarray of uint64, shape (1, n_words)
    charge_table : tuple or None
        ``(costs[resource][action], time[action])`` when every action charges constants (the
        palette is then known before exploring), else None.
    """

    def __init__(self, cm: CompiledModel, *, error_successors: bool = False) -> None:
        self.cm = cm
        self.gen = generator_for(cm, np)
        self.layout = self.gen.layout
        self.n_actions = max(cm.n_actions, 1)
        self.initial_key = self.layout.pack(np.array(cm.initial, INT).reshape(-1, 1), np)
        self.error_key = self.layout.pack(np.array(cm.error_state, INT).reshape(-1, 1), np)
        self.err_pc = cm.error_state[0] if cm.slots and not error_successors else -1
        self.charge_table = self.gen.charge_table
        #: ``system sync``: actions are step ids numbered by this process's generator in the
        #: order it met them (:meth:`step_codes` gives their codes); the search renumbers them.
        self.sync = cm.system == "sync"

    def step_codes(self) -> list[int]:
        """``system sync``: the code of each step id this process's generator gave so far."""
        return self.gen.step_codes()

    def successors(self, keys: np.ndarray) -> Successors:
        """The successors of the states packed as ``keys`` (rows), in (row, action) order."""
        X = self.layout.unpack(keys, np)
        if self.err_pc >= 0:
            bad = X[0] == self.err_pc
            if bad.any():
                # The error state has no successors: hidden from every transition.
                for p in self.cm.processes:
                    X[p.slot][bad] = -1
        s = self.gen.successors(keys, X)
        nkeys = s.keys
        nkeys[s.error] = self.error_key[0]
        charges = None
        if self.charge_table is None:
            res = self.cm.resources
            charges = (np.stack([s.costs[r] for r in res] + [s.time], axis=1) if len(s)
                       else np.zeros((0, len(res) + 1), np.int64))
        return Successors(np.asarray(s.source, np.int64), np.asarray(s.action, np.int32),
                          nkeys, s.error, charges)
