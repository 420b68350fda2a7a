"""How many clients does it take to saturate the server? The client-count search.

For ``N`` clients the system's **load** is the maximal cycle mean of its cost resource (the
server's worst sustainable work per tick; see :mod:`scenarios.dsl`). :func:`saturate` finds the
smallest ``N`` whose load reaches the capacity ``C`` (1 = one worker busy every tick at cost 1).

The search
----------
Exponential, then binary: evaluate ``N = 1, 2, 4, 8, ...`` (capped at ``max_clients``) until a
load reaches ``C``; the answer then lies between the last ``N`` below and that one, and a binary
search narrows it down. That takes about ``2 log2(N)`` analyses instead of ``N``, and the largest
model analysed is below ``2N``.

It relies on the load being **monotone** in ``N`` (one more client never lowers it). That is
plausible, not guaranteed: a new client's cheap requests can keep a worker busy at a low cost per
tick while costlier requests wait, because a work-conserving server must take what is waiting.
So every pair of evaluated points is checked, and a result whose curve is not monotone says so
(:attr:`SaturationResult.monotone`, :attr:`SaturationResult.violations`): its answer is the
smallest saturating ``N`` *among those evaluated*, and a smaller one may exist. ``search='linear'``
evaluates every ``N`` from 1 up instead, which is exact whatever the curve.

Examples
--------
Three clients who each think 10 ticks and then ask for 6 ticks of service keep one worker busy:
a client's cycle is 18 ticks (send, 6 served, reply, 10 thinking), so each client alone loads
the server 6/18 = 1/3, and the load is ``min(1, N/3)``.

>>> from scenarios import Scenario, Server, System, Think, Request
>>> user = Scenario("user", [Think(10), Request("job", service=6)])
>>> r = saturate(lambda n: System({user: n}, server=Server()), backend="cpu")
>>> r.saturating_clients, [(p.clients, str(p.exact)) for p in r.curve]
(3, [(1, '1/3'), (2, '2/3'), (3, '1'), (4, '1')])
>>> r.monotone
True
"""

from __future__ import annotations

import pathlib
import time as _time
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable, Union

from dve.errors import ConfigurationError, StateSpaceError

from .dsl import System

__all__ = ["saturate", "SaturationResult", "SaturationPoint", "Evaluation", "analyze_load",
           "resolve_spec", "parse_capacity", "Spec", "DEFAULT_MAX_CLIENTS"]

#: The default limit of the search.
DEFAULT_MAX_CLIENTS = 64

#: What :func:`saturate` accepts as a spec: a template name or a scenario file path, a function
#: ``n -> System`` (or ``n -> {scenario: count}``), or a :class:`System` (grown in its
#: proportions).
Spec = Union[str, pathlib.Path, Callable[[int], System], System]


@dataclass(frozen=True)
class Evaluation:
    """What an evaluator returns for one system: its load and the size of its state graph."""

    exact: Fraction
    n_states: int
    certified: bool = True


@dataclass(frozen=True)
class SaturationPoint:
    """One evaluated point of the curve.

    Attributes
    ----------
    clients : int
        The number of clients ``N``.
    exact : Fraction
        The load (maximal cycle mean of the cost resource), exact.
    n_states : int
        States of the model's reachable state graph.
    seconds : float
        Wall time to build and analyse the model.
    certified : bool
        Whether the engine's exact certificate proved the value.
    """

    clients: int
    exact: Fraction
    n_states: int
    seconds: float
    certified: bool = True

    @property
    def value(self) -> float:
        """The load as a float."""
        return float(self.exact)

    def as_dict(self) -> dict:
        """The JSON form: ``clients``, ``exact`` (``"p/q"`` or ``"p"``), ``value``,
        ``n_states``, ``seconds``, ``certified``."""
        return {"clients": self.clients, "exact": str(self.exact), "value": self.value,
                "n_states": self.n_states, "seconds": round(self.seconds, 4),
                "certified": self.certified}


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
        ``max_clients`` does (or the search stopped, see ``stopped``).
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
        The cost resource analysed (``'server'`` or ``'work'``).
    load_bound : Fraction or None
        An upper bound on the load of the largest system evaluated
        (:meth:`~scenarios.dsl.System.load_bound`): with a server, ``workers * max(cost)``.
    search : str
        ``'bisect'`` or ``'linear'``.
    stopped : str or None
        Why the search stopped before an answer (a state limit), else ``None``.
    note : str or None
        Why no (further) analysis was needed, when the answer follows from the system's shape:
        a capacity above :attr:`load_bound` when that bound does not grow with the clients, or
        interleaved clients with no server, whose load is that of the worst client alone.
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

    @property
    def seconds(self) -> float:
        """Total time spent evaluating points."""
        return sum(p.seconds for p in self.curve)

    def point(self, clients: int) -> SaturationPoint | None:
        """The evaluated point for ``clients``, or ``None``."""
        return next((p for p in self.curve if p.clients == clients), None)

    def as_dict(self) -> dict:
        """The JSON form (``dvecost saturate --json``)."""
        def num(x: Fraction | None) -> int | float | None:
            if x is None:
                return None
            return int(x) if x.denominator == 1 else float(x)

        return {
            "spec": self.spec, "scenario": self.scenario, "resource": self.resource,
            "capacity": num(self.capacity), "capacity_exact": str(self.capacity),
            "saturating_clients": self.saturating_clients, "max_clients": self.max_clients,
            "search": self.search, "monotone": self.monotone,
            "violations": [[a.clients, b.clients] for a, b in self.violations],
            "load_bound": num(self.load_bound),
            "load_bound_exact": None if self.load_bound is None else str(self.load_bound),
            "stopped": self.stopped, "note": self.note, "seconds": round(self.seconds, 4),
            "curve": [p.as_dict() for p in self.curve],
        }


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


def analyze_load(system: System, *, backend: str = "auto",
                 max_states: int | None = None) -> Evaluation:
    """The load of ``system``: :func:`dvecost.analyze` on its model's DVE text.

    The model is written out with :func:`dve.format_model` and analysed like any model file
    (maximal cycle mean of ``system.resource``), so saturation answers are exactly what
    ``dvecost analyze`` says about ``dvecost scenarios render`` output. ``dvecost`` is imported
    here, at call time: the ``scenarios`` package itself depends only on ``dve``.

    Raises
    ------
    dve.errors.StateLimitExceeded
        The state graph has more than ``max_states`` states.
    dve.errors.BackendUnavailableError
        ``backend='gpu'`` without a device.

    Examples
    --------
    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> one = Scenario("one", [Think(2), Request("r", service=4)])
    >>> analyze_load(System({one: 1}, server=Server()), backend="cpu")
    Evaluation(exact=Fraction(1, 2), n_states=8, certified=True)
    """
    import dve
    from dvecost import analyze

    text = dve.format_model(system.to_model())
    a = analyze(text, cost=system.resource, backend=backend, max_states=max_states)
    return Evaluation(Fraction(a.value), int(a.n_states), bool(a.certified))


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


def _one_scenario(family: Callable[[int], System], name: str,
                  max_clients: int) -> Callable[[int], System]:
    """``n -> n`` clients of scenario ``name`` alone (same server), found in ``family(k)``."""
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


# ---------------------------------------------------------------------------- the search

def saturate(spec: Spec, capacity: int | float | str | Fraction = 1, *,
             max_clients: int = DEFAULT_MAX_CLIENTS, scenario: str | None = None,
             backend: str = "auto", max_states: int | None = None, search: str = "bisect",
             evaluate: Callable[[System], Evaluation] | None = None,
             progress: Callable[[SaturationPoint], None] | None = None) -> SaturationResult:
    """Find the smallest number of clients whose load reaches ``capacity``.

    Parameters
    ----------
    spec : str, pathlib.Path, callable or System
        What to grow; see :func:`resolve_spec` (template name, scenario file, ``n -> System``).
    capacity : number, str or Fraction
        The load that counts as saturated (default 1: one worker busy every tick at cost 1).
    max_clients : int
        Search no further than this many clients.
    scenario : str, optional
        Grow only this scenario (``n`` clients of it alone, same server) instead of all
        scenarios in their proportions.
    backend : {'auto', 'cpu', 'gpu'}
        Passed to :func:`dvecost.analyze`.
    max_states : int, optional
        Per-point state limit: the search stops, saying so, at the first ``N`` whose state
        graph is larger.
    search : {'bisect', 'linear'}
        Exponential then binary search (default), or every ``N`` from 1 up (exact even when the
        curve is not monotone).
    evaluate : callable, optional
        ``evaluate(system) -> Evaluation``; default :func:`analyze_load`. Tests inject fakes.
    progress : callable, optional
        Called with each :class:`SaturationPoint` as soon as it is evaluated.

    Returns
    -------
    SaturationResult

    Raises
    ------
    dve.errors.ConfigurationError
        Bad arguments, an unknown template or scenario, a system the DSL refuses.
    dve.errors.ModelError
        A scenario file that fails to load or raises (code ``scenario-error``).
    dve.errors.ModelErrors
        A generated model fails the static checks (a bug: please report it).
    dve.errors.AnalysisError, dve.errors.BackendUnavailableError
        From :func:`dvecost.analyze`.

    See Also
    --------
    scenarios.templates.TEMPLATES : the bundled specs.

    Examples
    --------
    With a fake evaluator (the load of ``n`` clients is ``n/4``), capacity 1 needs 4 clients;
    the search evaluates 1, 2, 4 and then 3:

    >>> from scenarios import Scenario, System, Request
    >>> u = Scenario("u", Request("r", 1))
    >>> fake = lambda system: Evaluation(Fraction(system.n_clients, 4), system.n_clients)
    >>> r = saturate(lambda n: System({u: n}), evaluate=fake)
    >>> r.saturating_clients, [p.clients for p in r.curve]
    (4, [1, 2, 3, 4])
    """
    cap = parse_capacity(capacity)
    if isinstance(max_clients, bool) or not isinstance(max_clients, int) or max_clients < 1:
        raise ConfigurationError(f"max_clients must be a positive integer, not {max_clients!r}")
    if search not in ("bisect", "linear"):
        raise ConfigurationError(f"unknown search '{search}': expected 'bisect' or 'linear'")
    name, family = resolve_spec(spec)
    if scenario is not None:
        family = _one_scenario(family, scenario, max_clients)
    run = evaluate or (lambda system: analyze_load(system, backend=backend,
                                                   max_states=max_states))
    points: dict[int, SaturationPoint] = {}
    meta: dict[str, object] = {}

    def load(n: int) -> SaturationPoint:
        if n not in points:
            meta["current"] = n
            t0 = _time.perf_counter()
            system = family(n)
            meta.setdefault("resource", system.resource)
            meta["bound"] = system.load_bound()
            ev = run(system)
            points[n] = SaturationPoint(n, Fraction(ev.exact), int(ev.n_states),
                                        _time.perf_counter() - t0, bool(ev.certified))
            if progress is not None:
                progress(points[n])
        return points[n]

    answer: int | None = None
    stopped: str | None = None
    top = family(max_clients)
    if (top.server is not None or top.composition == "async") and top.load_bound() < cap:
        # The bound does not grow with N here (workers * max cost, or one client's max cost):
        # no analysis can reach the capacity, so none is run.
        why = ("workers x largest cost per tick" if top.server is not None
               else "interleaved: one client's largest cost per step")
        return SaturationResult(
            spec=name, capacity=cap, saturating_clients=None, curve=(), monotone=True,
            violations=(), max_clients=max_clients, scenario=scenario, resource=top.resource,
            load_bound=top.load_bound(), search=search,
            note=f"the load can never reach {cap}: it is at most {top.load_bound()} ({why})")
    note: str | None = None
    if top.server is None and top.composition == "async":
        # Interleaved clients that share nothing: a cycle of the product is made of cycles of
        # single clients, and its mean is a weighted average of theirs, so the worst cycle is
        # the worst client cycling alone (the others idle, which interleaving allows). The load
        # is the same for every N >= 1; N = 1 and 2 show it, and nothing more is needed.
        for n in (1, 2)[:max_clients]:
            if load(n).exact >= cap:
                break
        else:
            note = ("interleaved clients with no server: the load of N clients is that of the "
                    "worst client alone, the same for every N, so no N reaches the capacity")
    if note is not None:
        curve = tuple(points[n] for n in sorted(points))
        return SaturationResult(
            spec=name, capacity=cap, saturating_clients=None, curve=curve, monotone=True,
            violations=(), max_clients=max_clients, scenario=scenario, resource=top.resource,
            load_bound=top.load_bound(), search=search, note=note)
    try:
        answer = _linear(load, cap, max_clients) if search == "linear" else \
            _bisect(load, cap, max_clients)
    except StateSpaceError as exc:
        stopped = f"N={meta.get('current')}: {exc}"
        answer = None
    curve = tuple(points[n] for n in sorted(points))
    violations = tuple((a, b) for i, a in enumerate(curve) for b in curve[i + 1:]
                       if b.exact < a.exact)
    if "resource" not in meta:  # nothing evaluated (cannot happen: N = 1 always is)
        meta["resource"] = family(1).resource
    return SaturationResult(
        spec=name, capacity=cap, saturating_clients=answer, curve=curve,
        monotone=not violations, violations=violations, max_clients=max_clients,
        scenario=scenario, resource=str(meta["resource"]),
        load_bound=meta.get("bound"), search=search, stopped=stopped)  # type: ignore[arg-type]


def _bisect(load: Callable[[int], SaturationPoint], cap: Fraction, max_clients: int) -> int | None:
    """Exponential then binary search for the smallest ``n`` with ``load(n) >= cap``.

    Invariant of the binary phase: ``lo`` was evaluated below ``cap`` (or is 0) and ``hi``
    at or above it; ``hi`` is always the smallest evaluated ``n`` reaching ``cap``.
    """
    lo, hi, n = 0, None, 1
    while True:
        if load(n).exact >= cap:
            hi = n
            break
        lo = n
        if n >= max_clients:
            return None
        n = min(2 * n, max_clients)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if load(mid).exact >= cap:
            hi = mid
        else:
            lo = mid
    return hi


def _linear(load: Callable[[int], SaturationPoint], cap: Fraction, max_clients: int) -> int | None:
    for n in range(1, max_clients + 1):
        if load(n).exact >= cap:
            return n
    return None
