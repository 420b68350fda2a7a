"""The one place that chooses, per array module, which implementation of each primitive runs.

The engine is written once over ``xp`` (:mod:`ocm.primitives`); for CuPy some primitives have
twins in :mod:`ocm.kernels` with the same contract (raw kernels where a segmented reduction or
pointer jumping needs them). Code above this module asks ``ops(xp)`` for the primitives and
never looks at which backend it got. Howard's whole iteration has a twin of its own
(:mod:`ocm.howard_gpu`), chosen by :func:`ocm.optimal_cycle`.

Examples
--------
>>> import numpy as np
>>> O = ops(np)
>>> O.edge_rows(np.array([0, 2, 3]), np).tolist()
[0, 0, 1]
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

from . import kernels as K
from . import primitives as P

__all__ = ["ops", "NAMES"]

#: The primitives every backend provides, with the same contract.
NAMES = ("edge_rows", "segment_sum", "segment_max", "segment_argmax", "best_edges",
         "cycle_reps", "tree_sums", "policy_sums", "trim_sinks", "rank_fractions")

#: The generic versions (NumPy); the device-only steps are absent there.
_HOST = SimpleNamespace(**{name: getattr(P, name) for name in NAMES})

#: CuPy: the twins where ``ocm.kernels`` has one, the generic versions otherwise
#: (``rank_fractions`` works on the few policy classes, on the host; ``policy_sums`` is the
#: generic composition of the twins of ``cycle_reps`` and ``tree_sums``).
_DEVICE = SimpleNamespace(
    **{name: getattr(K, name) for name in K.TWINS}, rank_fractions=P.rank_fractions,
    policy_sums=functools.partial(P.policy_sums, reps=K.cycle_reps, sums=K.tree_sums))


def ops(xp: Any) -> SimpleNamespace:
    """The primitives for array module ``xp``: the generic ones for NumPy, CuPy's otherwise
    (the device engine's own passes are kernels of :mod:`ocm.on_device`)."""
    return _HOST if P.is_numpy(xp) else _DEVICE
