"""How many clients saturate a DVE model? Sweeping an ``input`` constant with exact analysis.

A DVE model of ``N`` clients (``input int N = 3;`` and ``for (k : 1 .. N) { process
Client(k); }``) is a family ``n -> model``: the model loaded with ``-D N=n``. :func:`sweep`
analyses members of that family exactly, each with :func:`dvecost.analyze` (symmetry reduction
included), and finds the smallest ``n`` whose **load**, the maximal cycle mean of one cost
resource (per tick under ``system sync``, where every process moves once a tick), reaches the
**capacity**.

The search
----------
``search='linear'`` (the default) evaluates every value from ``start`` up and stops at the
first that reaches the capacity: the answer is then **certified**, every value from ``start``
below it having been proven below the capacity, whatever the shape of the curve.
``search='bisect'`` evaluates ``start, start + 1, start + 3, start + 7, ...`` until one
saturates, then bisects between the last below and it: about ``2 log2`` as many analyses, but
its answer is the smallest saturating value only if the load never falls as ``n`` grows; the
result says so (:attr:`SweepResult.certified` is false, :attr:`SweepResult.assumes_monotone`
true), and lists any fall it saw.

The capacity
------------
Given (``capacity=``, ``--capacity C``), or said by the model: a global constant named
:data:`CAPACITY_NAME` (``const int CAPACITY = 2;``, or ``input int CAPACITY = 2;`` which
``-D CAPACITY=...`` may change). The constant is evaluated in each member of the family, so it
may depend on the swept input (``const int CAPACITY = W;`` for a model of ``W`` workers). A
model that says neither is refused before any analysis.

Stopping
--------
``progress`` hears a :class:`SweepPlan`, then a :class:`PointStarted` and a :class:`SweepPoint`
per value. A state or memory limit ends the sweep with the curve so far (``status='limit'``); a
signal or the time limit (:class:`~runtime.errors.RunStopped`) and ``KeyboardInterrupt`` are passed
on carrying the result so far as ``exc.partial``.

Examples
--------
Clients that think 2 ticks and keep a worker busy 1 tick: ``n`` of them load it ``n/3``.

>>> text = '''
... input int N = 1;
... const int CAPACITY = 1;
... process C(key id) { byte t; state think, work; init think;
...   trans think -> think { guard t < 1; effect t = t + 1; },
...         think -> work { guard t == 1; effect t = 0; },
...         work -> think { cost 1; }; }
... for (k : 1 .. N) { process C(k); }
... system sync;'''
>>> r = sweep(text, "N", backend="cpu")
>>> r.saturating, [str(p.exact) for p in r.curve], r.certified, r.family.capacity_why
(3, ['1/3', '2/3', '1'], True, "the model's constant CAPACITY")
"""

from __future__ import annotations

import os
import time as _time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping

from dve.errors import ConfigurationError, ModelError, ModelErrors, ModelSemanticError, Source
from dve.inputs import InputDecl, constant_value, global_constant, model_inputs, value_range
from runtime.errors import RunStopped, StateSpaceError
from scenarios.curve import Curve
from scenarios.parallel import PointWalk
from scenarios.saturation import parse_capacity
from scenarios.walks import bisect, linear

__all__ = ["sweep", "model_family", "model_headroom", "model_frontier", "ModelFamily", "SweepPlan",
           "PointStarted", "SweepPoint", "SweepResult", "ModelHeadroom", "CAPACITY_NAME",
           "DEFAULT_SPAN", "SEARCHES", "parse_capacity"]

#: The global constant through which a model says its capacity.
CAPACITY_NAME = "CAPACITY"
#: How many values a sweep covers when no end is given: ``start .. start + 63``.
DEFAULT_SPAN = 64
#: :func:`sweep`'s ``search`` values.
SEARCHES = ("linear", "bisect")
#: ``SweepResult.status`` values.
STATUSES = ("ok", "limit", "interrupted", "timeout")


# ---------------------------------------------------------------------------- the family

@dataclass(frozen=True)
class ModelFamily:
    """``n -> model``: one DVE model with its input ``param`` set to ``n``.

    Built by :func:`model_family`, which checks everything that can be checked before any
    exploration. ``source`` is the text read once: every member comes from it, even if the
    file changes during a sweep.

    Attributes
    ----------
    name : str
        The model's name (its path, or ``'<string>'``).
    param : str
        The swept input.
    decl : dve.inputs.InputDecl
        Its declaration (type, default, position).
    defines : tuple of (str, int)
        The other inputs set (``-D``), held fixed.
    resource : str
        The cost resource whose maximal cycle mean is the load.
    resources : tuple of str
        Every resource the model charges.
    system : str
        ``'sync'`` or ``'async'``.
    capacity : Fraction or None
        The capacity given; ``None``: ``capacity_per`` times the value, or the model's
        :data:`CAPACITY_NAME`, evaluated per member.
    capacity_per : Fraction or None
        A capacity per unit of the swept input (``dvecost workers --capacity-per C``: each
        of ``W`` workers adds ``C``).
    """

    name: str
    source: Source = field(repr=False)
    param: str
    decl: InputDecl
    defines: tuple[tuple[str, int], ...]
    resource: str
    resources: tuple[str, ...]
    system: str
    capacity: Fraction | None
    capacity_per: Fraction | None = None

    def model(self, n: int):
        """The member ``n``: the model loaded (expanded, checked) with ``param = n``.

        Raises
        ------
        dve.errors.ModelErrors, dve.errors.ModelError
            The model is not valid for this value (an array of size ``n - 1`` with ``n = 0``,
            ...), positioned in the model.
        """
        low, high = value_range(self.decl.type)
        if not low <= n <= high:
            raise ModelSemanticError(
                self.decl.pos, "value-out-of-range",
                f"{self.param} = {n} does not fit its type {self.decl.type} ({low}..{high})")
        try:
            return _load(self.source, {**dict(self.defines), self.param: n})
        except (ModelError, ModelErrors) as exc:
            # The same positions, each message saying which value of the input broke it.
            raise ModelErrors(ModelSemanticError(e.pos, e.code, f"{e.message} (with "
                                                 f"{self.param} = {n})", e.hint, e.severity)
                              for e in (exc if isinstance(exc, ModelErrors) else [exc])
                              ) from None

    def capacity_of(self, model) -> Fraction:
        """The capacity that member ``model`` is judged against.

        Raises
        ------
        dve.errors.ModelSemanticError
            The model's :data:`CAPACITY_NAME` is not above 0 (``bad-capacity``, at it).
        """
        if self.capacity is not None:
            return self.capacity
        if self.capacity_per is not None:
            n = constant_value(model, self.param)
            if n <= 0:
                raise ConfigurationError(f"{self.param} = {n} gives no capacity "
                                         f"({self.capacity_per} per {self.param}): sweep "
                                         f"{self.param} from 1")
            return self.capacity_per * n
        value = constant_value(model, CAPACITY_NAME)
        if value is None or value <= 0:
            decl = global_constant(model, CAPACITY_NAME)
            raise ModelSemanticError(
                None if decl is None else decl.pos, "bad-capacity",
                f"{CAPACITY_NAME} = {value} here ({self.param} = "
                f"{constant_value(model, self.param)}): a capacity must be above 0",
                "give one with --capacity C")
        return Fraction(value)

    @property
    def capacity_why(self) -> str:
        """``'given'``, ``'C per N'`` or ``"the model's constant CAPACITY"``."""
        if self.capacity is not None:
            return "given"
        if self.capacity_per is not None:
            return f"{self.capacity_per} per {self.param}"
        return f"the model's constant {CAPACITY_NAME}"


def _load(source: Source, defines: Mapping[str, int]):
    """``source`` loaded (expanded, checked) with ``defines``; its error raised."""
    from dve.loader import load_checked

    loaded = load_checked(source, defines=defines)
    if loaded.error is not None:
        raise loaded.error
    return loaded.model


def _resource(model, resource: str | None) -> tuple[str, tuple[str, ...], str]:
    """``(resource, resources, system)`` of a loaded model: the one named (it must be one the
    model charges), or the only one it charges."""
    from statespace import compile_model

    compiled = compile_model(model)
    resources = tuple(compiled.resources) or ("cost",)
    if resource is None:
        if len(resources) > 1:
            raise ConfigurationError(
                f"the model charges {len(resources)} cost resources ({', '.join(resources)}): "
                f"name the one whose load is judged with --resource NAME, e.g. --resource "
                f"{resources[0]}")
        resource = resources[0]
    elif resource not in resources:
        raise ConfigurationError(f"--resource {resource}: the model charges no resource "
                                 f"'{resource}'; it charges: {', '.join(resources)}")
    return resource, resources, compiled.system


def _no_capacity(name: str, resource: str) -> ConfigurationError:
    return ConfigurationError(
        f"{name}: the model does not say its capacity: give --capacity C (the load of "
        f"'{resource}' that counts as saturated), or declare it in the model as "
        f"`const int {CAPACITY_NAME} = ...;` (it may use the inputs)")


def _read(model: str | os.PathLike[str] | Source) -> Source:
    from dve.loader import read_source

    if isinstance(model, Source):
        return model      # read once already (a frontier checks its two inputs on it)
    text = os.fspath(model)
    if isinstance(model, str) and any(c in text for c in "\n{;"):
        return Source("<string>", text)   # model text, as dvecost.analyze takes it
    return read_source(text)


def model_family(model: str | os.PathLike[str], param: str, *,
                 defines: Mapping[str, int] | None = None, resource: str | None = None,
                 capacity: int | float | str | Fraction | None = None,
                 values: tuple[int, int] | None = None,
                 capacity_per: int | float | str | Fraction | None = None) -> ModelFamily:
    """Check a sweep of ``model`` over its input ``param`` before any exploration.

    Parameters
    ----------
    model : str or os.PathLike
        A ``.dve`` file, or the model's text.
    param : str
        The input to sweep; it must be declared ``input`` (scalar).
    defines : mapping of str to int, optional
        Other inputs, held fixed (``-D``); ``param`` may not be among them.
    resource : str, optional
        The cost resource; needed when the model charges several.
    capacity : number or str, optional
        The capacity; without it the model must declare :data:`CAPACITY_NAME`.
    values : (int, int), optional
        The first and last value the sweep may reach: both must fit ``param``'s type.
    capacity_per : number or str, optional
        Instead of ``capacity``: a capacity per unit of ``param`` (``W`` workers of ``C``
        each: ``W * C``).

    Returns
    -------
    ModelFamily

    Raises
    ------
    dve.errors.ConfigurationError
        ``param`` is not an input (the message lists the model's inputs), is also set with
        ``-D``; an unknown or missing ``resource``; no capacity given nor declared; a bad
        capacity.
    dve.errors.ModelSemanticError
        A value of ``values`` does not fit ``param``'s type, or ``param`` is a ``const``
        (positioned at its declaration, with a hint).
    dve.errors.ModelErrors, dve.errors.ModelError
        The model does not parse, or fails its checks with ``param`` at the first value.

    Examples
    --------
    >>> f = model_family("input int N = 2; process P { state s; init s; "
    ...                  "trans s -> s { cost N; }; } system sync;", "N", capacity=3)
    >>> f.param, f.decl.default, f.resource, f.capacity, f.system
    ('N', 2, 'cost', Fraction(3, 1), 'sync')
    >>> model_family("input int N = 2; process P { state s; init s; } system sync;", "M",
    ...              capacity=1)
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: --param M: the model has no input 'M'; its inputs: N
    """
    from dve.parser import parse_source

    source = _read(model)
    parsed = parse_source(source)
    inputs = {d.name: d for d in model_inputs(parsed)}
    decl = inputs.get(param)
    if decl is None:
        const = global_constant(parsed, param)
        if const is not None:
            raise ModelSemanticError(
                const.pos, "not-an-input",
                f"--param {param}: '{param}' is a constant, not an input, so it cannot vary",
                f"declare it `input {const.type} {param} = ...;` to sweep it")
        known = ", ".join(inputs) or "none (declare one: input int N = 3;)"
        raise ConfigurationError(f"--param {param}: the model has no input '{param}'; its "
                                 f"inputs: {known}")
    fixed = dict(defines or {})
    if param in fixed:
        raise ConfigurationError(f"--param {param} and -D {param}=... both set '{param}': the "
                                 "sweep sets it; give its range with --from/--to")
    cap = None if capacity is None else parse_capacity(capacity)
    per = None if capacity_per is None else parse_capacity(capacity_per)
    if cap is not None and per is not None:
        raise ConfigurationError("give --capacity or --capacity-per, not both")
    low, high = value_range(decl.type)
    start = values[0] if values else (decl.default if decl.default is not None else 1)
    for n in values or (start,):
        if not low <= n <= high:
            raise ModelSemanticError(
                decl.pos, "value-out-of-range",
                f"--param {param}: {n} does not fit its type {decl.type} ({low}..{high})",
                f"sweep {param} within {max(low, 0)}..{high}, or declare it `input int`")
    defines_fixed = tuple(sorted(fixed.items()))
    first = _load(source, {**fixed, param: start})
    resource, resources, system = _resource(first, resource)
    if cap is None and per is None and global_constant(first, CAPACITY_NAME) is None:
        raise _no_capacity(source.name, resource)
    family = ModelFamily(source.name, source, param, decl, defines_fixed, resource, resources,
                         system, cap, per)
    family.capacity_of(first)   # a CAPACITY not above 0 is refused now, at its declaration
    return family


# ---------------------------------------------------------------------------- results

@dataclass(frozen=True)
class SweepPlan:
    """What a sweep is about to do (the first thing ``progress`` hears): the family, the
    values it may reach, the search, and warnings the user should see before the answer."""

    family: ModelFamily
    start: int
    stop: int
    search: str
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class PointStarted:
    """``progress`` hears this when the analysis of ``param = n`` starts (``witness``: the
    second analysis of the answer's value, which decodes its critical cycle)."""

    n: int
    witness: bool = False


@dataclass(frozen=True)
class SweepPoint:
    """One analysed value of the swept input.

    Attributes
    ----------
    n : int
        The input's value.
    exact : Fraction
        The load: the maximal cycle mean of the resource, exact.
    capacity : Fraction
        The capacity this value is judged against.
    n_states : int
        States of the model's full state graph (counted from the orbits under symmetry
        reduction, which explores fewer).
    seconds : float
        Wall time to load and analyse the model.
    certified : bool
        Whether the engine's exact certificate proved ``exact``.
    """

    n: int
    exact: Fraction
    capacity: Fraction
    n_states: int
    seconds: float
    certified: bool = True

    @property
    def value(self) -> float:
        """The load as a float."""
        return float(self.exact)

    @property
    def saturated(self) -> bool:
        """Whether the load reaches the capacity."""
        return self.exact >= self.capacity

    def as_dict(self) -> dict:
        """The JSON form: ``n``, ``exact`` (``"p/q"``), ``value``, ``capacity`` (``"p/q"``),
        ``saturated``, ``n_states``, ``seconds``, ``certified``."""
        return {"n": self.n, "exact": str(self.exact), "value": self.value,
                "capacity": str(self.capacity), "saturated": self.saturated,
                "n_states": self.n_states, "seconds": round(self.seconds, 4),
                "certified": self.certified}


@dataclass(frozen=True)
class SweepResult(Curve):
    """The answer of :func:`sweep`.

    Attributes
    ----------
    family : ModelFamily
        What was swept.
    start, stop : int
        The values the sweep could reach.
    search : str
        ``'linear'`` or ``'bisect'``.
    goal : str
        ``'saturate'``: the smallest value whose load reaches its capacity; ``'below'``: the
        smallest whose load stays below (``dvecost workers``).
    answer : int or None
        That value; ``None`` when no value up to ``stop`` is one, or the sweep stopped first.
    curve : tuple of SweepPoint
        Every analysed value, in increasing order.
    status : str
        ``'ok'``, ``'limit'`` (a state or memory limit), ``'interrupted'``, ``'timeout'``.
    stopped : str or None
        Why the sweep stopped before its end.
    warnings : tuple of str
        As in the plan.
    witness : object or None
        The :class:`~dvecost.Analysis` of the answer's value, critical cycle decoded.
    witness_seconds : float
        Wall time of that analysis.
    """

    family: ModelFamily
    start: int
    stop: int
    search: str
    goal: str
    answer: int | None
    curve: tuple[SweepPoint, ...]
    status: str = "ok"
    stopped: str | None = None
    warnings: tuple[str, ...] = ()
    witness: Any = None
    witness_seconds: float = 0.0
    #: The name of a point's value (:class:`~scenarios.curve.Curve`: ``seconds``,
    #: ``partial`` and ``point(n)`` come from there).
    KEY = "n"

    def found(self, p: SweepPoint) -> bool:
        """Whether ``p`` is what the sweep looks for (saturated, or below for ``'below'``)."""
        return p.saturated if self.goal == "saturate" else not p.saturated

    @property
    def saturating(self) -> int | None:
        """The answer of a ``'saturate'`` sweep (``None`` for the other goal)."""
        return self.answer if self.goal == "saturate" else None

    @property
    def capacity(self) -> Fraction | None:
        """The capacity when it is the same for every value analysed (or given), else
        ``None`` (a model's ``CAPACITY`` that depends on the swept input)."""
        if self.family.capacity is not None:
            return self.family.capacity
        caps = {p.capacity for p in self.curve}
        return caps.pop() if len(caps) == 1 else None

    @property
    def violations(self) -> tuple[tuple[SweepPoint, SweepPoint], ...]:
        """Pairs ``(a, b)`` of analysed values, ``a.n < b.n``, where the load fell."""
        pts = self.curve
        return tuple((a, b) for i, a in enumerate(pts) for b in pts[i + 1:]
                     if a.exact > b.exact)

    @property
    def monotone(self) -> bool:
        """Whether the load never falls between analysed values."""
        return not self.violations

    @property
    def assumes_monotone(self) -> bool:
        """Whether the answer (or its absence) rests on the load being monotone: a bisection
        that skipped values below its answer."""
        if self.search == "linear":
            return False
        top = self.answer if self.answer is not None else max(
            (p.n for p in self.curve), default=self.start)
        return any(self.point(n) is None for n in range(self.start, top))

    @property
    def certified(self) -> bool:
        """Whether the answer is proven: every value from :attr:`start` up to it was analysed,
        each with its certificate, and only the answer is what was looked for; without an
        answer, every value up to :attr:`stop` was (a finished linear sweep)."""
        top = self.answer if self.answer is not None else self.stop
        if self.answer is None and self.partial:
            return False
        for n in range(self.start, top + 1):
            p = self.point(n)
            if p is None or not p.certified or (self.found(p) != (n == self.answer)):
                return False
        return True

    def as_dict(self) -> dict:
        """The JSON form (``dvecost saturate model.dve --param N --json``), ``status`` first.

        Keys: ``status``, ``partial``, ``model``, ``param``, ``defines``, ``from``, ``to``,
        ``system``, ``resource``, ``goal``, ``capacity`` and ``capacity_exact`` (null when it
        varies with the input), ``capacity_why``, ``answer``, ``saturating`` (the answer of a
        saturation sweep, else null), ``search``, ``answer_certified``,
        ``assumes_monotone``, ``monotone``, ``violations`` (``[[a, b], ...]``: values where
        the load fell), ``stopped``, ``warnings``, ``seconds``, ``curve`` (the points'
        :meth:`SweepPoint.as_dict`)."""
        cap = self.capacity
        fam = self.family
        return {
            "status": self.status, "partial": self.partial, "model": fam.name,
            "param": fam.param, "defines": dict(fam.defines), "from": self.start,
            "to": self.stop, "system": fam.system, "resource": fam.resource,
            "goal": self.goal,
            "capacity": None if cap is None else (int(cap) if cap.denominator == 1
                                                  else float(cap)),
            "capacity_exact": None if cap is None else str(cap),
            "capacity_why": fam.capacity_why, "answer": self.answer,
            "saturating": self.saturating, "search": self.search,
            "answer_certified": self.certified, "assumes_monotone": self.assumes_monotone,
            "monotone": self.monotone,
            "violations": [[a.n, b.n] for a, b in self.violations],
            "stopped": self.stopped, "warnings": list(self.warnings),
            "seconds": round(self.seconds, 4), "curve": [p.as_dict() for p in self.curve]}


# ---------------------------------------------------------------------------- the sweep

def _warnings(family: ModelFamily) -> tuple[str, ...]:
    if family.system == "sync":
        return ()
    return ("the model is 'system async': its steps interleave, so the load is the cost per "
            "step of one process (or rendezvous) at a time, not per tick of processes "
            "working side by side; more clients rarely raise it. A model of clients "
            "working in parallel is written 'system sync'",)


def sweep(model: str | os.PathLike[str], param: str, *, start: int = 1,
          stop: int | None = None, capacity: int | float | str | Fraction | None = None,
          resource: str | None = None, defines: Mapping[str, int] | None = None,
          search: str = "linear", goal: str = "saturate",
          capacity_per: int | float | str | Fraction | None = None, backend: str = "auto",
          max_states: int | None = None, max_memory: int | None = None, witness: bool = True,
          progress: Callable[[object], None] | None = None,
          phases: Callable[[str, str], None] | None = None, jobs: int = 1) -> SweepResult:
    """The smallest value of input ``param`` from ``start`` whose load reaches the capacity
    (``goal='below'``: stays below it).

    Parameters
    ----------
    model : str or os.PathLike
        A ``.dve`` file or the model's text.
    param : str
        The ``input`` constant swept.
    start, stop : int
        The values analysed lie in ``start .. stop`` (default ``start + DEFAULT_SPAN - 1``,
        within the input's type).
    capacity, resource, defines
        See :func:`model_family`.
    search : {'linear', 'bisect'}
        See "The search" above.
    goal : {'saturate', 'below'}
        What is looked for.
    capacity_per : number or str, optional
        See :func:`model_family` (``dvecost workers``).
    backend, max_states, max_memory
        Passed to :func:`dvecost.analyze` for each value (the limits apply per model;
        ``max_memory`` defaults to :func:`dvecost.saturation.memory_guard`).
    witness : bool
        Analyse the answer's value once more with its critical cycle decoded.
    progress : callable, optional
        Hears a :class:`SweepPlan`, then per value a :class:`PointStarted` and its
        :class:`SweepPoint`.
    phases : callable, optional
        ``phases(phase, message)`` while a value is analysed (the analysis's phases; only
        with ``jobs=1``: a worker process would write over the parent's lines).
    jobs : int
        Processes analysing values (:class:`~scenarios.parallel.PointWalk`, as the scenario
        search's): with more than one, worker processes analyse ahead the values the search
        will likely ask for next while it waits for one; the values it uses, their order and
        the answer are those of ``jobs=1``, and a :class:`PointStarted` is heard only for the
        values it waits for.

    Returns
    -------
    SweepResult

    Raises
    ------
    dve.errors.ConfigurationError, dve.errors.ModelError, dve.errors.ModelErrors
        See :func:`model_family`; a bad range or search; a model invalid at some value.
    runtime.errors.RunStopped, KeyboardInterrupt
        With the result so far as ``exc.partial``.
    """
    from .analysis import analyze

    if search not in SEARCHES:
        raise ConfigurationError(f"unknown search '{search}': expected linear or bisect")
    if goal not in ("saturate", "below"):
        raise ConfigurationError(f"unknown goal '{goal}': expected saturate or below")
    if stop is None:
        stop = start + DEFAULT_SPAN - 1
    if stop < start:
        raise ConfigurationError(f"bad range {start}..{stop}: --to must be at least --from")
    family = model_family(model, param, defines=defines, resource=resource,
                          capacity=capacity, values=(start, stop),
                          capacity_per=capacity_per)
    warnings = _warnings(family)
    tell = progress or (lambda event: None)
    tell(SweepPlan(family, start, stop, search, warnings))
    if jobs != 1:
        phases = None   # (a worker process would write over the parent's lines)
    report = None if phases is None else (lambda phase, done, total, message:
                                          phases(phase, message))

    def analysed(n: int, with_witness: bool):
        m = family.model(n)
        cap = family.capacity_of(m)
        a = analyze(m, cost=family.resource, backend=backend, max_states=max_states,
                    max_memory=_guarded(max_memory), witness=with_witness, progress=report)
        return a, cap

    def work(n: int) -> SweepPoint:
        t0 = _time.perf_counter()
        a, cap = analysed(n, False)
        full = (a.symmetry or {}).get("full_states") or a.n_states
        return SweepPoint(n, Fraction(a.value), cap, int(full), _time.perf_counter() - t0,
                          bool(a.certified))

    walks = linear if search == "linear" else bisect
    walker = PointWalk(lambda found, out: out.append(walks(found, start, stop)),
                       _loading_here(work, jobs), jobs=jobs,
                       progress=_raising_here(tell, lambda n: family.model(n)),
                       waiting=lambda n: tell(PointStarted(n)),
                       outcome=lambda p: p.saturated if goal == "saturate"
                       else not p.saturated)
    current: int | None = None

    def result(answer, **kw) -> SweepResult:
        points = walker.points
        return SweepResult(family, start, stop, search, goal, answer,
                           tuple(points[n] for n in sorted(points)), warnings=warnings, **kw)

    answer = None
    try:
        answer = walker.run()[0]
        run, seconds = None, 0.0
        if answer is not None and witness:
            current = answer
            tell(PointStarted(answer, witness=True))
            t0 = _time.perf_counter()
            run = analysed(answer, True)[0]
            seconds = _time.perf_counter() - t0
        return result(answer, witness=run, witness_seconds=seconds)
    except StateSpaceError as exc:   # a state or memory limit: the curve so far is the answer
        current = walker.current if current is None else current
        return result(answer, status="limit", stopped=f"{param}={current}: {exc}")
    except (RunStopped, KeyboardInterrupt) as exc:
        current = walker.current if current is None else current
        status = getattr(exc, "status", "interrupted")
        found = getattr(getattr(exc, "partial", None), "n_states", None)
        after = f" after {found:,} states" if isinstance(found, int) else ""
        where = f"{param}={current}" if current is not None else "before the first value"
        exc.partial = result(answer if answer in walker.points else None,
                             status=status if status in STATUSES else "interrupted",
                             stopped=f"{where}: {str(exc) or 'interrupted'}{after}")
        raise


# ---------------------------------------------------------------------------- frontier

def model_frontier(model: str | os.PathLike[str], a: str, b: str, *,
                   max_values: tuple[int, int] = (8, 8),
                   defines: Mapping[str, int] | None = None,
                   capacity: int | float | str | Fraction | None = None,
                   resource: str | None = None, backend: str = "auto",
                   max_states: int | None = None, max_memory: int | None = None,
                   jobs: int = 1, progress: Callable[[object], None] | None = None):
    """The saturation frontier over two ``input`` constants of a DVE model: for each value of
    ``a`` (``0 .. max_values[0]``), the largest value of ``b`` (``0 .. max_values[1]``) whose
    load stays below the capacity; the walk of :func:`scenarios.capacity.frontier`
    (:func:`scenarios.capacity.walk_frontier`), each point the model loaded with ``-D a=..
    -D b=..`` (``defines`` held fixed) and analysed exactly.

    The capacity is one for the whole grid: ``capacity``, or the model's
    :data:`CAPACITY_NAME`, which must then not change with ``a`` or ``b``.

    Returns
    -------
    scenarios.capacity.FrontierResult
        ``fixed`` holds ``defines``.

    Raises
    ------
    dve.errors.ConfigurationError, dve.errors.ModelError, dve.errors.ModelErrors
        As :func:`model_family` for each of ``a`` and ``b``; the two the same; a
        ``CAPACITY`` that varies over the grid.
    runtime.errors.RunStopped, KeyboardInterrupt
        With the result so far as ``exc.partial``.

    Examples
    --------
    A load of ``(x + y) / 2`` against capacity 1:

    >>> text = ("input int X = 0; input int Y = 0; process P { state s; init s; "
    ...         "trans s -> s { cost X + Y; }; } system sync;")
    >>> model_frontier(text, "X", "Y", max_values=(2, 3), capacity=2, backend="cpu").stair
    ((0, 1), (1, 0), (2, None))
    """
    from scenarios.capacity import FrontierPoint, walk_frontier
    from statespace import compile_model

    from .analysis import analyze

    if a == b:
        raise ConfigurationError(f"the frontier needs two different inputs, not '{a}' twice")
    max_a, max_b = max_values
    fixed = dict(defines or {})
    # Each input checked over its range (both ends must fit its type); the resource is
    # resolved on the largest member, where every kind of client is present and charges.
    fam_a = model_family(model, a, defines={**fixed, b: max_b}, resource=resource,
                         capacity=capacity, values=(max_a, 0))
    fam_b = model_family(fam_a.source, b, defines={**fixed, a: max_a},
                         resource=fam_a.resource, capacity=capacity, values=(max_b, 0))
    cap = fam_a.capacity_of(_with_defines(fam_a, {**fixed, b: 0}).model(0))

    def work(key: tuple[int, int]) -> FrontierPoint:
        na, nb = key
        t0 = _time.perf_counter()
        member = _with_defines(fam_a, {**fixed, b: nb}).model(na)
        if fam_a.capacity is None and fam_a.capacity_of(member) != cap:
            raise ConfigurationError(
                f"{fam_a.name}: {CAPACITY_NAME} changes over the grid ({cap} at {a}=0, "
                f"{b}=0; {fam_a.capacity_of(member)} at {a}={na}, {b}={nb}): a frontier "
                "needs one capacity; give it with --capacity C")
        if fam_b.resource not in compile_model(member).resources:
            # Nothing charges the resource here (no client of a kind that does): load 0, as
            # the scenario frontier's point with no client, not analysed.
            return FrontierPoint(na, nb, Fraction(0), Fraction(0) >= cap, 0,
                                 _time.perf_counter() - t0)
        an = analyze(member, cost=fam_b.resource, backend=backend, max_states=max_states,
                     max_memory=_guarded(max_memory))
        full = (an.symmetry or {}).get("full_states") or an.n_states
        load = Fraction(an.value)
        return FrontierPoint(na, nb, load, load >= cap, int(full), _time.perf_counter() - t0,
                             bool(an.certified))

    def load(key: tuple[int, int]) -> None:
        _with_defines(fam_a, {**fixed, b: key[1]}).model(key[0])

    return walk_frontier(fam_a.name, a, b, tuple(sorted(fixed.items())), cap, (max_a, max_b),
                         _loading_here(work, jobs), jobs=jobs,
                         progress=_raising_here(progress or (lambda point: None), load))


@dataclass(frozen=True)
class Unloadable:
    """What a worker process returns for a member that does not load (an invalid value of
    the input): its error does not survive pickling, so the parent loads the member again
    to raise it, positioned in the model, when the walk receives this point."""

    key: Any


def _loading_here(work: Callable[[Any], Any], jobs: int) -> Callable[[Any], Any]:
    """``work``, which in a worker process (``jobs > 1``) returns :class:`Unloadable` for a
    member whose model does not load instead of raising its error."""
    if jobs == 1:
        return work

    def guarded(key: Any) -> Any:
        try:
            return work(key)
        except (ModelError, ModelErrors):
            return Unloadable(key)

    return guarded


def _raising_here(tell: Callable[[object], None],
                  load: Callable[[Any], None]) -> Callable[[object], None]:
    """``tell``, which raises the error of an :class:`Unloadable` point (``load(key)``) as
    the walk receives it, where ``jobs=1`` would have raised it."""
    def hear(point: object) -> None:
        if isinstance(point, Unloadable):
            load(point.key)
        tell(point)

    return hear


def _with_defines(family: ModelFamily, defines: Mapping[str, int]) -> ModelFamily:
    """``family`` with the other inputs set to ``defines``."""
    from dataclasses import replace

    return replace(family, defines=tuple(sorted(defines.items())))


# ---------------------------------------------------------------------------- headroom

@dataclass(frozen=True)
class ModelHeadroom:
    """One DVE model's worst load against its capacity (``dvecost headroom model.dve``).

    Attributes
    ----------
    name : str
        The model.
    defines : tuple of (str, int)
        The inputs set.
    resource : str
        The cost resource.
    capacity : Fraction
        The capacity (given, or the model's ``CAPACITY``).
    capacity_why : str
        Where it comes from.
    witness : dvecost.Analysis
        The analysis: ``witness.value`` is the load; its critical cycle decoded.
    seconds : float
        Wall time.
    """

    name: str
    defines: tuple[tuple[str, int], ...]
    resource: str
    capacity: Fraction
    capacity_why: str
    witness: Any
    seconds: float

    @property
    def exact(self) -> Fraction:
        """The load, exact."""
        return Fraction(self.witness.value)

    @property
    def headroom(self) -> Fraction:
        """``capacity - load`` (0 or less: saturated)."""
        return self.capacity - self.exact

    @property
    def saturated(self) -> bool:
        """Whether the load reaches the capacity."""
        return self.exact >= self.capacity

    def as_dict(self) -> dict:
        """The JSON form (``dvecost headroom model.dve --json`` adds the analysis)."""
        cap = self.capacity
        return {"status": "ok", "model": self.name, "defines": dict(self.defines),
                "resource": self.resource,
                "capacity": int(cap) if cap.denominator == 1 else float(cap),
                "capacity_exact": str(cap), "capacity_why": self.capacity_why,
                "exact": str(self.exact), "value": float(self.exact),
                "used": float(self.exact / cap), "headroom_exact": str(self.headroom),
                "headroom": float(self.headroom), "saturated": self.saturated,
                "certified": bool(self.witness.certified),
                "n_states": self.witness.n_states, "seconds": round(self.seconds, 4)}

    def __str__(self) -> str:
        sets = ", ".join(f"{k}={v}" for k, v in self.defines)
        state = ("saturated: no headroom" if self.saturated
                 else f"headroom {self.headroom} ({float(self.headroom):.4f})")
        why = "given" if self.capacity_why == "given" else self.capacity_why
        return (f"{self.name}{' with ' + sets if sets else ''}: load of '{self.resource}' "
                f"against capacity {self.capacity} ({why})\n"
                f"worst load {self.exact} ({float(self.exact):.4f}): "
                f"{float(self.exact / self.capacity):.1%} of capacity, {state}"
                + ("" if self.witness.certified else " (not certified)"))


def model_headroom(model: str | os.PathLike[str], *, defines: Mapping[str, int] | None = None,
                   capacity: int | float | str | Fraction | None = None,
                   resource: str | None = None, backend: str = "auto",
                   max_states: int | None = None, max_memory: int | None = None,
                   progress: Callable[[str, Any, Any, str], None] | None = None
                   ) -> ModelHeadroom:
    """One analysis of ``model`` (inputs ``defines``): its load, capacity and headroom.

    The capacity is ``capacity`` or the model's :data:`CAPACITY_NAME`; ``resource`` as for
    :func:`model_family`.

    >>> h = model_headroom("const int CAPACITY = 2; process P { state a, b; init a; "
    ...                    "trans a -> b { cost 3; }, b -> a { cost 0; }; } system sync;",
    ...                    backend="cpu")
    >>> str(h.exact), str(h.headroom), h.saturated, h.capacity_why
    ('3/2', '1/2', False, "the model's constant CAPACITY")
    """
    from .analysis import analyze

    fixed = dict(defines or {})
    source = _read(model)
    t0 = _time.perf_counter()
    m = _load(source, fixed)
    resource = _resource(m, resource)[0]
    if capacity is not None:
        cap, why = parse_capacity(capacity), "given"
    else:
        value = constant_value(m, CAPACITY_NAME)
        if value is None:
            raise _no_capacity(source.name, resource)
        if value <= 0:
            raise ModelSemanticError(global_constant(m, CAPACITY_NAME).pos, "bad-capacity",
                                     f"{CAPACITY_NAME} = {value}: a capacity must be above 0",
                                     "give one with --capacity C")
        cap, why = Fraction(value), f"the model's constant {CAPACITY_NAME}"
    a = analyze(m, cost=resource, backend=backend, max_states=max_states,
                max_memory=_guarded(max_memory), progress=progress)
    return ModelHeadroom(source.name, tuple(sorted(fixed.items())), resource, cap, why, a,
                         _time.perf_counter() - t0)


def _guarded(max_memory: int | None) -> int | None:
    """``max_memory``, or the default guard of the capacity questions where none is given."""
    from .saturation import memory_guard

    return memory_guard() if max_memory is None else max_memory
