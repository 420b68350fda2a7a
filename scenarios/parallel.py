"""Searches over points, evaluated in worker processes, with answers identical to one by one.

The capacity searches (:mod:`scenarios.capacity`) decide which point to analyse next from the
answers so far: the frontier's staircase steps right after a point below capacity and down
after a saturated one. That is sequential logic, and it is kept sequential: a search is written
as a *walk*, ``walk(saturated, out)``, a plain function that asks ``saturated(key)`` of the
points it needs, in order, and appends its answer to ``out``. :class:`PointWalk` runs it.

With ``jobs=1`` each point is evaluated when the walk asks for it. With more jobs the walk is
replayed from the start with the outcomes known so far whenever it needs a new point; while
that point is being evaluated, the idle worker processes evaluate the points the walk is most
likely to ask for next (replaying it on both outcomes of the points still open, a few levels
deep, each outcome weighted by ``guess(key)``, the estimated chance that the point saturates).
A guess only decides what is computed early: the walk sees exactly the outcomes it sees with
``jobs=1``, so the points it asks for, their order and the answer are the same; the points
evaluated on a wrong guess are dropped from a finished result.

Reuse: the worker processes are forked once per search, so the spec (a scenario file is loaded
once, by the caller) and the ``work`` function are inherited, and what the analysis sets up on
first use (imports, the array backend, compiled kernels) stays warm from one point to the next.

Stopping: the workers ignore SIGINT (a Ctrl-C at the terminal reaches the whole process group;
the parent decides); SIGINT, SIGTERM and SIGALRM are held back while the pool forks its workers
or takes a point (a handler raising there would be lost or break the pool's shutdown), and
handled as soon as that is done; when the parent stops (a signal, ``--timeout``, an error) it ends its
workers, and :attr:`PointWalk.points` keeps every point the walk received, in order, and
:attr:`PointWalk.spare` those evaluated ahead. A worker that dies (killed for memory) stops
the walk with a :class:`~runtime.errors.StateSpaceError` naming the point it was waiting for.

Examples
--------
The smallest ``n`` with ``n * n >= 50``, one point after the other (``walk`` only sees
whether a point saturates; ``work`` says what a point is):

>>> def walk(saturated, out):
...     n = 0
...     while not saturated(n):
...         n += 1
...     out.append(n)
>>> w = PointWalk(walk, lambda n: n * n >= 50)
>>> w.run(), list(w.points)
([8], [0, 1, 2, 3, 4, 5, 6, 7, 8])
>>> PointWalk(walk, lambda n: n * n >= 50, jobs=2).run()
[8]
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as _wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Hashable

from dve.errors import ConfigurationError
from runtime.errors import StateSpaceError

__all__ = ["PointWalk", "default_jobs", "check_jobs"]

#: How many levels of outcomes the speculation looks ahead (2^depth replays at most per point).
_DEPTH = 4

#: The signals that stop a run (SIGINT, SIGTERM, and SIGALRM for ``--timeout``): held back
#: while the pool starts processes and threads (:func:`_signals_held`).
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM, signal.SIGALRM}


@contextlib.contextmanager
def _signals_held():
    """Hold back the stop signals while the pool is being started or handed a point.

    ``pool.submit`` forks worker processes and starts the pool's manager thread. A handler
    that raises there is lost or does harm: raised inside an at-fork callback (logging's), the
    exception is printed as "ignored" and the run goes on as if no signal had come; raised
    between creating the manager thread and starting it, the pool's shutdown then fails with
    "cannot join thread before it is started". Held back (blocked), a signal stays pending and
    its handler runs once the block ends, in this thread, at a point where raising is safe.
    Outside the main thread (no handlers run there) nothing is done."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def default_jobs() -> int:
    """The number of CPU cores this process may run on (at least 1).

    >>> default_jobs() >= 1
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_jobs(jobs: int | None) -> int:
    """``jobs`` checked (an integer >= 1), or :func:`default_jobs` for ``None``.

    >>> check_jobs(2), check_jobs(None) == default_jobs()
    (2, True)
    """
    if jobs is None:
        return default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigurationError(f"jobs must be an integer >= 1, not {jobs!r}")
    return jobs


class _Unknown(Exception):
    """Raised inside a replay: the walk asks for a point whose outcome is not known."""

    def __init__(self, key: Hashable) -> None:
        super().__init__(key)
        self.key = key


# ------------------------------------------------------------------ the worker processes

_WORK: Callable[[Any], Any] | None = None


def _start_worker(work: Callable[[Any], Any]) -> None:
    """In a forked worker: keep ``work``; leave SIGINT to the parent and let SIGTERM end it
    (the parent's handlers, inherited by the fork, would raise in here)."""
    global _WORK
    _WORK = work
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # Forked while the parent held its stop signals back (_signals_held): the mask is
    # inherited, and a worker must hear SIGTERM (the parent ends it with that).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOP_SIGNALS)
    try:  # on Linux, die with the parent, whatever ends it (kill -9, a second Ctrl-C)
        import ctypes
        ctypes.CDLL(None).prctl(1, int(signal.SIGTERM))   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _run_point(key: Any) -> tuple[str, Any]:
    """In a worker: ``('ok', point)``, or ``('raise', exception)`` for the parent to raise
    (a :class:`StateSpaceError` as its message: its own arguments may not survive pickling)."""
    try:
        return "ok", _WORK(key)
    except StateSpaceError as exc:
        return "limit", str(exc)
    except KeyboardInterrupt:
        # Raised by the evaluation itself (workers ignore SIGINT): like any error of a point
        # evaluated ahead, it counts only if and when the walk asks for that point; escaping
        # here, it would reach the parent while it waits for another.
        return "raise", KeyboardInterrupt()
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
        try:
            pickle.loads(pickle.dumps(exc))
            return "raise", exc
        except Exception:  # noqa: BLE001 - an exception that does not pickle: its text
            return "raise", RuntimeError(f"{type(exc).__name__}: {exc}")


def _unpack(key: Any, reply: tuple[str, Any]) -> Any:
    """The point of a worker's reply, or its error raised."""
    kind, value = reply
    if kind == "ok":
        return value
    if kind == "limit":
        raise StateSpaceError(value)
    raise value


# ------------------------------------------------------------------ the walk

class PointWalk:
    """Run ``walk(saturated, out)`` with each point evaluated by ``work(key)``.

    Parameters
    ----------
    walk : callable
        ``walk(saturated, out)``: the search, sequential and deterministic; ``saturated(key)``
        is the outcome of point ``key`` (``work(key).saturated``, or ``work(key)`` itself if
        that is a bool); the answer is appended to the list ``out``.
    work : callable
        ``work(key) -> point``; with ``jobs > 1`` it runs in forked worker processes, so its
        point must pickle.
    jobs : int
        Worker processes (1: evaluate in this process, one point at a time).
    guess : callable, optional
        ``guess(key, points) -> float``: the chance that ``key`` saturates, from the points
        evaluated so far (default 0.5); only what is evaluated ahead depends on it.
    progress : callable, optional
        Hears each point the walk receives, in the walk's order.
    waiting : callable, optional
        Hears the key of each point the walk has to wait for (one not evaluated ahead), just
        before it waits: when its evaluation starts, with ``jobs=1``.
    outcome : callable, optional
        ``outcome(point) -> bool``, whether a point saturates (default: the point itself if
        it is a bool, else its ``saturated``).

    Attributes
    ----------
    points : dict
        ``{key: point}`` for each point the walk received, in the order it asked for them.
    spare : dict
        Points evaluated ahead that the walk has not asked for (yet).
    current : key or None
        The point the walk is waiting for.
    """

    def __init__(self, walk: Callable[[Callable[[Any], bool], list], None],
                 work: Callable[[Any], Any], *, jobs: int = 1,
                 guess: Callable[[Any, dict], float] | None = None,
                 progress: Callable[[Any], None] | None = None,
                 waiting: Callable[[Any], None] | None = None,
                 outcome: Callable[[Any], bool] | None = None) -> None:
        self.walk, self.work, self.jobs = walk, work, check_jobs(jobs)
        self.guess = guess or (lambda key, points: 0.5)
        self.tell = progress or (lambda point: None)
        self.waiting = waiting or (lambda key: None)
        self.outcome = outcome
        self.points: dict[Any, Any] = {}
        self.spare: dict[Any, Any] = {}
        self.current: Any = None
        self._errors: dict[Any, tuple[str, Any]] = {}

    # -- replays

    def _outcome(self, point: Any) -> bool:
        if self.outcome is not None:
            return bool(self.outcome(point))
        return bool(point) if isinstance(point, bool) else bool(point.saturated)

    def _replay(self, assumed: dict[Any, bool] | None = None) -> tuple[Any, list]:
        """``(first key whose outcome is unknown, or None when the walk ends; out)``, with the
        outcomes of :attr:`points` and those ``assumed``."""
        out: list = []

        def saturated(key: Any) -> bool:
            if key in self.points:
                return self._outcome(self.points[key])
            if assumed is not None and key in assumed:
                return assumed[key]
            raise _Unknown(key)

        try:
            self.walk(saturated, out)
        except _Unknown as u:
            return u.key, out
        return None, out

    def so_far(self) -> list:
        """The walk's answer as far as the points received take it (all of it when done)."""
        return self._replay()[1]

    def _ahead(self, need: Any, busy: set, slots: int) -> list:
        """Up to ``slots`` keys most likely to be asked for after ``need``, not yet evaluated
        or being evaluated: replays of the walk on both outcomes of each open point, weighted
        by :attr:`guess`, :data:`_DEPTH` levels deep (the points evaluated ahead count as
        known)."""
        spare = {k: self._outcome(p) for k, p in self.spare.items()}
        known = {**self.points, **self.spare}
        score: dict[Any, float] = {}
        worlds: list[tuple[dict, float]] = [({}, 1.0)]
        for _ in range(_DEPTH):
            grown = []
            for assumed, chance in worlds:
                key = self._replay({**spare, **assumed})[0]
                if key is None:
                    continue
                if key not in busy and key != need and key not in self._errors:
                    score[key] = score.get(key, 0.0) + chance
                g = min(1.0, max(0.0, float(self.guess(key, known))))
                grown += [({**assumed, key: True}, chance * g),
                          ({**assumed, key: False}, chance * (1.0 - g))]
            worlds = [w for w in grown if w[1] > 0]
        return sorted(score, key=lambda k: (-score[k], repr(k)))[:slots]

    # -- running

    def run(self) -> list:
        """Run the walk to its end; returns ``out``. Whatever stops it (an exception from
        ``work``, a signal) leaves :attr:`points` and :attr:`spare` as far as they got."""
        if self.jobs == 1 or "fork" not in multiprocessing.get_all_start_methods():
            while True:
                need, out = self._replay()
                if need is None:
                    return out
                self.current = need
                self.waiting(need)
                self._receive(need, self.work(need))
        with _signals_held():
            pool = ProcessPoolExecutor(max_workers=self.jobs,
                                       mp_context=multiprocessing.get_context("fork"),
                                       initializer=_start_worker, initargs=(self.work,))
        running: dict[Any, Future] = {}
        try:
            while True:
                need, out = self._replay()
                if need is None:
                    return out
                self.current = need
                if need in self.spare:
                    self._receive(need, self.spare.pop(need))
                    continue
                if need in self._errors:
                    _unpack(need, self._errors.pop(need))
                if need not in running or not running[need].done():
                    self.waiting(need)
                if need not in running:
                    with _signals_held():
                        running[need] = pool.submit(_run_point, need)
                free = self.jobs - sum(1 for f in running.values() if not f.done())
                for key in self._ahead(need, set(running), free) if free > 0 else ():
                    with _signals_held():
                        running[key] = pool.submit(_run_point, key)
                while not running[need].done():
                    _wait(list(running.values()), return_when=FIRST_COMPLETED)
                    self._collect(running, need)
                self._receive(need, _unpack(need, running.pop(need).result()))
                self._collect(running, need)
        except BrokenProcessPool:
            # Which point killed it is unknown (a point evaluated ahead may have): the walk
            # stops at the point it was waiting for (self.current), which the caller names.
            raise StateSpaceError("a worker process died (killed for memory?)") from None
        finally:
            # A stop (signal, --timeout, an error) must not wait for the points still being
            # evaluated: end the workers, then drop the pool. (ProcessPoolExecutor has no
            # public way to end its processes before Python 3.14; its _processes are ours.)
            for proc in list((getattr(pool, "_processes", None) or {}).values()):
                if proc.is_alive():
                    proc.terminate()
            pool.shutdown(wait=True, cancel_futures=True)

    def _collect(self, running: dict[Any, Future], need: Any) -> None:
        """Move the finished points evaluated ahead into :attr:`spare` (an error there is
        kept for when, if ever, the walk asks for that point)."""
        for key in [k for k, f in running.items() if k != need and f.done()]:
            reply = running.pop(key).result()
            if reply[0] == "ok":
                self.spare[key] = reply[1]
            else:
                self._errors[key] = reply

    def _receive(self, key: Any, point: Any) -> None:
        self.points[key] = point
        self.tell(point)
