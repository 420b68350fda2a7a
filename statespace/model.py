"""The compiled model: a flat slot layout, transitions and actions, ready for exploration.

A state of the system is a fixed-width vector of integers, one per *slot*:

- one slot per process holding its control state (the index of its local state, in declaration
  order; process 0's slot also admits one value past its last state, which marks the error
  state, as the legacy DiVinE interpreter does);
- one slot per non-constant scalar variable (globals first, then each process's locals, in
  declaration order), and one per cell of an array variable;
- for each buffered channel, one slot for the number of queued items followed by
  ``size * arity`` item slots (item ``i`` field ``f`` at ``items + i * arity + f``; freed slots
  are zero, as in DiVinE).

Every slot has inclusive bounds ``lo <= value <= hi``; a state is packed into integer keys by
storing ``value - lo`` in ``bits`` bits (see :mod:`statespace.store`).

*Actions* are the global steps the explorer can take, in a fixed order that fixes the numbering
of states: each enabled action of a state yields one edge. In a ``system async`` model an action
is a single-process transition (no sync, or a buffered channel operation) or a rendezvous pair
(sender transition, receiver transition). With a property process every system action is paired
with every property transition (product actions), and each property transition also exists alone
(it fires only in states where the system has no step). ``system sync`` actions are the tuples
of one transition per process, numbered in mixed radix (see :meth:`CompiledModel.sync_choice`).

Examples
--------
>>> from dve.parser import parse_model
>>> from statespace import compile_model
>>> m = compile_model(parse_model("byte x; process P { state a, b; init a; "
...     "trans a -> b { effect x = 1; }; } system async;", "<doc>"))
>>> [s.name for s in m.slots]
['P', 'x']
>>> m.describe_action(0)
'P: a -> b'
>>> [(mv["process"], mv["src"], mv["dst"]) for mv in m.action_moves(0)]
[('P', 'a', 'b')]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dve import arith, syntax

__all__ = [
    "TYPE_RANGE",
    "Action",
    "ChannelInfo",
    "CompiledModel",
    "CompiledTransition",
    "ProcessInfo",
    "Slot",
    "VarInfo",
    "states_dtype",
]

#: Value range of each DVE type (legacy storage: byte = uint8, int = int16).
TYPE_RANGE: dict[str, tuple[int, int]] = arith.TYPE_RANGE


@dataclass(frozen=True)
class Slot:
    """One integer of the state vector: ``name`` as shown to users (``x``, ``a[3]``, ``P.y``,
    ``c.count``), inclusive bounds and the packed width in bits."""

    name: str
    lo: int
    hi: int
    kind: str  # 'pc', 'var', 'count', 'item'

    @property
    def bits(self) -> int:
        return max(1, (self.hi - self.lo).bit_length())


@dataclass(frozen=True)
class VarInfo:
    """A variable: its first slot (``base``), ``size`` (``None`` for a scalar), type and, for
    constants, the value(s) (``const_value``: int or tuple) instead of slots (``base == -1``)."""

    name: str
    owner: str | None  # process name for a local, None for a global
    type: str
    base: int
    size: int | None
    const_value: Any = None

    @property
    def is_const(self) -> bool:
        return self.base < 0

    @property
    def lo(self) -> int:
        return TYPE_RANGE[self.type][0]

    @property
    def hi(self) -> int:
        return TYPE_RANGE[self.type][1]


@dataclass(frozen=True)
class ChannelInfo:
    """A channel. ``types`` is ``None`` when untyped; ``size`` 0 means rendezvous. For a buffered
    channel ``count_slot`` holds the queue length and ``items`` the first item slot."""

    name: str
    owner: str | None
    types: tuple[str, ...] | None
    size: int
    count_slot: int = -1
    items: int = -1

    @property
    def buffered(self) -> bool:
        return self.types is not None and self.size > 0

    @property
    def arity(self) -> int:
        return len(self.types) if self.types is not None else 0


@dataclass(frozen=True)
class ProcessInfo:
    """A process: its control-state slot, local state names (index = encoding), initial state
    index, committed and accepting state indices, and its transitions' ids."""

    name: str
    index: int
    slot: int
    states: tuple[str, ...]
    init: int
    commit: frozenset[int]
    accept: frozenset[int]
    transitions: tuple[int, ...]
    is_property: bool = False


@dataclass(frozen=True)
class CompiledTransition:
    """One transition of one process, with its syntax node for evaluation and reporting.

    ``sync_kind`` is ``None`` (no sync), ``'send'``/``'recv'`` on a rendezvous channel, or
    ``'bsend'``/``'brecv'`` on a buffered channel. ``costs`` maps each resource to its amount
    expression (absent resources charge 0); ``time`` is ``None`` for the default of 1.
    ``writes`` names the variables the effects assign (for the legacy conflict rule).
    """

    id: int
    process: int
    src: int
    dst: int
    node: syntax.Transition
    sync_kind: str | None
    channel: str | None
    writes: frozenset[str]
    pos: Any = field(default=None, compare=False, repr=False)

    @property
    def costs(self) -> dict[str, syntax.Expr]:
        return {c.resource: c.amount for c in self.node.costs}

    @property
    def time(self) -> syntax.Expr | None:
        return self.node.time


@dataclass(frozen=True)
class Action:
    """A global step of a ``system async`` model.

    ``transitions`` are the participating transitions: one, or (sender, receiver) for a
    rendezvous (the values pass first, then the receiver's effects run, then the sender's).
    ``property`` is the id of the property transition paired with it, or ``None``. ``error``
    marks a step that always goes to the error state (the legacy rule: both rendezvous
    partners assign one global variable).
    """

    kind: str  # 'local', 'rendezvous', 'property'
    transitions: tuple[int, ...]
    property: int | None = None
    error: bool = False


@dataclass(frozen=True)
class CompiledModel:
    """A model compiled for exploration (immutable; see the module docstring for the layout).

    Attributes
    ----------
    name : str
        The model's name (usually its file name).
    system : str
        ``'async'`` or ``'sync'``.
    slots : tuple of Slot
        The state layout.
    processes : tuple of ProcessInfo
        All processes in declaration order, the property process included.
    variables, channels : dict
        By qualified name (``x`` for a global, ``P.x`` for a local).
    transitions : tuple of CompiledTransition
        All transitions, ids in (process, declaration) order.
    actions : tuple of Action
        ``system async`` only: the global steps in the order that fixes the numbering.
    property_process : int or None
        The index of the property process when it takes part in the product.
    resources : tuple of str
        The cost resources, sorted; ``('cost',)`` when the model names none.
    initial : tuple of int
        The initial state vector.
    error_state : tuple of int
        The state vector that stands for the error state.
    syntax : syntax.Model
        The model it was compiled from.
    """

    name: str
    system: str
    slots: tuple[Slot, ...]
    processes: tuple[ProcessInfo, ...]
    variables: dict[str, VarInfo]
    channels: dict[str, ChannelInfo]
    transitions: tuple[CompiledTransition, ...]
    actions: tuple[Action, ...]
    property_process: int | None
    resources: tuple[str, ...]
    initial: tuple[int, ...]
    error_state: tuple[int, ...]
    syntax: syntax.Model = field(repr=False, compare=False)

    @property
    def n_slots(self) -> int:
        return len(self.slots)

    @property
    def system_processes(self) -> tuple[ProcessInfo, ...]:
        """The processes other than the property process."""
        return tuple(p for p in self.processes if p.index != self.property_process)

    @property
    def n_actions(self) -> int:
        """Number of action ids (for ``system sync`` the size of the mixed-radix space)."""
        if self.system == "sync":
            n = 1
            for p in self.system_processes:
                n *= max(1, len(p.transitions))
            return n
        return len(self.actions)

    def sync_choice(self, action: int) -> tuple[int, ...]:
        """The transition ids a ``system sync`` action id stands for (one per process; the first
        process is the most significant digit)."""
        out = []
        for p in reversed(self.system_processes):
            radix = max(1, len(p.transitions))
            action, digit = divmod(action, radix)
            out.append(p.transitions[digit])
        return tuple(reversed(out))

    def action_transitions(self, action: int) -> tuple[int, ...]:
        """All transition ids taking part in an action (property transition last)."""
        if self.system == "sync":
            return self.sync_choice(action)
        a = self.actions[action]
        return a.transitions + ((a.property,) if a.property is not None else ())

    def describe_transition(self, tid: int) -> str:
        """``'P: a -> b'`` with the sync, e.g. ``'Client1: ready -> wait (reqL!)'``."""
        t = self.transitions[tid]
        p = self.processes[t.process]
        s = f"{p.name}: {p.states[t.src]} -> {p.states[t.dst]}"
        if t.node.sync is not None:
            s += f" ({t.node.sync.channel}{t.node.sync.op})"
        return s

    def describe_action(self, action: int) -> str:
        """A one-line description of an action: the moving processes, their local states and
        the channel; rendezvous partners joined by ``' | '``."""
        return " | ".join(self.describe_transition(t) for t in self.action_transitions(action))

    def action_moves(self, action: int) -> list[dict]:
        """The moves of an action, one dict per participating transition, for rendering runs:
        ``process``, ``src`` and ``dst`` (local state names), ``channel`` and ``op``
        (``'!'``/``'?'``, or ``None`` without sync), ``transition`` (id) and ``pos``
        (:class:`~dve.errors.SourcePos` of the transition, or ``None``)."""
        out = []
        for tid in self.action_transitions(action):
            t = self.transitions[tid]
            p = self.processes[t.process]
            sync = t.node.sync
            out.append({"process": p.name, "src": p.states[t.src], "dst": p.states[t.dst],
                        "channel": sync.channel if sync is not None else None,
                        "op": sync.op if sync is not None else None, "transition": tid,
                        "pos": t.pos})
        return out

    def action_positions(self, action: int) -> tuple:
        """The source positions of the transitions of an action."""
        return tuple(self.transitions[t].pos for t in self.action_transitions(action))


def states_dtype(cm: CompiledModel):
    """The narrowest integer dtype that holds every slot value of ``cm`` (a graph's
    ``states``).

    >>> from dve import load_model
    >>> from statespace import compile_model
    >>> states_dtype(compile_model(load_model("byte x; process P { state a; init a; } "
    ...                                       "system async;"))).__name__
    'uint8'
    """
    lo = min((s.lo for s in cm.slots), default=0)
    hi = max((s.hi for s in cm.slots), default=0)
    for dt in (np.uint8, np.int8, np.uint16, np.int16, np.int32):
        info = np.iinfo(dt)
        if info.min <= lo and hi <= info.max:
            return dt
    return np.int64
