"""The whole pipeline in one call: :func:`analyze` a DVE model, get an :class:`Analysis`.

``analyze`` chains the stages, each of which can also be called on its own::

    dve.load_model ─▶ statespace.compile_model ─▶ statespace.build_state_graph
        ─▶ ocm.optimal_cycle ─▶ statespace.witness.decode_runs ─▶ Analysis

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

import contextlib
import dataclasses
import os
import time as _time
import warnings
from typing import Callable, Iterator, Mapping

import dve
import ocm
import statespace
from dve.errors import ConfigurationError, DeviceFallbackWarning, MemoryLimitExceeded, RunStopped
from dve.summary import summarize
from dve.syntax import DEFAULT_COST_RESOURCE, Model
from ocm.backend import DeferredDevice, array_module_for
from ocm.errors import NoCycleError, ZeroTimeCycleError
from statespace.quotient import build_quotient_graph
from statespace.symmetry import NO_SYMMETRY
from statespace.witness import Witness, decode_runs

from .report import explore_message
from .result import (PHASES, Analysis, Move, NoCycleRun, Step, ZeroTimeCycleRun, no_answer,
                     phase_timings, symmetry_summary, with_counts)

__all__ = ["analyze", "Analysis", "Step", "Move", "PHASES", "NoCycleRun", "ZeroTimeCycleRun",
           "with_counts", "quiet_absent_device"]

#: ``progress(phase, done, total, message)``: ``done``/``total`` are counts or ``None``.
ProgressFn = Callable[[str, "float | None", "float | None", str], None]


def analyze(model: str | os.PathLike[str] | Model, *, ratio: bool = False, mode: str = "max",
            cost: str | None = None, backend: str = "auto",
            defines: Mapping[str, int] | None = None, max_states: int | None = None,
            max_memory: int | None = None, progress: ProgressFn | None = None,
            witness: bool = True, symmetry: str = "auto", lazy_graph: bool = False) -> Analysis:
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
        (:func:`ocm.backend.array_module_for`: CuPy is not even imported before), the cycle
        engine there for large graphs, falling back to the CPU if the device runs out of
        memory (:mod:`ocm.backend`).
    defines : mapping of str to int, optional
        Values for the model's ``input`` constants (``-D name=value``); not with a loaded model.
    max_states, max_memory : int, optional
        Stop exploring beyond this many states / this many bytes of process memory.
    progress : callable, optional
        Called as ``progress(phase, done, total, message)`` through the long phases (phase is
        one of :data:`PHASES`); ``done`` and ``total`` may be ``None``.
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
    ocm.errors.BackendUnavailableError
        ``backend='gpu'`` without CuPy or a CUDA device.
    dve.errors.StateLimitExceeded, dve.errors.MemoryLimitExceeded
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
    syntax = dve.load_model(model, defines=dict(defines or {}))  # the front door's checks
    compiled = statespace.compile_model(syntax)
    resource = _choose_resource(compiled.resources, cost)
    seconds["parse"] = _time.perf_counter() - t0

    t0 = _time.perf_counter()
    report("explore", None, None, "building the state graph")
    xp = array_module_for(backend)
    with quiet_absent_device(xp):
        quotient = build_quotient_graph(
            compiled, symmetry=None if symmetry == "auto" else NO_SYMMETRY,
            max_states=max_states, max_memory=max_memory,
            progress=None if progress is None else
            lambda *counts: report("explore", None, None, explore_message(*counts)),
            xp=xp,
            # gpu: a full device stops the run (exit 3); auto: exploration goes on on the CPU.
            on_device_full="stop" if backend == "gpu" else "host")
    graph = quotient.graph
    seconds["explore"] = _time.perf_counter() - t0

    if max_memory is not None:
        _check_engine_memory(max_memory, graph)
    try:
        return _after_exploration(syntax, compiled, quotient, resource, seconds, report,
                                  kind=kind, mode=mode, ratio=ratio, backend=backend,
                                  witness=witness, symmetry=symmetry, lazy_graph=lazy_graph)
    except RunStopped as exc:
        # A signal or --timeout in the engine or the report: the state graph is complete, so
        # the stop says what it holds.
        raise with_counts(exc, graph)


@contextlib.contextmanager
def quiet_absent_device(xp) -> Iterator[None]:
    """Around an exploration with ``xp``: drop the explorer's
    :class:`~dve.errors.DeviceFallbackWarning` when ``xp`` is ``auto``'s
    :class:`~ocm.backend.DeferredDevice` and it found no device (CuPy installed, no GPU): the
    exploration stayed on the host as planned, nothing fell back. Every other warning is
    shown as it would have been (after the exploration, an exception included).

    >>> xp = DeferredDevice()
    >>> xp.resolved, xp.unavailable = True, "no CUDA device found"   # as found on first use
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     with quiet_absent_device(xp):
    ...         warnings.warn("the GPU has 0 MiB free", DeviceFallbackWarning)
    ...         warnings.warn("something else")
    >>> [str(w.message) for w in seen]
    ['something else']
    """
    if not isinstance(xp, DeferredDevice):
        yield
        return
    caught: list = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            # Every fallback recorded (not only the first of its text): decided below.
            warnings.simplefilter("always", DeviceFallbackWarning)
            yield
    finally:
        for w in caught:
            if not issubclass(w.category, DeviceFallbackWarning):
                warnings.showwarning(w.message, w.category, w.filename, w.lineno, w.file,
                                     w.line)   # the filters passed it already
            elif xp.unavailable is None:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def _check_engine_memory(max_memory: int, graph) -> None:
    """Refuse to start the cycle engine when its estimated memory
    (:func:`ocm.backend.engine_memory_bytes`, the estimate ``dvecost cycle`` uses) would take
    the process past ``max_memory``: a MemoryLimitExceeded with the graph's counts."""
    from ocm.backend import engine_memory_bytes
    from statespace.explore import current_rss
    held, more = current_rss(), engine_memory_bytes(graph.n_states, graph.n_edges)
    if held + more > max_memory:
        exc = MemoryLimitExceeded(max_memory, graph.n_states)
        exc.held, exc.more = held, more
        raise with_counts(exc, graph)


def _after_exploration(syntax, compiled, quotient, resource, seconds, report, *, kind, mode,
                       ratio, backend, witness, symmetry, lazy_graph) -> Analysis:
    """The cycle engine and the report of :func:`analyze`, on the explored ``quotient``."""
    graph = quotient.graph
    report("howard", None, None, f"optimal cycle {kind}: SCCs, policy iteration, certificate")
    t0 = _time.perf_counter()
    try:
        if graph.on_device is not None and backend != "cpu":
            # Explored on the GPU: the engine reads the edges still there (no copy back); the
            # arrays it does not read go to the host first if it would not fit beside them.
            indptr, indices, charge = graph.on_device
            graph.make_room(ocm.device_bytes(
                graph.n_states, graph.n_edges, 8 if charge is None else charge.dtype.itemsize,
                restricted=True))
        else:
            indptr, indices, charge = graph.indptr, graph.indices, graph.charge
        if charge is not None:   # a compact graph: the engine reads its palette by row
            pal = graph.palette
            arrays = (indptr, indices, ocm.Palette(charge, pal.costs[resource]),
                      ocm.Palette(charge, pal.time))
        else:
            arrays = (indptr, indices, graph.cost(resource), graph.time)
        del charge
        result = ocm.optimal_cycle(*arrays[:3], arrays[3] if ratio else None, kind=kind,
                                   mode=mode, backend=backend)
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
        symmetry=symmetry_summary(quotient, symmetry))


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
