"""The saturation search with dvecost's own pipeline as its evaluator.

:func:`scenarios.saturate` grows a system of clients and needs someone to compute the load of
each model it builds; it takes that as an injected ``evaluate(model, *, resource, witness)``.
:func:`evaluator` makes one out of :func:`dvecost.analyze` (value only for the points of the
search, the critical cycle decoded for the answer's point), and :func:`saturate` is the search
with it, which is what ``dvecost saturate`` runs.

>>> r = saturate("paper-server", backend="cpu", method="exact")
>>> r.saturating_clients, r.capacity_why, [str(p.exact) for p in r.curve]
(3, '1 worker, all busy on every tick', ['1/3', '2/3', '1', '1'])
>>> sum(step.cost for step in r.witness.cycle) / len(r.witness.cycle)
1.0
"""

from __future__ import annotations

import dataclasses
import time as _time
from fractions import Fraction
from typing import Callable

from dve.errors import ConfigurationError
from runtime.errors import ExplorationLimit
from scenarios.dsl import System
from scenarios.saturation import (DEFAULT_MAX_CLIENTS, Evaluation, Evaluator,
                                  SaturationResult, Spec)
from scenarios.saturation import saturate as _search

__all__ = ["evaluator", "system_load", "saturate", "run_analysis", "memory_guard",
           "MEMORY_GUARD_FRACTION", "EXACT_BUDGET_SECONDS", "ExactBudgetExceeded",
           "budget_for", "budgeted"]

#: The CPU seconds (this process's) that the exact analysis of one point may take inside
#: ``method='auto'`` (and ``'bounds'``) when no budget is given: past them the point is left
#: open between its certified bounds, as past the memory guard. Chosen on the 2-core machine
#: so that ``dvecost saturate dvecost/examples/converters.py`` (two points that exact analysis
#: cannot finish in minutes, 17 to 20 s of bounds each) ends within a minute, while every
#: point that ``dvecost bench saturate`` analyses exactly takes under a second.
EXACT_BUDGET_SECONDS = 5.0


class ExactBudgetExceeded(ExplorationLimit):
    """The exact analysis of one point of a saturation search ran past its time budget
    (``seconds`` of CPU time) with ``n_explored`` states found: a limit of that point only,
    which the search treats as it treats the memory guard (the point stays open between its
    bounds and the search goes on), not a stop of the whole search (``--timeout``).

    >>> e = ExactBudgetExceeded(6.0, 123456)
    >>> str(e)
    'exact-analysis budget of 6 s spent: 123,456 states found'
    >>> isinstance(e, ExplorationLimit), e.seconds
    (True, 6.0)
    >>> str(ExactBudgetExceeded(0.5, 0, "howard"))
    'exact-analysis budget of 0.5 s spent once the state graph was explored, before the ...'
    """

    def __init__(self, seconds: float, n_explored: int, phase: str = "explore") -> None:
        # (``phase``: where the clock was read past the budget; exploration counts its states
        # at its reports only, so a small graph explored at once has no count before the
        # engine)
        where = {"explore": f": {n_explored:,} states found",
                 "parse": " loading the model, before exploration"}.get(
                     phase, " once the state graph was explored, before the cycle engine")
        super().__init__(f"exact-analysis budget of {seconds:g} s spent{where}", n_explored)
        self.seconds = seconds


def budget_for(method: str, budget: float | None = None) -> float | None:
    """The budget of each point's exact analysis for a search by ``method``: ``budget`` as
    given (0: none), :data:`EXACT_BUDGET_SECONDS` where none is given, and none at all with
    ``method='exact'``, which analyses every point to its end.

    >>> budget_for("auto"), budget_for("bounds", 30), budget_for("auto", 0)
    (5.0, 30.0, None)
    >>> budget_for("exact") is None
    True
    >>> budget_for("exact", 5)
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: an exact-analysis budget applies to the methods auto and ...
    """
    if budget is not None and (isinstance(budget, bool) or not budget >= 0):
        raise ConfigurationError(f"bad exact-analysis budget {budget!r}: seconds, at least 0 "
                                 "(0: no budget)")
    if method == "exact":
        if budget:
            raise ConfigurationError("an exact-analysis budget applies to the methods auto "
                                     "and bounds: method exact analyses every point to its "
                                     "end")
        return None
    if budget is None:
        return EXACT_BUDGET_SECONDS
    return float(budget) if budget > 0 else None


def evaluator(*, backend: str = "auto", max_states: int | None = None,
              max_memory: int | None = None,
              phases: Callable[[str, str], None] | None = None,
              budget: float | None = None) -> Evaluator:
    """``evaluate(model, *, resource, witness) -> Evaluation`` built on :func:`dvecost.analyze`.

    Parameters
    ----------
    backend : {'auto', 'cpu', 'gpu'}
        Where the cycle engine runs.
    max_states, max_memory : int, optional
        Per-model limits on the state graph (states; bytes; ``max_memory`` defaults to
        :func:`memory_guard`, a quarter of the machine's memory); a model beyond them raises
        :class:`~runtime.errors.StateLimitExceeded` / :class:`~runtime.errors.MemoryLimitExceeded`,
        which ends the search with ``status='limit'``; so does a model the explorer refuses
        as too large for its encodings (more than
        :data:`statespace.next_state.MAX_SYNC_STEPS` distinct ``system sync`` steps, raised as
        :class:`~runtime.errors.StateSpaceError`).
    phases : callable, optional
        ``phases(phase, message)`` hears what each analysis is doing as it goes (phases of
        :data:`dvecost.analysis.PHASES`; during exploration, the states found so far).
    budget : float, optional
        Wall-clock seconds that each value-only evaluation (``witness=False``: the points of
        a search, the alone rates) may take; past them it raises
        :class:`ExactBudgetExceeded`. Checked at each progress report of exploration (every
        fifth of a second or so, at a chunk's end) and before the cycle engine starts, so an
        evaluation overruns it by at most a chunk, or by the engine's run on a graph explored
        within it. An evaluation with ``witness=True`` (the answer's run, of a point already
        decided) has none. ``None``: no budget.

    Returns
    -------
    callable
        With ``witness=True`` the :class:`~dvecost.Analysis` (its critical cycle decoded) is
        the evaluation's ``witness``; with ``witness=False`` nothing is decoded.

    Examples
    --------
    >>> from scenarios.templates import paper_server
    >>> ev = evaluator(backend="cpu")(paper_server(2).to_model(), resource="busy",
    ...                               witness=False)
    >>> ev.exact, ev.n_states, ev.witness
    (Fraction(2, 3), 200, None)
    """
    from .analysis import analyze

    report = None if phases is None else (lambda phase, done, total, message:
                                          phases(phase, message))
    if max_memory is None:
        # Nothing the capacity questions do by default may take the machine: every analysis
        # runs under the guard unless the caller gives its own limit.
        max_memory = memory_guard()

    def evaluate(model, *, resource: str, witness: bool = False) -> Evaluation:
        # A model built in Python gets the static checks a parsed one gets, once: analyze
        # passes it through dve.load_model, and one that fails them (a bug of the generator)
        # raises ModelErrors positioned in its '<scenario NAME>' source. Their warnings are
        # not the user's to act on: dropped.
        hear = report if budget is None or witness else budgeted(budget, report)
        a = analyze(model, cost=resource, backend=backend, max_states=max_states,
                    max_memory=max_memory, witness=witness, progress=hear)
        # The model's state space: the full product's size, also when the clients were
        # explored one orbit at a time (symmetry reduction; exact, from the orbits' sizes).
        n_states = (a.symmetry or {}).get("full_states") or a.n_states
        return Evaluation(Fraction(a.value), int(n_states), bool(a.certified),
                          a if witness else None)

    return evaluate


def budgeted(seconds: float, report: Callable[[str, object, object, str], None] | None,
             clock: Callable[[], float] = _time.process_time
             ) -> Callable[[str, object, object, str], None]:
    """An :func:`dvecost.analyze` progress callback that passes each call on to ``report``
    and raises :class:`ExactBudgetExceeded` once ``seconds`` of ``clock`` (the process's CPU time: the
    same work on a loaded machine as on an idle one) have
    passed since it was made; during exploration its ``done`` is the states found so far
    (what the stop names).

    >>> hear = budgeted(0.0, None)
    >>> hear("explore", 1000, None, "1,000 states, 2,000 edges")
    Traceback (most recent call last):
    ...
    dvecost.saturation.ExactBudgetExceeded: exact-analysis budget of 0 s spent: 1,000 states found
    """
    t0 = clock()
    found = [0]

    def hear(phase: str, done, total, message: str) -> None:
        if phase == "explore" and done is not None:
            found[0] = int(done)
        # Read at every report: exploration's (a chunk's end) and the engine's start, where a
        # graph explored past the budget is not handed to an engine that reports nothing.
        if clock() - t0 > seconds:
            raise ExactBudgetExceeded(seconds, found[0], phase)
        if report is not None:
            report(phase, done, total, message)

    return hear


def system_load(system: System, *, backend: str = "auto",
                max_states: int | None = None) -> Evaluation:
    """The load of one system: the maximal cycle mean of its resource, value only.

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> one = Scenario("one", [Think(2), Request("r", service=4)])
    >>> system_load(System({one: 1}, server=Server()), backend="cpu")
    Evaluation(exact=Fraction(1, 2), n_states=8, certified=True, witness=None)
    """
    return evaluator(backend=backend, max_states=max_states)(
        system.to_model(), resource=system.resource, witness=False)


def saturate(spec: Spec, capacity: int | float | str | Fraction | None = None, *,
             backend: str = "auto", max_states: int | None = None,
             max_memory: int | None = None, max_clients: int = DEFAULT_MAX_CLIENTS,
             scenario: str | None = None, search: str = "bisect", witness: bool = True,
             progress: Callable[[object], None] | None = None,
             phases: Callable[[str, str], None] | None = None,
             jobs: int = 1, method: str = "auto",
             resource: str | None = None,
             exact_budget: float | None = None) -> SaturationResult:
    """:func:`scenarios.saturate` with :func:`evaluator` (``backend``, ``max_states``,
    ``max_memory``, ``phases``) as the evaluator and the scenarios' cutoffs
    (``cutoffs=True``: no ``N`` past the one from which the load cannot change); the other
    parameters are that function's, ``method`` included, whose default here is the
    command's, ``'auto'`` (bounds first, exact analysis where they do not decide; ``'exact'``
    analyses every point). ``max_memory`` defaults to :func:`memory_guard` (see
    :func:`evaluator`): outside ``'exact'`` a point whose exact analysis passes it is left open
    between its bounds (its ``note`` says so) and the search goes on; with ``'exact'`` it stops
    the search (``status='limit'``). Outside ``'exact'`` each point's exact analysis also
    has a budget of ``exact_budget`` seconds of CPU time (:func:`budget_for`: by default
    :data:`EXACT_BUDGET_SECONDS`; 0 for none): a point that exact analysis cannot decide
    within it is left open between its bounds, its ``note`` saying so
    (:class:`ExactBudgetExceeded`), and the search goes on; ``'exact'`` has none (a budget
    given with it is refused). With ``jobs > 1`` the points are analysed
    in worker processes, and ``phases`` is not called (a worker would write over the
    parent's lines). The answer's run is an :class:`~dvecost.Analysis` whichever way its
    point was decided (a simulated run: :func:`run_analysis`)."""
    from scenarios.bounds import WitnessRun

    budget = budget_for(method, exact_budget)
    result = _search(spec, capacity,
                     evaluate=evaluator(backend=backend, max_states=max_states,
                                        max_memory=max_memory,
                                        phases=phases if jobs == 1 else None,
                                        budget=budget),
                     max_clients=max_clients, scenario=scenario, search=search,
                     witness=witness, progress=progress, cutoffs=True, jobs=jobs,
                     method=method, phases=phases if jobs == 1 else None,
                     resource=resource)
    if isinstance(result.witness, WitnessRun):
        t0 = _time.perf_counter()
        a = run_analysis(result.witness)
        result = dataclasses.replace(result, witness=a, witness_seconds=(
            result.witness_seconds + _time.perf_counter() - t0))
    return result


#: The share of the machine's memory that exact analysis may take inside ``method='auto'``
#: (and ``'bounds'``) when no ``max_memory`` is given: past it, the point is left open between
#: its certified bounds instead of taking the machine.
MEMORY_GUARD_FRACTION = 0.25


def memory_guard() -> int | None:
    """The default memory limit of exact analysis inside ``method='auto'``: a quarter
    (:data:`MEMORY_GUARD_FRACTION`) of the machine's memory; ``None`` where the machine does
    not say how much it has.

    >>> g = memory_guard()
    >>> g is None or g > 2**20
    True
    """
    import os

    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
    return int(phys * MEMORY_GUARD_FRACTION) if phys > 0 else None


def run_analysis(run) -> "Analysis":
    """A simulated run (:class:`scenarios.bounds.WitnessRun`) as an :class:`~dvecost.Analysis`:
    its cycle and the prefix reaching it told as steps of the model, exactly as
    :func:`dvecost.analyze` tells a critical cycle, so the same report and replay check
    apply. ``value`` is the cycle's mean; ``n_states`` and ``n_transitions`` count the run's
    states and steps (no state graph was built); ``certified`` is true, the caller having
    shown that no cycle does better (the mean meets an upper bound)."""
    from dve.summary import summarize
    from statespace.witness import Witness

    from .result import Analysis

    g = run.graph
    cm = g.model
    w = Witness(g, run.resource)
    cycle = w.cycle(run.cycle_edges)
    prefix = w.trace_to(cycle[0].source) if cycle else ()
    summary = summarize(cm.syntax)
    return Analysis(
        model=cm.name or "<scenario>", system=cm.system,
        processes=tuple(p.name for p in cm.processes), n_variables=summary.n_variables,
        n_channels=summary.n_channels, kind="mean", mode="max", cost=run.resource,
        resources=tuple(cm.resources), value=run.mean, certified=True,
        n_states=g.n_states, n_transitions=g.n_edges, n_deadlocks=0,
        error_state_reached=False, initial=w.state(0), cycle=cycle, prefix=prefix,
        backend="cpu", iterations=0, seconds={"simulate": run.seconds}, witness=True,
        graph=g, decode=w.state, symmetry=None)
