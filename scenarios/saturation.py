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
:class:`~runtime.errors.StateSpaceError` (a state or memory limit) ends the search there: the result
keeps the curve so far with ``status='limit'``. A :class:`~runtime.errors.RunStopped` (a signal,
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

from fractions import Fraction
from typing import Callable

from .curve import (DEFAULT_MAX_CLIENTS, HOWS, METHODS, STATUSES, Evaluation, Evaluator, Mix,
                    Plan, PointStarted, SaturationPoint, SaturationResult, Spec, mix_of,
                    mix_text, no_server_warning, one_scenario, parse_capacity, resolve_spec,
                    server_capacity)
from .search import SaturationSearch

__all__ = ["saturate", "SaturationResult", "SaturationPoint", "Evaluation", "Evaluator",
           "METHODS", "HOWS",
           "Plan", "PointStarted", "Mix", "mix_of", "mix_text", "resolve_spec",
           "one_scenario", "parse_capacity", "server_capacity", "Spec", "DEFAULT_MAX_CLIENTS",
           "STATUSES", "no_server_warning"]


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
    runtime.errors.RunStopped, KeyboardInterrupt
        Passed on from wherever they arrive, with the result so far as ``exc.partial``.
    Exception
        Whatever ``evaluate`` raises other than a :class:`~runtime.errors.StateSpaceError`.

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
    return SaturationSearch(spec, capacity, evaluate=evaluate, max_clients=max_clients,
                            scenario=scenario, search=search, witness=witness,
                            progress=progress, cutoffs=cutoffs, jobs=jobs, method=method,
                            phases=phases, resource=resource).run()

