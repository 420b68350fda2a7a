"""Breadth-first exploration as several processes (SPMD) over :mod:`runtime.comm`.

>>> from dve import load_model
>>> from runtime.comm import SelfComm
>>> g = explore_distributed(load_model("process P { state a, b; init a; "
...                                    "trans a -> b {}, b -> a {}; } system async;"),
...                         SelfComm())
>>> g.n_states, g.n_edges
(2, 2)
"""

from .route import owner_of
from .search import distributed_quotient, explore_distributed

__all__ = ["explore_distributed", "distributed_quotient", "owner_of"]
