"""The client-count search as an object: :class:`SaturationSearch`, its state in fields.

:func:`scenarios.saturation.saturate` is ``SaturationSearch(...).run()``. The search keeps what
it learns in its own fields, so that each piece can be called and tested on its own and two
searches share nothing:

- :attr:`~SaturationSearch.points`, the points received so far by number of clients;
- :attr:`~SaturationSearch.evaluations`, each model's evaluation (value only) by system and
  resource, so that a model is built, checked and analysed once per search (the alone rate of
  a scenario and the point ``N = 1`` of that scenario alone are the same model);
- :attr:`~SaturationSearch.alone_rates`, each scenario's alone rate;
- :attr:`Bounds.kept_run`, the simulated run of the smallest ``N`` found
  saturated by a run: the only one the answer can need, decoded without simulating it
  again (a lifted run may be large, so no other is kept);
- :attr:`~SaturationSearch.current` and :attr:`~SaturationSearch.where`, what a stop names.

The walks over ``N`` (:func:`linear`, :func:`bisect`) are plain functions of an outcome
``found(n)``, shared with the DVE sweep (:mod:`dvecost.sweep`).

Examples
--------
A stand-in evaluator whose load of ``n`` clients is ``n/4``: the search asks 1, 2, 4, then 3.

>>> from scenarios import Scenario, System, Request
>>> from scenarios.curve import Evaluation
>>> u = Scenario("u", Request("r", 1))
>>> def fake(model, *, resource, witness):
...     return Evaluation(Fraction(len(model.processes), 4), 1)
>>> s = SaturationSearch(lambda n: System({u: n}), evaluate=fake, witness=False)
>>> s.capacity, s.points
(Fraction(1, 1), {})
>>> r = s.run()
>>> r.saturating_clients, sorted(s.points)
(4, [1, 2, 3, 4])
>>> s.point(2).exact
Fraction(1, 2)
"""

from __future__ import annotations

import dataclasses
import time as _time
from fractions import Fraction
from typing import Any, Callable

from dve.errors import ConfigurationError
from runtime.errors import RunStopped, StateSpaceError

from .bounds import alone_rate, bound_gap
from .dsl import Scenario, System
from .parallel import PointWalk
from .walks import bisect, linear, staircase
from .curve import (DEFAULT_MAX_CLIENTS, METHODS, STATUSES, Evaluation, Evaluator, Plan,
                    PointStarted, SaturationPoint, SaturationResult, Spec, mix_of,
                    no_server_warning, one_scenario, parse_capacity, resolve_spec,
                    server_capacity)

__all__ = ["SaturationSearch", "linear", "bisect", "staircase", "plateau", "small", "growth_guess",
           "EXACT_FIRST_CLASSES", "PLAN_SECONDS", "WALKED_RUNS", "TRACKED_RUNS", "TRACKED_TICKS",
           "WALK_FAMILIES", "CLOSING_RUNS",
           "WITNESS_ROWS", "WITNESS_TICKS", "WITNESS_PATIENCE", "SPREAD_ROWS", "GUIDE_MIXES",
           "GUIDE_TICKS", "PLATEAU_CHECK_MAX"]

#: The simulation's budget per point (:func:`scenarios.bounds.find_witness`): rows side by
#: side and ticks per row, when looking for a run that reaches the capacity, and when only
#: trying to meet an upper bound already below it (the point is decided either way).
WITNESS_ROWS, WITNESS_TICKS, WITNESS_PATIENCE = 14, 1000, 400
#: Rows spreading mixes of active clients (:func:`scenarios.bounds.spread_mixes`) on top,
#: on a server the count model does not describe; where it does, the mixes it looks at and
#: its ticks per row (:func:`scenarios.schedule.plan_spread`).
SPREAD_ROWS = 40
GUIDE_MIXES, GUIDE_TICKS = 400, 3000
#: Seconds the integer program of :func:`scenarios.periodic.plan_cycle` gets per point.
PLAN_SECONDS = 20.0
#: Whether a spread row's walk on the count model is cut short and followed on the model
#: first (:func:`scenarios.periodic.walked_run`).
WALKED_RUNS = True
#: Whether a cycle of full ticks with a prefix tracking it is planned on the count model and
#: followed on the model before anything else (:func:`scenarios.periodic.plan_tracked`).
TRACKED_RUNS = True
#: Whether :meth:`Bounds.tracked_run` tries a cycle planned per client
#: (:mod:`scenarios.walklaps`' lap walks, its ``LAP_SECONDS`` at most, then
#: :mod:`scenarios.walkfamily`'s local search, its ``WALK_SECONDS`` at most) where the
#: tracked plan's clients come home only after several periods.
WALK_FAMILIES = True
#: Whether :meth:`Bounds.tracked_run` then looks for another cycle of the count model whose
#: clients come home in few rounds (:func:`scenarios.closing.plan_closing`, its
#: ``CLOSING_SECONDS`` at most) where the plan it has still closes only up to a renaming.
CLOSING_RUNS = True
#: The longest run (ticks: the prefix, then the period times its renaming's order) that
#: :meth:`Bounds.tracked_run` follows on the model; a longer plan is left to the others.
TRACKED_TICKS = 3000
#: ``method='auto'`` analyses a point exactly before trying the bounds where the model has at
#: most this many classes of client phases (:func:`small`): exact analysis is then quicker
#: than the bounds' simulation.
EXACT_FIRST_CLASSES = 200_000
#: :func:`plateau` checks the systems up to this many clients: it builds every one from
#: ``max_clients`` down to the plateau, and apportioning ``N`` clients takes ``N`` steps
#: (500: a quarter of a second at most; 10,000 would take minutes).
PLATEAU_CHECK_MAX = 500


class SaturationSearch:
    """The search of :func:`scenarios.saturation.saturate`, whose parameters it takes.

    The constructor checks the arguments and resolves the spec, the family ``n -> System``
    (:attr:`family`), the capacity and the warnings; nothing is evaluated before
    :meth:`run`. A search runs once. The errors are those of
    :func:`~scenarios.saturation.saturate`: bad arguments and a spec that does not load are
    raised here, before any evaluation.
    """

    def __init__(self, spec: Spec, capacity: int | float | str | Fraction | None = None, *,
                 evaluate: Evaluator, max_clients: int = DEFAULT_MAX_CLIENTS,
                 scenario: str | None = None, search: str = "bisect", witness: bool = True,
                 progress: Callable[[object], None] | None = None, cutoffs: bool = False,
                 jobs: int = 1, method: str = "exact",
                 phases: Callable[[str, str], None] | None = None,
                 resource: str | None = None) -> None:
        if isinstance(max_clients, bool) or not isinstance(max_clients, int) \
                or max_clients < 1:
            raise ConfigurationError(f"max_clients must be a positive integer, not "
                                     f"{max_clients!r}")
        from .loader import MAX_CLIENTS
        if max_clients > MAX_CLIENTS:
            # Checked before any work: the search builds family(max_clients), whose
            # apportioning loops max_clients times (10**20 hung).
            raise ConfigurationError(f"max_clients must be at most {MAX_CLIENTS:,}, got "
                                     f"{max_clients:,}: no model that large could be explored")
        if search not in ("bisect", "linear"):
            raise ConfigurationError(f"unknown search '{search}': expected 'bisect' or "
                                     "'linear'")
        if method not in METHODS:
            raise ConfigurationError(f"unknown method '{method}': expected one of "
                                     + ", ".join(METHODS))
        if not callable(evaluate):
            raise ConfigurationError("saturate needs an evaluator: evaluate(model, *, "
                                     "resource, witness) -> Evaluation "
                                     "(dvecost.saturation.evaluator() makes one)")
        from . import templates

        self.name, family = resolve_spec(spec)
        if scenario is not None:
            family = one_scenario(family, scenario, max_clients)
        #: ``n -> System``: the system of ``n`` clients, judged on the resource asked for.
        self.family: Callable[[int], System] = judged(family, resource)
        self.first = self.family(1)
        if capacity is None:
            self.capacity, self.capacity_why = server_capacity(self.first)
        else:
            self.capacity, self.capacity_why = parse_capacity(capacity), "given"
        is_template = isinstance(spec, str) and spec in templates.TEMPLATES
        self.warnings: tuple[str, ...] = (
            () if self.first.server is not None or is_template
            else (no_server_warning(self.first),))
        self.max_clients, self.scenario, self.search = max_clients, scenario, search
        self.method, self.jobs, self.cutoffs, self.witness = method, jobs, cutoffs, witness
        self.evaluate_model = evaluate
        self.tell: Callable[[object], None] = progress or (lambda event: None)
        # A worker process would write over the parent's lines: phases only with one job.
        self.phases = phases if jobs == 1 else None
        #: The points received, by number of clients.
        self.points: dict[int, SaturationPoint] = {}
        #: Each model's evaluation, value only, by ``(system, resource)``.
        self.evaluations: dict[tuple[System, str], Evaluation] = {}
        #: Each scenario's alone rate (the exact load of one client of it), in the order met.
        self.alone_rates: dict[Scenario, Fraction] = {}
        #: The bounds' side of deciding a point (and the run they keep for the answer).
        self.bounds = Bounds(self.capacity, self.alone, self.phases)
        #: The load bound of the last point received, and what it rests on.
        self.load_bound: Fraction | None = None
        self.load_bound_why: str | None = None
        #: The ``N`` being decided, or what else is (an alone rate), for a stop to name.
        self.current: int | None = None
        self.where: str | None = None
        self.walker: PointWalk | None = None
        self.top: System | None = None

    # -- evaluations

    def evaluation(self, system: System, resource: str | None = None) -> Evaluation:
        """The value-only evaluation of ``system`` judged on ``resource`` (default its own),
        once per search."""
        key = (system, resource or system.resource)
        if key not in self.evaluations:
            self.evaluations[key] = self.evaluate_model(system.to_model(), resource=key[1],
                                                        witness=False)
        return self.evaluations[key]

    def alone(self, one: System) -> Fraction:
        """The exact load of a system of one client (its scenario's alone rate), once."""
        sc = one.scenarios[0]
        if sc not in self.alone_rates:
            ev = self.evaluation(one)
            if not ev.certified:
                raise ConfigurationError(f"the alone rate of scenario '{sc.name}' was not "
                                         "certified; use method='exact'")
            self.alone_rates[sc] = Fraction(ev.exact)
        return self.alone_rates[sc]

    def point(self, n: int) -> SaturationPoint:
        """Decide ``N = n`` by the search's method (in this process or, ``jobs > 1``, in a
        worker process); the point is not recorded (:meth:`received` does that)."""
        t0 = _time.perf_counter()
        system = self.family(n)
        method, sync = self.method, system.composition == "sync"
        point = None
        if method != "exact" and sync:
            # The cheapest decisive method first: the upper bound needs no state graph
            # (microseconds once the alone rates are known). Below the capacity by it, the
            # point is decided, shown as the bracket "at most U": neither an exact analysis
            # nor a simulation runs for it.
            below = self.bounds.below(system, n, t0)
            if below is not None:
                return below
        stop: StateSpaceError | None = None
        if method == "auto" and sync and small(system):
            # Exact analysis first where the model is small (cheaper than the bounds'
            # simulation); the memory guard and the evaluator's budget still apply.
            try:
                ev = self.evaluation(system)
            except StateSpaceError as exc:
                stop = exc     # (not tried again below: it would meet the same limit)
            else:
                return self._exact(n, system, ev, t0)
        if method != "exact" and sync:
            point = self.bounds.decide(system, n, t0)
            if point is not None and point.how != "open" or method == "bounds":
                return point
        if stop is None:
            try:
                ev = self.evaluation(system)
            except StateSpaceError as exc:
                if point is None:
                    raise
                stop = exc
            else:
                return self._exact(n, system, ev, t0)
        # The exact analysis met a limit of its own (auto's memory guard, the evaluator's
        # budget): the point stays open between its certified bounds, and the search goes on.
        return dataclasses.replace(point, seconds=_time.perf_counter() - t0,
                                   note=f"exact analysis stopped: {stop}; " + point.note)

    @staticmethod
    def _exact(n: int, system: System, ev: Evaluation, t0: float) -> SaturationPoint:
        return SaturationPoint(n, Fraction(ev.exact), int(ev.n_states),
                               _time.perf_counter() - t0, bool(ev.certified), mix_of(system))

    # -- what the walk hears

    def waiting(self, n: int) -> None:
        """The search waits for ``N = n``: tell it."""
        self.current = n
        self.where = None
        self.tell(PointStarted(n, mix_of(self.family(n))))

    def received(self, point: SaturationPoint) -> None:
        """Record a decided point (and the load bound of its system), and tell it."""
        self.points[point.clients] = point
        system = self.family(point.clients)
        self.load_bound, self.load_bound_why = system.load_bound(), system.load_bound_why()
        self.tell(point)

    # -- the result

    def result(self, answer: int | None = None, *, status: str = "ok",
               stopped: str | None = None, note: str | None = None,
               bound: Fraction | None = None, run: Any = None, run_seconds: float = 0.0,
               more: tuple[SaturationPoint, ...] = (), below_upto: int | None = None,
               upto: int | None = None,
               cost: tuple[Fraction | None, Any] = (None, None)) -> SaturationResult:
        """The :class:`~scenarios.saturation.SaturationResult` of the points so far (and
        ``more``, points evaluated ahead by a search that stopped)."""
        curve = tuple(sorted((*self.points.values(), *more), key=lambda p: p.clients))
        # A violation is certain where one point's lower bound exceeds a later one's upper.
        violations = tuple((a, b) for i, a in enumerate(curve) for b in curve[i + 1:]
                           if a.lower is not None and b.upper is not None
                           and b.upper < a.lower)
        first = self.first
        return SaturationResult(
            spec=self.name, capacity=self.capacity, saturating_clients=answer, curve=curve,
            monotone=not violations, violations=violations, max_clients=self.max_clients,
            scenario=self.scenario, resource=first.resource,
            load_bound=bound if bound is not None else self.load_bound,
            load_bound_why=(self.top.load_bound_why() if bound is not None
                            else self.load_bound_why),
            search=self.search, stopped=stopped, note=note, capacity_why=self.capacity_why,
            status=status, warnings=self.warnings, witness=run, witness_seconds=run_seconds,
            method=self.method, below_upto=below_upto,
            alone=tuple((sc.name, rho) for sc, rho in self.alone_rates.items()),
            searched_upto=upto if answer is None else None,
            cost_resource=first.cost_resource if first.occupancy else None,
            cost_load=cost[0], cost_witness=cost[1])

    # -- the search

    def run(self) -> SaturationResult:
        """Search: tell the :class:`~scenarios.saturation.Plan`, walk over ``N``, decide
        every ``N`` skipped below the answer, evaluate the answer's run. A state or memory
        limit ends it with the curve so far (``status='limit'``); a signal is passed on with
        the result so far as ``exc.partial`` (see :func:`~scenarios.saturation.saturate`)."""
        cap = self.capacity
        self.tell(Plan(self.name, cap, self.capacity_why, self.first.resource, self.warnings))
        self.top = top = self.family(self.max_clients)
        answer: int | None = None
        try:
            if (top.server is not None or top.composition == "async") \
                    and top.load_bound() < cap:
                # The bound does not grow with N here (a server's workers or admissions, or
                # one client's max cost): no analysis can reach the capacity, so none is run.
                return self.result(bound=top.load_bound(), note=(
                    f"the load can never reach {cap}: it is at most {top.load_bound()} "
                    f"({top.load_bound_why()})"))
            uses_alone = top.composition == "sync" and all(
                bound_gap(s) is None for s in (self.first, top))
            if self.method != "exact" and uses_alone:
                # The alone rates first, in this process: worker processes (jobs > 1) inherit
                # them, and the result lists them whichever process used them.
                for sc in top.scenarios:
                    self.where = f"the alone rate of '{sc.name}'"
                    alone_rate(top, sc, self.alone)
                self.where = None
            if top.server is None and top.composition == "async":
                answer = self.interleaved()
                reason = ("interleaved clients with no server: the load of N clients is that "
                          "of the worst client alone, so it changes only where a scenario "
                          "joins")
                if answer is None:
                    return self.result(bound=top.load_bound(), upto=self.max_clients,
                                       note=reason + ", and no N reaches the capacity")
                return self.result(answer, bound=top.load_bound(), note=reason,
                                   below_upto=answer - 1 or None)
            flat = plateau(self.family, self.max_clients) if self.cutoffs else None
            limit = self.max_clients if flat is None else flat[0]
            floor = self.floor if uses_alone and self.method != "exact" else None

            def walk(saturated: Callable[[int], bool], out: list) -> None:
                if self.search == "linear":
                    out.append(linear(saturated, 1, limit))
                else:
                    out.append(bisect(saturated, 1, limit, floor=floor))

            self.walker = PointWalk(walk, self.point, jobs=self.jobs,
                                    guess=growth_guess(cap), progress=self.received,
                                    waiting=self.waiting,
                                    outcome=lambda p: bool(p.reaches(cap)))
            answer = self.walker.run()[0]
            self.walker = None
            # Decide every N the bisection skipped below the answer (below the limit without
            # one), smallest first: the answer must not rest on the load growing with N.
            # (The upper bound is a theorem about the rendered models: used where the points
            # are decided by bounds anyway, or the evaluator analyses those models.)
            answer = self.decide_below(answer, limit, uses_alone and (
                self.method != "exact" or self.cutoffs))
            if answer is None and limit < self.max_clients:
                n0, cuts = flat
                return self.result(upto=limit, note=(
                    f"from N={n0} on every scenario has at least its cutoff ({cuts}): one "
                    f"more client always waits and changes nothing, so the load stays "
                    f"{load_text(self.points[n0])} for every N up to {self.max_clients} and "
                    f"none reaches {cap}"))
            t0 = _time.perf_counter()
            run, cost = self.answer_run(answer)
            return self.result(answer, run=run,
                               run_seconds=_time.perf_counter() - t0 if run else 0.0,
                               below_upto=self.below_upto(answer)
                               if self.method != "exact" else None, upto=limit, cost=cost)
        except StateSpaceError as exc:  # a state or memory limit: the curve so far is it
            if self.walker is not None and self.walker.current is not None:
                self.current = self.walker.current   # (a point analysed ahead may have raised)
            where = self.where or f"N={self.current}"
            return self.result(answer, status="limit", stopped=f"{where}: {exc}")
        except (RunStopped, KeyboardInterrupt) as exc:
            exc.partial = self.stopped_result(exc, answer)
            raise

    def stopped_result(self, exc: BaseException, answer: int | None) -> SaturationResult:
        """The partial result of a search that ``exc`` (a signal, a time limit) stopped."""
        walker = self.walker
        if walker is not None and walker.current is not None:
            self.current = walker.current   # the point the walk asked for last
        status = getattr(exc, "status", "interrupted")
        inner = getattr(exc, "partial", None)
        found = getattr(inner, "n_states", None)
        where = (self.where or f"N={self.current}" if self.current is not None
                 or self.where else "before N=1")
        reason = str(exc) or "interrupted"
        after = f" after {found:,} states" if isinstance(found, int) else ""
        return self.result(answer if answer is not None and answer in self.points else None,
                           status=status if status in STATUSES else "interrupted",
                           stopped=f"{where}: {reason}{after}",
                           more=() if walker is None else
                           tuple(walker.spare[n] for n in sorted(walker.spare)))

    def answer_run(self, answer: int | None) -> tuple[Any, tuple[Fraction | None, Any]]:
        """``(run, (cost load, its witness))`` of the answer's point (``witness=True``):
        the simulated run that decided it, or the evaluator's witness; beside an occupancy
        answer analysed exactly, the worst cost load and its own run."""
        cost: tuple[Fraction | None, Any] = (None, None)
        if answer is None or not self.witness:
            return None, cost
        system = self.family(answer)
        self.current = answer
        self.tell(PointStarted(answer, mix_of(system), witness=True))
        point = self.points[answer]
        if point.how == "witness":
            # The run the bounds found (simulated again where its point was decided in a
            # worker process: the simulation is deterministic): a WitnessRun, which dvecost
            # tells as steps of the model.
            run = self.bounds.witness_run(system, point.high)
            self.bounds.kept_run = None     # (no longer needed: a lifted run may be large)
        else:
            run = self.evaluate_model(system.to_model(), resource=system.resource,
                                      witness=True).witness
        if system.occupancy and point.how == "exact":
            # The worst cost load beside the occupancy: its own worst case and cycle.
            ev = self.evaluate_model(system.to_model(), resource=system.cost_resource,
                                     witness=True)
            cost = (Fraction(ev.exact) if ev.certified else None, ev.witness)
        return run, cost

    def floor(self, n: int) -> int:
        """The smallest ``m >= n`` (``max_clients + 1`` where none) whose upper bound
        (:func:`scenarios.bounds.upper_bound`, cheap: no state graph) reaches the capacity:
        every ``N`` from ``n`` to ``m - 1`` is below it for certain. :func:`bisect`'s
        ``floor``: the search asks the first ``N`` the bound lets saturate before bisecting
        (the points skipped are decided by the bound afterwards, :meth:`decide_below`)."""
        from .bounds import upper_bound

        m = n
        while m <= self.max_clients:
            system = self.family(m)
            if system.composition != "sync" or \
                    upper_bound(system, self.alone).value >= self.capacity:
                return m
            m += 1
        return m

    def decide_below(self, answer: int | None, limit: int, uses_alone: bool) -> int | None:
        """The smallest ``N`` that saturates, once every ``N`` below ``answer`` that the
        search skipped is decided: by the upper bound where it is below the capacity (cheap:
        no state graph; only with ``uses_alone``), else by :meth:`point` (the search's
        method). Points decided are recorded; the first that reaches the capacity is the
        answer.

        Without an answer, the ``N`` up to ``limit`` that the search skipped are decided by
        the upper bound only: analysing each would turn the search into a linear one, so
        those it leaves are reported as not decided
        (:attr:`~scenarios.saturation.SaturationResult.undecided_below`) and the result is
        not certified (``search='linear'`` decides every ``N``)."""
        from .bounds import upper_bound

        cap = self.capacity
        top = limit if answer is None else answer - 1
        for n in range(1, top + 1):
            if n in self.points:
                if self.points[n].reaches(cap):
                    return n
                continue
            t0 = _time.perf_counter()
            system = self.family(n)
            if system.composition == "sync" and uses_alone:
                high = upper_bound(system, self.alone).value
                if high < cap:
                    self.received(SaturationPoint(n, None, None, _time.perf_counter() - t0,
                                                  True, mix_of(system), "bound", None, high))
                    continue
            if answer is None:
                continue
            self.waiting(n)
            point = self.point(n)
            self.received(point)
            if point.reaches(cap):
                return n
        return answer

    def interleaved(self) -> int | None:
        """The answer for interleaved clients with no server (``system async``), every ``N``
        up to ``max_clients`` decided; a point is recorded where the scenarios present change
        (``N = 1`` and where one joins), the load being the same in between.

        Such clients share nothing: a cycle of their product is made of cycles of single
        clients, its mean a weighted average of theirs, and the worst cycle is the worst
        client cycling alone (the others idle, which interleaving allows). So the load of
        ``family(n)`` is the largest alone rate among the scenarios it holds: exact for every
        ``n`` from one tiny analysis per scenario, including a scenario that first appears at
        a large ``n``."""
        seen = None
        for n in range(1, self.max_clients + 1):
            t0 = _time.perf_counter()
            system = self.family(n)
            if set(system.scenarios) == seen:
                continue
            seen = set(system.scenarios)
            # (alone_rate: 0 for a scenario that charges nothing, whose model lacks the
            # resource)
            load = max(alone_rate(system, sc, self.alone) for sc in system.scenarios)
            self.received(SaturationPoint(n, load, None, _time.perf_counter() - t0, True,
                                          mix_of(system)))
            if load >= self.capacity:
                return n
        return None

    def below_upto(self, answer: int | None) -> int | None:
        """With points left open below ``answer``: the largest ``N < answer`` whose upper
        bound (:func:`scenarios.bounds.upper_bound`, cheap) is below the capacity, found by
        walking up from the largest point known below; ``None`` when nothing is open below
        the answer."""
        from .bounds import upper_bound

        cap, points = self.capacity, self.points
        if answer is None or not any(p.reaches(cap) is None for n, p in points.items()
                                     if n < answer):
            return None
        known = [n for n, p in points.items() if n < answer and p.reaches(cap) is False]
        n = max(known, default=0)
        while n + 1 < answer and self.family(n + 1).composition == "sync" and \
                upper_bound(self.family(n + 1), self.alone).value < cap:
            n += 1
        return n or None


class Bounds:
    """How the bounds of :mod:`scenarios.bounds` decide a point for a search: the upper bound
    from the alone rates, and the simulated runs that may reach the capacity.

    Parameters
    ----------
    capacity : Fraction
        The load that counts as saturated.
    alone : callable
        ``alone(system1) -> Fraction``: the alone rate of a system of one client (the
        search's :meth:`SaturationSearch.alone`).
    phases : callable, optional
        ``phases(phase, message)`` while a point is decided (the planner, the count model's
        and the simulation's ticks).
    """

    def __init__(self, capacity: Fraction, alone: Callable[[System], Fraction],
                 phases: Callable[[str, str], None] | None = None) -> None:
        self.capacity, self.alone, self.phases = capacity, alone, phases
        #: ``(n, key, run)``: the simulated run of the smallest ``N`` decided by a run.
        self.kept_run: tuple[int, tuple, Any] | None = None

    def below(self, system: System, n: int, t0: float, ub=None) -> SaturationPoint | None:
        """The point ``n`` decided below the capacity by the upper bound alone (``ub``, else
        :func:`scenarios.bounds.upper_bound`: no state graph, no simulation), shown as the
        bracket "at most U"; ``None`` where the bound reaches the capacity."""
        from .bounds import upper_bound

        ub = upper_bound(system, self.alone) if ub is None else ub
        if ub.value >= self.capacity:
            return None
        return SaturationPoint(n, None, None, _time.perf_counter() - t0, True, mix_of(system),
                               "bound", None, ub.value)

    def decide(self, system: System, n: int, t0: float) -> SaturationPoint:
        """A point decided by :mod:`scenarios.bounds`, or left open by them (``how='open'``,
        its note saying what each end rests on: ``method='auto'`` then analyses it
        exactly)."""
        from .bounds import upper_bound

        cap = self.capacity
        ub = upper_bound(system, self.alone)
        below = self.below(system, n, t0, ub)
        if below is not None:
            return below
        mix = mix_of(system)
        run = self.witness_run(system, ub.value)
        low = None if run is None else run.mean
        if low is not None and low >= cap:
            if self.kept_run is None or n < self.kept_run[0]:
                self.kept_run = (n, (system, ub.value), run)
            return SaturationPoint(n, low if low == ub.value else None, None,
                                   _time.perf_counter() - t0, True, mix, "witness", low,
                                   ub.value)
        return SaturationPoint(n, None, None, _time.perf_counter() - t0, True, mix, "open",
                               low, ub.value, note=(
                                   "low: " + ("no closed walk simulated" if run is None else
                                              f"a simulated run ({run.policy})")
                                   + f"; high: {ub.why}"))

    def witness_run(self, system: System, upper: Fraction | None):
        """The simulation of a point that may reach the capacity (deterministic: the answer's
        run is this one again; :attr:`kept_run` holds it when its point was decided in this
        process).

        First the tracked plan (:meth:`tracked_run`) where the count model describes the
        system; then, with a server, spread rows (:func:`scenarios.bounds.find_witness`) join
        the policies' rows: on a server that admits several requests per tick, those that the
        count model
        of :func:`scenarios.schedule.plan_spread` shows keeping the server full, simulated on
        the model for as long as the count model needed (none where it found none); on other
        servers the evenly spread mixes of least surplus, :data:`SPREAD_ROWS` of them."""
        from .bounds import alone_rates, find_witness, spread_aims, spread_mixes
        from .schedule import plan_spread

        if self.kept_run is not None and self.kept_run[1] == (system, upper):
            return self.kept_run[2]
        if TRACKED_RUNS:
            run = self.tracked_run(system, upper)
            if run is not None:
                return run
        from .periodic import walked_run

        cap, phases = self.capacity, self.phases
        spread, ticks, patience = [], WITNESS_TICKS, WITNESS_PATIENCE
        plan = mixes = None
        counted = system.server is not None and bound_gap(system) is None
        if counted:
            rates = {name: rho for name, _, rho in alone_rates(system, self.alone)}
            mixes = spread_mixes(system, cap, rates, most=GUIDE_MIXES)
            plan = plan_spread(system, cap, mixes, ticks=GUIDE_TICKS, progress=None if phases
                               is None else lambda t, most, done: phases(
                                   "count model", f"tick {t:,} of at most {most:,}: {done} "
                                   "spread rows keep the server full"))
        # The planner (scenarios.periodic): a cycle of full ticks and a prefix tracking it,
        # else the count model's first closing spread row cut short, else the integer
        # program; each followed on the model, every step checked.
        run = None
        if WALKED_RUNS and plan is not None and plan.aims:
            if phases is not None:
                phases("planner", f"a spread row's walk of {plan.ticks[0]:,} ticks cut short, "
                       "followed on the model")
            run = walked_run(system, cap, upper, plan)
        if run is None:
            run = self.planned_run(system, upper)
        if run is not None:
            return run
        if counted:
            if plan is None:
                spread = spread_aims(system, mixes[:SPREAD_ROWS])
            elif plan.aims:
                # (the model's walk closes at the count model's tick or a few after: its
                # state at a tick's first step also holds who was admitted)
                spread, ticks, patience = list(plan.aims), max(plan.ticks) + 50, None
        return find_witness(system, target=cap, upper=upper, rows=WITNESS_ROWS,
                            max_ticks=ticks, patience=patience, spread=spread,
                            progress=None if phases is None
                            else lambda t, most, best: phases(
                                "simulation", f"tick {t:,} of at most {most:,}: " + (
                                    "no closed walk yet" if best is None
                                    else f"best cycle so far {best} ({float(best):.4f})")))

    def tracked_run(self, system: System, upper: Fraction | None):
        """A short run of the model that keeps the server at the capacity: a cycle of full
        ticks of the count model and a prefix that tracks it
        (:func:`scenarios.periodic.plan_tracked`), followed on the model itself, every step
        checked (:func:`scenarios.bounds.find_witness`'s ``plans``, the shortest closed walk
        kept); ``None`` where the count model does not describe the system, no plan was found
        in :data:`PLAN_SECONDS`, or the run does not reach the capacity."""
        from .bounds import find_witness
        from .periodic import admissions, plan_tracked, renaming_order
        from .schedule import describes

        if system.server is None or not describes(system):
            return None
        if self.phases is not None:
            self.phases("planner", "a cycle of full ticks on the count model and a prefix "
                        f"tracking it, {PLAN_SECONDS:.0f} s at most")
        plan = plan_tracked(system, time_limit=PLAN_SECONDS)
        if plan is None:
            return None
        chosen = admissions(system, plan)
        order = renaming_order(system, plan, chosen)
        if WALK_FAMILIES and (order > 1 or plan.period > _floor(system, plan.period)):
            # The clients come home only after `order` periods, or a shorter period may
            # exist: a cycle planned per client (one closed walk each) closes after one.
            got = self.family_run(system, plan.start + plan.period * order)
            if got is not None:
                plan, chosen, order = got[0], got[1], 1
        if CLOSING_RUNS and order > 1:
            # Another cycle of counts may bring its clients home in fewer rounds.
            got = self.closing_run(system, plan.start + plan.period * order)
            if got is not None:
                plan, chosen, order = got[0], got[1], 1
        if plan.start + plan.period * order > TRACKED_TICKS:
            # (its run would be longer than the other planners' tend to be)
            return None
        exact = order == 1
        if self.phases is not None:
            self.phases("planner", f"a prefix of {plan.start:,} ticks and a cycle of "
                        f"{plan.period:,}, followed on the model")
        run = find_witness(system, target=self.capacity, upper=upper, rows=1,
                           max_ticks=plan.horizon + 4, plans=[chosen], shortest=True,
                           lifting=not exact)
        return run if run is not None and run.mean >= self.capacity else None

    def family_run(self, system: System, ticks: int):
        """``(plan, chosen)``: a cycle of full ticks planned per client, as lap walks folded
        onto a shorter period (:func:`scenarios.walklaps.plan_laps`,
        :data:`scenarios.walklaps.LAP_SECONDS` at most), else by local search
        (:func:`scenarios.walkfamily.plan_walks`, :data:`scenarios.walkfamily.WALK_SECONDS`
        at most), and a prefix reaching it (:func:`scenarios.walkfamily.family_plan`), whose
        run on the model closes after one period, the first whose run is shorter than
        ``ticks``; ``None`` where none was found in time or the counting argument's shortest
        period leaves no shorter run."""
        from . import walkfamily, walklaps
        from .walkfamily import family_plan, periods, plan_walks
        from .walklaps import plan_laps

        if not periods(system, ticks):
            return None
        laps, seconds = walklaps.LAP_SECONDS, walkfamily.WALK_SECONDS
        if self.phases is not None:
            self.phases("planner", "a cycle of one closed walk per client, as laps "
                        f"{laps:.0f} s at most, then by local search {seconds:.0f} s at most")
        for plan in (lambda: plan_laps(system, time_limit=laps, most=ticks),
                     lambda: plan_walks(system, time_limit=seconds, most=ticks)):
            family = plan()
            got = None if family is None else family_plan(system, family)
            if got is not None and got[0].horizon < ticks:
                return got
        return None

    def closing_run(self, system: System, ticks: int):
        """``(plan, chosen)``: a cycle of full ticks of the count model gone round as many
        times as it takes to bring every client home, and a prefix tracking it
        (:func:`scenarios.closing.plan_closing`, :data:`scenarios.closing.CLOSING_SECONDS`
        at most, a cycle of :data:`scenarios.closing.CLOSING_TICKS` ticks at most), whose
        run on the model closes after one period; ``None`` where none was found in time or
        its run is not shorter than ``ticks``."""
        from . import closing
        from .periodic import admissions

        seconds = closing.CLOSING_SECONDS
        if self.phases is not None:
            self.phases("planner", "a cycle of counts whose clients come home in few rounds, "
                        f"{seconds:.0f} s at most")
        got = closing.plan_closing(system, time_limit=seconds,
                                   most=min(closing.CLOSING_TICKS, ticks - 1))
        if got is None or got[0].horizon >= ticks:
            return None
        plan, quota = got
        return plan, admissions(system, plan, quota=quota)

    def planned_run(self, system: System, upper: Fraction | None):
        """A short run of the model that keeps the server at the capacity, planned on the
        count model (:func:`scenarios.periodic.plan_cycle`) and followed on the model itself,
        every step checked (:func:`scenarios.bounds.find_witness`'s ``plans``); ``None`` where
        the count model does not describe the system, no plan was found in
        :data:`PLAN_SECONDS`, or the run does not reach the capacity."""
        from .bounds import find_witness
        from .periodic import admissions, plan_cycle
        from .schedule import describes

        if system.server is None or not describes(system):
            return None
        if self.phases is not None:
            self.phases("planner", f"a cycle of full ticks on the count model, "
                        f"{PLAN_SECONDS:.0f} s at most")
        plan = plan_cycle(system, time_limit=PLAN_SECONDS)
        if plan is None:
            return None
        run = find_witness(system, target=self.capacity, upper=upper, rows=1,
                           max_ticks=plan.horizon + 4, plans=[admissions(system, plan)])
        return run if run is not None and run.mean >= self.capacity else None


# ---------------------------------------------------------------------------- helpers

def _floor(system: System, most: int) -> int:
    """The shortest period of a saturating cycle of ``system``'s model that the counting
    argument allows (:func:`scenarios.walkfamily.periods`), or ``most`` where none is
    shorter."""
    from .walkfamily import periods

    got = periods(system, most)
    return got[0][0] if got else most


def judged(family: Callable[[int], System], resource: str | None) -> Callable[[int], System]:
    """``family`` with every system judged on ``resource`` (``None``: each system's default,
    occupancy with a server)."""
    if resource is None:
        return family
    return lambda n: family(n).with_resource(resource)


def small(system: System) -> bool:
    """Whether ``system``'s model is small enough to analyse exactly first: the multisets of
    its clients' phases (per scenario, ``k`` clients over its round's ticks,
    :func:`scenarios.bounds.round_ticks`, plus one for waiting), multiplied, are at most
    :data:`EXACT_FIRST_CLASSES`. An estimate of the symmetry-reduced classes, only steering
    which method runs first.

    >>> from scenarios.templates import editor
    >>> small(editor(5)), small(editor(6))
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


def load_text(p: SaturationPoint) -> str:
    """``'84/11'``, or the bracket ``'at most 8'`` / ``'7..8'`` of a point decided by bounds.

    >>> load_text(SaturationPoint(3, None, None, 0.0, how="bound", high=Fraction(8)))
    'at most 8'
    """
    if p.exact is not None:
        return str(p.exact)
    if p.lower is None:
        return f"at most {p.upper}"
    return f"{p.lower}..{p.upper}"


def growth_guess(cap: Fraction) -> Callable[[int, dict], float]:
    """``guess(n, known)`` for :class:`~scenarios.parallel.PointWalk`: the chance that ``n``
    clients saturate, from the points known (a load never falls when a client is added, and
    grows about linearly until clients wait for each other). It only steers which points
    are analysed ahead, never an answer.

    >>> g = growth_guess(Fraction(1))
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


def plateau(family: Callable[[int], System], max_clients: int) -> tuple[int, str] | None:
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
