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

from scenarios.dsl import System
from scenarios.saturation import (DEFAULT_MAX_CLIENTS, Evaluation, Evaluator,
                                  SaturationResult, Spec)
from scenarios.saturation import saturate as _search

__all__ = ["evaluator", "system_load", "saturate", "run_analysis", "memory_guard",
           "MEMORY_GUARD_FRACTION"]


def evaluator(*, backend: str = "auto", max_states: int | None = None,
              max_memory: int | None = None,
              phases: Callable[[str, str], None] | None = None) -> Evaluator:
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
        a = analyze(model, cost=resource, backend=backend, max_states=max_states,
                    max_memory=max_memory, witness=witness, progress=report)
        # The model's state space: the full product's size, also when the clients were
        # explored one orbit at a time (symmetry reduction; exact, from the orbits' sizes).
        n_states = (a.symmetry or {}).get("full_states") or a.n_states
        return Evaluation(Fraction(a.value), int(n_states), bool(a.certified),
                          a if witness else None)

    return evaluate


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
             resource: str | None = None) -> SaturationResult:
    """:func:`scenarios.saturate` with :func:`evaluator` (``backend``, ``max_states``,
    ``max_memory``, ``phases``) as the evaluator and the scenarios' cutoffs
    (``cutoffs=True``: no ``N`` past the one from which the load cannot change); the other
    parameters are that function's, ``method`` included, whose default here is the
    command's, ``'auto'`` (bounds first, exact analysis where they do not decide; ``'exact'``
    analyses every point). ``max_memory`` defaults to :func:`memory_guard` (see
    :func:`evaluator`): outside ``'exact'`` a point whose exact analysis passes it is left open
    between its bounds (its ``note`` says so) and the search goes on; with ``'exact'`` it stops
    the search (``status='limit'``). With ``jobs > 1`` the points are analysed
    in worker processes, and ``phases`` is not called (a worker would write over the
    parent's lines). The answer's run is an :class:`~dvecost.Analysis` whichever way its
    point was decided (a simulated run: :func:`run_analysis`)."""
    from scenarios.bounds import WitnessRun

    result = _search(spec, capacity,
                     evaluate=evaluator(backend=backend, max_states=max_states,
                                        max_memory=max_memory,
                                        phases=phases if jobs == 1 else None),
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
