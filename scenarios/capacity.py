"""Capacity planning: how many workers a population needs, how much headroom it leaves,
and which mixes saturate a server.

Three questions on top of the load of :mod:`scenarios.saturation`: by default the server's
**occupancy** (the maximal cycle mean of its busy workers per tick), judged against its number
of workers; with ``resource='server'``, the requests' cost per tick, judged against a capacity
the caller gives. Where occupancy is judged, the worst cost load is reported beside it. All take
the same injected
``evaluate(model, *, resource, witness)`` as :func:`~scenarios.saturation.saturate`;
:mod:`dvecost.capacity` binds dvecost's own analysis.

:func:`workers_needed`
    For a fixed population ``{scenario: count}``, the smallest number of workers ``w`` that
    the population does not saturate (occupancy below ``w``: no run keeps all ``w`` busy
    forever). Every ``w`` from 1 up is
    tried until one is below, so the answer is exact whatever the load curve does; the loads
    tried are kept, and a load that drops when a worker is added is listed as a violation.

:func:`headroom`
    For a fixed population on a fixed server, the worst load as a fraction of the capacity
    and what is left (``capacity - load``), with the run that produces it (one analysis, its
    critical cycle decoded).

:func:`frontier`
    For two scenarios ``A`` and ``B`` (the others fixed), for each count ``n_a`` the largest
    ``n_b`` that does not saturate: the frontier, a staircase. If the load never decreases when
    a client is added, that largest ``n_b`` never grows with ``n_a``. The walk finds column
    0's answer by exponential then binary search from ``n_b = 0`` up (small models first),
    then, level by level, gallops right along the stair to the last column still below
    capacity and steps down where it saturates: a flat stretch of ``k`` columns costs about
    ``2 log2(k)`` analyses, and a stair that steps down at every column about one analysis
    per column and per level (about ``max_a + max_b + 2 log2(max_b)`` in all, as a walk
    column by column), not the ``(max_a + 1)(max_b + 1)`` of the grid. The columns it skips
    are below capacity because a point to their right on the same level is; their loads are
    known only between bounds (:meth:`FrontierResult.load_range`).
    Every evaluated point is kept, and any pair of them with ``p <= q`` (in both counts) and
    ``load(p) > load(q)`` is listed as a violation, since the staircase rests on that
    assumption there.

A point with no client at all (``(0, 0)`` with nothing fixed) has load 0 and is not analysed.

Both are written as walks for :class:`~scenarios.parallel.PointWalk`: with ``jobs > 1`` spare
worker processes analyse the points the walk is likely to ask for next, and the result is the
same as with ``jobs=1``.

Examples
--------
A stand-in evaluator whose load is ``min(workers, clients / 3)`` (each client keeps a worker
busy a third of the time), on a server of cost 1 per tick:

>>> from fractions import Fraction
>>> from scenarios import Scenario, Server, System, Think, Request
>>> from scenarios.saturation import Evaluation
>>> user = Scenario("user", [Think(10), Request("job", service=6)])
>>> def workers_of(model):  # the server's workers, as the model's text declares them
...     names = [getattr(i, "name", "") for i in model.items]
...     if "WORKERS" in names:
...         return model.items[names.index("WORKERS")].init.value
...     return sum(1 for n in names if n.startswith("done"))
>>> def fake(model, *, resource, witness):
...     workers = workers_of(model)
...     n = len(model.processes) - 1
...     return Evaluation(min(Fraction(workers), Fraction(n, 3)), n_states=n)
>>> r = workers_needed(System({user: 1}, server=Server()), {"user": 7}, evaluate=fake)
>>> r.workers, [(p.workers, str(p.exact)) for p in r.tried]
(3, [(1, '1'), (2, '2'), (3, '7/3')])
"""

from __future__ import annotations

import dataclasses
import time as _time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Mapping

from dve.errors import ConfigurationError, ModelError
from runtime.errors import RunStopped, StateSpaceError

from .dsl import Scenario, System
from .parallel import PointWalk
from .saturation import Evaluator, Spec, parse_capacity, resolve_spec
from .walks import staircase

__all__ = ["workers_needed", "WorkersResult", "WorkerPoint", "headroom", "HeadroomResult",
           "frontier", "FrontierResult", "FrontierPoint", "system_for", "DEFAULT_MAX_WORKERS",
           "DEFAULT_FRONTIER_MAX", "walk_frontier", "finish_walk", "linear_guess"]

#: The default limit of :func:`workers_needed` (a :class:`~scenarios.dsl.Server` has at most
#: 16 workers).
DEFAULT_MAX_WORKERS = 16

#: The default ``max_clients`` of :func:`frontier`, for each of the two scenarios.
DEFAULT_FRONTIER_MAX = 8

#: How far :func:`system_for` looks (``family(1), family(2), family(4), ...``) for scenarios.
_SCAN_LIMIT = 256


def _num(x: Fraction | None) -> int | float | None:
    if x is None:
        return None
    return int(x) if x.denominator == 1 else float(x)


def system_for(spec: Spec, clients: Mapping[str, int], *, workers: int | None = None,
               resource: str | None = None) -> tuple[str, Callable[..., System]]:
    """``(name, build)``, ``build(counts, workers=None)`` being the system of the spec with
    ``counts`` (``{scenario name: count}``) clients and, if given, that many workers.

    The scenarios are those of the spec's systems ``family(1), family(2), family(4), ...``
    (a template such as ``editor`` shares its users among its scenarios, so a small system
    may lack one); the server, composition and name are those of ``family(1)``; the resource
    judged is ``resource`` (default: occupancy with a server).

    >>> name, build = system_for("editor", {"reader": 0, "exporter": 0})
    >>> build({"reader": 3, "exporter": 1}, workers=2).describe()
    '4 clients (reader: 3, exporter: 1), server with 2 workers, system sync'

    Raises
    ------
    dve.errors.ConfigurationError
        A scenario name that no system of the spec has, a negative count, or ``workers`` on a
        system with no server.
    """
    name, family = resolve_spec(spec)
    base = family(1)
    found: dict[str, Scenario] = {}
    k = 1
    while True:
        try:
            system = family(k)
        except (ConfigurationError, ModelError):
            # Too many clients for a server (a user's file reports it as a ModelError at its
            # system(n)): nothing more to find. family(1) was built above, so k > 1 here.
            break
        for sc in system.scenarios:
            found.setdefault(sc.name, sc)
        if all(n in found for n in clients) or k >= _SCAN_LIMIT:
            break
        k *= 2
    missing = [n for n in clients if n not in found]
    if missing:
        raise ConfigurationError(f"no scenario '{missing[0]}' in {name}; its scenarios: "
                                 + ", ".join(found))
    for n, c in clients.items():
        if isinstance(c, bool) or not isinstance(c, int) or c < 0:
            raise ConfigurationError(f"the count of scenario '{n}' must be an integer >= 0, "
                                     f"not {c!r}")
    if workers is not None and base.server is None:
        raise ConfigurationError(f"{name} has no server, so it has no workers to count")

    def build(counts: Mapping[str, int], workers: int | None = workers) -> System:
        # Another number of workers keeps the server's admissions per tick (at most the
        # workers: a server cannot admit more requests on a tick than it has workers) and
        # its policy.
        server = base.server if workers is None else dataclasses.replace(
            base.server, workers=workers, admissions=min(base.server.admissions, workers))
        return System({found[n]: c for n, c in counts.items()}, server=server,
                      composition=base.composition, name=base.name, resource=resource)

    return name, build


def _per_worker(system: System, capacity: int | float | str | Fraction | None) -> Fraction:
    """What one worker can carry of the resource judged: 1 (it is busy or not) on occupancy
    unless ``capacity`` says otherwise; on a cost resource, ``capacity``, which is required."""
    if capacity is not None:
        return parse_capacity(capacity)
    if system.server is not None and not system.occupancy:
        raise ConfigurationError(
            f"resource '{system.resource}' (the requests' cost per tick) has no default "
            "capacity: give one worker's (--capacity C), or judge occupancy (the default)")
    return Fraction(1)


def _cost_load(system: System, evaluate: Evaluator, witness: bool) -> tuple[Any, Any]:
    """``(worst cost load, its witness)`` of ``system`` judged on occupancy (one more
    analysis, of its cost resource), or ``(None, None)`` when the cost is what is judged."""
    if system.server is None or not system.occupancy:
        return None, None
    ev = evaluate(system.to_model(), resource=system.cost_resource, witness=witness)
    return (Fraction(ev.exact) if ev.certified else None), ev.witness


# ---------------------------------------------------------------------------- workers

@dataclass(frozen=True)
class WorkerPoint:
    """The load of the population with ``workers`` workers.

    ``capacity`` is ``workers`` on occupancy (``workers x`` one worker's capacity on a cost
    resource); ``saturated`` is ``exact >= capacity``.
    """

    workers: int
    #: The worst load, exact.
    exact: Fraction
    #: ``workers`` x what one worker carries (1 on occupancy).
    capacity: Fraction
    #: States of the model's full state space (explored one orbit at a time).
    n_states: int
    #: Wall time to build and analyse the model.
    seconds: float
    #: Whether the exact certificate proved ``exact``.
    certified: bool = True

    @property
    def saturated(self) -> bool:
        """Whether the load reaches the capacity."""
        return self.exact >= self.capacity

    @property
    def utilisation(self) -> Fraction:
        """The load as a fraction of the capacity."""
        return self.exact / self.capacity

    def as_dict(self) -> dict:
        """The JSON form."""
        return {"workers": self.workers, "exact": str(self.exact), "value": float(self.exact),
                "capacity": _num(self.capacity), "utilisation": float(self.utilisation),
                "saturated": self.saturated, "n_states": self.n_states,
                "seconds": round(self.seconds, 4), "certified": self.certified}


@dataclass(frozen=True)
class WorkersResult:
    """The answer of :func:`workers_needed` (``dvecost workers``'s table:
    :func:`dvecost.capacity_report.workers_text`).

    Attributes
    ----------
    spec, clients : str, tuple of (str, int)
        The spec's name; the population, by scenario.
    workers : int or None
        The smallest number of workers whose load stays below capacity; ``None`` when none up
        to ``max_workers`` does (or the search stopped first, see ``status``).
    tried : tuple of WorkerPoint
        The loads tried, by number of workers (1 up to the answer).
    per_worker : Fraction
        The capacity of one worker: 1 on occupancy (busy or not), else as given.
    monotone : bool
        Whether the load never drops when a worker is added (among the values tried).
    violations : tuple of (int, int)
        Pairs ``(w1, w2)``, ``w1 < w2``, whose loads drop from ``w1`` to ``w2``.
    max_workers : int
        The search's limit.
    status : str
        ``'ok'``, ``'limit'`` (a state or memory limit stopped it), ``'interrupted'`` or
        ``'timeout'``.
    stopped : str or None
        Why it stopped early.
    """

    spec: str
    clients: tuple[tuple[str, int], ...]
    workers: int | None
    tried: tuple[WorkerPoint, ...]
    per_worker: Fraction
    monotone: bool
    violations: tuple[tuple[int, int], ...]
    max_workers: int
    status: str = "ok"
    stopped: str | None = None
    #: The resource judged (``'busy'``: occupancy, or a cost resource).
    resource: str = "busy"
    #: Beside an occupancy answer: the cost resource and the worst cost load with the
    #: answer's workers (exact), where one was computed.
    cost_resource: str | None = None
    cost_load: Fraction | None = None
    #: The server's policy (:class:`scenarios.dsl.Server`) and, unless ``'any'``, its words.
    policy: str = "any"
    policy_words: str = ""

    def as_dict(self) -> dict:
        """The JSON form (``dvecost workers --json``)."""
        return {"status": self.status, "spec": self.spec, "clients": dict(self.clients),
                "resource": self.resource, "cost_resource": self.cost_resource,
                "cost_load": _num(self.cost_load),
                "cost_load_exact": None if self.cost_load is None else str(self.cost_load),
                "workers": self.workers, "per_worker": _num(self.per_worker),
                "max_workers": self.max_workers, "monotone": self.monotone,
                "violations": [list(v) for v in self.violations], "stopped": self.stopped,
                "tried": [p.as_dict() for p in self.tried]} | (
                    {} if self.policy == "any" else {"policy": self.policy,
                                                     "policy_words": self.policy_words})

    def __repr__(self) -> str:
        # One line: the dataclass's own repr spells out every point tried.
        return (f"WorkersResult(spec={self.spec!r}, clients={dict(self.clients)!r}, "
                f"workers={self.workers!r}, tried={len(self.tried)}, status={self.status!r})")


def workers_needed(spec: Spec, clients: Mapping[str, int], *, evaluate: Evaluator,
                   max_workers: int = DEFAULT_MAX_WORKERS, jobs: int = 1,
                   progress: Callable[[object], None] | None = None,
                   resource: str | None = None,
                   capacity: int | float | str | Fraction | None = None,
                   cost: bool = True) -> WorkersResult:
    """The smallest number of workers that ``clients`` do not saturate.

    Parameters
    ----------
    spec : str, pathlib.Path, callable or System
        Where the scenarios come from (:func:`~scenarios.saturation.resolve_spec`); it must
        have a server.
    clients : mapping of str to int
        The population: ``{scenario name: count}``.
    evaluate : callable
        ``evaluate(model, *, resource, witness) -> Evaluation`` (as for
        :func:`~scenarios.saturation.saturate`).
    max_workers : int
        Try no more than this many workers (1 to 16).
    jobs : int
        Worker processes (:class:`~scenarios.parallel.PointWalk`): with 2, ``w + 1`` workers
        are analysed while ``w`` are; the answer and ``tried`` are those of ``jobs=1``.
    progress : callable, optional
        Hears each :class:`WorkerPoint` tried, in order (1, 2, ...).
    resource : str, optional
        The resource judged: occupancy (``'busy'``, default), or ``'server'`` (the requests'
        cost per tick) against ``capacity``.
    capacity : number, optional
        What one worker carries of the resource judged (default 1 on occupancy: a worker is
        busy or not; required on a cost resource).
    cost : bool
        With occupancy judged, also compute the worst cost load with the answer's workers
        (one more analysis).

    Returns
    -------
    WorkersResult
        With ``w`` workers the capacity is ``w x`` one worker's; the answer is the first
        ``w`` (from 1 up) whose load is below it: on occupancy, the first ``w`` no run keeps
        all busy forever.

    Examples
    --------
    With a stand-in whose load is ``min(workers, 5/4)``, 2 workers suffice:

    >>> from scenarios import Scenario, Server, System, Request
    >>> from scenarios.saturation import Evaluation
    >>> u = Scenario("u", Request("r", 1))
    >>> def fake(model, *, resource, witness):
    ...     names = [getattr(i, "name", "") for i in model.items]
    ...     w = (model.items[names.index("WORKERS")].init.value if "WORKERS" in names
    ...          else sum(1 for n in names if n.startswith("done")))
    ...     return Evaluation(min(Fraction(w), Fraction(5, 4)), n_states=1)
    >>> workers_needed(System({u: 1}, server=Server()), {"u": 5}, evaluate=fake).workers
    2
    """
    if isinstance(max_workers, bool) or not isinstance(max_workers, int) \
            or not 1 <= max_workers <= 16:
        raise ConfigurationError(f"max_workers must be an integer from 1 to 16, "
                                 f"not {max_workers!r}")
    if not clients or sum(clients.values()) < 1:
        raise ConfigurationError("workers_needed needs at least one client")
    name, build = system_for(spec, clients, workers=1, resource=resource)
    per = _per_worker(build(clients), capacity)

    def work(w: int) -> WorkerPoint:
        t0 = _time.perf_counter()
        system = build(clients, workers=w)
        ev = evaluate(system.to_model(), resource=system.resource, witness=False)
        return WorkerPoint(w, Fraction(ev.exact), per * w, int(ev.n_states),
                           _time.perf_counter() - t0, bool(ev.certified))

    def walk(saturated: Callable[[int], bool], out: list) -> None:
        for w in range(1, max_workers + 1):
            if not saturated(w):
                out.append(w)
                return

    # Ahead of w, the likely next point is w + 1 (a load that needs more than w workers
    # usually needs more than w + 1 too: the first answers are the costly ones to skip).
    run = PointWalk(walk, work, jobs=jobs, guess=lambda w, known: 0.6, progress=progress)

    def result(status: str = "ok", stopped: str | None = None, more: tuple = ()) \
            -> WorkersResult:
        tried = tuple(run.points.values()) + more
        viol = tuple((a.workers, b.workers) for i, a in enumerate(tried) for b in tried[i + 1:]
                     if b.exact < a.exact)
        answer = next(iter(run.so_far()), None)
        system = build(clients, workers=answer or 1)
        load = (_cost_load(system, evaluate, False)[0]
                if cost and status == "ok" and answer is not None else None)
        return WorkersResult(name, tuple(clients.items()), answer, tried, per, not viol, viol,
                             max_workers, status, stopped, system.resource,
                             system.cost_resource if system.occupancy else None, load,
                             system.server.policy, system.server.policy_words())

    return finish_walk(run, result, lambda w: f"workers={w}")


# ---------------------------------------------------------------------------- headroom

@dataclass(frozen=True)
class HeadroomResult:
    """The answer of :func:`headroom`: one population on one server, its worst load against
    the capacity, and the run that produces it.

    Attributes
    ----------
    spec, clients : str, tuple of (str, int)
        The spec's name; the population, by scenario.
    workers : int
        The server's workers.
    capacity : Fraction
        The load that counts as saturated (on occupancy, ``workers`` unless given).
    exact : Fraction
        The worst load (maximal cycle mean of the resource judged), exact.
    n_states : int
        States of the model's full state space (explored one orbit at a time).
    seconds : float
        Wall time to build and analyse the model, the run decoded.
    certified : bool
        Whether the exact certificate proved ``exact``.
    witness : object
        What the evaluator returned to show the run (``dvecost``'s: a
        :class:`dvecost.Analysis` with the critical cycle); opaque here.
    """

    spec: str
    clients: tuple[tuple[str, int], ...]
    workers: int
    capacity: Fraction
    exact: Fraction
    n_states: int
    seconds: float
    certified: bool = True
    witness: Any = None
    #: The resource judged (``'busy'``: occupancy, or a cost resource).
    resource: str = "busy"
    #: Beside occupancy: the cost resource, its worst load (exact) and that load's own run.
    cost_resource: str | None = None
    cost_load: Fraction | None = None
    cost_witness: Any = None
    #: The server's policy (:class:`scenarios.dsl.Server`) and, unless ``'any'``, its words.
    policy: str = "any"
    policy_words: str = ""

    @property
    def used(self) -> Fraction:
        """The load as a fraction of the capacity."""
        return self.exact / self.capacity

    @property
    def headroom(self) -> Fraction:
        """How much more load the server could sustain: ``capacity - exact`` (0 or less:
        saturated)."""
        return self.capacity - self.exact

    @property
    def saturated(self) -> bool:
        """Whether the load reaches the capacity."""
        return self.exact >= self.capacity

    def as_dict(self) -> dict:
        """The JSON form (``dvecost headroom --json``, which adds the run)."""
        return {"status": "ok", "spec": self.spec, "clients": dict(self.clients),
                "resource": self.resource, "cost_resource": self.cost_resource,
                "cost_load": _num(self.cost_load),
                "cost_load_exact": None if self.cost_load is None else str(self.cost_load),
                "workers": self.workers, "capacity": _num(self.capacity),
                "capacity_exact": str(self.capacity), "exact": str(self.exact),
                "value": float(self.exact), "used": float(self.used),
                "headroom_exact": str(self.headroom), "headroom": float(self.headroom),
                "saturated": self.saturated, "certified": self.certified,
                "n_states": self.n_states, "seconds": round(self.seconds, 4)} | (
                    {} if self.policy == "any" else {"policy": self.policy,
                                                     "policy_words": self.policy_words})

    def __repr__(self) -> str:
        # One line: the dataclass's own repr spells out the witness (the whole analysis).
        return (f"HeadroomResult(spec={self.spec!r}, clients={dict(self.clients)!r}, "
                f"workers={self.workers}, capacity={self.capacity}, exact={self.exact}, "
                f"saturated={self.saturated})")


def headroom(spec: Spec, clients: Mapping[str, int], *, evaluate: Evaluator,
             workers: int | None = None,
             capacity: int | float | str | Fraction | None = None,
             resource: str | None = None, cost: bool = True) -> HeadroomResult:
    """The worst load of one population on one server as a fraction of its capacity, with
    the run that produces it.

    Parameters
    ----------
    spec : str, pathlib.Path, callable or System
        Where the scenarios and the server come from; it must have a server.
    clients : mapping of str to int
        The population: ``{scenario name: count}``.
    evaluate : callable
        ``evaluate(model, *, resource, witness) -> Evaluation``, called once with
        ``witness=True``.
    workers : int, optional
        A server with this many workers instead of the spec's.
    capacity : number, optional
        The load that counts as saturated; default ``workers`` on occupancy; required on a
        cost resource.
    resource : str, optional
        The resource judged: occupancy (``'busy'``, default) or ``'server'``.
    cost : bool
        With occupancy judged, also compute the worst cost load, with its own run (a
        second analysis, with ``witness=True``).

    Returns
    -------
    HeadroomResult

    Examples
    --------
    A stand-in whose load is a third of a worker per client: 4 clients on 2 workers use 2/3
    of the capacity.

    >>> from scenarios import Scenario, Server, System, Request
    >>> from scenarios.saturation import Evaluation
    >>> u = Scenario("u", Request("r", 1))
    >>> def fake(model, *, resource, witness):
    ...     n = len(model.processes) - 1
    ...     return Evaluation(Fraction(n, 3), n_states=n, witness="run" if witness else None)
    >>> r = headroom(System({u: 1}, server=Server()), {"u": 4}, evaluate=fake, workers=2,
    ...              cost=False)
    >>> r.exact, r.capacity, r.used, r.headroom, r.witness
    (Fraction(4, 3), Fraction(2, 1), Fraction(2, 3), Fraction(2, 3), 'run')
    """
    if not clients or sum(clients.values()) < 1:
        raise ConfigurationError("headroom needs at least one client")
    name, build = system_for(spec, clients, workers=workers, resource=resource)
    t0 = _time.perf_counter()
    system = build(clients)
    if system.server is None:
        raise ConfigurationError(f"{name} has no server: its load has no capacity to compare "
                                 "with (dvecost analyze gives the load itself)")
    if capacity is None:
        cap = system.server.workers * _per_worker(system, None)
    else:
        cap = parse_capacity(capacity)
    ev = evaluate(system.to_model(), resource=system.resource, witness=True)
    load, run = _cost_load(system, evaluate, True) if cost else (None, None)
    return HeadroomResult(name, tuple(clients.items()), system.server.workers, cap,
                          Fraction(ev.exact), int(ev.n_states), _time.perf_counter() - t0,
                          bool(ev.certified), ev.witness, system.resource,
                          system.cost_resource if system.occupancy else None, load, run,
                          system.server.policy, system.server.policy_words())


# ---------------------------------------------------------------------------- the frontier

@dataclass(frozen=True)
class FrontierPoint:
    """One evaluated point ``(n_a, n_b)`` of the frontier's grid."""

    n_a: int
    n_b: int
    exact: Fraction
    saturated: bool
    n_states: int
    seconds: float
    certified: bool = True

    def as_dict(self) -> dict:
        """The JSON form."""
        return {"n_a": self.n_a, "n_b": self.n_b, "exact": str(self.exact),
                "value": float(self.exact), "saturated": self.saturated,
                "n_states": self.n_states, "seconds": round(self.seconds, 4),
                "certified": self.certified}


@dataclass(frozen=True)
class FrontierResult:
    """The answer of :func:`frontier`.

    Attributes
    ----------
    spec, a, b : str
        The spec's name and the two scenarios varied.
    fixed : tuple of (str, int)
        The other scenarios' counts, held fixed.
    capacity : Fraction
        The load that counts as saturated.
    max_a, max_b : int
        The grid: ``0..max_a`` by ``0..max_b``.
    stair : tuple of (int, int or None)
        ``(n_a, largest n_b that does not saturate)`` for every ``n_a``; ``None`` when even
        ``n_b = 0`` saturates. A value of ``max_b`` means no ``n_b`` up to the limit saturates.
        After the first ``None`` the rest are ``None`` by monotonicity, without analysis.
    points : tuple of FrontierPoint
        Every evaluated point, in the order evaluated.
    monotone : bool
        Whether no evaluated pair contradicts monotonicity.
    violations : tuple of (FrontierPoint, FrontierPoint)
        Pairs ``(p, q)`` with ``p`` at or below ``q`` in both counts and a larger load.
    status, stopped : str, str or None
        As for :class:`WorkersResult`; a stopped walk has a stair only up to where it got.
    cutoff_a, cutoff_b : int or None
        The scenarios' cutoffs used by the walk (see ``cutoffs`` of :func:`frontier`).
    """

    spec: str
    a: str
    b: str
    fixed: tuple[tuple[str, int], ...]
    capacity: Fraction
    max_a: int
    max_b: int
    stair: tuple[tuple[int, int | None], ...]
    points: tuple[FrontierPoint, ...]
    monotone: bool
    violations: tuple[tuple[FrontierPoint, FrontierPoint], ...]
    status: str = "ok"
    stopped: str | None = None
    # From how many clients of ``a`` (of ``b``) on one more changes no load
    # (scenarios.cutoff.cutoff; None: not used or not shown): the walk evaluates no count
    # above it and reads such a point off the cutoff's.
    cutoff_a: int | None = None
    cutoff_b: int | None = None
    #: Why no point needed analysing, when the system's shape decides the whole grid (its
    #: load bound, :meth:`~scenarios.dsl.System.load_bound`, below the capacity).
    note: str | None = None

    @property
    def analyses(self) -> int:
        """How many points were analysed (the empty point is not)."""
        return sum(1 for p in self.points if p.n_states > 0)

    @property
    def seconds(self) -> float:
        """Total time spent on the points."""
        return sum(p.seconds for p in self.points)

    def point(self, n_a: int, n_b: int) -> FrontierPoint | None:
        """The evaluated point at ``(n_a, n_b)`` (above a cutoff, the cutoff's, which has the
        same load), or ``None``."""
        key = _clamp((n_a, n_b), self.cutoff_a, self.cutoff_b)
        return next((p for p in self.points if (p.n_a, p.n_b) == key), None)

    def load_range(self, n_a: int, n_b: int) -> tuple[Fraction | None, Fraction | None]:
        """``(low, high)``: the load at ``(n_a, n_b)`` if it was evaluated (``low == high``),
        else the bounds that the evaluated points give it with a monotone load: the largest
        load of a point at or below it in both counts, the smallest of one at or above it
        (``None``: no such point).

        The walk leaves a flat stretch of the stair unanalysed between the points that bound
        it; this is what its table shows there.
        """
        ka, kb = _clamp((n_a, n_b), self.cutoff_a, self.cutoff_b)
        below = [p.exact for p in self.points if p.n_a <= ka and p.n_b <= kb]
        above = [p.exact for p in self.points if p.n_a >= ka and p.n_b >= kb]
        return max(below, default=None), min(above, default=None)

    def _stair_dicts(self) -> list[dict]:
        out = []
        for a, b in self.stair:
            low, high = (None, None) if b is None else self.load_range(a, b)
            out.append({"n_a": a, "max_n_b": b,
                        "analysed": b is not None and self.point(a, b) is not None,
                        "load_low": None if low is None else str(low),
                        "load_high": None if high is None else str(high)})
        return out

    def as_dict(self) -> dict:
        """The JSON form (``dvecost saturate --frontier --json``)."""
        return {"status": self.status, "spec": self.spec, "a": self.a, "b": self.b,
                "fixed": dict(self.fixed), "capacity": _num(self.capacity),
                "capacity_exact": str(self.capacity), "max_a": self.max_a,
                "max_b": self.max_b, "analyses": self.analyses,
                "grid": (self.max_a + 1) * (self.max_b + 1),
                "stair": self._stair_dicts(),
                "monotone": self.monotone,
                "violations": [[[p.n_a, p.n_b], [q.n_a, q.n_b]] for p, q in self.violations],
                "stopped": self.stopped, "seconds": round(self.seconds, 4),
                "cutoffs": {self.a: self.cutoff_a, self.b: self.cutoff_b}, "note": self.note,
                "points": [p.as_dict() for p in self.points]}

    def __repr__(self) -> str:
        # One line: the dataclass's own repr spells out every point evaluated.
        return (f"FrontierResult(spec={self.spec!r}, a={self.a!r}, b={self.b!r}, "
                f"capacity={self.capacity}, stair={len(self.stair)} rows, "
                f"analyses={self.analyses}, status={self.status!r})")


def frontier(spec: Spec, a: str, b: str, *, evaluate: Evaluator,
             max_clients: tuple[int, int] = (DEFAULT_FRONTIER_MAX, DEFAULT_FRONTIER_MAX),
             others: Mapping[str, int] | None = None,
             capacity: int | float | str | Fraction | None = None,
             workers: int | None = None, jobs: int = 1,
             progress: Callable[[object], None] | None = None,
             cutoffs: bool = False, resource: str | None = None) -> FrontierResult:
    """For each count of ``a``, the largest count of ``b`` that does not saturate the server.

    Parameters
    ----------
    spec : str, pathlib.Path, callable or System
        Where the scenarios and the server come from.
    a, b : str
        The two scenarios varied (``0..max_clients[0]`` and ``0..max_clients[1]``).
    evaluate : callable
        ``evaluate(model, *, resource, witness) -> Evaluation``.
    max_clients : (int, int)
        The grid's limits.
    others : mapping of str to int, optional
        Counts of other scenarios, held fixed (default none).
    capacity : number, optional
        The load that counts as saturated; default, on occupancy, the server's workers (all
        busy on every tick), or 1 without a server; required on a cost resource.
    workers : int, optional
        Use a server with this many workers instead of the spec's.
    jobs : int
        Worker processes (:class:`~scenarios.parallel.PointWalk`): the walk stays sequential,
        and the spare processes analyse the points it will most likely ask for next. The
        result (points, their order, the staircase) is that of ``jobs=1``.
    progress : callable, optional
        Hears each :class:`FrontierPoint` the walk uses, in the walk's order.
    cutoffs : bool
        Evaluate no count of ``a`` (of ``b``) above its :func:`scenarios.cutoff.cutoff`,
        from which one more client changes no load of the rendered models: such a point is
        the cutoff's. For evaluators that analyse the models (``dvecost``'s); a stand-in
        load need not respect it.
    resource : str, optional
        The resource judged: occupancy (``'busy'``, default with a server) or ``'server'``
        (with ``capacity``).

    Returns
    -------
    FrontierResult

    Examples
    --------
    A stand-in whose load is ``(2 n_a + n_b) / 6``, capacity 1: the staircase is
    ``n_b <= 5 - 2 n_a``.

    >>> from scenarios import Scenario, Server, System, Request
    >>> from scenarios.saturation import Evaluation
    >>> x, y = Scenario("x", Request("r", 1)), Scenario("y", Request("r", 1))
    >>> def fake(model, *, resource, witness):
    ...     na = sum(1 for p in model.processes if p.name.startswith("x_"))
    ...     nb = sum(1 for p in model.processes if p.name.startswith("y_"))
    ...     return Evaluation(Fraction(2 * na + nb, 6), n_states=1)
    >>> r = frontier(System({x: 1, y: 1}, server=Server()), "x", "y", evaluate=fake,
    ...              max_clients=(4, 6))
    >>> r.stair
    ((0, 5), (1, 3), (2, 1), (3, None), (4, None))
    >>> r.analyses, r.monotone
    (13, True)
    """
    if a == b:
        raise ConfigurationError(f"the frontier needs two different scenarios, not '{a}' twice")
    try:
        max_a, max_b = (int(m) for m in max_clients)
    except (TypeError, ValueError):
        raise ConfigurationError(f"max_clients must be two integers, not {max_clients!r}") \
            from None
    if max_a < 0 or max_b < 0:
        raise ConfigurationError(f"max_clients must be >= 0, not {max_clients!r}")
    others = dict(others or {})
    if a in others or b in others:
        raise ConfigurationError("the fixed scenarios must not include the two varied")
    name, build = system_for(spec, {a: 0, b: 0, **others}, workers=workers,
                             resource=resource)
    probe = build({a: 1, b: 1, **others})
    if capacity is None:
        cap = (probe.server.workers * _per_worker(probe, None)
               if probe.server is not None else Fraction(1))
    else:
        cap = parse_capacity(capacity)

    bound = probe.load_bound()
    if probe.server is not None and bound < cap:
        # Nothing to analyse: no mix of these scenarios on this server can reach the capacity
        # (the bound rests on the request kinds and the workers, not on the counts).
        return FrontierResult(name, a, b, tuple(others.items()), cap, max_a, max_b,
                              tuple((n, max_b) for n in range(max_a + 1)), (), True, (),
                              note=f"the load can never reach {cap}: it is at most {bound} "
                                   f"({probe.load_bound_why()})")
    cut_a = cut_b = None
    if cutoffs:
        from .cutoff import cutoff
        cut_a, cut_b = cutoff(probe, a), cutoff(probe, b)

    def work(key: tuple[int, int]) -> FrontierPoint:
        na, nb = key
        counts = {a: na, b: nb, **others}
        if sum(counts.values()) == 0:
            return FrontierPoint(na, nb, Fraction(0), Fraction(0) >= cap, 0, 0.0)
        t0 = _time.perf_counter()
        system = build(counts)
        ev = evaluate(system.to_model(), resource=system.resource, witness=False)
        return FrontierPoint(na, nb, Fraction(ev.exact), Fraction(ev.exact) >= cap,
                             int(ev.n_states), _time.perf_counter() - t0, bool(ev.certified))

    return walk_frontier(name, a, b, tuple(others.items()), cap, (max_a, max_b), work,
                         jobs=jobs, progress=progress, cutoffs=(cut_a, cut_b))


def walk_frontier(name: str, a: str, b: str, fixed: tuple[tuple[str, int], ...], cap: Fraction,
                  grid: tuple[int, int], work: Callable[[tuple[int, int]], FrontierPoint], *,
                  jobs: int = 1, progress: Callable[[object], None] | None = None,
                  cutoffs: tuple[int | None, int | None] = (None, None)) -> FrontierResult:
    """The frontier's walk (:func:`scenarios.search.staircase`) over ``0..grid[0] x
    0..grid[1]``, each point decided by ``work((n_a, n_b)) -> FrontierPoint``, as a :class:`FrontierResult`: the
    search :func:`frontier` runs on a scenario spec and :func:`dvecost.sweep.model_frontier`
    on a DVE model's two inputs. ``cutoffs``: counts above which the point is the cutoff's
    (same load); a state or memory limit, a signal: see :func:`finish_walk`.

    >>> from fractions import Fraction as F
    >>> def work(key):
    ...     load = F(key[0] + key[1], 2)
    ...     return FrontierPoint(*key, load, load >= 1, 1, 0.0)
    >>> walk_frontier("s", "x", "y", (), F(1), (2, 2), work).stair
    ((0, 1), (1, 0), (2, None))
    """
    max_a, max_b = grid
    cut_a, cut_b = cutoffs
    walk = staircase(max_a, max_b)
    run = PointWalk(lambda saturated, out: walk(
                        lambda key: saturated(_clamp(key, cut_a, cut_b)), out),
                    work, jobs=jobs, guess=linear_guess(cap), progress=progress)

    def result(status: str = "ok", stopped: str | None = None, more: tuple = ()) \
            -> FrontierResult:
        pts = tuple(run.points.values()) + more
        viol = tuple((p, q) for p in pts for q in pts
                     if p is not q and p.n_a <= q.n_a and p.n_b <= q.n_b and p.exact > q.exact)
        return FrontierResult(name, a, b, fixed, cap, max_a, max_b, tuple(run.so_far()), pts,
                              not viol, viol, status, stopped, cut_a, cut_b)

    return finish_walk(run, result, lambda key: f"({key[0]}, {key[1]})")


def _clamp(key: tuple[int, int], cut_a: int | None, cut_b: int | None) -> tuple[int, int]:
    """The point evaluated for ``key``: counts above a cutoff brought down to it (same load).

    >>> _clamp((30, 5), 12, None), _clamp((3, 5), 12, 4)
    ((12, 5), (3, 4))
    """
    na, nb = key
    return (na if cut_a is None else min(na, cut_a), nb if cut_b is None else min(nb, cut_b))


def finish_walk(run: PointWalk, result: Callable[..., Any], at: Callable[[Any], str]) -> Any:
    """Run the walk and return ``result()``, or ``result('limit', why)`` when a state or
    memory limit stops it. A signal or a time limit is passed on with
    ``result(status, why, points evaluated ahead)`` as its ``partial``; ``at(key)`` names the
    point the walk was waiting for."""
    try:
        run.run()
    except StateSpaceError as exc:
        return result("limit", f"{at(run.current)}: {exc}")
    except (RunStopped, KeyboardInterrupt) as exc:
        st = getattr(exc, "status", "interrupted")
        where = "before the first point" if run.current is None else at(run.current)
        exc.partial = result(st if st in ("interrupted", "timeout") else "interrupted",
                             f"{where}: {str(exc) or 'interrupted'}",
                             tuple(run.spare[k] for k in sorted(run.spare)))
        raise
    return result()


def linear_guess(cap: Fraction) -> Callable[[tuple[int, int], dict], float]:
    """``guess(key, known)`` for :class:`PointWalk`: the chance that ``key`` saturates, from
    a least-squares plane ``load ~ c + x n_a + y n_b`` through the points below capacity (a
    load grows about linearly until clients wait for each other; while the points lie on one
    line, the plane of least norm through them). Before two such points, 0.3: the walk starts
    with small models. It only steers which points are evaluated ahead, never an answer."""
    import numpy as np

    def guess(key: tuple[int, int], known: dict) -> float:
        below = [p for p in known.values() if not p.saturated]
        if len(below) < 2:
            return 0.3
        m = np.array([[1.0, p.n_a, p.n_b] for p in below])
        fit = np.linalg.lstsq(m, np.array([float(p.exact) for p in below]), rcond=None)[0]
        return 0.8 if fit @ np.array([1.0, key[0], key[1]]) >= float(cap) else 0.2

    return guess
