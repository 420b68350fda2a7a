"""What a generator answers: the successors of a chunk of states, as one immutable record."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

__all__ = ["Successors", "SyncStep"]


@dataclass(frozen=True, eq=False)
class Successors:
    """The successors of a chunk of states (rows of the chunk's state matrix), one entry per
    step, in the order the generator made them.

    Attributes
    ----------
    source : array of int64
        The row of the chunk each step leaves from.
    action : array of int32
        The step's action id: an index into ``CompiledModel.actions`` (``system async``), or
        the generator's dense step id (``system sync``, see
        :meth:`~statespace.next_state.SyncGenerator.step_codes`).
    keys : array of uint64, (steps, words)
        The successor's key (:class:`~statespace.store.KeyLayout`); undefined where
        ``error``: the search writes the error state's key there.
    error : array of bool
        Steps that fault (or go to the error state on purpose).
    costs : dict of str to array of int64, or None
        Per resource the step's cost; None when every charge is a constant of the action
        (the search reads it from :attr:`~statespace.next_state.AsyncGenerator.charge_table`).
    time : array of int64, or None
        The step's time (None with ``costs``).

    Examples
    --------
    >>> s = Successors(np.array([0, 0, 1]), np.array([2, 5, 2], np.int32),
    ...                np.zeros((3, 1), np.uint64), np.array([False, True, False]), None, None)
    >>> len(s), s.take(np.array([0, 2])).source.tolist()
    (3, [0, 1])
    """

    source: object
    action: object
    keys: object
    error: object
    costs: dict | None
    time: object

    def __len__(self) -> int:
        return int(self.source.shape[0])

    def replace(self, **fields) -> Successors:
        """A copy with ``fields`` changed."""
        return replace(self, **fields)

    def take(self, idx) -> Successors:
        """The steps at ``idx`` (an index array or a mask), in that order."""
        return Successors(self.source[idx], self.action[idx], self.keys[idx], self.error[idx],
                          None if self.costs is None else
                          {r: c[idx] for r, c in self.costs.items()},
                          None if self.time is None else self.time[idx])

    def to(self, xp) -> Successors:
        """The same steps on array module ``xp``."""
        return Successors(xp.asarray(self.source), xp.asarray(self.action),
                          xp.asarray(self.keys), xp.asarray(self.error),
                          None if self.costs is None else
                          {r: xp.asarray(c) for r, c in self.costs.items()},
                          None if self.time is None else xp.asarray(self.time))

    @staticmethod
    def join(parts: list[Successors]) -> Successors:
        """The steps of ``parts`` one after the other (NumPy arrays)."""
        if len(parts) == 1:
            return parts[0]
        costs = (None if parts[0].costs is None else
                 {r: np.concatenate([p.costs[r] for p in parts]) for r in parts[0].costs})
        return Successors(np.concatenate([p.source for p in parts]),
                          np.concatenate([p.action for p in parts]),
                          np.concatenate([p.keys for p in parts]),
                          np.concatenate([p.error for p in parts]), costs,
                          None if parts[0].time is None else
                          np.concatenate([p.time for p in parts]))


@dataclass(frozen=True, eq=False)
class SyncStep:
    """One ``system sync`` step taken in some rows (:meth:`SyncGenerator.step
    <statespace.next_state.SyncGenerator.step>`): the states it leads to (slots x steps),
    its faults, its costs by resource and its time."""

    states: object
    error: object
    costs: dict
    time: object

    def __iter__(self):
        return iter((self.states, self.error, self.costs, self.time))
