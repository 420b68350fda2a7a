"""The errors of a run, as opposed to those of a model or of the arguments: limits that stop
an exploration with what it found, stops from outside (signals, the clock), memory that ran
out, and a device that cannot be had; with the root of every error dvecost raises on purpose.

They know no model and no graph: the stage that stops fills in what it holds (``partial``,
``counts``) and the command line turns the error into its report and exit status (3 for a
limit, ``128 + signum`` for a signal, 2 for a missing device).

Examples
--------
>>> exc = StateLimitExceeded(100, 100)
>>> str(exc), isinstance(exc, ExplorationLimit), isinstance(exc, DvecostError)
('state limit reached: 100 states found, limit 100', True, True)
>>> stop = Interrupted(15, "SIGTERM")
>>> stop.exit_code, stop.status, isinstance(stop, Exception)
(143, 'interrupted', False)
"""

from __future__ import annotations

__all__ = [
    "DvecostError",
    "StateSpaceError",
    "ExplorationLimit",
    "StateLimitExceeded",
    "MemoryLimitExceeded",
    "StepLimitExceeded",
    "OutOfMemory",
    "AgreedOutOfMemory",
    "RunStopped",
    "Interrupted",
    "TimeLimitExceeded",
    "BackendUnavailableError",
]


class DvecostError(Exception):
    """Base of every error dvecost raises on purpose."""


class StateSpaceError(DvecostError):
    """Base of problems met while building the state graph."""


class ExplorationLimit(StateSpaceError):
    """Base of the limits that stop an exploration with what it found: ``n_explored`` states,
    and ``partial``, the graph up to the last chunk boundary (None when even that could not
    be assembled). A command reports them with the counts and exit code 3."""

    def __init__(self, message: str, n_explored: int, partial: object = None) -> None:
        super().__init__(message)
        self.n_explored = n_explored
        self.partial = partial


class StateLimitExceeded(ExplorationLimit):
    """Raised when exploration reaches ``--max-states`` (``limit``)."""

    def __init__(self, limit: int, n_explored: int, partial: object = None) -> None:
        super().__init__(f"state limit reached: {n_explored} states found, limit {limit}",
                         n_explored, partial)
        self.limit = limit


class MemoryLimitExceeded(ExplorationLimit):
    """Raised when exploration reaches ``--max-memory`` (``limit_bytes``)."""

    def __init__(self, limit_bytes: int, n_explored: int, partial: object = None) -> None:
        super().__init__(f"memory limit reached: {n_explored} states found, "
                         f"limit {limit_bytes} bytes", n_explored, partial)
        self.limit_bytes = limit_bytes


class StepLimitExceeded(ExplorationLimit):
    """Raised when a ``system sync`` model has more distinct steps than the explorer's 32-bit
    action ids can number (``limit``)."""

    def __init__(self, limit: int, n_explored: int, partial: object = None) -> None:
        super().__init__(f"more than {limit:,} distinct system sync steps (the explorer "
                         f"numbers them with 32-bit ids)", n_explored, partial)
        self.limit = limit


class OutOfMemory(MemoryLimitExceeded):
    """Raised when an allocation failed during exploration (no ``--max-memory`` reached, the
    machine ran out); ``limit_bytes`` is the limit in force or None. ``device`` is true when
    the GPU's memory was what ran out (``--backend gpu``), ``why`` then says how it was found."""

    device = False
    why = ""

    def __init__(self, limit_bytes: int | None, n_explored: int, partial: object = None) -> None:
        ExplorationLimit.__init__(self, f"out of memory after {n_explored} states", n_explored,
                                  partial)
        self.limit_bytes = limit_bytes


class AgreedOutOfMemory(OutOfMemory):
    """An allocation failed on one process of a run across processes after its search (the
    hand-over, the cycle engine, the runs gathered), and every process agreed on it at the
    same collective (:mod:`runtime.guard`): each raises this, with the same message.

    ``rank`` is the process whose allocation failed (the lowest, where several did), of
    ``size``; ``phase`` what the processes were doing; ``device`` is true where it was a
    GPU's memory. ``counts`` (states, transitions) are filled in by the stage that knows them.

    >>> e = AgreedOutOfMemory("trim", 1, 2, device=True)
    >>> str(e)
    'out of GPU memory on process 1 of 2 (phase: trim)'
    >>> e.summary == str(e), isinstance(e, OutOfMemory), e.rank, e.phase
    (True, True, 1, 'trim')
    """

    def __init__(self, phase: str, rank: int, size: int, device: bool = False,
                 n_explored: int = 0) -> None:
        OutOfMemory.__init__(self, None, n_explored)
        self.phase, self.rank, self.size, self.device = phase, rank, size, device
        self.summary = (f"out of {'GPU ' if device else ''}memory on process {rank} of "
                        f"{size} (phase: {phase})")
        self.args = (self.summary,)
        self.counts: dict[str, int] = {}
        self.why = f"process {rank} of {size}, phase {phase}"


class RunStopped(BaseException):
    """A run stopped from outside the computation: a signal (:class:`Interrupted`) or the
    ``--timeout`` clock (:class:`TimeLimitExceeded`).

    A ``BaseException`` like ``KeyboardInterrupt``, so that no ``except Exception`` on the way
    swallows it. The stage that was running may fill in ``partial`` (e.g. the explorer's graph
    found so far) and ``counts`` (e.g. ``{'states': 10, 'transitions': 31}``) before passing it
    on; ``exit_code`` is the command line's exit status (3, or 128 + the signal number).
    """

    exit_code = 3
    status = "stopped"

    def __init__(self, message: str, partial: object = None) -> None:
        super().__init__(message)
        self.partial = partial
        self.counts: dict[str, int] = {}


class Interrupted(RunStopped):
    """SIGINT or SIGTERM arrived; ``signal_name`` names it, exit status ``128 + signum``."""

    status = "interrupted"

    def __init__(self, signum: int, signal_name: str, partial: object = None) -> None:
        super().__init__(f"interrupted by {signal_name}", partial)
        self.signum = signum
        self.signal_name = signal_name
        self.exit_code = 128 + signum


class TimeLimitExceeded(RunStopped):
    """The ``--timeout`` clock ran out (exit status 3)."""

    status = "timeout"

    def __init__(self, seconds: float, partial: object = None) -> None:
        super().__init__(f"time limit of {seconds:g} s reached", partial)
        self.seconds = seconds


class BackendUnavailableError(DvecostError, RuntimeError):
    """Raised when the GPU is asked for (``backend='gpu'``) and CuPy or a CUDA device is
    missing; the message says why and how to get one. Bad input: exit status 2."""
