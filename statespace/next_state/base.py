"""What the array-form generators share: the model, its transitions, and its keys."""

from __future__ import annotations

import copy

import numpy as np

from ..evaluate import INT
from ..model import CompiledModel
from .transitions import Transitions

__all__ = ["ModelGenerator"]


class ModelGenerator:
    """The model's side of a generator (:class:`~statespace.next_state.AsyncGenerator`,
    :class:`~statespace.next_state.SyncGenerator`): the compiled model, its
    :class:`~statespace.next_state.Transitions` over one array module, and the keys of its
    states.

    Parameters
    ----------
    cm : CompiledModel
    xp : module
        The array module of the chunks (NumPy, or CuPy).
    lazy : bool
        As for :class:`~statespace.next_state.Transitions`.
    transitions : Transitions, optional
        Transitions to share (another view's).

    Attributes
    ----------
    layout : KeyLayout
        How a state is packed into its key.
    """

    #: The search hides the error state from this generator (its control state set to -1).
    hides_error = True

    def __init__(self, cm: CompiledModel, xp=np, *, lazy: bool = False,
                 transitions: Transitions | None = None) -> None:
        self.cm = cm
        self.tr = transitions if transitions is not None else Transitions(cm, xp, lazy=lazy)
        self.xp = self.tr.xp
        self.layout = self.tr.layout
        self.res = cm.resources

    def at(self, xp):
        """This generator over arrays of module ``xp`` (the same tables; an evaluator of
        that module, made once)."""
        if xp is self.xp:
            return self
        other = copy.copy(self)
        other.tr = self.tr.at(xp)
        other.xp = xp
        return other

    def enabled(self, X, tid, cache=None):
        """:meth:`Transitions.enabled <statespace.next_state.Transitions.enabled>`."""
        return self.tr.enabled(X, tid, cache)

    def initial_key(self):
        """The key of the initial state (1 x words)."""
        return self.layout.pack(np.array(self.cm.initial, dtype=INT).reshape(-1, 1), np)

    def error_key(self):
        """The key of the error state (1 x words)."""
        return self.layout.pack(np.array(self.cm.error_state, dtype=INT).reshape(-1, 1), np)

    def unpack(self, keys, xp):
        """The state matrix (slots x states) of ``keys``, on module ``xp``."""
        return self.layout.unpack(keys, xp)
