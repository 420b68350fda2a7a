"""Runs of the model: edges of a :class:`~statespace.StateGraph` told as steps of the model.

The cycle engine answers with edge ids; a user reads a run: which processes moved, from which
local state to which, through which channel, at what cost and time, changing which variables.
:class:`Witness` makes that translation for any caller (``dvecost analyze``, its error
messages, tests), so that every one of them shows the same run:

- an edge's label is mapped through :meth:`StateGraph.action_moves` (which maps ``system
  sync`` step labels to the model's step code) to the transitions that moved; each label is
  described once and kept;
- states are decoded with :func:`~statespace.decode_state`, only those on the runs asked for,
  each once;
- shortest runs from the initial state come from :func:`~statespace.graph.shortest_edges`;
- a sync's values are printed with :func:`dve.format.format_expr`.

Decoding costs what it shows: a run of ``k`` steps decodes ``k + 1`` states and describes at
most ``k`` actions, whatever the size of the graph.

Examples
--------
>>> from dve import load_model
>>> from statespace import build_state_graph
>>> g = build_state_graph(load_model("byte x; process P { state a, b; init a; "
...     "trans a -> b { effect x = x + 1; cost 2; }, b -> a {}; } system async;"))
>>> w = Witness(g, "cost")
>>> [(s.source, s.target, s.transition, s.cost, s.changed) for s in w.trace_to(1)]
[(0, 1, 'P: a -> b', 2, (('x', 0, 1),))]
>>> w.state(0)
{'P': 'a', 'x': 0}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import compress
from operator import ne
from typing import Any, Mapping, Sequence

import numpy as np

from dve.format import format_expr

from .evaluate import explain_fault
from .graph import StateGraph, decode_state, shortest_edges
from .quotient import Quotient, witness_graph

__all__ = ["Move", "Runs", "Step", "Witness", "decode_runs", "jsonable", "lifted_runs"]


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
        (``system sync``); a property process's move comes last.
    cost, time : int
        The step's cost (of the analysed resource) and time.
    changed : tuple of (name, before, after)
        Variables and channel contents that the step changed (local states are in ``moves``).
    state : Mapping
        The state after the step: process name -> local state, variable -> value (empty for
        the error state).
    error : bool
        Whether the step ends in the error state.
    fault : str or None
        For a step into the error state: what faulted, with its model line
        (:func:`~statespace.evaluate.explain_fault`).
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
    fault: str | None = None

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
                "state": jsonable(dict(self.state)), "error": self.error, "fault": self.fault}


def jsonable(x: Any) -> Any:
    """Plain JSON types: tuples and arrays to lists, NumPy scalars to Python numbers.

    >>> jsonable({"q": [(1, 2)], "n": np.int64(3)})
    {'q': [[1, 2]], 'n': 3}
    """
    if isinstance(x, Mapping):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        if set(map(type, x)) <= _PLAIN:
            return list(x)   # an array of 65,536 cells: one pass in C, not 65,536 calls
        return [jsonable(v) for v in x]
    if isinstance(x, np.generic):
        return x.item()
    return x


_PLAIN = {int, str, float, bool}


def _sync_text(sync) -> str | None:
    if sync is None:
        return None
    owner = f"{sync.process.name}->" if sync.process is not None else ""
    vals = sync.values
    body = ("" if not vals else format_expr(vals[0]) if len(vals) == 1
            else "{" + ", ".join(format_expr(v) for v in vals) + "}")
    return f"{owner}{sync.channel}{sync.op}{body}"


class Witness:
    """Tells edges, runs and cycles of ``graph`` as steps of its model.

    Parameters
    ----------
    graph : StateGraph
        A graph built with its model (``graph.model`` set; a graph read by ``load_graph``
        decodes states but cannot name transitions, so its steps have no moves).
    resource : str
        The cost resource whose amounts the steps carry.

    Decoded states and the moves of each edge label are kept, so a run decodes each of its
    states once and describes each action once.
    """

    def __init__(self, graph: StateGraph, resource: str) -> None:
        self.graph = graph
        self.resource = resource
        # (offsets held in part, a graph gathered from blocks across processes, answer
        # np.searchsorted for the rows they hold and refuse np.asarray: kept as they are)
        ip = graph.indptr
        self._indptr = ip if hasattr(ip, "searchsorted") else np.asarray(ip)
        if resource not in graph.resources:
            graph.cost(resource)   # raises the error that names the resources
        self._states: dict[int, dict[str, Any]] = {}
        self._moves: dict[int, tuple[Move, ...]] = {}
        self._by_transition: dict[int, tuple[tuple, Move]] = {}
        model = graph.model
        self._pcs = frozenset(p.name for p in model.processes) if model is not None \
            else frozenset(graph.process_states)
        self._channels = frozenset(model.channels) if model is not None else frozenset()

    # -- pieces ------------------------------------------------------------------------

    def state(self, sid: int) -> dict[str, Any]:
        """State ``sid`` decoded (:func:`decode_state`); ``{}`` for the error state."""
        sid = int(sid)
        st = self._states.get(sid)
        if st is None:
            st = {} if sid == self.graph.error_state else decode_state(self.graph, sid)
            self._states[sid] = st
        return st

    def moves(self, label: int) -> tuple[Move, ...]:
        """Who moves in an edge labelled ``label``: sender before receiver, the property
        process last (built on first use, then kept)."""
        label = int(label)
        out = self._moves.get(label)
        if out is None:
            model = self.graph.model
            if model is None:
                return ()
            # (what CompiledModel.action_moves tells of each transition, one Move per
            # transition kept: a sync step's label is new at every step, its moves are not)
            items = [self._move(tid)
                     for tid in model.action_transitions(self.graph.model_action(label))]
            out = tuple(m for _, m in sorted(items, key=lambda x: x[0]))
            self._moves[label] = out
        return out

    def _move(self, tid: int) -> tuple[tuple, Move]:
        """Transition ``tid``'s move and its place among a step's moves (sender before
        receiver, the property process last), built once."""
        got = self._by_transition.get(tid)
        if got is None:
            model = self.graph.model
            t = model.transitions[tid]
            p = model.processes[t.process]
            sync = t.node.sync
            op = sync.op if sync is not None else None
            got = ((t.process == model.property_process, op != "!", t.process),
                   Move(p.name, p.states[t.src], p.states[t.dst], _sync_text(sync),
                        t.pos.line if t.pos is not None else None))
            self._by_transition[tid] = got
        return got

    def source_of(self, edge: int) -> int:
        """The state edge ``edge`` leaves."""
        return int(np.searchsorted(self._indptr, edge, side="right") - 1)

    def _changes(self, before: Mapping[str, Any], after: Mapping[str, Any]):
        """What a step changed, local states aside: array cells one by one, channels whole."""
        out = []
        for k, new in after.items():
            if k in self._pcs:
                continue
            old = before.get(k)
            if old == new:
                continue
            if (isinstance(old, list) and isinstance(new, list) and len(old) == len(new)
                    and k not in self._channels):
                # The cells that differ, found in C (arrays of 65,536 cells, every step).
                out.extend((f"{k}[{i}]", old[i], new[i])
                           for i in compress(range(len(old)), map(ne, old, new)))
            else:
                out.append((k, old, new))
        return tuple(out)

    # -- steps and runs ------------------------------------------------------------------

    def step(self, edge: int) -> Step:
        """Edge ``edge`` as a step."""
        edge = int(edge)
        g = self.graph   # read element by element: a graph still on a device copies a few
        u, v = self.source_of(edge), int(g.peek("indices", edge))
        label = int(g.peek("action", edge))
        error = v == g.error_state
        after = self.state(v)
        changed = () if error else self._changes(self.state(u), after)
        fault = None
        if error and g.model is not None and u != g.error_state:
            fault = explain_fault(g.model, g.peek("states", u).tolist(), g.model_action(label))
        return Step(u, v, edge, self.moves(label), int(g.peek("costs", edge, self.resource)),
                    int(g.peek("time", edge)), changed, after, error, fault)

    def run(self, edges: Sequence[int]) -> tuple[Step, ...]:
        """Consecutive edges as steps."""
        return tuple(self.step(e) for e in edges)

    def trace_to(self, sid: int) -> tuple[Step, ...]:
        """A shortest run from the initial state to state ``sid`` (the breadth-first tree's:
        :func:`~statespace.graph.shortest_edges`)."""
        return self.run(shortest_edges(self.graph, int(sid)))

    def cycle(self, edges: Sequence[int]) -> tuple[Step, ...]:
        """A cycle given by its edges, started at its state with the smallest id: the one
        breadth-first search reached first (ids follow BFS order), so the run reaching it
        (``trace_to(cycle[0].source)``) is as short as it can be."""
        edges = [int(e) for e in edges]
        if not edges:
            return ()
        sources = [self.source_of(e) for e in edges]
        k = sources.index(min(sources))
        return self.run(edges[k:] + edges[:k])


@dataclass(frozen=True)
class Runs:
    """The runs that explain an optimal cycle, decoded (:func:`decode_runs`).

    Attributes
    ----------
    cycle : tuple of Step
        The cycle, from its state reached first.
    prefix : tuple of Step
        A shortest run from the initial state to the cycle.
    deadlock, error : tuple of Step or None
        A shortest run to the first deadlock / to the error state; None where there is none.
    witness : Witness
        The decoder of the graph the steps' state and edge ids refer to (``witness.graph``):
        the explored graph, or for a symmetry quotient the graph of the runs lifted to the
        full model.
    """

    cycle: tuple[Step, ...]
    prefix: tuple[Step, ...]
    deadlock: tuple[Step, ...] | None
    error: tuple[Step, ...] | None
    witness: Witness


def lifted_runs(quotient: Quotient, edges: Sequence[int]) -> tuple[StateGraph, list[int]]:
    """The graph holding the runs of a symmetry ``quotient`` lifted to the full model (the
    cycle ``edges``, the runs to it, to the first deadlock and to the error state), and the
    cycle's edges in it (:func:`statespace.quotient.witness_graph`)."""
    g = quotient.graph
    ends = ([int(g.deadlocks[0])] if g.n_deadlocks else []) + \
        ([g.error_state] if g.error_state >= 0 else [])
    wg, cycle, _ = witness_graph(quotient, [int(e) for e in edges], ends)
    return wg, cycle


def decode_runs(quotient: Quotient, cycle_edges: Sequence[int], resource: str) -> Runs:
    """The optimal cycle given by its ``cycle_edges`` in ``quotient.graph``, the run reaching
    it and the runs to the first deadlock and to the error state, as steps of the model
    (lifted to the full model when the quotient is reduced)."""
    shown, edges = quotient.graph, cycle_edges
    if quotient.reduced:
        shown, edges = lifted_runs(quotient, cycle_edges)
    w = Witness(shown, resource)
    cycle = w.cycle(edges)
    return Runs(cycle, w.trace_to(cycle[0].source) if cycle else (),
                w.trace_to(shown.deadlocks[0]) if shown.n_deadlocks else None,
                w.trace_to(shown.error_state) if shown.error_state >= 0 else None, w)
