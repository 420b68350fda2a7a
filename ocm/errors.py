"""The errors of the cycle engine.

``ocm`` is a graph library over plain arrays and knows no model, so its errors speak of
vertices, edges and arguments; the application (``dvecost``) rewords them in terms of the
model where it can (a zero-time cycle as a run of the model) and maps them to exit codes:
:class:`InputError` and :class:`BackendUnavailableError` are bad input (2), an
:class:`AnalysisError` means the question has no answer (3). A GPU that cannot be had is a
run-time concern shared with the explorer: :class:`BackendUnavailableError` is
:class:`runtime.errors.BackendUnavailableError`, named here because the engine raises it.

Examples
--------
>>> import numpy as np
>>> from ocm import optimal_cycle
>>> try:
...     optimal_cycle(np.array([0, 1, 1]), np.array([1]), np.array([5]))
... except NoCycleError as exc:
...     print(exc)
the graph has no cycle (2 vertices, 1 edge): every path ends in a vertex without successors
"""

from __future__ import annotations

from runtime.errors import BackendUnavailableError

__all__ = [
    "OcmError",
    "InputError",
    "BackendUnavailableError",
    "AnalysisError",
    "NoCycleError",
    "ZeroTimeCycleError",
    "ConvergenceError",
]


class OcmError(Exception):
    """Base of every error the cycle engine raises on purpose."""


class InputError(OcmError, ValueError):
    """Bad arguments: malformed CSR arrays, an unknown kind, mode or backend, an unreadable or
    malformed edge-list file."""


class AnalysisError(OcmError):
    """Base of 'the graph has no answer' (no cycle, a zero-time cycle, no convergence)."""


class NoCycleError(AnalysisError):
    """Raised when the graph has no cycle (every path ends in a vertex without successors)."""


class ZeroTimeCycleError(AnalysisError):
    """Raised in ratio mode when a cycle has total time 0.

    ``cycle`` lists its vertices in order and ``edges`` the edge ids between them (``edges[i]``
    leaves ``cycle[i]``); both are empty where the raiser did not know them.
    """

    def __init__(self, message: str, cycle: tuple[int, ...] = (),
                 edges: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.cycle = cycle
        self.edges = edges


class ConvergenceError(AnalysisError):
    """Raised when policy iteration exceeds its iteration budget."""

    def __init__(self, iterations: int, message: str = "") -> None:
        super().__init__(message or f"no convergence after {iterations} iterations")
        self.iterations = iterations
