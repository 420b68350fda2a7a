"""The whole pipeline in one call: :func:`analyze` a DVE model, get an :class:`Analysis`.

``analyze`` chains the stages of :mod:`dvecost.pipeline`, each of which can also be called on
its own::

    pipeline.load ─▶ pipeline.explore_quotient ─▶ pipeline.check_engine_memory
        ─▶ ocm.optimal_cycle (on pipeline.engine_arrays) ─▶ statespace.witness.decode_runs
        ─▶ Analysis

and returns a frozen value (:mod:`dvecost.result`, which also assembles its parts: the
engine's timings by phase, the symmetry summary, the run that explains a missing answer);
:mod:`dvecost.report` renders it.

With ``ratio=False`` (the default) it computes the **cycle mean** (cost per step over a cycle of
the reachable state graph), with ``ratio=True`` the **cycle ratio** (cost per unit of ``time``);
``mode`` picks the worst (``'max'``) or the best cycle. The optimum is an exact fraction, proved
by the engine's certificate (``docs/algorithms.md``). Deadlocks and the error state lie on no
cycle: they are warnings, each with a shortest run to it, and do not stop the analysis.
"""

from __future__ import annotations

import dataclasses
import os
import time as _time
from typing import Callable, Mapping

import ocm
from dve.errors import ConfigurationError
from dve.summary import summarize
from dve.syntax import DEFAULT_COST_RESOURCE, Model
from ocm.errors import NoCycleError, ZeroTimeCycleError
from runtime.errors import MemoryLimitExceeded, RunStopped
from statespace.symmetry import NO_SYMMETRY
from statespace.witness import Witness, decode_runs

from . import pipeline
from .report import explore_message
from .result import (PHASES, Analysis, Move, NoCycleRun, Step, ZeroTimeCycleRun, no_answer,
                     phase_timings, symmetry_summary, with_counts)

__all__ = ["analyze", "Analysis", "Step", "Move", "PHASES", "NoCycleRun", "ZeroTimeCycleRun",
           "with_counts"]

#: ``progress(phase, done, total, message)``: ``done``/``total`` are counts or ``None``.
ProgressFn = Callable[[str, "float | None", "float | None", str], None]


def analyze(model: str | os.PathLike[str] | Model, *, ratio: bool = False, mode: str = "max",
            cost: str | None = None, backend: str = "auto",
            defines: Mapping[str, int] | None = None, max_states: int | None = None,
            max_memory: int | None = None, progress: ProgressFn | None = None,
            witness: bool = True, symmetry: str = "auto", lazy_graph: bool = False,
            explore: Callable | None = None, engine: Callable | None = None) -> Analysis:
    """Analyse a DVE model: its optimal cycle mean (or ratio) and the run that attains it.

    Parameters
    ----------
    model : str, os.PathLike or dve.syntax.Model
        A path to a ``.dve`` file or the model's text, or a model (loaded, or built in
        memory): each goes through :func:`dve.load_model`, so a model is expanded and checked
        as a file is.
    ratio : bool
        Compute the cycle ratio (cost per unit of ``time``) instead of the cycle mean (cost per
        step).
    mode : {'max', 'min'}
        Worst (largest) or best (smallest) cycle.
    cost : str, optional
        The cost resource to analyse. Needed when the model names several (``cost cpu: 5,
        net: 2;``); a plain ``cost e;`` charges the resource ``'cost'``.
    backend : {'auto', 'cpu', 'gpu'}
        Where exploration and the cycle engine run. ``'gpu'``: both on the GPU (exploration
        of a model whose symmetry reduces it stays on the CPU). ``'auto'``: exploration on the
        GPU when there is one and a chunk of the breadth-first search is large enough for it
        (:func:`runtime.device.array_module_for`: CuPy is not even imported before), the cycle
        engine there for large graphs, falling back to the CPU if the device runs out of
        memory (:mod:`ocm.backend`).
    defines : mapping of str to int, optional
        Values for the model's ``input`` constants (``-D name=value``); not with a loaded model.
    max_states, max_memory : int, optional
        Stop exploring beyond this many states / this many bytes of process memory.
    progress : callable, optional
        Called as ``progress(phase, done, total, message)`` through the long phases (phase is
        one of :data:`PHASES`); ``done`` and ``total`` may be ``None`` (during exploration
        ``done`` is the number of states found so far, ``total`` ``None``).
    witness : bool
        Decode the critical cycle, the prefix reaching it and the deadlock/error runs into
        steps of the model (the default). ``False`` gives the value only: nothing is decoded,
        ``cycle`` and ``prefix`` are empty and the traces ``None`` (what a search over many
        models, such as ``saturate``'s inner points, needs).
    symmetry : {'auto', 'off'}
        ``'auto'`` (default): explore one state per orbit of the groups of interchangeable
        template instances that :func:`statespace.symmetry.detect_symmetry` proves symmetric
        (the optimum is the same; the runs shown are lifted to the full model). ``'off'``:
        explore the full product.
    lazy_graph : bool
        For a graph explored on a GPU: ``False`` (default), the result's graph holds every
        array on the host and nothing on the device; ``True``, the arrays that the analysis
        did not read (all but a few elements, for the runs) stay on the device and are copied
        to the host when first read (:func:`statespace.graph.lazy_graph`): what a process that
        shows the answer and exits wants (``dvecost analyze``), not a caller that keeps many
        results.
    explore : callable, optional
        Builds the graph in place of the one-process explorer: called as
        ``explore(compiled, max_states=, max_memory=, progress=)`` with the compiled model,
        it returns a :class:`statespace.quotient.Quotient` (``dvecost analyze`` under
        ``mpiexec`` passes the distributed search of :mod:`statespace.dist`).
    engine : callable, optional
        Finds the optimal cycle in place of :func:`ocm.optimal_cycle` on the explored graph:
        called as ``engine(quotient, resource, kind, mode)``, it returns the ``CycleResult``
        (or the ``ocm.errors.OcmError`` it met) and the quotient whose graph the runs shown
        are read from (``dvecost analyze`` under ``mpiexec`` passes the engine across
        processes, :class:`dvecost.distributed.BlockRun`, whose graph holds only those runs),
        and optionally third what :attr:`Analysis.distributed` reports (the phases' seconds
        and rounds across processes); or None to leave the answer to
        :func:`ocm.optimal_cycle` (a graph that was gathered).

    Returns
    -------
    Analysis
        The exact optimum, the critical cycle and the prefix reaching it as runs of the model,
        state-space figures, warnings with a shortest run each, per-phase timings.

    Raises
    ------
    TypeError
        ``model`` is none of the above (a compiled model, bytes, ...).
    dve.errors.ModelErrors, dve.errors.ModelError
        The model does not parse or fails the static checks.
    dve.errors.ConfigurationError
        Unknown ``mode`` or ``backend``; no ``cost=`` for a model with several resources, or
        one it does not name (the message lists them).
    runtime.errors.BackendUnavailableError
        ``backend='gpu'`` without CuPy or a CUDA device.
    runtime.errors.StateLimitExceeded, runtime.errors.MemoryLimitExceeded
        Exploration reached ``max_states`` or ``max_memory``.
    NoCycleRun
        (an ``ocm.errors.NoCycleError``) No cycle is reachable; ``exc.trace`` is a shortest
        run to a deadlock or the error state (a tuple of :class:`Step`).
    ZeroTimeCycleRun
        (an ``ocm.errors.ZeroTimeCycleError``) ``ratio=True`` and a reachable cycle takes no
        time; ``exc.trace`` is that cycle as steps.
    ocm.errors.ConvergenceError
        The engine exceeded its iteration budget.

    Examples
    --------
    Two rings interleaved: the worst cycle is the costlier ring on its own.

    >>> a = analyze('''
    ...     process A { state a0, a1; init a0;
    ...                 trans a0 -> a1 { cost 1; }, a1 -> a0 { cost 3; }; }
    ...     process B { state b0, b1, b2; init b0;
    ...                 trans b0 -> b1 { cost 4; }, b1 -> b2 { cost 5; }, b2 -> b0 { cost 0; }; }
    ...     system async;''', backend="cpu")
    >>> a.exact, a.certified, a.n_states, a.n_transitions
    ('3', True, 6, 12)
    >>> [step.process for step in a.cycle]
    ['B', 'B', 'B']
    >>> a.cycle[0].moves[0].transition
    'b0 -> b1'
    """
    if mode not in ("max", "min"):
        raise ConfigurationError(f"unknown mode '{mode}': expected 'max' or 'min'")
    if backend not in ("auto", "cpu", "gpu"):
        raise ConfigurationError(f"unknown backend '{backend}': expected one of auto, cpu, gpu")
    if symmetry not in ("auto", "off"):
        raise ConfigurationError(f"unknown symmetry '{symmetry}': expected 'auto' or 'off'")
    kind = "ratio" if ratio else "mean"
    seconds: dict[str, float] = {}
    report = progress or (lambda *a: None)

    t0 = _time.perf_counter()
    report("parse", None, None, "reading the model")
    if isinstance(model, Model) and defines:
        raise ConfigurationError("defines apply when a model is loaded, not to a loaded "
                                 "model: pass them to dve.load_model")
    if not isinstance(model, (str, os.PathLike, Model)):
        raise TypeError(f"expected a path, model text or dve.syntax.Model, got "
                        f"{type(model).__name__}: read models with dve.load_model")
    syntax, compiled = pipeline.load(model, defines)   # the front door's checks
    resource = _choose_resource(compiled.resources, cost)
    seconds["parse"] = _time.perf_counter() - t0

    t0 = _time.perf_counter()
    report("explore", None, None, "building the state graph")
    xp = pipeline.array_module(backend)
    # (``done``: the states found so far, for a caller that keeps count: a budget's stop
    # says how far exploration got)
    explore_progress = (None if progress is None else
                        lambda *counts: report("explore", counts[0], None,
                                               explore_message(*counts)))
    if explore is not None:
        with pipeline.quiet_absent_device(xp):
            quotient = explore(compiled, max_states=max_states, max_memory=max_memory,
                               progress=explore_progress)
    else:
        quotient = pipeline.explore_quotient(
            compiled, xp=xp, backend=backend,
            symmetry=None if symmetry == "auto" else NO_SYMMETRY,
            max_states=max_states, max_memory=max_memory, progress=explore_progress)
    graph = quotient.graph
    seconds["explore"] = _time.perf_counter() - t0

    if max_memory is not None:
        _check_engine_memory(max_memory, graph)
    try:
        return _after_exploration(syntax, compiled, quotient, resource, seconds, report,
                                  kind=kind, mode=mode, ratio=ratio, backend=backend,
                                  witness=witness, symmetry=symmetry, lazy_graph=lazy_graph,
                                  engine=engine)
    except RunStopped as exc:
        # A signal or --timeout in the engine or the report: the state graph is complete, so
        # the stop says what it holds.
        raise with_counts(exc, graph)


def _check_engine_memory(max_memory: int, graph) -> None:
    """:func:`dvecost.pipeline.check_engine_memory` on the explored graph, the stop carrying
    the graph's counts."""
    try:
        pipeline.check_engine_memory(max_memory, graph.n_states, graph.n_edges)
    except MemoryLimitExceeded as exc:
        raise with_counts(exc, graph)


def _after_exploration(syntax, compiled, quotient, resource, seconds, report, *, kind, mode,
                       ratio, backend, witness, symmetry, lazy_graph, engine=None) -> Analysis:
    """The cycle engine and the report of :func:`analyze`, on the explored ``quotient``."""
    graph = quotient.graph
    report("howard", None, None, f"optimal cycle {kind}: SCCs, policy iteration, certificate")
    t0 = _time.perf_counter()
    distributed = None
    try:
        # (a hook may leave the answer to the one-process engine: it returns None)
        got = None if engine is None else engine(quotient, resource, kind, mode)
        if got is not None:
            result, quotient = got[0], got[1]
            distributed = got[2] if len(got) > 2 else None
            graph = quotient.graph
            if isinstance(result, Exception):
                raise result
        else:
            arrays = pipeline.engine_arrays(graph, resource, ratio=ratio, backend=backend)
            result = ocm.optimal_cycle(*arrays, kind=kind, mode=mode, backend=backend)
            del arrays
    except (NoCycleError, ZeroTimeCycleError) as exc:
        raise no_answer(exc, quotient, resource) from exc
    finally:
        released = graph.released(lazy=lazy_graph)
        if released is not graph:
            # The device's copies served the engine; the rest reads the host arrays, and what
            # the result keeps (its graph) holds no GPU memory, unless lazy_graph asked to
            # leave the arrays not read yet there (copied when first read).
            graph = released
            quotient = dataclasses.replace(quotient, graph=graph)
    seconds.update(phase_timings(result.timings, _time.perf_counter() - t0))

    t0 = _time.perf_counter()
    runs = None
    if witness:   # the value-only path decodes nothing, so it announces no decoding
        report("report", None, None, "decoding the critical cycle")
        runs = decode_runs(quotient, result.cycle_edges, resource)
    decode = (runs.witness if runs is not None else Witness(graph, resource)).state
    summary = summarize(syntax)
    seconds["report"] = _time.perf_counter() - t0

    return Analysis(
        # the name the model was loaded under: its path, or '<string>' for text
        model=syntax.pos.source.name if syntax.pos is not None else compiled.name or "<model>",
        system=compiled.system,
        processes=tuple(p.name for p in compiled.processes),
        n_variables=summary.n_variables, n_channels=summary.n_channels, kind=kind, mode=mode,
        cost=resource, resources=tuple(compiled.resources), value=result.value,
        certified=result.certified, n_states=graph.n_states, n_transitions=graph.n_edges,
        n_deadlocks=graph.n_deadlocks, error_state_reached=graph.error_state >= 0,
        initial=decode(0) if witness else {}, cycle=runs.cycle if runs else (),
        prefix=runs.prefix if runs else (), deadlock_trace=runs.deadlock if runs else None,
        error_trace=runs.error if runs else None, backend=result.backend,
        iterations=result.iterations, seconds=dict(seconds), witness=witness,
        # The graph the steps' ids refer to: with symmetry reduction, that of the lifted runs.
        graph=runs.witness.graph if runs else graph, decode=decode,
        symmetry=symmetry_summary(quotient, symmetry), distributed=distributed)


def _choose_resource(resources: tuple[str, ...], cost: str | None) -> str:
    resources = resources or (DEFAULT_COST_RESOURCE,)
    if cost is None:
        if len(resources) > 1:
            raise ConfigurationError(
                f"the model charges {len(resources)} cost resources ({', '.join(resources)}): "
                f"choose one with --cost NAME, e.g. --cost {resources[0]}")
        return resources[0]
    if cost not in resources:
        raise ConfigurationError(
            f"the model has no cost resource '{cost}'; it charges: {', '.join(resources)}")
    return cost
