"""The value :func:`dvecost.analyze` returns: :class:`Analysis`, made of runs of
:class:`Step` and :class:`Move` (those two come from :mod:`statespace.witness`, which decodes
them, and are re-exported here).

An :class:`Analysis` is frozen. :mod:`dvecost.report` renders it as text, JSON, DOT, Markdown
and HTML; it renders itself in a notebook (``_repr_markdown_``, ``_repr_html_``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping

from ocm.errors import NoCycleError, ZeroTimeCycleError
from statespace import StateGraph
from statespace.quotient import Quotient
from statespace.witness import Move, Step, Witness, jsonable, lifted_runs

__all__ = ["Analysis", "Step", "Move", "NoCycleRun", "ZeroTimeCycleRun", "PHASES", "demo",
           "fraction_text", "no_answer", "phase_timings", "symmetry_summary", "with_counts"]

#: Phases timed by :func:`dvecost.analyze`, in order (keys of :attr:`Analysis.seconds`):
#: loading and compiling the model, building the state graph, the engine's SCC decomposition,
#: policy iteration and exact certificate, and turning the answer into runs of the model.
PHASES: tuple[str, ...] = ("parse", "explore", "scc", "howard", "certify", "report")

#: The cycle engine's timing keys, by phase of :data:`PHASES` (others are sub-timings or totals).
#: The engine across processes (``ocm.dist.PHASES``) names its phases more finely.
_ENGINE_PHASE = {"zero_time_check": "scc", "restrict": "scc", "scc": "scc",
                 "howard": "howard", "certify": "certify",
                 "trim": "scc", "scc_forward": "scc", "scc_backward": "scc",
                 "value_cycles": "howard", "value_representatives": "howard",
                 "value_sums": "howard", "value_ranks": "howard", "improve": "howard",
                 "cycle": "certify"}


def phase_timings(timings: Mapping[str, float], total: float) -> dict[str, float]:
    """The cycle engine's own ``timings`` mapped onto the phases scc, howard, certify; of its
    ``total`` time, what the engine did not account for (validation, copies) counts as policy
    iteration.

    >>> phase_timings({"scc": 1.0, "restrict": 0.5, "howard": 2.0, "total": 9.0}, 4.0)
    {'scc': 1.5, 'howard': 2.5, 'certify': 0.0}
    """
    out = {"scc": 0.0, "howard": 0.0, "certify": 0.0}
    for k, v in timings.items():
        if k in _ENGINE_PHASE:
            out[_ENGINE_PHASE[k]] += float(v)
    out["howard"] += max(0.0, total - sum(out.values()))
    return out


def symmetry_summary(quotient: Quotient, requested: str) -> dict:
    """What the report says about symmetry (:attr:`Analysis.symmetry`): the groups reduced,
    the classes explored and the full product's size (exact: the sum of the orbits' sizes), or
    why nothing was reduced."""
    out = {"requested": requested, "reduced": quotient.reduced, **quotient.symmetry.to_json()}
    if quotient.reduced:
        out["classes"] = quotient.graph.n_states
        out["full_states"] = quotient.full_size() if quotient.graph.complete else None
    return out


def with_counts(exc: BaseException, graph) -> BaseException:
    """``exc`` with ``exc.counts`` set to the states and transitions of ``graph`` (what a stop
    after exploration reports as found); counts already attached are kept.

    >>> from runtime.errors import Interrupted
    >>> class G: n_states, n_edges = 6, 12
    >>> with_counts(Interrupted(2, "SIGINT"), G()).counts
    {'states': 6, 'transitions': 12}
    """
    if not getattr(exc, "counts", None):
        exc.counts = {"states": int(graph.n_states), "transitions": int(graph.n_edges)}
    return exc


def fraction_text(x: Fraction) -> str:
    """``'p/q'``, or ``'p'`` for an integer.

    >>> fraction_text(Fraction(6, 4)), fraction_text(Fraction(-4))
    ('3/2', '-4')
    """
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"


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
    symmetry : Mapping or None
        Symmetry reduction: ``reduced``, the ``groups`` (template, instances, keys), the
        ``classes`` explored and ``full_states`` (the full product's size), or the ``reason``
        nothing was reduced; ``n_states`` and ``n_transitions`` count the graph explored.
        When reduced, ``graph`` holds the lifted runs (the states and edges the steps name),
        not the quotient.
    distributed : Mapping or None
        With the graph left in blocks across processes (the engine across processes), its
        ``processes``, the wall ``seconds`` of each phase on the slowest process for it
        (``search``, ``handover``, the engine's phases of ``ocm.dist.PHASES``, ``witness``:
        the runs shown gathered) and the ``rounds`` of each kind of the engine's exchanges
        (``trim``, ``scc_forward``, ``howard`` iterations, ...); the ``--json`` key only then.
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
    graph: StateGraph | None = field(default=None, compare=False, repr=False)
    decode: Callable[[int], Mapping[str, Any]] | None = field(default=None, compare=False,
                                                              repr=False)
    symmetry: Mapping[str, Any] | None = None
    distributed: Mapping[str, Any] | None = None

    # -- derived -------------------------------------------------------------------------

    @property
    def exact(self) -> str:
        """The optimum as ``'p/q'``, or ``'p'`` when it is an integer.

        >>> demo().exact
        '3/2'
        """
        return fraction_text(self.value)

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
                       "index or value out of range, a cost or time outside 64 bits or a "
                       "negative time)")
        return tuple(out)

    def as_dict(self) -> dict:
        """The JSON object of ``dvecost analyze --json`` (``status`` ``'ok'``; phase times in
        seconds under ``timings``, with their ``total``).

        >>> d = demo().as_dict()
        >>> d["status"], d["value"], d["exact"], d["kind"], d["cycle"][0]["process"]
        ('ok', 1.5, '3/2', 'mean', 'P')
        """
        total = sum(self.seconds.values())
        more = {} if self.distributed is None else {"distributed": jsonable(
            dict(self.distributed))}
        return {
            "status": "ok",
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
            "initial": jsonable(dict(self.initial)),
            "cycle": [s.as_dict() for s in self.cycle],
            "cycle_cost": sum(s.cost for s in self.cycle),
            "cycle_time": sum(s.time for s in self.cycle),
            "prefix": [s.as_dict() for s in self.prefix],
            "deadlock_trace": None if self.deadlock_trace is None
            else [s.as_dict() for s in self.deadlock_trace],
            "error_trace": None if self.error_trace is None
            else [s.as_dict() for s in self.error_trace],
            "warnings": list(self.warnings),
            # system sync: the cycle tick by tick and the clients starved on it (dvecost.ticks)
            "ticks": None if (v := self.ticks()) is None else v.as_dict(),
            "starved": None if v is None else list(v.starved),
            "witness": self.witness,
            "symmetry": jsonable(dict(self.symmetry)) if self.symmetry is not None else None,
            "backend": self.backend,
            "iterations": self.iterations,
            **more,
            "timings": {**{k: round(v, 6) for k, v in self.seconds.items()},
                        "total": round(total, 6)},
        }

    def ticks(self, prefix: bool = False):
        """The critical cycle (``prefix``: the run reaching it) tick by tick
        (:func:`dvecost.ticks.tick_view`), or ``None`` unless the model is ``system sync`` and
        its runs were decoded.

        >>> demo().ticks() is None   # an async model
        True
        """
        from .ticks import tick_view
        if self.system != "sync" or not self.witness or not self.cycle:
            return None
        model = self.graph.model if self.graph is not None else None
        if prefix:
            return tick_view(self.prefix, self.initial, model)
        return tick_view(self.cycle, self.cycle[-1].state, model)

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


class NoCycleRun(NoCycleError):
    """No reachable cycle; ``trace`` is a shortest run to where every run stops."""

    def __init__(self, message: str, trace: tuple[Step, ...], trace_title: str) -> None:
        super().__init__(message)
        self.trace = trace
        self.trace_title = trace_title


class ZeroTimeCycleRun(ZeroTimeCycleError):
    """A reachable cycle takes no time (``--ratio``); ``trace`` is that cycle as steps and
    ``prefix`` a shortest run reaching it."""

    def __init__(self, message: str, trace: tuple[Step, ...], prefix: tuple[Step, ...]) -> None:
        super().__init__(message, tuple(s.source for s in trace), tuple(s.edge for s in trace))
        self.trace = trace
        self.trace_title = "zero-time cycle"
        self.prefix = prefix


def no_answer(exc: NoCycleError | ZeroTimeCycleError, quotient: Quotient,
              resource: str) -> NoCycleRun | ZeroTimeCycleRun:
    """The cycle engine's 'no answer' on ``quotient.graph`` told in the model's terms, with the
    run that explains it (lifted to the full model when the quotient is reduced)."""
    graph = quotient.graph
    shown, edges = graph, exc.edges if isinstance(exc, ZeroTimeCycleError) else ()
    if quotient.reduced:
        shown, edges = lifted_runs(quotient, edges)
    w = Witness(shown, resource)
    if isinstance(exc, ZeroTimeCycleError):
        steps = w.cycle(edges)
        desc = ", ".join(s.transition for s in steps)
        return ZeroTimeCycleRun(
            f"the cycle ratio is undefined: a reachable cycle of {len(steps)} step"
            f"{'s' * (len(steps) != 1)} takes no time ({desc or 'see the cycle below'}); give "
            "its transitions a positive 'time', or analyse the cycle mean (drop --ratio)",
            steps, w.trace_to(steps[0].source) if steps else ())
    n_dead, error = graph.n_deadlocks, graph.error_state >= 0
    ends = [f"{n_dead} deadlock state{'s' * (n_dead != 1)}"] if n_dead else []
    ends += ["the error state"] if error else []
    if n_dead:
        trace, title = w.trace_to(shown.deadlocks[0]), "shortest run to a deadlock"
    elif error:
        trace, title = w.trace_to(shown.error_state), "shortest run to the error state"
    else:
        trace, title = (), "run"
    return NoCycleRun(
        f"no reachable cycle: every run of the model stops, in "
        f"{' or '.join(ends) or 'a state without successors'} "
        f"({graph.n_states} states, {graph.n_edges} transitions), so no load is sustained "
        "forever", trace, title)


def demo() -> Analysis:
    """A tiny hand-built Analysis (one process, two states), for examples and doctests.

    >>> demo().exact, len(demo().cycle)
    ('3/2', 2)
    """
    a = Step(0, 1, 0, (Move("P", "a", "b"),), 1, 1, (("x", 0, 1),), {"P": "b", "x": 1})
    b = Step(1, 0, 1, (Move("P", "b", "a"),), 2, 1, (("x", 1, 0),), {"P": "a", "x": 0})
    return Analysis(model="<demo>", system="async", processes=("P",), n_variables=1,
                    n_channels=0, kind="mean", mode="max", cost="cost", resources=("cost",),
                    value=Fraction(3, 2), certified=True, n_states=2, n_transitions=2,
                    n_deadlocks=0, error_state_reached=False, initial={"P": "a", "x": 0},
                    cycle=(a, b), seconds={"parse": 0.001, "explore": 0.002})
