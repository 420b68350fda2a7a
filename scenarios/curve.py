"""The values of the client-count search (:mod:`scenarios.saturation`): what it is given,
what it hears and what it returns.

:class:`Evaluation` (what an evaluator returns for one model), :class:`Plan` and
:class:`PointStarted` (what ``progress`` hears), :class:`SaturationPoint` (one point of the
curve), :class:`SaturationResult` (the answer); the capacity (:func:`parse_capacity`,
:func:`server_capacity`) and the spec (:func:`resolve_spec`, :func:`one_scenario`). Every name
is also :mod:`scenarios.saturation`'s, where the search is described.

>>> p = SaturationPoint(2, None, None, 0.1, how="bound", high=Fraction(3, 4))
>>> p.reaches(Fraction(1)), p.as_dict()["high"]
(False, '3/4')
"""

from __future__ import annotations

import pathlib
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Union

from dve.errors import ConfigurationError

from .dsl import System

__all__ = ["Curve", "SaturationResult", "SaturationPoint", "Evaluation", "Evaluator", "METHODS",
           "HOWS",
           "Plan", "PointStarted", "Mix", "mix_of", "mix_text", "resolve_spec",
           "one_scenario", "parse_capacity", "server_capacity", "Spec", "DEFAULT_MAX_CLIENTS",
           "STATUSES", "no_server_warning"]

#: :func:`scenarios.saturation.saturate`'s ``method`` values.
METHODS = ("exact", "auto", "bounds")
#: The default limit of the search.
DEFAULT_MAX_CLIENTS = 64

#: What :func:`saturate` accepts as a spec: a template name or a scenario file path, a function
#: ``n -> System`` (or ``n -> {scenario: count}``), or a :class:`System` (grown in its
#: proportions).
Spec = Union[str, pathlib.Path, Callable[[int], System], System]

#: Which clients make up ``N``: ``(scenario name, count)`` pairs in the system's order.
Mix = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Evaluation:
    """What an evaluator returns for one model.

    Attributes
    ----------
    exact : Fraction
        The load: the maximal cycle mean of the resource asked for.
    n_states : int
        States of the model's reachable state graph.
    certified : bool
        Whether the value was proved exact.
    witness : object, optional
        With ``witness=True``: whatever shows the run attaining the value (opaque here).
    """

    exact: Fraction
    n_states: int
    certified: bool = True
    witness: Any = None


#: ``evaluate(model, *, resource, witness) -> Evaluation``; ``model`` is a
#: :class:`dve.syntax.Model`.
Evaluator = Callable[..., Evaluation]


def mix_of(system: System) -> Mix:
    """The clients of ``system`` by scenario: ``(('browser', 4), ('buyer', 2))``."""
    return tuple((sc.name, k) for sc, k in system.counts)


def mix_text(mix: Mix) -> str:
    """``'4 browser + 2 buyer'``.

    >>> mix_text((("browser", 4), ("buyer", 2)))
    '4 browser + 2 buyer'
    """
    return " + ".join(f"{k} {name}" for name, k in mix)


@dataclass(frozen=True)
class Plan:
    """What a search is about to do (the first thing ``progress`` hears).

    Attributes
    ----------
    spec : str
        What is searched.
    capacity : Fraction
        The load that counts as saturated.
    capacity_why : str
        Where that capacity comes from: ``'given'``, ``'2 workers, all busy on every tick'``,
        or the default of a system with no server.
    resource : str
        The resource judged: ``'busy'`` (occupancy), ``'server'`` (cost), or ``'work'``
        without a server.
    warnings : tuple of str
        Things the user should know before trusting the answer (a system with no server).
    """

    spec: str
    capacity: Fraction
    capacity_why: str
    resource: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class PointStarted:
    """``progress`` hears this when the evaluation of ``N = clients`` starts.

    ``witness`` is true for the second evaluation of the answer's point, which decodes the run.
    """

    clients: int
    mix: Mix
    witness: bool = False


#: How a point of the curve was decided (:attr:`SaturationPoint.how`).
HOWS = ("exact", "bound", "witness", "open")


@dataclass(frozen=True)
class SaturationPoint:
    """One evaluated point of the curve.

    Attributes
    ----------
    clients : int
        The number of clients ``N``.
    exact : Fraction or None
        The load (maximal cycle mean of the cost resource), exact; ``None`` when the point
        was decided by bounds that do not meet (then ``low`` and ``high`` bracket it).
    n_states : int or None
        States of the model's reachable state graph (``None``: not explored).
    seconds : float
        Wall time to build and analyse the model.
    certified : bool
        Whether what the point says is proved: the engine's exact certificate, or the bound
        and the run (always true for ``bound`` and ``witness``).
    mix : tuple of (str, int)
        Which clients make up ``N``, by scenario (:func:`mix_text` writes it out).
    how : str
        How it was decided (:data:`HOWS`): ``'exact'`` (analysis of the state graph),
        ``'bound'`` (the upper bound ``U`` is below the capacity), ``'witness'`` (a run of the
        model whose cycle reaches the capacity), ``'open'`` (``method='bounds'``: neither).
    low, high : Fraction or None
        The lower bound (the best cycle found by simulation, :func:`scenarios.bounds.find_witness`)
        and the upper bound (:func:`scenarios.bounds.upper_bound`) where they were computed.
    note : str or None
        For a point left open, why, and what its two ends rest on
        (``'exact analysis stopped: ...; low: a simulated run, high: ...'``).
    """

    clients: int
    exact: Fraction | None
    n_states: int | None
    seconds: float
    certified: bool = True
    mix: Mix = ()
    how: str = "exact"
    low: Fraction | None = None
    high: Fraction | None = None
    note: str | None = None

    @property
    def value(self) -> float | None:
        """The load as a float (``None`` when not known exactly)."""
        return None if self.exact is None else float(self.exact)

    @property
    def lower(self) -> Fraction | None:
        """What the load is known to be at least: ``exact``, else ``low``."""
        return self.exact if self.exact is not None else self.low

    @property
    def upper(self) -> Fraction | None:
        """What the load is known to be at most: ``exact``, else ``high``."""
        return self.exact if self.exact is not None else self.high

    def reaches(self, capacity: Fraction) -> bool | None:
        """True when the load is known to reach ``capacity``, False when known to stay below
        it, ``None`` when the point leaves it open."""
        if self.lower is not None and self.lower >= capacity:
            return True
        if self.upper is not None and self.upper < capacity:
            return False
        return None

    def as_dict(self) -> dict:
        """The JSON form: ``clients``, ``mix`` (``{scenario: count}``), ``exact`` (``"p/q"``,
        ``"p"`` or null), ``value``, ``n_states``, ``seconds``, ``certified``, ``decided``
        (:attr:`how`), ``low`` and ``high`` (the bounds as ``"p/q"``, or null)."""
        def text(x: Fraction | None) -> str | None:
            return None if x is None else str(x)

        return {"clients": self.clients, "mix": dict(self.mix), "exact": text(self.exact),
                "value": self.value, "n_states": self.n_states,
                "seconds": round(self.seconds, 4), "certified": self.certified,
                "decided": self.how, "low": text(self.lower), "high": text(self.upper),
                "note": self.note}


#: ``SaturationResult.status`` values: a finished search, a state or memory limit met, a
#: signal, a time limit.
STATUSES = ("ok", "limit", "interrupted", "timeout")


class Curve:
    """What the results of a search over ``N`` (the client count's, :class:`SaturationResult`;
    a DVE input's, :class:`dvecost.sweep.SweepResult`) answer alike from their fields
    ``curve`` (the points, each with its ``N`` in the field named :attr:`KEY`) and
    ``status``."""

    #: The name of a point's ``N``.
    KEY = "clients"

    @property
    def seconds(self) -> float:
        """Total time spent deciding the points of the curve."""
        return sum(p.seconds for p in self.curve)

    @property
    def partial(self) -> bool:
        """Whether the search stopped before its end (the curve is what was found so far)."""
        return self.status != "ok"

    def point(self, n: int) -> Any:
        """The point of the curve at ``N = n``, or ``None``."""
        return next((p for p in self.curve if getattr(p, self.KEY) == n), None)


@dataclass(frozen=True)
class SaturationResult(Curve):
    """The answer of :func:`saturate`.

    Attributes
    ----------
    spec : str
        What was searched (a template name, a file, a function's name).
    capacity : Fraction
        The load that counts as saturated.
    saturating_clients : int or None
        The smallest ``N`` found whose load reaches ``capacity``; ``None`` when none up to
        ``max_clients`` does, or when the search stopped first (see ``status``).
    curve : tuple of SaturationPoint
        Every evaluated point, by number of clients.
    monotone : bool
        Whether the load never decreases between evaluated points.
    violations : tuple of (SaturationPoint, SaturationPoint)
        Pairs ``(a, b)`` with ``a.clients < b.clients`` and ``a.exact > b.exact``.
    max_clients : int
        The search's limit.
    scenario : str or None
        The one scenario grown (``scenario=``), or ``None`` for all in their proportions.
    resource : str
        The resource judged (``'busy'``: occupancy, ``'server'``: cost, ``'work'``).
    load_bound : Fraction or None
        An upper bound on the load of the largest system evaluated
        (:meth:`~scenarios.dsl.System.load_bound`).
    search : str
        ``'bisect'`` or ``'linear'``.
    stopped : str or None
        Why the search stopped before its end (``'N=8: state limit ...'``), else ``None``.
    note : str or None
        Why no (further) analysis was needed, when the answer follows from the system's shape:
        a capacity above :attr:`load_bound` when that bound does not grow with the clients, or
        interleaved clients with no server, whose load is that of the worst client alone.
    capacity_why : str
        Where the capacity comes from (see :class:`Plan`).
    status : str
        ``'ok'`` (the search ran to its end), ``'limit'`` (a state or memory limit stopped
        it), ``'interrupted'`` or ``'timeout'`` (a partial result, see "Stopping" above).
    warnings : tuple of str
        See :class:`Plan`.
    witness : object or None
        The evaluator's witness for the answer's point (``None`` without an answer).
    witness_seconds : float
        Wall time of that second evaluation of the answer's point (0 without one).
    """

    spec: str
    capacity: Fraction
    saturating_clients: int | None
    curve: tuple[SaturationPoint, ...]
    monotone: bool
    violations: tuple[tuple[SaturationPoint, SaturationPoint], ...]
    max_clients: int
    scenario: str | None
    resource: str
    load_bound: Fraction | None = None
    search: str = "bisect"
    stopped: str | None = None
    note: str | None = None
    capacity_why: str = "given"
    status: str = "ok"
    warnings: tuple[str, ...] = ()
    witness: Any = None
    witness_seconds: float = 0.0
    #: What :attr:`load_bound` rests on, in words (:meth:`~scenarios.dsl.System.load_bound_why`).
    load_bound_why: str | None = None
    #: How points were decided: ``'exact'``, ``'auto'`` or ``'bounds'`` (see :func:`saturate`).
    method: str = "exact"
    #: ``(scenario, rho_s)``: each scenario's alone rate, where the bounds used them.
    alone: tuple[tuple[str, Fraction], ...] = ()
    #: With open points below the answer: the largest ``N`` below it whose upper bound alone
    #: (no simulation: the alone rates added up) stays below the capacity, evaluated or not
    #: (every smaller ``N`` too, ``U`` growing with ``N``); ``None`` otherwise.
    below_upto: int | None = None
    #: The largest ``N`` the search had to decide when no ``N`` saturates (``max_clients``,
    #: or less where the cutoffs show the load cannot change past it).
    searched_upto: int | None = None
    #: Beside an occupancy answer: the requests' cost resource and its worst load at the
    #: answer's ``N`` (exact, with its own critical cycle in ``cost_witness``), where that
    #: point was analysed exactly; else ``None``.
    cost_resource: str | None = None
    cost_load: Fraction | None = None
    cost_witness: Any = None

    def bracket(self) -> tuple[int | None, int | None]:
        """``(lo, hi)``: the smallest evaluated ``N`` known to reach the capacity (``hi``) and
        the largest evaluated ``N`` below it known not to (``lo``); either may be ``None``. On
        a monotone curve the answer lies in ``lo + 1 .. hi``, which is what a partial result,
        or one with points left open by the bounds, can still say.
        """
        hi = next((p.clients for p in self.curve if p.reaches(self.capacity)), None)
        lo = max((p.clients for p in self.curve
                  if p.reaches(self.capacity) is False and (hi is None or p.clients < hi)),
                 default=None)
        return lo, hi

    @property
    def open_points(self) -> tuple[SaturationPoint, ...]:
        """The points the bounds left open (``method='bounds'``)."""
        return tuple(p for p in self.curve if p.reaches(self.capacity) is None)

    @property
    def answer_range(self) -> tuple[int, int] | None:
        """``(first, last)``: where the answer lies when open points leave it uncertain
        (``first`` the smallest ``N`` not known to stay below, if the load is monotone;
        ``last`` the smallest known to saturate); ``None`` when the answer is certified or
        there is none."""
        if self.saturating_clients is None or self.certified:
            return None
        lo, hi = self.bracket()
        first = 1 if lo is None else lo + 1
        if self.below_upto is not None:
            first = max(first, self.below_upto + 1)
        return first, hi

    @property
    def undecided_below(self) -> tuple[int, ...]:
        """The ``N`` below the answer (up to :attr:`searched_upto` without one) not proven
        below the capacity: open, or never evaluated (a search that stopped early)."""
        n = self.saturating_clients
        top = n - 1 if n is not None else (self.searched_upto or 0)
        if n is None and self.note is not None:
            return ()          # the system's shape decides every N (see ``note``)
        return tuple(m for m in range(1, top + 1)
                     if not (self.below_upto is not None and m <= self.below_upto)
                     and (self.point(m) is None or self.point(m).reaches(self.capacity)
                          is not False))

    @property
    def certified(self) -> bool:
        """Whether the answer is proven: the search ran to its end, the answer's point reaches
        the capacity and every smaller ``N`` is proven below it (by exact analysis or a
        certified bound); without an answer, every ``N`` up to :attr:`searched_upto` is
        proven below (or the system's shape shows none can reach it, :attr:`note`). A search
        stopped by a limit or a signal is never certified."""
        if self.partial:
            return False
        n = self.saturating_clients
        if n is not None and not self.point(n).reaches(self.capacity):
            return False
        return not self.undecided_below

    def as_dict(self) -> dict:
        """The JSON form (``dvecost saturate --json``), ``status`` first; ``partial`` says
        whether the curve is complete."""
        def num(x: Fraction | None) -> int | float | None:
            if x is None:
                return None
            return int(x) if x.denominator == 1 else float(x)

        return {
            "status": self.status, "partial": self.partial,
            "spec": self.spec, "scenario": self.scenario, "resource": self.resource,
            "capacity": num(self.capacity), "capacity_exact": str(self.capacity),
            "capacity_why": self.capacity_why,
            "saturating_clients": self.saturating_clients,
            "saturating_mix": (None if self.saturating_clients is None else
                               dict(self.point(self.saturating_clients).mix)),
            "max_clients": self.max_clients,
            "search": self.search, "method": self.method,
            "answer_certified": self.certified,
            "answer_range": None if self.answer_range is None else list(self.answer_range),
            "undecided_below": list(self.undecided_below),
            "cost_resource": self.cost_resource,
            "cost_load": num(self.cost_load),
            "cost_load_exact": None if self.cost_load is None else str(self.cost_load),
            "alone_rates": {name: str(rho) for name, rho in self.alone},
            "monotone": self.monotone,
            "violations": [[a.clients, b.clients] for a, b in self.violations],
            "load_bound": num(self.load_bound),
            "load_bound_exact": None if self.load_bound is None else str(self.load_bound),
            "load_bound_why": self.load_bound_why,
            "stopped": self.stopped, "note": self.note, "warnings": list(self.warnings),
            "seconds": round(self.seconds, 4),
            "curve": [p.as_dict() for p in self.curve],
        }

    def __repr__(self) -> str:
        return (f"SaturationResult(spec={self.spec!r}, capacity={self.capacity}, "
                f"saturating_clients={self.saturating_clients!r}, points={len(self.curve)}, "
                f"status={self.status!r})")


def parse_capacity(text: str | int | float | Fraction) -> Fraction:
    """``'1'``, ``'1.5'``, ``'3/2'`` (or a number) -> a positive :class:`~fractions.Fraction`.

    >>> parse_capacity("3/2"), parse_capacity("0.25"), parse_capacity(2)
    (Fraction(3, 2), Fraction(1, 4), Fraction(2, 1))
    """
    try:
        value = Fraction(str(text).strip()) if not isinstance(text, Fraction) else text
    except (ValueError, ZeroDivisionError):
        raise ConfigurationError(f"bad capacity '{text}': expected a positive number such as "
                                 "1, 1.5 or 3/2") from None
    if value <= 0:
        raise ConfigurationError(f"bad capacity '{text}': it must be above 0")
    return value


def server_capacity(system: System) -> tuple[Fraction, str]:
    """The default capacity of ``system`` and why: with a server, judged on occupancy, its
    number of workers (all busy on every tick); without one, 1. A cost resource
    (``resource='server'``) has no default: its capacity is the user's to give.

    >>> from scenarios import Scenario, Server, Request
    >>> u = Scenario("u", Request("r", 1, cost=5))
    >>> server_capacity(System({u: 3}, server=Server(workers=2)))
    (Fraction(2, 1), '2 workers, all busy on every tick')
    >>> server_capacity(System({u: 3}))[1]
    'default 1: the system has no server'

    Raises
    ------
    dve.errors.ConfigurationError
        ``system`` is judged on a cost resource (its capacity is not the server's to say).
    """
    if system.server is None:
        return Fraction(1), "default 1: the system has no server"
    if not system.occupancy:
        raise ConfigurationError(
            f"resource '{system.resource}' (the requests' cost per tick) has no default "
            "capacity: give one (--capacity C), or judge occupancy (the default: all workers "
            "busy on every tick)")
    w = system.server.workers
    served = ("" if system.server.policy == "any"
              else f"; server policy: {system.server.policy_words()}")
    return Fraction(w), f"{w} worker{'s' * (w != 1)}, all busy on every tick{served}"


# ---------------------------------------------------------------------------- specs

def resolve_spec(spec: Spec) -> tuple[str, Callable[[int], System]]:
    """Turn a spec into ``(name, family)``, ``family(n)`` being the system with ``n`` clients.

    Parameters
    ----------
    spec : str, pathlib.Path, callable or System
        A template name (:data:`scenarios.templates.TEMPLATES`), a scenario file (a ``.py``
        path, loaded with :func:`scenarios.loader.load_spec`), a function of ``n`` returning a
        :class:`System` (or a dict of counts, with no server), or a :class:`System` whose counts
        are taken as proportions (:func:`~scenarios.dsl.apportion`).

    Raises
    ------
    dve.errors.ConfigurationError
        An unknown template name or a path that does not exist.
    dve.errors.ModelError
        A scenario file that fails to load (code ``scenario-error``).
    """
    from . import loader, templates
    from .dsl import apportion

    if isinstance(spec, System):
        base = spec
        weights = dict(base.counts)
        return base.name, lambda n: base.with_counts(apportion(weights, n))
    if callable(spec):
        name = getattr(spec, "__name__", "system")
        return name, loader.as_family(spec, name)
    text = str(spec)
    if isinstance(spec, str) and spec in templates.TEMPLATES:
        return spec, templates.TEMPLATES[spec].family
    path = pathlib.Path(text)
    if path.suffix == ".py" or path.exists():
        return text, loader.load_spec(path)
    raise ConfigurationError(
        f"unknown template or scenario file '{text}'; templates: "
        + ", ".join(templates.TEMPLATES) + " (or a path to a .py file defining system(n))")


def one_scenario(family: Callable[[int], System], name: str,
                 max_clients: int) -> Callable[[int], System]:
    """``n -> n`` clients of scenario ``name`` alone (same server), found in ``family(k)``.

    Raises
    ------
    dve.errors.ConfigurationError
        No ``family(k)`` up to ``max_clients`` has a scenario called ``name``.
    """
    seen: list[str] = []
    k = 1
    while True:
        base = family(k)
        sc = base.scenario(name)
        if sc is not None:
            return lambda n: base.with_counts({sc: n})
        seen += [s.name for s in base.scenarios if s.name not in seen]
        if k >= max_clients:
            break
        k = min(2 * k, max_clients)
    raise ConfigurationError(f"no scenario '{name}' in this system; its scenarios: "
                             + ", ".join(seen))


def no_server_warning(system: System) -> str:
    """Why a system with no server is not a server's load (a warning of the plan)."""
    how = ("the clients' own work per tick, added up" if system.composition == "sync"
           else "the work of one client per step (interleaved)")
    return (f"the system has no server: the load measured is {how} (resource "
            f"'{system.resource}'), not a server's, and the capacity is not a server's; give "
            "the scenario file a 'server = Server(workers=...)' (or return a System with a "
            "server) to ask how many clients saturate a server")
