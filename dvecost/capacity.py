"""Capacity planning with dvecost's own pipeline as the evaluator.

:func:`scenarios.capacity.workers_needed`, :func:`scenarios.capacity.headroom` and
:func:`scenarios.capacity.frontier` take an injected evaluator; here it is
:func:`dvecost.saturation.evaluator` (:func:`dvecost.analyze`, symmetry reduction on), which is
what ``dvecost workers``, ``dvecost headroom`` and ``dvecost saturate --frontier`` run. The two
searches analyse their points in ``jobs`` worker processes (default: one per core; see
:mod:`scenarios.parallel`), with the same answer as one at a time.

>>> r = workers_needed("paper-server", {"client": 4}, backend="cpu")
>>> r.workers, [str(p.exact) for p in r.tried]
(2, ['1', '4/3'])
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Mapping

from scenarios.capacity import (DEFAULT_FRONTIER_MAX, DEFAULT_MAX_WORKERS, FrontierResult,
                                HeadroomResult, WorkersResult)
from scenarios.capacity import frontier as _frontier
from scenarios.capacity import headroom as _headroom
from scenarios.capacity import workers_needed as _workers_needed
from scenarios.parallel import check_jobs
from scenarios.saturation import Spec

from .saturation import evaluator

__all__ = ["workers_needed", "headroom", "frontier"]


def workers_needed(spec: Spec, clients: Mapping[str, int], *, backend: str = "auto",
                   max_states: int | None = None, max_memory: int | None = None,
                   max_workers: int = DEFAULT_MAX_WORKERS, jobs: int | None = None,
                   progress: Callable[[object], None] | None = None,
                   resource: str | None = None,
                   capacity: int | float | str | Fraction | None = None,
                   cost: bool = True) -> WorkersResult:
    """:func:`scenarios.capacity.workers_needed` with :func:`dvecost.saturation.evaluator`
    (``backend``, ``max_states``, ``max_memory``) as the evaluator, in ``jobs`` processes
    (``None``: one per core); ``resource``, ``capacity`` (one worker's) and ``cost`` as
    there."""
    return _workers_needed(spec, clients, max_workers=max_workers, progress=progress,
                           jobs=check_jobs(jobs), resource=resource, capacity=capacity,
                           cost=cost,
                           evaluate=evaluator(backend=backend, max_states=max_states,
                                              max_memory=max_memory))


def headroom(spec: Spec, clients: Mapping[str, int], *, backend: str = "auto",
             max_states: int | None = None, max_memory: int | None = None,
             workers: int | None = None,
             capacity: int | float | str | Fraction | None = None,
             resource: str | None = None, cost: bool = True) -> HeadroomResult:
    """:func:`scenarios.capacity.headroom` with :func:`dvecost.saturation.evaluator`
    (``backend``, ``max_states``, ``max_memory``) as the evaluator; the result's ``witness``
    is the :class:`~dvecost.Analysis` of the model, its critical cycle decoded (and
    ``cost_witness`` that of the worst cost load, with occupancy judged).

    >>> r = headroom("paper-server", {"client": 2}, backend="cpu")
    >>> str(r.exact), str(r.used), str(r.headroom), len(r.witness.cycle) > 0
    ('2/3', '2/3', '1/3', True)
    >>> r.resource, r.cost_resource, str(r.cost_load)
    ('busy', 'server', '2/3')
    """
    return _headroom(spec, clients, workers=workers, capacity=capacity, resource=resource,
                     cost=cost,
                     evaluate=evaluator(backend=backend, max_states=max_states,
                                        max_memory=max_memory))


def frontier(spec: Spec, a: str, b: str, *, backend: str = "auto",
             max_states: int | None = None, max_memory: int | None = None,
             max_clients: tuple[int, int] = (DEFAULT_FRONTIER_MAX, DEFAULT_FRONTIER_MAX),
             others: Mapping[str, int] | None = None,
             capacity: int | float | str | Fraction | None = None,
             workers: int | None = None, jobs: int | None = None,
             progress: Callable[[object], None] | None = None,
             resource: str | None = None) -> FrontierResult:
    """:func:`scenarios.capacity.frontier` with :func:`dvecost.saturation.evaluator`
    (``backend``, ``max_states``, ``max_memory``) as the evaluator, in ``jobs`` processes
    (``None``: one per core), and with the scenarios' cutoffs (:mod:`scenarios.cutoff`: no
    count above one is analysed, its load being the cutoff's)."""
    return _frontier(spec, a, b, max_clients=max_clients, others=others, capacity=capacity,
                     resource=resource,
                     workers=workers, progress=progress, jobs=check_jobs(jobs), cutoffs=True,
                     evaluate=evaluator(backend=backend, max_states=max_states,
                                        max_memory=max_memory))
