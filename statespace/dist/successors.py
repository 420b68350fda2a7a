"""The one place the distributed search meets the successor function of a model.

A narrow adapter over the public next-state interface (:mod:`statespace.next_state`):
:class:`NextStates` gives the successors of a batch of packed states as plain arrays (of the
search's array module: NumPy, or CuPy on a device), the same
successors, in the same (source, action) order, with the same error handling, as the
one-process explorer computes (the error state has no successors unless ``error_successors``;
a faulting step leads to the error state's key). The search (:mod:`.search`) reads nothing else
of the model's semantics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.arrays import on_device
from runtime.device import to_host

from ..evaluate import INT
from ..model import CompiledModel
from ..next_state import generator_for
from ..search.placement import Placement, kernel_generator

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
    """The successor function of one compiled model over array module ``xp``.

    On a device module with a kernel compiler (CuPy) the successors of ``system async``
    models come from the model's generated kernel, the one the one-GPU explorer uses
    (:func:`statespace.search.placement.kernel_generator`); otherwise from the array-form
    generator over ``xp``.

    Attributes
    ----------
    layout : KeyLayout
    n_actions : int
        Actions are numbered ``0 .. n_actions - 1``.
    initial_key, error_key : ndarray of uint64, shape (1, n_words)
        On the host.
    charge_table : tuple or None
        ``(costs[resource][action], time[action])`` when every action charges constants (the
        palette is then known before exploring), else None.
    kernel : KernelGenerator or None
        The generated kernel's generator, when it computes the successors.
    """

    #: On a device without the kernel, batches of fewer states are computed on the host (see
    #: :meth:`successors`; the one-GPU explorer's threshold).
    device_min_rows = Placement.device_min_rows

    def __init__(self, cm: CompiledModel, *, error_successors: bool = False, xp=np) -> None:
        self.cm, self.xp = cm, xp
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
        self.kernel = kernel_generator(self.gen, xp) if on_device(xp) else None
        # Without the kernel, the array form over xp (its step numbering shared with
        # self.gen's).
        self.gen_xp = self.gen.at(xp) if self.kernel is None else None
        self.error_key_xp = self.error_key if xp is np else xp.asarray(self.error_key)

    def step_codes(self) -> list[int]:
        """``system sync``: the code of each step id this process's generator gave so far."""
        return self.gen.step_codes()

    def successors(self, keys) -> Successors:
        """The successors of the states packed as ``keys`` (rows, of module ``xp``), in
        (row, action) order, of module ``xp``.

        On a device without the kernel, a batch of fewer than :attr:`device_min_rows` states
        is computed on the host and its successors moved to the device, as the one-GPU
        explorer does: the array form costs the device thousands of launches a batch
        whatever its size."""
        xp = self.xp
        if self.kernel is None and xp is not np and keys.shape[0] < self.device_min_rows:
            s = self._compute(np, self.gen, to_host(keys))
            return Successors(*(None if a is None else xp.asarray(a) for a in
                                (s.src, s.act, s.keys, s.err, s.charges)))
        return self._compute(xp, self.gen_xp, keys)

    def _compute(self, xp, gen, keys) -> Successors:
        """:meth:`successors` over module ``xp``, by the kernel or ``gen``'s array form."""
        X = self.layout.unpack(keys, xp)
        if self.err_pc >= 0:
            bad = X[0] == self.err_pc
            if xp is np:
                if bad.any():
                    # The error state has no successors: hidden from every transition.
                    for p in self.cm.processes:
                        X[p.slot][bad] = -1
            else:
                # On a device without a test of the mask (a wait for the device).
                for p in self.cm.processes:
                    X[p.slot] = xp.where(bad, np.int32(-1), X[p.slot])
        if self.kernel is not None:
            s = self.kernel.successors(keys, X)   # the error key written by the kernel
            nkeys = s.keys
        else:
            s = gen.successors(keys, X)
            nkeys = s.keys
            if xp is np:
                nkeys[s.error] = self.error_key[0]
            elif nkeys.shape[0]:
                nkeys = xp.where(s.error[:, None], self.error_key_xp, nkeys)
        charges = None
        if self.charge_table is None:
            res = self.cm.resources
            charges = (xp.stack([xp.asarray(s.costs[r], np.int64) for r in res]
                                + [xp.asarray(s.time, np.int64)], axis=1) if len(s)
                       else xp.zeros((0, len(res) + 1), np.int64))
        return Successors(xp.asarray(s.source, np.int64), xp.asarray(s.action, np.int32),
                          nkeys, s.error, charges)
