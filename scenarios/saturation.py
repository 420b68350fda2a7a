"""How many clients does it take to saturate the server? The client-count search.

For ``N`` clients the system's **load** is the maximal cycle mean of the resource it is judged
on (:attr:`scenarios.dsl.System.resource`). With a server that is by default its
**occupancy**, the most workers some run keeps busy per tick, and :func:`saturate` finds the
smallest ``N`` that saturates the server: some infinite run keeps every worker busy on every
tick (occupancy ``= workers``). Costs do not enter it. Given ``resource='server'`` and a
``capacity``, it judges the requests' cost per tick against that capacity instead.

The search
----------
Exponential, then binary: evaluate ``N = 1, 2, 4, 8, ...`` (capped at ``max_clients``) until a
load reaches ``C``; the answer then lies between the last ``N`` below and that one, and a binary
search narrows it down. That takes about ``2 log2(N)`` analyses instead of ``N``, and the largest
model analysed is below ``2N``.

The bisection would rely on the load being **monotone** in ``N`` (one more client never lowers
it). That is plausible, not guaranteed (a new client's requests may take a worker that a
costlier request was waiting for), so the answer does not rest on it: once the bisection has
found a saturating ``N``, every smaller ``N`` it skipped is decided too, smallest first, by
the cheap upper bound of :mod:`scenarios.bounds` where that suffices and by the search's
method otherwise; the first of them that saturates becomes the answer. Without an answer,
every ``N`` up to the limit is decided the same way. So a certified answer
(:attr:`SaturationResult.certified`) means: the answer saturates and every smaller ``N`` is
proven below. Every pair of evaluated points is still compared, and a curve that is not
monotone says so (:attr:`SaturationResult.monotone`, :attr:`SaturationResult.violations`).
``search='linear'`` evaluates every ``N`` from 1 up instead.

The evaluator
-------------
This package builds models; it does not analyse them. :func:`saturate` is given an
``evaluate(model, *, resource, witness)`` callable that takes the :class:`dve.syntax.Model` of
one system (:meth:`~scenarios.dsl.System.to_model`), computes the maximal cycle mean of
``resource`` and returns an :class:`Evaluation`. ``witness=False`` (every point of the search)
asks for the value only; the answer's point is evaluated once more with ``witness=True``, and
what the evaluator puts in :attr:`Evaluation.witness` (for dvecost, the
:class:`dvecost.Analysis` with its critical cycle) is handed back untouched in
:attr:`SaturationResult.witness`. :func:`dvecost.saturation.saturate` is this search with
dvecost's own pipeline as the evaluator.

Stopping
--------
A search is a long job. ``progress`` hears of it as it goes (:class:`Plan`, then a
:class:`PointStarted` and a :class:`SaturationPoint` per ``N``). An evaluator that raises
:class:`~dve.errors.StateSpaceError` (a state or memory limit) ends the search there: the result
keeps the curve so far with ``status='limit'``. A :class:`~dve.errors.RunStopped` (a signal,
a time limit) or ``KeyboardInterrupt`` is passed on, carrying the result so far as its
``partial`` attribute (``status`` ``'interrupted'`` or ``'timeout'``), so that the caller can
show the curve before it stops.

Examples
--------
Three clients who each think 10 ticks and then ask for 6 ticks of service keep one worker busy:
a client's cycle is 18 ticks (send, 6 served, reply, 10 thinking), so each client alone loads
the server 6/18 = 1/3, and the load is ``min(1, N/3)``. A stand-in evaluator that knows this
(the processes of the model are the server and one per client):

>>> from scenarios import Scenario, Server, System, Think, Request
>>> user = Scenario("user", [Think(10), Request("job", service=6)])
>>> def evaluate(model, *, resource, witness):
...     n = len(model.processes) - 1
...     return Evaluation(min(Fraction(1), Fraction(n, 3)), n_states=10 * n)
>>> r = saturate(lambda n: System({user: n}, server=Server()), evaluate=evaluate)
>>> r.saturating_clients, [(p.clients, str(p.exact)) for p in r.curve]
(3, [(1, '1/3'), (2, '2/3'), (3, '1'), (4, '1')])
>>> r.capacity, r.capacity_why
(Fraction(1, 1), '1 worker, all busy on every tick')
>>> r.monotone, r.status
(True, 'ok')
"""

from __future__ import annotations

import dataclasses
import pathlib
import time as _time
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Union

from dve.errors import ConfigurationError, RunStopped, StateSpaceError

from .bounds import alone_rate, bound_gap
from .dsl import Scenario, System
from .parallel import PointWalk

__all__ = ["saturate", "SaturationResult", "SaturationPoint", "Evaluation", "Evaluator",
           "METHODS", "HOWS",
           "Plan", "PointStarted", "Mix", "mix_of", "mix_text", "resolve_spec",
           "one_scenario", "parse_capacity", "server_capacity", "Spec", "DEFAULT_MAX_CLIENTS"]

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


@dataclass(frozen=True)
class SaturationResult:
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

    @property
    def seconds(self) -> float:
        """Total time spent evaluating points."""
        return sum(p.seconds for p in self.curve)

    @property
    def partial(self) -> bool:
        """Whether the search stopped before its end (the curve is what was found so far)."""
        return self.status != "ok"

    def point(self, clients: int) -> SaturationPoint | None:
        """The evaluated point for ``clients``, or ``None``."""
        return next((p for p in self.curve if p.clients == clients), None)

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

    # -- printed: the curve as a table and the answer (the dataclass's own repr spells out
    # every point and the answer's whole run)

    def _table(self) -> tuple[list[str], list[list[str]]]:
        def load(p: SaturationPoint) -> str:
            if p.exact is not None:
                return str(p.exact)
            return f"<= {p.upper}" if p.lower is None else f"{p.lower}..{p.upper}"

        return (["clients", "mix", "load", "decided"],
                [[str(p.clients), mix_text(p.mix), load(p), p.how] for p in self.curve])

    def _answer(self) -> str:
        n = self.saturating_clients
        if n is not None:
            sure = "" if self.certified else " (not certified)"
            return f"saturation: {n} clients reach the capacity {self.capacity}{sure}"
        if self.partial:
            return f"no answer: stopped ({self.stopped})"
        return f"no saturation up to {self.max_clients} clients"

    def __str__(self) -> str:
        head, rows = self._table()
        widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(head)]
        table = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
                 for r in [head, *rows]]
        return "\n".join([f"{self.spec}: load of '{self.resource}' against the number of "
                          f"clients, capacity {self.capacity}", *table, self._answer()])

    def _repr_markdown_(self) -> str:
        head, rows = self._table()
        return "\n".join([f"**{self.spec}: {self._answer()}**", "",
                          "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
                         + ["| " + " | ".join(r) + " |" for r in rows])

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
    return Fraction(w), f"{w} worker{'s' * (w != 1)}, all busy on every tick"


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


def _no_server_warning(system: System) -> str:
    how = ("the clients' own work per tick, added up" if system.composition == "sync"
           else "the work of one client per step (interleaved)")
    return (f"the system has no server: the load measured is {how} (resource "
            f"'{system.resource}'), not a server's, and the capacity is not a server's; give "
            "the scenario file a 'server = Server(workers=...)' (or return a System with a "
            "server) to ask how many clients saturate a server")


# ---------------------------------------------------------------------------- the search

def saturate(spec: Spec, capacity: int | float | str | Fraction | None = None, *,
             evaluate: Evaluator, max_clients: int = DEFAULT_MAX_CLIENTS,
             scenario: str | None = None, search: str = "bisect", witness: bool = True,
             progress: Callable[[object], None] | None = None,
             cutoffs: bool = False, jobs: int = 1, method: str = "exact",
             phases: Callable[[str, str], None] | None = None,
             resource: str | None = None) -> SaturationResult:
    """Find the smallest number of clients whose load reaches ``capacity``.

    Parameters
    ----------
    spec : str, pathlib.Path, callable or System
        What to grow; see :func:`resolve_spec` (template name, scenario file, ``n -> System``).
    capacity : number, str or Fraction, optional
        The load that counts as saturated. Default, with a server judged on occupancy: its
        number of workers (every worker busy on every tick, :func:`server_capacity`); 1 for a
        system with no server. Required with ``resource='server'``.
    evaluate : callable
        ``evaluate(model, *, resource, witness) -> Evaluation`` (see "The evaluator" above);
        :func:`dvecost.saturation.evaluator` makes one from dvecost's pipeline.
    max_clients : int
        Search no further than this many clients.
    scenario : str, optional
        Grow only this scenario (``n`` clients of it alone, same server) instead of all
        scenarios in their proportions.
    search : {'bisect', 'linear'}
        Exponential then binary search (default), or every ``N`` from 1 up (exact even when the
        curve is not monotone).
    witness : bool
        Evaluate the answer's point once more with ``witness=True`` (default) and keep what
        the evaluator returns in :attr:`SaturationResult.witness`.
    progress : callable, optional
        Called with a :class:`Plan` first, then with a :class:`PointStarted` when a point's
        evaluation starts and its :class:`SaturationPoint` when it ends.
    jobs : int
        Processes analysing points (:class:`~scenarios.parallel.PointWalk`): with more than
        one, worker processes analyse ahead the numbers the search will likely ask for next
        while it waits for one; the points it uses, their order and the answer are those of
        ``jobs=1``. A :class:`PointStarted` is then heard only for the points it waits for.
    cutoffs : bool
        Search no further than the first ``N`` from which on every system of the family has
        each scenario's count at or above its :func:`scenarios.cutoff.cutoff` (same scenarios,
        same server): the load is the same for all of them, so if that ``N`` does not
        saturate, none does (:attr:`SaturationResult.note` says so). For evaluators that
        analyse the models (``dvecost``'s); a stand-in load need not respect it.
    method : {'exact', 'auto', 'bounds'}
        How each point is decided. ``'exact'`` (default here): ``evaluate`` computes its load.
        ``'auto'``: first the bounds of :mod:`scenarios.bounds` (an upper bound ``U`` below
        the capacity decides "below"; a run of the model simulated from its initial state
        whose cycle reaches the capacity decides "saturated"), ``evaluate`` only where they
        do not meet; ``evaluate`` still gives the alone rates (one client per scenario).
        ``'bounds'``: the bounds only; a point they leave open is recorded so
        (``how='open'``) and counts as below for the search, so the answer is then the
        smallest ``N`` known to saturate, with :attr:`SaturationResult.certified` false when
        an open point lies below it. Only for evaluators that analyse the models (the bounds
        simulate the real model). ``system async`` points are always analysed exactly.
    phases : callable, optional
        ``phases(phase, message)`` while the bounds decide a point, every few seconds (the
        count model's ticks, the simulation's ticks and best cycle so far), as an evaluator's
        phases are told; only with ``jobs=1`` (a worker process would write over the
        parent's lines).
    resource : str, optional
        The resource judged (:attr:`scenarios.dsl.System.resource`): ``'busy'``, occupancy,
        the default with a server; ``'server'``, the requests' cost per tick, against a
        ``capacity`` that must then be given. With occupancy judged, the answer's worst cost
        load is computed beside it where its point was analysed exactly
        (:attr:`SaturationResult.cost_load`).

    Returns
    -------
    SaturationResult

    Raises
    ------
    dve.errors.ConfigurationError
        Bad arguments, an unknown template or scenario, a system the DSL refuses.
    dve.errors.ModelError
        A scenario file that fails to load or raises (code ``scenario-error``).
    dve.errors.RunStopped, KeyboardInterrupt
        Passed on from wherever they arrive, with the result so far as ``exc.partial``.
    Exception
        Whatever ``evaluate`` raises other than a :class:`~dve.errors.StateSpaceError`.

    See Also
    --------
    scenarios.templates.TEMPLATES : the bundled specs.
    dvecost.saturation.saturate : this search with dvecost's analysis as the evaluator.

    Examples
    --------
    With a fake evaluator (the load of ``n`` clients is ``n/4``), capacity 1 needs 4 clients;
    the search evaluates 1, 2, 4 and then 3:

    >>> from scenarios import Scenario, System, Request
    >>> u = Scenario("u", Request("r", 1))
    >>> def fake(model, *, resource, witness):
    ...     n = len(model.processes)
    ...     return Evaluation(Fraction(n, 4), n, witness=f"run of {n}" if witness else None)
    >>> r = saturate(lambda n: System({u: n}), evaluate=fake)
    >>> r.saturating_clients, [p.clients for p in r.curve], r.witness
    (4, [1, 2, 3, 4], 'run of 4')
    >>> r.capacity_why, r.warnings[0][:26]
    ('default 1: the system has no server', 'the system has no server: ')
    """
    if isinstance(max_clients, bool) or not isinstance(max_clients, int) or max_clients < 1:
        raise ConfigurationError(f"max_clients must be a positive integer, not {max_clients!r}")
    from .loader import MAX_CLIENTS
    if max_clients > MAX_CLIENTS:
        # Checked before any work: the search builds family(max_clients), whose apportioning
        # loops max_clients times (10**20 hung).
        raise ConfigurationError(f"max_clients must be at most {MAX_CLIENTS:,}, got "
                                 f"{max_clients:,}: no model that large could be explored")
    if search not in ("bisect", "linear"):
        raise ConfigurationError(f"unknown search '{search}': expected 'bisect' or 'linear'")
    if method not in METHODS:
        raise ConfigurationError(f"unknown method '{method}': expected one of "
                                 + ", ".join(METHODS))
    if not callable(evaluate):
        raise ConfigurationError("saturate needs an evaluator: evaluate(model, *, resource, "
                                 "witness) -> Evaluation (dvecost.saturation.evaluator() "
                                 "makes one)")
    name, family = resolve_spec(spec)
    if scenario is not None:
        family = one_scenario(family, scenario, max_clients)
    family = _judged(family, resource)
    first = family(1)
    if capacity is None:
        cap, why = server_capacity(first)
    else:
        cap, why = parse_capacity(capacity), "given"
    from . import templates

    is_template = isinstance(spec, str) and spec in templates.TEMPLATES
    warnings = () if first.server is not None or is_template else (_no_server_warning(first),)
    tell = progress or (lambda event: None)
    tell(Plan(name, cap, why, first.resource, warnings))

    points: dict[int, SaturationPoint] = {}
    state: dict[str, Any] = {"bound": None, "why": None, "current": None}

    alone_memo: dict[Scenario, Fraction] = {}

    def alone(one: System) -> Fraction:
        """The exact load of a system of one client (its scenario's alone rate), once."""
        sc = one.scenarios[0]
        if sc not in alone_memo:
            ev = evaluate(one.to_model(), resource=one.resource, witness=False)
            if not ev.certified:
                raise ConfigurationError(f"the alone rate of scenario '{sc.name}' was not "
                                         "certified; use method='exact'")
            alone_memo[sc] = Fraction(ev.exact)
        return alone_memo[sc]

    def work(n: int) -> SaturationPoint:
        """One point, in this process or (``jobs > 1``) in a worker process."""
        t0 = _time.perf_counter()
        system = family(n)
        point = None
        if method == "auto" and system.composition == "sync" and _small(system):
            # Exact analysis first where the model is small (cheaper than the bounds'
            # simulation); the memory guard still applies.
            try:
                ev = evaluate(system.to_model(), resource=system.resource, witness=False)
            except StateSpaceError:
                pass
            else:
                return SaturationPoint(n, Fraction(ev.exact), int(ev.n_states),
                                       _time.perf_counter() - t0, bool(ev.certified),
                                       mix_of(system))
        if method != "exact" and system.composition == "sync":
            point = _by_bounds(system, n, cap, alone, method, t0,
                               phases if jobs == 1 else None)
            if point is not None and point.how != "open" or method == "bounds":
                return point
        try:
            ev = evaluate(system.to_model(), resource=system.resource, witness=False)
        except StateSpaceError as exc:
            if point is None:
                raise
            # The exact analysis met a limit (auto's memory guard): the point stays open
            # between its bounds, and the search goes on.
            return dataclasses.replace(point, seconds=_time.perf_counter() - t0,
                                       note=f"exact analysis stopped: {exc}; " + point.note)
        return SaturationPoint(n, Fraction(ev.exact), int(ev.n_states),
                               _time.perf_counter() - t0, bool(ev.certified), mix_of(system))

    def waiting(n: int) -> None:
        state["current"] = n
        state["where"] = None
        tell(PointStarted(n, mix_of(family(n))))

    def received(point: SaturationPoint) -> None:
        points[point.clients] = point
        system = family(point.clients)
        state["bound"], state["why"] = system.load_bound(), system.load_bound_why()
        tell(point)

    def result(answer: int | None = None, *, status: str = "ok", stopped: str | None = None,
               note: str | None = None, bound: Fraction | None = None,
               run: Any = None, run_seconds: float = 0.0,
               more: tuple[SaturationPoint, ...] = (),
               below_upto: int | None = None, upto: int | None = None,
               cost: tuple[Fraction | None, Any] = (None, None)) -> SaturationResult:
        curve = tuple(sorted((*points.values(), *more), key=lambda p: p.clients))
        # A violation is certain where one point's lower bound exceeds a later one's upper.
        violations = tuple((a, b) for i, a in enumerate(curve) for b in curve[i + 1:]
                           if a.lower is not None and b.upper is not None
                           and b.upper < a.lower)
        return SaturationResult(
            spec=name, capacity=cap, saturating_clients=answer, curve=curve,
            monotone=not violations, violations=violations, max_clients=max_clients,
            scenario=scenario, resource=first.resource,
            load_bound=bound if bound is not None else state["bound"],
            load_bound_why=top.load_bound_why() if bound is not None else state["why"],
            search=search,
            stopped=stopped, note=note, capacity_why=why, status=status, warnings=warnings,
            witness=run, witness_seconds=run_seconds, method=method, below_upto=below_upto,
            alone=tuple((sc.name, rho) for sc, rho in alone_memo.items()),
            searched_upto=upto if answer is None else None,
            cost_resource=first.cost_resource if first.occupancy else None,
            cost_load=cost[0], cost_witness=cost[1])

    answer: int | None = None
    walker: PointWalk | None = None
    top = family(max_clients)
    try:
        if (top.server is not None or top.composition == "async") and top.load_bound() < cap:
            # The bound does not grow with N here (a server's workers or admissions, or one
            # client's max cost): no analysis can reach the capacity, so none is run.
            return result(bound=top.load_bound(), note=(
                f"the load can never reach {cap}: it is at most {top.load_bound()} "
                f"({top.load_bound_why()})"))
        uses_alone = top.composition == "sync" and all(
            bound_gap(s) is None for s in (first, top))
        if method != "exact" and uses_alone:
            # The alone rates first, in this process: worker processes (jobs > 1) inherit
            # them, and the result lists them whichever process used them.
            for sc in top.scenarios:
                state["where"] = f"the alone rate of '{sc.name}'"
                alone_rate(top, sc, alone)
            state["where"] = None
        if top.server is None and top.composition == "async":
            answer = _interleaved(family, max_clients, cap, alone, received)
            reason = ("interleaved clients with no server: the load of N clients is that of "
                      "the worst client alone, so it changes only where a scenario joins")
            if answer is None:
                return result(bound=top.load_bound(), upto=max_clients,
                              note=reason + ", and no N reaches the capacity")
            return result(answer, bound=top.load_bound(), note=reason,
                          below_upto=answer - 1 or None)
        plateau = _plateau(family, max_clients) if cutoffs else None
        limit = max_clients if plateau is None else plateau[0]

        def walk(saturated: Callable[[int], bool], out: list) -> None:
            out.append((_linear if search == "linear" else _bisect)(saturated, limit))

        walker = PointWalk(walk, work, jobs=jobs, guess=_growth_guess(cap), progress=received,
                           waiting=waiting, outcome=lambda p: bool(p.reaches(cap)))
        answer = walker.run()[0]
        walker = None
        # Decide every N the bisection skipped below the answer (below the limit without
        # one), smallest first: the answer must not rest on the load growing with N.
        # (The upper bound is a theorem about the rendered models: used where the points
        # are decided by bounds anyway, or the evaluator analyses those models.)
        answer = _decide_below(family, answer, limit, cap, points, work, alone,
                               uses_alone and (method != "exact" or cutoffs),
                               waiting, received)
        if answer is None and limit < max_clients:
            n0, cuts = plateau
            return result(upto=limit, note=(
                f"from N={n0} on every scenario has at least its cutoff ({cuts}): one "
                f"more client always waits and changes nothing, so the load stays "
                f"{_load_text(points[n0])} for every N up to {max_clients} and none "
                f"reaches {cap}"))
        run, t0 = None, _time.perf_counter()
        cost: tuple[Fraction | None, Any] = (None, None)
        if answer is not None and witness:
            system = family(answer)
            state["current"] = answer
            tell(PointStarted(answer, mix_of(system), witness=True))
            if points[answer].how == "witness":
                # The run the bounds found, simulated again (the simulation is
                # deterministic): a WitnessRun, which dvecost tells as steps of the model.
                run = _witness_run(system, cap, points[answer].high, alone)
                _RUNS.clear()       # (no longer needed: a lifted run may be large)
            else:
                run = evaluate(system.to_model(), resource=system.resource,
                               witness=True).witness
            if system.occupancy and points[answer].how == "exact":
                # The worst cost load beside the occupancy: its own worst case and cycle.
                ev = evaluate(system.to_model(), resource=system.cost_resource, witness=True)
                cost = (Fraction(ev.exact) if ev.certified else None, ev.witness)
        return result(answer, run=run, run_seconds=_time.perf_counter() - t0 if run else 0.0,
                      below_upto=_below_upto(family, answer, cap, alone, points)
                      if method != "exact" else None, upto=limit, cost=cost)
    except StateSpaceError as exc:  # a state or memory limit: the curve so far is the answer
        if walker is not None and walker.current is not None:
            state["current"] = walker.current   # (a point analysed ahead may have raised)
        where = state.get("where") or f"N={state['current']}"
        return result(answer, status="limit", stopped=f"{where}: {exc}")
    except (RunStopped, KeyboardInterrupt) as exc:
        if walker is not None and walker.current is not None:
            state["current"] = walker.current   # the point the walk asked for last
        status = getattr(exc, "status", "interrupted")
        inner = getattr(exc, "partial", None)
        found = getattr(inner, "n_states", None)
        where = (state.get("where") or f"N={state['current']}" if state["current"] is not None
                 or state.get("where") else "before N=1")
        reason = str(exc) or "interrupted"
        after = f" after {found:,} states" if isinstance(found, int) else ""
        exc.partial = result(answer if answer is not None and answer in points else None,
                             status=status if status in STATUSES else "interrupted",
                             stopped=f"{where}: {reason}{after}",
                             more=() if walker is None else
                             tuple(walker.spare[n] for n in sorted(walker.spare)))
        raise


def _judged(family: Callable[[int], System], resource: str | None) -> Callable[[int], System]:
    """``family`` with every system judged on ``resource`` (``None``: each system's default,
    occupancy with a server)."""
    if resource is None:
        return family
    return lambda n: family(n).with_resource(resource)


def _decide_below(family: Callable[[int], System], answer: int | None, limit: int,
                  cap: Fraction, points: dict[int, SaturationPoint],
                  work: Callable[[int], SaturationPoint], alone: Callable[[System], Fraction],
                  uses_alone: bool, waiting: Callable[[int], None],
                  received: Callable[[SaturationPoint], None]) -> int | None:
    """The smallest ``N`` that saturates, once every ``N`` below ``answer`` that the search
    skipped is decided: by the upper bound where it is below ``cap`` (cheap: no state graph;
    only with ``uses_alone``), else by ``work`` (the search's method). Points decided are added through ``received``;
    the first that reaches ``cap`` is the answer.

    Without an answer, the ``N`` up to ``limit`` that the search skipped are decided by the
    upper bound only: analysing each would turn the search into a linear one, so those it
    leaves are reported as not decided (:attr:`SaturationResult.undecided_below`) and the
    result is not certified (``search='linear'`` decides every ``N``)."""
    from .bounds import upper_bound

    top = limit if answer is None else answer - 1
    for n in range(1, top + 1):
        if n in points:
            if points[n].reaches(cap):
                return n
            continue
        t0 = _time.perf_counter()
        system = family(n)
        if system.composition == "sync" and uses_alone:
            high = upper_bound(system, alone).value
            if high < cap:
                received(SaturationPoint(n, None, None, _time.perf_counter() - t0, True,
                                         mix_of(system), "bound", None, high))
                continue
        if answer is None:
            continue
        waiting(n)
        point = work(n)
        received(point)
        if point.reaches(cap):
            return n
    return answer


def _interleaved(family: Callable[[int], System], max_clients: int, cap: Fraction,
                 alone: Callable[[System], Fraction],
                 received: Callable[[SaturationPoint], None]) -> int | None:
    """The answer for interleaved clients with no server (``system async``), every ``N`` up
    to ``max_clients`` decided; a point is recorded where the scenarios present change
    (``N = 1`` and where one joins), the load being the same in between.

    Such clients share nothing: a cycle of their product is made of cycles of single clients,
    its mean a weighted average of theirs, and the worst cycle is the worst client cycling
    alone (the others idle, which interleaving allows). So the load of ``family(n)`` is the
    largest alone rate among the scenarios it holds: exact for every ``n`` from one tiny
    analysis per scenario, including a scenario that first appears at a large ``n``."""
    seen = None
    for n in range(1, max_clients + 1):
        t0 = _time.perf_counter()
        system = family(n)
        if set(system.scenarios) == seen:
            continue
        seen = set(system.scenarios)
        # (alone_rate: 0 for a scenario that charges nothing, whose model lacks the resource)
        load = max(alone_rate(system, sc, alone) for sc in system.scenarios)
        received(SaturationPoint(n, load, None, _time.perf_counter() - t0, True,
                                 mix_of(system)))
        if load >= cap:
            return n
    return None


#: :func:`saturate`'s ``method`` values.
METHODS = ("exact", "auto", "bounds")
#: The simulation's budget per point (:func:`scenarios.bounds.find_witness`): rows side by
#: side and ticks per row, when looking for a run that reaches the capacity, and when only
#: trying to meet an upper bound already below it (the point is decided either way).
WITNESS_ROWS, WITNESS_TICKS, WITNESS_PATIENCE = 14, 1000, 400
#: Rows spreading mixes of active clients (:func:`scenarios.bounds.spread_mixes`) on top,
#: on a server the count model does not describe; where it does, the mixes it looks at and
#: its ticks per row (:func:`scenarios.schedule.plan_spread`).
SPREAD_ROWS = 40
GUIDE_MIXES, GUIDE_TICKS = 400, 3000
BELOW_ROWS, BELOW_TICKS = 7, 150


def _by_bounds(system: System, n: int, cap: Fraction, alone: Callable[[System], Fraction],
               method: str, t0: float,
               phases: Callable[[str, str], None] | None = None) -> SaturationPoint:
    """A point decided by :mod:`scenarios.bounds`, or left open by them (``how='open'``,
    its note saying what each end rests on: ``method='auto'`` then analyses it exactly)."""
    from .bounds import find_witness, upper_bound

    ub = upper_bound(system, alone)
    mix = mix_of(system)
    if ub.value < cap:
        # Below for certain; a short simulation may meet the bound and so give the load.
        run = find_witness(system, upper=ub.value, rows=BELOW_ROWS, max_ticks=BELOW_TICKS)
        low = None if run is None else run.mean
        return SaturationPoint(n, ub.value if low == ub.value else None, None,
                               _time.perf_counter() - t0, True, mix, "bound", low, ub.value)
    run = _witness_run(system, cap, ub.value, alone, phases)
    low = None if run is None else run.mean
    if low is not None and low >= cap:
        return SaturationPoint(n, low if low == ub.value else None, None,
                               _time.perf_counter() - t0, True, mix, "witness", low, ub.value)
    return SaturationPoint(n, None, None, _time.perf_counter() - t0, True, mix, "open",
                           low, ub.value, note=(
                               "low: " + ("no closed walk simulated" if run is None else
                                          f"a simulated run ({run.policy})")
                               + f"; high: {ub.why}"))


#: ``method='auto'`` analyses a point exactly before trying the bounds where the model has at
#: most this many classes of client phases (:func:`_small`): exact analysis is then quicker
#: than the bounds' simulation.
EXACT_FIRST_CLASSES = 200_000


def _small(system: System) -> bool:
    """Whether ``system``'s model is small enough to analyse exactly first: the multisets of
    its clients' phases (per scenario, ``k`` clients over its round's ticks,
    :func:`scenarios.bounds.round_ticks`, plus one for waiting), multiplied, are at most
    :data:`EXACT_FIRST_CLASSES`. An estimate of the symmetry-reduced classes, only steering
    which method runs first.

    >>> from scenarios.templates import editor
    >>> _small(editor(5)), _small(editor(6))
    (True, False)
    """
    from math import comb

    from .bounds import round_ticks

    total = 1
    for sc, k in system.counts:
        total *= comb(k + round_ticks(sc.steps), k)
        if total > EXACT_FIRST_CLASSES:
            return False
    return True


def _below_upto(family: Callable[[int], System], answer: int | None, cap: Fraction,
                alone: Callable[[System], Fraction],
                points: dict[int, SaturationPoint]) -> int | None:
    """With points left open below ``answer``: the largest ``N < answer`` whose upper bound
    (:func:`scenarios.bounds.upper_bound`, cheap) is below ``cap``, found by walking up from
    the largest point known below; ``None`` when nothing is open below the answer."""
    from .bounds import upper_bound

    if answer is None or not any(p.reaches(cap) is None for n, p in points.items()
                                 if n < answer):
        return None
    known = [n for n, p in points.items() if n < answer and p.reaches(cap) is False]
    n = max(known, default=0)
    while n + 1 < answer and family(n + 1).composition == "sync" and \
            upper_bound(family(n + 1), alone).value < cap:
        n += 1
    return n or None


def _witness_run(system: System, cap: Fraction, upper: Fraction | None,
                 alone: Callable[[System], Fraction],
                 phases: Callable[[str, str], None] | None = None):
    """The simulation of a point that may reach ``cap`` (deterministic: the answer's run is
    this one again, kept from the point's search when it ran in this process).

    With a server, spread rows (:func:`scenarios.bounds.find_witness`) join the policies'
    rows: on a server that admits several requests per tick, those that the count model of
    :func:`scenarios.schedule.plan_spread` shows keeping the server full, simulated on the
    model for as long as the count model needed (none where it found none); on other servers
    the evenly spread mixes of least surplus, :data:`SPREAD_ROWS` of them."""
    from .bounds import alone_rates, bound_gap, find_witness, spread_aims, spread_mixes
    from .periodic import walked_run
    from .schedule import plan_spread

    key = (system, cap, upper)
    if key in _RUNS:
        return _RUNS[key]
    spread, ticks, patience = [], WITNESS_TICKS, WITNESS_PATIENCE
    plan = None
    if system.server is not None and bound_gap(system) is None:
        rates = {name: rho for name, _, rho in alone_rates(system, alone)}
        mixes = spread_mixes(system, cap, rates, most=GUIDE_MIXES)
        plan = plan_spread(system, cap, mixes, ticks=GUIDE_TICKS, progress=None if phases
                           is None else lambda t, most, done: phases(
                               "count model", f"tick {t:,} of at most {most:,}: {done} "
                               "spread rows keep the server full"))
    # The planner (scenarios.periodic): a spread row's walk cut short, else the integer
    # program; each followed on the model, every step checked.
    run = None
    if WALKED_RUNS and plan is not None and plan.aims:
        if phases is not None:
            phases("planner", f"a spread row's walk of {plan.ticks[0]:,} ticks cut short, "
                   "followed on the model")
        run = walked_run(system, cap, upper, plan)
    if run is None:
        run = _planned_run(system, cap, upper, phases)
    if run is not None:
        _RUNS.clear()
        _RUNS[key] = run
        return run
    if system.server is not None and bound_gap(system) is None:
        if plan is None:
            spread = spread_aims(system, mixes[:SPREAD_ROWS])
        elif plan.aims:
            # (the model's walk closes at the count model's tick or a few after: its state
            # at a tick's first step also holds who was admitted)
            spread, ticks, patience = list(plan.aims), max(plan.ticks) + 50, None
    run = find_witness(system, target=cap, upper=upper, rows=WITNESS_ROWS, max_ticks=ticks,
                       patience=patience, spread=spread, progress=None if phases is None
                       else lambda t, most, best: phases(
                           "simulation", f"tick {t:,} of at most {most:,}: " + (
                               "no closed walk yet" if best is None
                               else f"best cycle so far {best} ({float(best):.4f})")))
    _RUNS.clear()           # one run kept: a lifted cycle may be large
    _RUNS[key] = run
    return run


#: Seconds the integer program of :func:`scenarios.periodic.plan_cycle` gets per point.
PLAN_SECONDS = 20.0
#: Whether a spread row's walk on the count model is cut short and followed on the model
#: first (:func:`scenarios.periodic.walked_run`).
WALKED_RUNS = True


def _planned_run(system: System, cap: Fraction, upper: Fraction | None,
                 phases: Callable[[str, str], None] | None = None):
    """A short run of the model that keeps the server at ``cap``, planned on the count model
    (:func:`scenarios.periodic.plan_cycle`) and followed on the model itself, every step
    checked (:func:`scenarios.bounds.find_witness`'s ``plans``); ``None`` where the count
    model does not describe the system, no plan was found in :data:`PLAN_SECONDS`, or the
    run does not reach ``cap``."""
    from .bounds import find_witness
    from .periodic import admissions, plan_cycle
    from .schedule import describes

    if system.server is None or not describes(system):
        return None
    if phases is not None:
        phases("planner", f"a cycle of full ticks on the count model, {PLAN_SECONDS:.0f} s "
               "at most")
    plan = plan_cycle(system, time_limit=PLAN_SECONDS)
    if plan is None:
        return None
    run = find_witness(system, target=cap, upper=upper, rows=1,
                       max_ticks=plan.horizon + 4, plans=[admissions(system, plan)])
    return run if run is not None and run.mean >= cap else None


#: The last point's run, by (system, capacity, upper bound): the answer's run is decoded
#: without simulating it again when the point was decided in this process.
_RUNS: dict = {}


def _load_text(p: SaturationPoint) -> str:
    """``'84/11'``, or the bracket ``'at most 8'`` / ``'7..8'`` of a point decided by bounds."""
    if p.exact is not None:
        return str(p.exact)
    if p.lower is None:
        return f"at most {p.upper}"
    return f"{p.lower}..{p.upper}"


def _growth_guess(cap: Fraction) -> Callable[[int, dict], float]:
    """``guess(n, known)`` for :class:`~scenarios.parallel.PointWalk`: the chance that ``n``
    clients saturate, from the points known (a load never falls when a client is added, and
    grows about linearly until clients wait for each other). It only steers which points
    are analysed ahead, never an answer.

    >>> g = _growth_guess(Fraction(1))
    >>> p = lambda n, x: SaturationPoint(n, Fraction(x), 1, 0.0)
    >>> g(8, {4: p(4, "1/2")}), g(8, {4: p(4, "1/4")}), g(3, {4: p(4, "1/4")}), g(9, {})
    (0.8, 0.2, 0.0, 0.5)
    """
    def guess(n: int, known: dict) -> float:
        if any(m <= n and p.reaches(cap) for m, p in known.items()):
            return 1.0
        below = [p for p in known.values() if not p.reaches(cap) and p.upper is not None]
        if any(p.clients >= n for p in below):
            return 0.0
        if not below:
            return 0.5
        best = max(below, key=lambda p: p.clients)
        return 0.8 if best.upper * n / best.clients >= cap else 0.2

    return guess


#: :func:`_plateau` checks the systems up to this many clients: it builds every one from
#: ``max_clients`` down to the plateau, and apportioning ``N`` clients takes ``N`` steps
#: (500: a quarter of a second at most; 10,000 would take minutes).
PLATEAU_CHECK_MAX = 500


def _plateau(family: Callable[[int], System], max_clients: int) -> tuple[int, str] | None:
    """``(N0, 'reader 12, ...')``: the smallest ``N0`` such that every ``family(n)``,
    ``N0 <= n <= max_clients``, has the scenarios, server and composition of ``family(N0)``
    and each scenario's count at or above its cutoff (:mod:`scenarios.cutoff`), so that all
    of them have the load of ``family(N0)``; ``None`` when there is none below
    ``max_clients`` (or ``max_clients`` exceeds :data:`PLATEAU_CHECK_MAX`)."""
    from .cutoff import cutoff

    if max_clients > PLATEAU_CHECK_MAX:
        return None
    cuts: dict[str, int | None] = {}

    def shape(n: int):
        system = family(n)
        for sc, k in system.counts:
            if sc.name not in cuts:
                cuts[sc.name] = cutoff(system, sc.name)
            c = cuts[sc.name]
            if c is None or k < c:
                return None
        return (system.scenarios, system.server, system.composition)

    n0 = None
    ref = shape(max_clients)
    if ref is None:
        return None
    for n in range(max_clients, 0, -1):
        if shape(n) != ref:
            break
        n0 = n
    if n0 is None or n0 >= max_clients:
        return None
    return n0, ", ".join(f"{sc.name} {cuts[sc.name]}" for sc in ref[0])


def _bisect(saturated: Callable[[int], bool], max_clients: int) -> int | None:
    """Exponential then binary search for the smallest ``n`` with ``saturated(n)``.

    Invariant of the binary phase: ``lo`` was evaluated below capacity (or is 0) and ``hi``
    saturated; ``hi`` is always the smallest evaluated ``n`` that saturates.

    >>> asked = []
    >>> _bisect(lambda n: asked.append(n) or n * n >= 50, 64), asked
    (8, [1, 2, 4, 8, 6, 7])
    """
    lo, hi, n = 0, None, 1
    while True:
        if saturated(n):
            hi = n
            break
        lo = n
        if n >= max_clients:
            return None
        n = min(2 * n, max_clients)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if saturated(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _linear(saturated: Callable[[int], bool], max_clients: int) -> int | None:
    return next((n for n in range(1, max_clients + 1) if saturated(n)), None)
