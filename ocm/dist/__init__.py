"""The optimal cycle engine across processes (SPMD over :mod:`runtime.comm`).

A graph is held in blocks of consecutive vertex ids, one per process
(:class:`GraphBlock`; :func:`split_graph` cuts a one-process graph), and every process calls
:func:`optimal_cycle_distributed` with its block. The answer is the one-process engine's in
its trimming mode (``ocm.optimal_cycle(..., per_scc=False)``): the same value, critical cycle,
iterations and certificate. See :mod:`ocm.dist.engine` for the steps and why they agree.

>>> import numpy as np
>>> from runtime.comm import SelfComm
>>> g = (np.array([0, 1, 2]), np.array([1, 0]), np.array([3, 4]), np.array([1, 3]))
>>> r = optimal_cycle_distributed(split_graph(*g, 0, 1), SelfComm(), kind="ratio")
>>> r.value, r.cycle, r.certified
(Fraction(7, 4), (0, 1), True)
"""

from .block import GraphBlock, block_starts, split_graph
from .engine import PHASES, DistributedRangeError, optimal_cycle_distributed

__all__ = ["GraphBlock", "block_starts", "split_graph", "optimal_cycle_distributed",
           "DistributedRangeError", "PHASES"]
