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

import html
import math
import pathlib
import time as _time
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

__all__ = ["analyze", "Analysis", "Step", "Move", "PHASES"]

#: Phases timed by :func:`analyze`, in order (keys of :attr:`Analysis.seconds`).
PHASES: tuple[str, ...] = ("parse", "explore", "scc", "howard", "certify")

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
