"""The whole pipeline in one call: :func:`analyze` a DVE model, get an :class:`Analysis`.

``analyze`` chains the stages, each of which can also be called on its own::

    dve.load_model ─▶ statespace.compile_model ─▶ statespace.build_state_graph ─▶ ocm ─▶ Analysis

and turns the engine's answer (state and edge ids) back into the language of the model: the
critical cycle becomes a run of the model, step by step (which processes moved, from which local
state to which, through which channel, at what cost and time, changing which variables). The
result is a frozen value; :mod:`dvecost.report` renders it as text, JSON and DOT, and it renders
itself in a notebook.

What is computed
----------------
With ``ratio=False`` (the default) the **cycle mean**: over every cycle of the reachable state
graph, the cost of the chosen resource summed along the cycle divided by its number of steps.
With ``ratio=True`` the **cycle ratio**: the cost divided by the total ``time`` along the cycle.
``mode="max"`` gives the worst (largest) value, ``mode="min"`` the smallest. Costs and times are
integers, so the optimum is an exact fraction, read off the critical cycle and proved optimal by
the engine's certificate (see ``docs/algorithms.md``).

Deadlocks and the error state have no successors and lie on no cycle: they are reported, with a
shortest run to each, as warnings, and do not stop the analysis.
"""

from __future__ import annotations

import pathlib
import time as _time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping

__all__ = ["analyze", "Analysis", "Step", "Move", "PHASES"]

#: Phases timed by :func:`analyze`, in order (keys of :attr:`Analysis.seconds`): loading and
#: compiling the model, building the state graph, the engine's SCC decomposition, policy
#: iteration and exact certificate, and turning the answer into runs of the model.
PHASES: tuple[str, ...] = ("parse", "explore", "scc", "howard", "certify", "report")

#: ``progress(phase, done, total, message)``: ``done``/``total`` are counts or ``None``.
ProgressFn = Callable[[str, "float | None", "float | None", str], None]


# ---------------------------------------------------------------------------- value types

@dataclass(frozen=True)
class Move:
    """One process's part in a step of the model.

    Attributes
    ----------
    process : str
        The process that moved.
    source, target : str
        Its local state before and after the step.
    sync : str or None
        The synchronisation it took part in, as written (``'reqL!1'``, ``'reqL?who'``), or
        ``None`` for a step of its own.
    line : int or None
        The source line of the transition, where known.
    """

    process: str
    source: str
    target: str
    sync: str | None = None
    line: int | None = None

    @property
    def transition(self) -> str:
        """``'source -> target'``."""
        return f"{self.source} -> {self.target}"

    def as_dict(self) -> dict:
        return {"process": self.process, "from": self.source, "to": self.target,
                "transition": self.transition, "sync": self.sync, "line": self.line}


@dataclass(frozen=True)
class Step:
    """One edge of the state graph, told as a step of the model.

    Attributes
    ----------
    source, target : int
        State ids (BFS order; 0 is the initial state).
    edge : int
        The edge's index in the CSR arrays (``-1`` when unknown).
    moves : tuple of Move
        Who moved: one process, a sender and a receiver (rendezvous), or every process
        (``system sync``).
    cost, time : int
        The step's cost (of the analysed resource) and time.
    changed : tuple of (name, before, after)
        Variables and channel contents that the step changed (local states are in ``moves``).
    state : Mapping
        The state after the step: process name -> local state, variable -> value.
    error : bool
        Whether the step ends in the error state.
    """

    source: int
    target: int
    edge: int
    moves: tuple[Move, ...]
    cost: int
    time: int
    changed: tuple[tuple[str, Any, Any], ...] = ()
    state: Mapping[str, Any] = field(default_factory=dict)
    error: bool = False

    @property
    def process(self) -> str:
        """The processes that moved, joined by ``' + '`` (``'?'`` when unknown)."""
        return " + ".join(m.process for m in self.moves) or "?"

    @property
    def transition(self) -> str:
        """The moves as ``'P: a -> b'``, joined by ``'; '``."""
        return "; ".join(f"{m.process}: {m.transition}" for m in self.moves)

    def as_dict(self) -> dict:
        return {"from": self.source, "to": self.target, "edge": self.edge,
                "process": self.process, "transition": self.transition,
                "moves": [m.as_dict() for m in self.moves],
                "cost": self.cost, "time": self.time,
                "changed": {name: [before, after] for name, before, after in self.changed},
                "state": _jsonable(dict(self.state)), "error": self.error}


@dataclass(frozen=True)
class Analysis:
    """The answer of :func:`analyze`: the optimum, the critical cycle as a run, the figures.

    Field names match the keys of :meth:`as_dict` (the ``--json`` output); ``value`` is kept
    exact here (a :class:`~fractions.Fraction`) and written as a float plus ``exact`` there.

    Attributes
    ----------
    model : str
        The model's name (its path, or ``'<string>'``).
    system : str
        ``'async'`` or ``'sync'``.
    processes : tuple of str
        Process names, in declaration order.
    n_variables, n_channels : int
        Declared variables (global and local, arrays counted once) and channels.
    kind : str
        ``'mean'`` or ``'ratio'``.
    mode : str
        ``'max'`` or ``'min'``.
    cost : str
        The analysed resource.
    resources : tuple of str
        Every cost resource the model names.
    value : Fraction
        The optimum.
    certified : bool
        Whether the exact certificate proved it.
    n_states, n_transitions, n_deadlocks : int
        State-space figures (transitions counted as generated, duplicates included).
    error_state_reached : bool
        Whether the error state is reachable.
    initial : Mapping
        The initial state (process -> local state, variable -> value).
    cycle : tuple of Step
        The critical cycle, starting at its state closest to the initial state.
    prefix : tuple of Step
        A shortest run from the initial state to the cycle's first state.
    deadlock_trace, error_trace : tuple of Step or None
        A shortest run to a deadlock / to the error state, when there is one.
    backend : str
        ``'cpu'`` or ``'gpu'``.
    iterations : int
        Policy-iteration rounds of the engine.
    seconds : Mapping of str to float
        Wall time per phase (:data:`PHASES`).
    witness : bool
        Whether the runs were decoded (``analyze(..., witness=False)`` leaves ``cycle``,
        ``prefix`` and ``initial`` empty and the traces ``None``).
    """

    model: str
    system: str
    processes: tuple[str, ...]
    n_variables: int
    n_channels: int
    kind: str
    mode: str
    cost: str
    resources: tuple[str, ...]
    value: Fraction
    certified: bool
    n_states: int
    n_transitions: int
    n_deadlocks: int
    error_state_reached: bool
    initial: Mapping[str, Any]
    cycle: tuple[Step, ...]
    prefix: tuple[Step, ...] = ()
    deadlock_trace: tuple[Step, ...] | None = None
    error_trace: tuple[Step, ...] | None = None
    backend: str = "cpu"
    iterations: int = 0
    seconds: Mapping[str, float] = field(default_factory=dict)
    witness: bool = True
    graph: Any = field(default=None, compare=False, repr=False)
    decode: Callable[[int], Mapping[str, Any]] | None = field(default=None, compare=False,
                                                              repr=False)

    # -- derived -------------------------------------------------------------------------

    @property
    def exact(self) -> str:
        """The optimum as ``'p/q'``, or ``'p'`` when it is an integer.

        >>> _demo().exact
        '3/2'
        """
        return _fraction_text(self.value)

    @property
    def label(self) -> str:
        """What was computed, in words: ``'maximal cycle mean of cost'``."""
        return f"{'maximal' if self.mode == 'max' else 'minimal'} cycle {self.kind} of " \
               f"'{self.cost}'"

    @property
    def warnings(self) -> tuple[str, ...]:
        """Deadlocks and a reachable error state, one line each."""
        out = []
        if self.n_deadlocks:
            out.append(f"{self.n_deadlocks} deadlock state{'s' * (self.n_deadlocks != 1)}: "
                       "runs that reach one stop there and lie on no cycle")
        if self.error_state_reached:
            out.append("the error state is reachable (a runtime error: division by zero, "
                       "index or value out of range)")
        return tuple(out)

    def as_dict(self) -> dict:
        """The JSON object of ``dvecost analyze --json``.

        >>> d = _demo().as_dict()
        >>> d["value"], d["exact"], d["kind"], d["cycle"][0]["process"]
        (1.5, '3/2', 'mean', 'P')
        """
        total = sum(self.seconds.values())
        return {
            "model": self.model,
            "value": float(self.value),
            "exact": self.exact,
            "certified": self.certified,
            "kind": self.kind,
            "mode": self.mode,
            "cost": self.cost,
            "resources": list(self.resources),
            "system": self.system,
            "processes": list(self.processes),
            "n_variables": self.n_variables,
            "n_channels": self.n_channels,
            "n_states": self.n_states,
            "n_transitions": self.n_transitions,
            "n_deadlocks": self.n_deadlocks,
            "error_state_reached": self.error_state_reached,
            "initial": _jsonable(dict(self.initial)),
            "cycle": [s.as_dict() for s in self.cycle],
            "cycle_cost": sum(s.cost for s in self.cycle),
            "cycle_time": sum(s.time for s in self.cycle),
            "prefix": [s.as_dict() for s in self.prefix],
            "deadlock_trace": None if self.deadlock_trace is None
            else [s.as_dict() for s in self.deadlock_trace],
            "error_trace": None if self.error_trace is None
            else [s.as_dict() for s in self.error_trace],
            "warnings": list(self.warnings),
            "backend": self.backend,
            "iterations": self.iterations,
            "seconds": {**{k: round(v, 6) for k, v in self.seconds.items()},
                        "total": round(total, 6)},
        }

    # -- notebooks -----------------------------------------------------------------------

    def __str__(self) -> str:
        from .report import render_text
        return render_text(self)

    def _repr_markdown_(self) -> str:
        from .report import render_markdown
        return render_markdown(self)

    def _repr_html_(self) -> str:
        from .report import render_html
        return render_html(self)


# ---------------------------------------------------------------------------- helpers

def _fraction_text(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


def _jsonable(x: Any) -> Any:
    """Plain JSON types: tuples and arrays to lists, numpy scalars to ints."""
    if isinstance(x, Mapping):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if hasattr(x, "tolist"):
        return x.tolist()
    return x


def _demo() -> Analysis:
    """A tiny hand-built Analysis (one process, two states) for doctests."""
    a = Step(0, 1, 0, (Move("P", "a", "b"),), 1, 1, (("x", 0, 1),), {"P": "b", "x": 1})
    b = Step(1, 0, 1, (Move("P", "b", "a"),), 2, 1, (("x", 1, 0),), {"P": "a", "x": 0})
    return Analysis(model="<demo>", system="async", processes=("P",), n_variables=1,
                    n_channels=0, kind="mean", mode="max", cost="cost", resources=("cost",),
                    value=Fraction(3, 2), certified=True, n_states=2, n_transitions=2,
                    n_deadlocks=0, error_state_reached=False, initial={"P": "a", "x": 0},
                    cycle=(a, b), seconds={"parse": 0.001, "explore": 0.002})


# ---------------------------------------------------------------------------- the pipeline

def analyze(path_or_text: str | pathlib.Path, *, ratio: bool = False, mode: str = "max",
            cost: str | None = None, backend: str = "auto",
            defines: Mapping[str, int] | None = None, max_states: int | None = None,
            progress: ProgressFn | None = None, witness: bool = True) -> Analysis:
    """Analyse a DVE model: its optimal cycle mean (or ratio) and the run that attains it.

    Parameters
    ----------
    path_or_text : str or pathlib.Path
        A path to a ``.dve`` file, or the model's text itself.
    ratio : bool
        Compute the cycle ratio (cost per unit of ``time``) instead of the cycle mean (cost per
        step).
    mode : {'max', 'min'}
        Worst (largest) or best (smallest) cycle.
    cost : str, optional
        The cost resource to analyse. Needed when the model names several (``cost cpu: 5,
        net: 2;``); a plain ``cost e;`` charges the resource ``'cost'``.
    backend : {'auto', 'cpu', 'gpu'}
        Where the cycle engine runs; ``'auto'`` takes the GPU for large graphs when there is one.
    defines : mapping of str to int, optional
        Values for the model's ``input`` constants (``-D name=value``).
    max_states : int, optional
        Stop exploring beyond this many states.
    progress : callable, optional
        Called as ``progress(phase, done, total, message)`` through the long phases (phase is
        one of :data:`PHASES`); ``done`` and ``total`` may be ``None``.
    witness : bool
        Decode the critical cycle, the prefix reaching it and the deadlock/error runs into
        steps of the model (the default). ``False`` gives the value only: nothing is decoded,
        ``cycle`` and ``prefix`` are empty and the traces ``None`` (what a search over many
        models, such as ``saturate``'s inner points, needs).

    Returns
    -------
    Analysis
        The optimum (exact), the critical cycle and the prefix reaching it as runs of the model,
        state-space figures, warnings (deadlocks, error state) with a shortest run each, and
        per-phase timings.

    Raises
    ------
    dve.errors.ModelErrors, dve.errors.ModelError
        The model does not parse or fails the static checks.
    dve.errors.ConfigurationError
        Bad arguments: unknown ``mode`` or ``backend``, a model with several cost resources
        and no ``cost=``, or a ``cost=`` the model does not name (the message lists them).
    ocm.errors.BackendUnavailableError
        ``backend='gpu'`` without CuPy or a CUDA device.
    dve.errors.StateLimitExceeded, dve.errors.MemoryLimitExceeded
        Exploration reached ``max_states`` (or its memory limit).
    ocm.errors.NoCycleError
        No cycle is reachable: every run ends in a deadlock or the error state. ``exc.trace``
        holds a shortest such run (a tuple of :class:`Step`).
    ocm.errors.ZeroTimeCycleError
        ``ratio=True`` and a reachable cycle takes no time. ``exc.trace`` holds that cycle as
        steps.
    ocm.errors.ConvergenceError
        The engine exceeded its iteration budget.

    See Also
    --------
    dvecost.report.render_text, dvecost.report.render_json, dvecost.report.render_dot

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
    import ocm  # noqa: F401 - imported before the clocks start: module loading is not a phase
    import statespace
    from dve.errors import ConfigurationError

    if mode not in ("max", "min"):
        raise ConfigurationError(f"unknown mode '{mode}': expected 'max' or 'min'")
    if backend not in ("auto", "cpu", "gpu"):
        raise ConfigurationError(f"unknown backend '{backend}': expected one of auto, cpu, gpu")
    kind = "ratio" if ratio else "mean"
    seconds: dict[str, float] = {}
    report = progress or (lambda *a, **k: None)

    # -- parse and compile ---------------------------------------------------------------
    t0 = _time.perf_counter()
    report("parse", None, None, "reading the model")
    model = _load(path_or_text, dict(defines or {}))
    compiled = statespace.compile_model(model)
    resource = _choose_resource(compiled, cost)
    seconds["parse"] = _time.perf_counter() - t0

    # -- explore -------------------------------------------------------------------------
    t0 = _time.perf_counter()
    report("explore", None, None, "building the state graph")
    graph = statespace.build_state_graph(
        compiled, max_states=max_states,
        progress=_explore_progress(report) if progress is not None else None)
    seconds["explore"] = _time.perf_counter() - t0

    view = _GraphView(compiled, graph, resource)

    # -- the cycle engine ----------------------------------------------------------------
    report("howard", None, None, f"optimal cycle {kind}: SCCs, policy iteration, certificate")
    t0 = _time.perf_counter()
    try:
        result, used = _solve(view, ratio=ratio, mode=mode, backend=backend)
    except Exception as exc:
        _reraise_with_trace(exc, view)
        raise
    engine_total = _time.perf_counter() - t0
    seconds.update(_engine_timings(result, engine_total))

    # -- back into the model's terms ---------------------------------------------------
    t0 = _time.perf_counter()
    report("report", None, None, "decoding the critical cycle")
    cycle: tuple[Step, ...] = ()
    prefix: tuple[Step, ...] = ()
    deadlock_trace = error_trace = None
    if witness:
        cyc_vertices, cyc_edges = _cycle_of(result)
        cyc_vertices, cyc_edges = _rotate_to_closest(view, cyc_vertices, cyc_edges)
        cycle = tuple(view.step(e) for e in cyc_edges)
        prefix = view.trace_to(cyc_vertices[0]) if cyc_vertices else ()
        deadlock_trace = view.trace_to(view.first_deadlock()) if view.n_deadlocks else None
        error_trace = view.trace_to(view.error_state) if view.error_state is not None else None
    summary = _summarize(model)
    seconds["report"] = _time.perf_counter() - t0

    value = _exact_value(result, cycle, ratio)
    return Analysis(
        model=_model_name(path_or_text, compiled), system=compiled.system,
        processes=tuple(p.name for p in compiled.processes),
        n_variables=summary[0], n_channels=summary[1], kind=kind, mode=mode, cost=resource,
        resources=tuple(compiled.resources), value=value,
        certified=bool(getattr(result, "certified", False)),
        n_states=view.n_states, n_transitions=view.n_edges, n_deadlocks=view.n_deadlocks,
        error_state_reached=view.error_state is not None,
        initial=view.decode(0) if witness else {},
        cycle=cycle, prefix=prefix, deadlock_trace=deadlock_trace, error_trace=error_trace,
        backend=getattr(result, "backend", used),
        iterations=int(getattr(result, "iterations", 0) or 0),
        seconds=dict(seconds), witness=witness, graph=graph, decode=view.decode)


def _is_text(x: str | pathlib.Path) -> bool:
    """A string with a newline, a brace or a semicolon is model text; anything else a path."""
    return isinstance(x, str) and any(ch in x for ch in "\n{;")


def _load(x: str | pathlib.Path, defines: dict[str, int]):
    """Parse, expand and check a model given as a path or as text (:func:`dve.load_model`)."""
    import dve
    return dve.load_model(x if isinstance(x, str) else pathlib.Path(x), defines=defines)


def _model_name(x, compiled) -> str:
    if isinstance(x, pathlib.Path):
        return str(x)
    if isinstance(x, str) and not _is_text(x):
        return x
    return getattr(compiled, "name", None) or "<string>"


def _summarize(model) -> tuple[int, int]:
    """(variables, channels) as ``dvecost check`` counts them."""
    try:
        from dve.summary import summarize
        s = summarize(model)
        return s.n_variables, s.n_channels
    except Exception:  # noqa: BLE001 - figures for the header only
        return 0, 0


def _choose_resource(compiled, cost: str | None) -> str:
    from dve.errors import ConfigurationError
    from dve.syntax import DEFAULT_COST_RESOURCE

    resources = tuple(getattr(compiled, "resources", ()) or (DEFAULT_COST_RESOURCE,))
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


def _explore_progress(report):
    """Adapt the explorer's ``progress(n_states, n_edges, edges_per_second)`` to ours."""
    def cb(n_states, n_edges, rate=None, *rest):
        msg = f"{n_states:,} states, {n_edges:,} edges"
        if rate:
            msg += f", {rate / 1e6:.2f} M edges/s"
        report("explore", None, None, msg)
    return cb


# ---------------------------------------------------------------------------- the graph as a model

def _host(x):
    """A NumPy view of a NumPy or CuPy array (``None`` stays ``None``)."""
    import numpy as np
    if x is None:
        return None
    get = getattr(x, "get", None)
    if callable(get) and not isinstance(x, (dict, np.ndarray)):
        x = get()
    return np.asarray(x)


def _graph_cost(g, resource: str):
    """The per-edge cost array of ``resource`` in a StateGraph (``None`` if it has none)."""
    costs = getattr(g, "costs", None)
    if isinstance(costs, Mapping):
        return costs.get(resource)
    return None


class _GraphView:
    """A StateGraph with its model: decode states, tell edges as steps, find shortest runs."""

    def __init__(self, compiled, graph, resource: str) -> None:
        import numpy as np
        self.c = compiled
        self.g = graph
        self.indptr = _host(graph.indptr).astype(np.int64, copy=False)
        self.indices = _host(graph.indices)
        self.n_states = len(self.indptr) - 1
        self.n_edges = int(self.indptr[-1])
        cost = _host(_graph_cost(graph, resource))
        self.cost = np.zeros(self.n_edges, np.int64) if cost is None else cost
        time = _host(getattr(graph, "time", None))
        self.time = np.ones(self.n_edges, np.int64) if time is None else time
        action = getattr(graph, "action", None)
        if action is None:
            action = getattr(graph, "edge_transition", None)
        self.action = _host(action)
        self.states = _host(graph.states)
        self.error_state = self._find_error_state()
        out_degree = np.diff(self.indptr)
        dead = np.flatnonzero(out_degree == 0)
        if self.error_state is not None:
            dead = dead[dead != self.error_state]
        self.deadlocks = dead
        self.n_deadlocks = int(len(dead))
        self._parent_edge = None
        self._pc_names = {p.name for p in compiled.processes}
        self._channels = set(getattr(compiled, "channels", {}) or {})

    # -- structure -----------------------------------------------------------------------

    def _find_error_state(self) -> int | None:
        """The error state's id, or ``None`` when it is not reachable."""
        v = int(getattr(self.g, "error_state", -1))
        return v if 0 <= v < self.n_states else None

    def source_of(self, edge: int) -> int:
        import numpy as np
        return int(np.searchsorted(self.indptr, edge, side="right") - 1)

    def first_deadlock(self) -> int:
        return int(self.deadlocks[0])

    def parent_edge(self, v: int) -> int:
        """The edge by which breadth-first search first reached state ``v`` (-1 for 0)."""
        import numpy as np
        par = getattr(self.g, "parent", None)
        pact = getattr(self.g, "parent_action", None)
        if par is None or pact is None:
            if self._parent_edge is None:
                self._parent_edge = _bfs_parent_edges(self.indptr, self.indices)
            return int(self._parent_edge[v])
        u = int(par[v])
        if u < 0:
            return -1
        lo, hi = int(self.indptr[u]), int(self.indptr[u + 1])
        hit = np.flatnonzero((self.indices[lo:hi] == v) & (self.action[lo:hi] == int(pact[v])))
        return lo + int(hit[0]) if hit.size else -1

    def trace_to(self, target: int) -> tuple[Step, ...]:
        """A shortest run from the initial state to ``target``, as steps."""
        edges = []
        v = int(target)
        seen = 0
        while v != 0:
            e = self.parent_edge(v)
            if e < 0 or seen > self.n_states:
                break
            edges.append(e)
            v = self.source_of(e)
            seen += 1
        return tuple(self.step(e) for e in reversed(edges))

    # -- decoding ------------------------------------------------------------------------

    def decode(self, sid: int) -> dict[str, Any]:
        """State ``sid`` as ``{process: local state, variable: value, channel: items}``
        (:func:`statespace.decode_state`; arrays as lists); ``{}`` for the error state."""
        from statespace import decode_state
        if self.error_state is not None and sid == self.error_state:
            return {}
        return decode_state(self.g, sid)

    def changes(self, before: Mapping[str, Any], after: Mapping[str, Any]):
        """What a step changed, local states aside: array cells one by one, channels whole."""
        out = []
        for k, new in after.items():
            if k in self._pc_names:
                continue
            old = before.get(k)
            if old == new:
                continue
            if (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)
                    and k not in self._channels):
                out.extend((f"{k}[{i}]", a, b) for i, (a, b) in enumerate(zip(old, new))
                           if a != b)
            else:
                out.append((k, old, new))
        return tuple(out)

    def moves(self, edge: int) -> tuple[Move, ...]:
        if self.action is None:
            return ()
        a = int(self.action[edge])
        try:
            tids = self.c.action_transitions(a)
        except (IndexError, AttributeError):
            return ()
        prop = getattr(self.c, "property_process", None)
        items = []
        for tid in tids:
            t = self.c.transitions[tid]
            p = self.c.processes[t.process]
            key = (t.process == prop, t.sync_kind not in ("send", "bsend"), t.process)
            pos = getattr(t, "pos", None) or getattr(t.node, "pos", None)
            items.append((key, Move(p.name, p.states[t.src], p.states[t.dst],
                                    _sync_text(t.node.sync), getattr(pos, "line", None))))
        return tuple(m for _, m in sorted(items, key=lambda x: x[0]))

    def step(self, edge: int) -> Step:
        u = self.source_of(edge)
        v = int(self.indices[edge])
        error = self.error_state is not None and v == self.error_state
        after = self.decode(v)
        changed = () if error else self.changes(self.decode(u), after)
        return Step(u, v, int(edge), self.moves(edge), int(self.cost[edge]),
                    int(self.time[edge]), changed, after, error)


def _bfs_parent_edges(indptr, indices):
    """BFS from state 0 over CSR arrays; parent edge of each state (first discovery)."""
    import numpy as np
    n = len(indptr) - 1
    parent = np.full(n, -1, np.int64)
    seen = np.zeros(n, bool)
    seen[0] = True
    frontier = np.array([0], np.int64)
    while frontier.size:
        starts, ends = indptr[frontier], indptr[frontier + 1]
        counts = ends - starts
        if counts.sum() == 0:
            break
        # all edges of the frontier, in (source, edge) order
        edge_ids = np.repeat(starts - np.cumsum(np.r_[0, counts[:-1]]), counts) + \
            np.arange(counts.sum())
        targets = np.asarray(indices[edge_ids], np.int64)
        new = ~seen[targets]
        edge_ids, targets = edge_ids[new], targets[new]
        uniq, first = np.unique(targets, return_index=True)
        parent[uniq] = edge_ids[first]
        seen[uniq] = True
        frontier = uniq
    return parent


def _sync_text(sync) -> str | None:
    if sync is None:
        return None
    owner = f"{sync.process.name}->" if getattr(sync, "process", None) is not None else ""
    vals = sync.values
    if not vals:
        body = ""
    elif len(vals) == 1:
        body = _expr_text(vals[0])
    else:
        body = "{" + ", ".join(_expr_text(v) for v in vals) + "}"
    return f"{owner}{sync.channel}{sync.op}{body}"


def _expr_text(e) -> str:
    """DVE text of an expression (fully parenthesised below the top level)."""
    from dve import syntax as s
    if isinstance(e, s.IntLit):
        return str(e.value)
    if isinstance(e, s.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, s.Name):
        return e.name
    if isinstance(e, s.Index):
        return f"{e.name}[{_expr_text(e.index)}]"
    if isinstance(e, s.StateTest):
        return f"{e.process.name}.{e.state}"
    if isinstance(e, s.Remote):
        idx = f"[{_expr_text(e.index)}]" if e.index is not None else ""
        return f"{e.process.name}->{e.name}{idx}"
    if isinstance(e, s.Unary):
        sep = " " if e.op == "not" else ""
        return f"{e.op}{sep}{_paren(e.operand)}"
    if isinstance(e, s.Binary):
        return f"{_paren(e.left)} {e.op} {_paren(e.right)}"
    return "?"


def _paren(e) -> str:
    from dve import syntax as s
    text = _expr_text(e)
    return f"({text})" if isinstance(e, s.Binary) else text


# ---------------------------------------------------------------------------- the engine

def _solve(view: _GraphView, *, ratio: bool, mode: str, backend: str):
    """Run the ``ocm`` engine on the view's arrays; returns (CycleResult, backend used).

    ``backend='auto'`` that lands on the GPU and runs out of device memory falls back to the
    CPU with a :class:`ocm.backend.GpuFallbackWarning`.
    """
    import ocm
    from ocm.backend import is_out_of_memory, resolve_backend, warn_fallback

    used = resolve_backend(backend, view.n_edges)

    def call(where: str):
        return ocm.optimal_cycle(view.indptr, view.indices, view.cost,
                                 view.time if ratio else None, kind="ratio" if ratio else "mean",
                                 mode=mode, backend=where)

    try:
        return call(used), used
    except Exception as exc:
        if used == "gpu" and backend == "auto" and is_out_of_memory(exc):
            warn_fallback(exc, view.n_edges)
            return call("cpu"), "cpu"
        raise


#: The engine's timing keys, by phase of :data:`PHASES` (others are sub-timings or totals).
_ENGINE_PHASE = {"zero_time_check": "scc", "restrict": "scc", "scc": "scc",
                 "howard": "howard", "certify": "certify"}


def _engine_timings(result, total: float) -> dict[str, float]:
    """The engine's own timings mapped onto the phases scc, howard, certify."""
    out = {"scc": 0.0, "howard": 0.0, "certify": 0.0}
    timings = getattr(result, "timings", None) or {}
    for k, v in timings.items():
        if k in _ENGINE_PHASE:
            out[_ENGINE_PHASE[k]] += float(v)
    # Whatever the engine did not account for (validation, copies) counts as policy iteration.
    out["howard"] += max(0.0, total - sum(out.values()))
    return out


def _cycle_of(result) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(vertices, edges) of the engine's critical cycle; edge i leaves vertex i."""
    cyc = getattr(result, "cycle", None)
    verts = getattr(cyc, "vertices", None)
    edges = getattr(cyc, "edges", None)
    if verts is None:
        verts = cyc if cyc is not None else getattr(result, "cycle_vertices", ())
    if edges is None:
        edges = getattr(result, "cycle_edges", None) or getattr(result, "edges", ())
    return tuple(int(v) for v in verts), tuple(int(e) for e in edges)


def _rotate_to_closest(view: _GraphView, verts, edges):
    """Start the cycle at its state with the smallest id, the one BFS reached first (ids follow
    BFS order), so the prefix printed with ``--trace`` is as short as it can be."""
    if not edges:
        return verts, edges
    srcs = [view.source_of(e) for e in edges]
    k = srcs.index(min(srcs))
    srcs = srcs[k:] + srcs[:k]
    return tuple(srcs), tuple(edges[k:]) + tuple(edges[:k])


def _exact_value(result, cycle: tuple[Step, ...], ratio: bool) -> Fraction:
    v = getattr(result, "value", None)
    if isinstance(v, Fraction):
        return v
    if isinstance(v, int):
        return Fraction(v)
    # The engine gave a float only: the exact value is the critical cycle's own ratio.
    num = sum(s.cost for s in cycle)
    den = sum(s.time for s in cycle) if ratio else len(cycle)
    return Fraction(num, den)


def _reraise_with_trace(exc: BaseException, view: _GraphView) -> None:
    """Turn the engine's 'no answer' into an error that shows the run explaining it."""
    from ocm.errors import NoCycleError, ZeroTimeCycleError

    if isinstance(exc, ZeroTimeCycleError):
        edges = tuple(int(e) for e in (getattr(exc, "edges", ()) or ()))
        if not edges and getattr(exc, "cycle", ()):
            edges = _edges_along(view, tuple(int(v) for v in exc.cycle), zero_time=True)
        verts = tuple(view.source_of(e) for e in edges)
        verts, edges = _rotate_to_closest(view, verts, edges)
        steps = tuple(view.step(e) for e in edges)
        desc = ", ".join(s.transition for s in steps)
        new = ZeroTimeCycleError(
            f"the cycle ratio is undefined: a reachable cycle of {len(steps)} step"
            f"{'s' * (len(steps) != 1)} takes no time ({desc or 'see the cycle below'}); give "
            "its transitions a positive 'time', or analyse the cycle mean (drop --ratio)",
            cycle=verts, edges=edges)
        new.trace = steps  # type: ignore[attr-defined]
        new.trace_title = "zero-time cycle"  # type: ignore[attr-defined]
        new.prefix = view.trace_to(verts[0]) if verts else ()  # type: ignore[attr-defined]
        raise new from exc
    if isinstance(exc, NoCycleError):
        if view.n_deadlocks:
            target, what = view.first_deadlock(), "a deadlock"
        elif view.error_state is not None:
            target, what = view.error_state, "the error state"
        else:
            target, what = None, None
        ends = []
        if view.n_deadlocks:
            ends.append(f"{view.n_deadlocks} deadlock state{'s' * (view.n_deadlocks != 1)}")
        if view.error_state is not None:
            ends.append("the error state")
        new = NoCycleError(
            f"no reachable cycle: every run of the model stops, in "
            f"{' or '.join(ends) or 'a state without successors'} "
            f"({view.n_states} states, {view.n_edges} transitions), so no load is sustained "
            "forever")
        new.trace = view.trace_to(target) if target is not None else ()  # type: ignore
        new.trace_title = f"shortest run to {what}" if what else "run"  # type: ignore
        raise new from exc


def _edges_along(view: _GraphView, verts: tuple[int, ...], zero_time: bool = False):
    """One edge per consecutive pair of a vertex cycle (zero-time edges preferred)."""
    out = []
    for i, u in enumerate(verts):
        v = verts[(i + 1) % len(verts)]
        lo, hi = int(view.indptr[u]), int(view.indptr[u + 1])
        cands = [e for e in range(lo, hi) if int(view.indices[e]) == v]
        if zero_time:
            cands.sort(key=lambda e: int(view.time[e]) != 0)
        if cands:
            out.append(cands[0])
    return tuple(out)
