"""The reachable state graph in compressed sparse row form.

Graph Representations
---------------------
A :class:`StateGraph` with ``n`` states and ``m`` edges holds:

``indptr`` : int64, shape (n + 1,)
    The edges leaving state ``i`` are ``indptr[i]:indptr[i + 1]`` (SciPy CSR convention).
``indices`` : int32 (int64 when n >= 2**31), shape (m,)
    The target state of each edge.
``costs`` : dict of str to int64 arrays, shape (m,)
    The cost of each edge per named resource (``'cost'`` when the model names none). One
    edge is one global step: a process moving alone charges its transition's cost; a rendezvous
    charges the sum of both partners; a ``system sync`` step the sum over all processes.
``time`` : int64, shape (m,)
    The duration of each edge: the transition's time (default 1), the maximum of the partners'
    times for a rendezvous or a ``system sync`` step.
``charge`` : uint8, uint16 or int32, shape (m,), with ``palette`` (a compact graph)
    The explorer stores no per-edge costs and times: edge ``e`` charges
    ``palette.costs[r][charge[e]]`` and takes ``palette.time[charge[e]]``. The palette holds
    each distinct (costs, time) once, in ascending order of (costs by resource, time): when
    every transition charges constants, those of the model's actions and the zeros that an
    edge into the error state charges (rows no edge uses included); otherwise those of the
    graph's edges. ``costs`` and ``time`` are then computed from them when first read (and
    kept); the cycle engine and the witness read ``charge`` and ``palette`` instead, so that a
    graph costs 9 bytes per transition (target, action, charge) rather than 24 + 8 per
    resource. ``charge`` is None for a graph holding full arrays (a loaded file, a witness
    graph).
``action`` : int32, shape (m,)
    Which global step made the edge: an index into :attr:`CompiledModel.actions`; for
    ``system sync`` a dense id whose mixed-radix step code (one digit per process, see
    :meth:`CompiledModel.sync_choice`) is ``action_codes[a]``. ``graph.describe_action(a)`` and
    ``graph.action_moves(a)`` name it either way.
``states`` : narrow ints, shape (n, n_slots)
    The state vectors, for decoding (:func:`decode_state`).

Invariants (checked by :func:`statespace.graphfile.validate_graph`): state 0 is the initial state; states are
numbered in breadth-first discovery order, ties broken by (source id, action id), so two builds
of one model give identical arrays; the edges of each row are sorted by (target, action);
duplicate edges and self-loops are kept (DiVinE counts every generated successor); the error
state, if reached, is one state (``error_state``) with no successors; ``parent`` /
``parent_action`` give a breadth-first tree for shortest traces (``parent[0] == -1``).

Examples
--------
>>> import dve, statespace
>>> model = dve.load_model("process P { byte x; state a; init a; trans a -> a "
...                        "{ guard x < 2; effect x = x + 1; cost 3; }; } system async;")
>>> g = statespace.build_state_graph(model)
>>> g.n_states, g.n_edges, g.indices.tolist(), g.cost().tolist()
(3, 2, [1, 2], [3, 3])
>>> decode_state(g, 2)
{'P': 'a', 'P.x': 2}
>>> g.charge.tolist(), g.palette.costs["cost"].tolist(), g.palette.time.tolist()
([1, 1], [0, 3], [0, 1])
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dve.errors import ConfigurationError
from runtime.device import to_host
from runtime.errors import StateSpaceError

from .model import CompiledModel

__all__ = [
    "Palette",
    "StateGraph",
    "TraceStep",
    "charge_dtype",
    "decode_state",
    "derived",
    "lazy_graph",
    "shortest_edges",
    "shortest_trace",
]


@dataclass(frozen=True, eq=False)
class Palette:
    """The distinct charges of a compact graph's edges: row ``j`` charges ``costs[r][j]`` of
    every resource ``r`` and takes ``time[j]`` (int64 arrays of one entry per row, on the host).

    >>> p = Palette({"cost": np.array([0, 5])}, np.array([1, 2]))
    >>> p.size, p.gather(np.array([1, 1, 0], np.uint8), "cost").tolist()
    (2, [5, 5, 0])
    """

    costs: dict[str, np.ndarray]
    time: np.ndarray

    @property
    def size(self) -> int:
        return int(self.time.shape[0])

    @property
    def nbytes(self) -> int:
        return int(self.time.nbytes + sum(c.nbytes for c in self.costs.values()))

    def table(self, name: str | None) -> np.ndarray:
        """The cost table of resource ``name``, or the times for ``None``."""
        return self.time if name is None else self.costs[name]

    def gather(self, charge, name: str | None = None):
        """Per edge of ``charge`` (any array module; CuPy gives a CuPy array): its cost of
        resource ``name``, or its time for ``None``, as int64."""
        table = self.table(name)
        if not isinstance(charge, np.ndarray):
            from runtime.arrays import module_of
            table = module_of(charge).asarray(table)
        return table[charge]


def charge_dtype(size: int):
    """The narrowest dtype of a graph's ``charge`` array for a palette of ``size`` rows.

    >>> charge_dtype(256), charge_dtype(257), charge_dtype(70000)
    (<class 'numpy.uint8'>, <class 'numpy.uint16'>, <class 'numpy.int32'>)
    """
    return np.uint8 if size <= 1 << 8 else np.uint16 if size <= 1 << 16 else np.int32


#: The pending value of ``costs`` and ``time`` in a compact graph: computed from ``charge``
#: and ``palette`` when first read.
_DERIVED = "derived from charge and palette"


@dataclass(frozen=True, eq=False)
class StateGraph:
    """The reachable state graph (see the module docstring for the arrays and invariants).

    Attributes
    ----------
    deadlocks : ndarray of int64
        Expanded states without successors, the error state excluded. In a partial graph
        the states not expanded yet are not listed: whether they deadlock is unknown.
    error_state : int
        The id of the error state, or -1 when it is not reachable.
    depth : int
        The number of breadth-first levels minus one (0 for a single state).
    error_successors : bool
        True when the error state was expanded like any state (legacy BEEM counting, see
        :func:`~statespace.build_state_graph`).
    complete : bool
        False for the partial graph of a run stopped by a limit: then only states
        ``0 .. n_expanded - 1`` had their successors generated.
    model : CompiledModel or None
        The model, for decoding (``None`` after :func:`statespace.graphfile.load_graph`, which keeps ``slot_names``,
        ``process_states`` and ``action_names`` instead).
    on_device : tuple or None
        When the explorer finished on a GPU: the edges as it still holds them there,
        ``(indptr, indices, charge)`` as CuPy arrays equal to the host arrays (costs and
        times are read through ``palette``), so that a cycle engine on the same device reads
        them instead of copying the host arrays back (``dvecost analyze`` does). None
        otherwise.

    A graph explored on a GPU (:func:`lazy_graph`) leaves its large arrays (``indices``,
    ``action``, ``charge``, ``states``, ``parent``, ``parent_action``) on the device
    until they are read: each is copied to the host on its first read, whole, and is an
    ordinary NumPy array from then on. :meth:`peek` reads a few elements without that copy,
    and :meth:`released` drops what the graph holds on the device.
    """

    indptr: np.ndarray
    indices: np.ndarray
    costs: dict[str, np.ndarray]
    time: np.ndarray
    action: np.ndarray
    states: np.ndarray
    parent: np.ndarray
    parent_action: np.ndarray
    deadlocks: np.ndarray
    error_state: int = -1
    depth: int = 0
    complete: bool = True
    error_successors: bool = False
    action_codes: np.ndarray | None = None
    n_expanded: int = -1
    initial: int = 0
    model: CompiledModel | None = field(default=None, repr=False)
    slot_names: tuple[str, ...] = ()
    slot_kinds: tuple[str, ...] = ()
    process_states: dict[str, tuple[str, ...]] = field(default_factory=dict)
    action_names: tuple[str, ...] = ()
    name: str = ""
    seconds: float = 0.0
    on_device: tuple | None = field(default=None, repr=False)
    charge: np.ndarray | None = None
    palette: Palette | None = None

    # A graph built by :func:`lazy_graph` lacks the fields still pending (on a device, or
    # derived from ``charge`` and ``palette``): they are in ``_pending``, and the first read of
    # one computes or copies it to the host and sets it, so that every read sees a NumPy array.
    # ``dataclasses.replace`` of such a graph reads every field (so computes what is pending).

    def __getattr__(self, name: str):
        # Called only for attributes not set: the pending fields (and genuine misses).
        pending = self.__dict__.get("_pending")
        if not pending or name not in pending:
            raise AttributeError(f"'StateGraph' object has no attribute '{name}'")
        if pending[name] is _DERIVED:
            pal, charge = self.palette, self.charge
            value = ({r: pal.gather(charge, r) for r in pal.costs} if name == "costs"
                     else pal.gather(charge))
            value = _fetch(value)
        else:
            value = _fetch(pending[name])
        object.__setattr__(self, name, value)
        del pending[name]   # the device's copy is let go (unless on_device holds it too)
        return value

    def _pending_value(self, name: str):
        return (self.__dict__.get("_pending") or {}).get(name)

    @property
    def n_states(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def n_edges(self) -> int:
        a = self._pending_value("indices")
        return int((self.indices if a is None else a).shape[0])

    @property
    def n_transitions(self) -> int:
        """Same as :attr:`n_edges` (DiVinE's word)."""
        return self.n_edges

    @property
    def n_deadlocks(self) -> int:
        return int(self.deadlocks.shape[0])

    @property
    def resources(self) -> tuple[str, ...]:
        costs = self._pending_value("costs")
        if costs is _DERIVED:
            return tuple(self.palette.costs)
        return tuple(self.costs if costs is None else costs)

    def cost(self, name: str | None = None) -> np.ndarray:
        """The cost array of resource ``name``; with ``None`` the only resource there is.

        Raises
        ------
        dve.errors.ConfigurationError
            When ``name`` is unknown, or ``None`` while the model has several resources (the
            message lists them).
        """
        if name is None:
            if len(self.costs) == 1:
                return next(iter(self.costs.values()))
            raise ConfigurationError("the model has several cost resources ("
                                     + ", ".join(self.costs) + "); name one, e.g. --cost "
                                     + next(iter(self.costs)))
        if name not in self.costs:
            raise ConfigurationError(f"unknown cost resource '{name}'; the model has: "
                                     + ", ".join(self.costs))
        return self.costs[name]

    def successors(self, i: int) -> np.ndarray:
        return self.indices[self.indptr[i]:self.indptr[i + 1]]

    def peek(self, name: str, index, key: str | None = None):
        """``getattr(graph, name)[index]``, or ``graph.costs[key][index]`` for ``name='costs'``,
        as NumPy values: what a trace or a decoded state reads, a few elements, without
        copying the whole of an array still on a device (see :func:`lazy_graph`).

        >>> import dve, statespace
        >>> g = statespace.build_state_graph(dve.load_model(
        ...     "process P { state a, b; init a; trans a -> b { cost 4; }; } system async;"))
        >>> int(g.peek("indices", 0)), int(g.peek("costs", 0, "cost")), g.peek("states", 1).tolist()
        (1, 4, [1])
        """
        a = self._pending_value(name)
        if a is _DERIVED:
            table = self.palette.table(key if name == "costs" else None)
            return table[to_host(self.peek("charge", index))]
        if a is not None:
            return to_host((a if key is None else a[key])[index])
        a = getattr(self, name)
        return (a if key is None else a[key])[index]

    def released(self, *, lazy: bool = False) -> StateGraph:
        """This graph without the copies of its edges kept for the cycle engine
        (``on_device`` None) and, unless ``lazy``, with every array that is still on a device
        brought to the host, so that it holds no device memory. With ``lazy``, arrays not
        read yet stay on the device until they are (a process that reads only the answer and
        a few runs never copies them).

        >>> import dve, statespace
        >>> g = statespace.build_state_graph(dve.load_model(
        ...     "process P { state a; init a; trans a -> a {}; } system async;"))
        >>> g.released() is g
        True
        """
        pending = self.__dict__.get("_pending") or {}
        if all(v is _DERIVED for v in pending.values()) and self.on_device is None:
            return self
        if not pending:
            return dataclasses.replace(self, on_device=None)
        # What is derived stays derived; what is on a device stays there only with ``lazy``.
        keep = {k: v for k, v in pending.items() if v is _DERIVED or lazy}
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(StateGraph)
                  if f.name not in keep}
        values["on_device"] = None
        return lazy_graph(keep, **values)

    def make_room(self, nbytes: int, free: int | None = None) -> StateGraph:
        """Bring to the host, as their first reads would, the arrays still on a device that
        the cycle engine does not read (all but the edges of ``on_device``), the largest
        first, until the device has ``nbytes`` free; nothing when it has already
        (``free``: the device's free bytes, :func:`runtime.device.device_free_bytes` when
        not given; nothing either when that is unknown). Returns the graph itself (the arrays
        read are cached in it, as reads do).

        Examples
        --------
        NumPy arrays stand in for device arrays (reading one "copies" it):

        >>> g = lazy_graph({"indices": np.array([1, 0], np.int32),
        ...                 "action": np.zeros(2, np.int32)}, indptr=np.array([0, 1, 2]),
        ...                costs={"cost": np.array([3, 4])}, time=np.ones(2, np.int64),
        ...                states=np.zeros((2, 1), np.int8), parent=np.array([-1, 0]),
        ...                parent_action=np.array([-1, 0], np.int32),
        ...                deadlocks=np.zeros(0, np.int64))
        >>> g.make_room(100, free=100) is g, g.make_room(100, free=0) is g
        (True, True)
        """
        pending = self.__dict__.get("_pending") or {}
        engine = {id(a) for a in (self.on_device or ())}
        spare = sorted(((int(np.prod(a.shape)) * a.dtype.itemsize, name)
                        for name, a in pending.items()
                        if a is not _DERIVED and not isinstance(a, dict)
                        and id(a) not in engine), reverse=True)
        if not spare:
            return self
        if free is None:
            from runtime.device import device_free_bytes

            from runtime.arrays import module_of
            free = device_free_bytes(module_of(pending[spare[0][1]]))
            if free is None:
                return self
        for size, name in spare:
            if free >= nbytes:
                break
            getattr(self, name)   # to the host; its device memory goes back to the pool
            free += size
        return self

    def replace(self, **changes) -> StateGraph:
        """``dataclasses.replace`` that leaves what is pending pending (on a device, or derived
        from the palette) instead of reading it.

        >>> import dve, statespace
        >>> g = statespace.build_state_graph(dve.load_model(
        ...     "process P { state a; init a; trans a -> a {}; } system async;"))
        >>> h = g.replace(name="x")
        >>> h.name, "time" in h.__dict__, h.time.tolist()
        ('x', False, [1])
        """
        pending = {k: v for k, v in (self.__dict__.get("_pending") or {}).items()
                   if k not in changes}
        values = {f.name: changes[f.name] if f.name in changes else getattr(self, f.name)
                  for f in dataclasses.fields(StateGraph) if f.name not in pending}
        return lazy_graph(pending, **values)

    def edge_bytes(self) -> int:
        """Bytes the edges take: targets, actions and charges (with the palette), or targets,
        actions, costs and times of a graph holding full arrays; ``indptr`` is not counted.
        What is still on a device counts as it would on the host; nothing is computed.

        >>> import dve, statespace
        >>> g = statespace.build_state_graph(dve.load_model(
        ...     "process P { state a; init a; trans a -> a {}; } system async;"))
        >>> g.edge_bytes() - g.palette.nbytes   # int32 target, int32 action, uint8 charge
        9
        """
        def size(name, key=None):
            a = self._pending_value(name)
            a = getattr(self, name) if a is None else a
            return int((a if key is None else a[key]).nbytes)
        total = size("indices") + size("action")
        if self.palette is not None:
            total += size("charge") + self.palette.nbytes
        if self._pending_value("time") is not _DERIVED:   # full arrays (or computed and kept)
            total += size("time") + sum(size("costs", r) for r in self.resources)
        return total

    def model_action(self, a: int) -> int:
        """The model's action number of edge label ``a`` (the step code for system sync)."""
        if self.action_codes is not None:
            return int(self.action_codes[a])
        return int(a)

    def action_moves(self, a: int) -> list[dict]:
        """:meth:`CompiledModel.action_moves` of edge label ``a`` (needs ``model``)."""
        if self.model is None:
            raise ConfigurationError("a loaded graph has no model; describe_action() only")
        return self.model.action_moves(self.model_action(a))

    def describe_action(self, a: int) -> str:
        if self.model is not None:
            return self.model.describe_action(self.model_action(a))
        if 0 <= a < len(self.action_names):
            return self.action_names[a]
        return f"action {a}"

    @property
    def nbytes(self) -> int:
        """Bytes of the graph's arrays (:meth:`edge_bytes` for the edges), computing nothing."""
        arrays = [self.indptr, self.states, self.parent, self.parent_action, self.deadlocks]
        return int(sum(a.nbytes for a in arrays)) + self.edge_bytes()


# A pending field must not be found on the class (its default would hide it from
# __getattr__): ``charge``, the one of the DEVICE_FIELDS with a default, keeps its default in
# __init__ (dataclasses bind it there) but not as a class attribute.
del StateGraph.charge

#: The fields of a :class:`StateGraph` that :func:`lazy_graph` may leave on a device.
DEVICE_FIELDS = ("indices", "action", "costs", "time", "states", "parent", "parent_action",
                 "charge")


def _fetch(a):
    """A pending field on the host: an array copied, or a dict of arrays each copied."""
    if isinstance(a, dict):
        return {k: to_host(v) for k, v in a.items()}
    return to_host(a)


def derived() -> str:
    """The value of ``costs`` and ``time`` in :func:`lazy_graph`'s ``arrays`` for a compact
    graph (see the module docstring): computed from ``charge`` and ``palette`` when first read.

    >>> g = lazy_graph({"costs": derived(), "time": derived()}, indptr=np.array([0, 1, 2]),
    ...                indices=np.array([1, 0], np.int32), action=np.zeros(2, np.int32),
    ...                charge=np.array([1, 0], np.uint8),
    ...                palette=Palette({"cost": np.array([0, 7])}, np.array([1, 3])),
    ...                states=np.zeros((2, 1), np.int8), parent=np.array([-1, 0]),
    ...                parent_action=np.array([-1, 0], np.int32), deadlocks=np.zeros(0, np.int64))
    >>> g.resources, int(g.peek("costs", 0, "cost")), "time" in g.__dict__
    (('cost',), 7, False)
    >>> g.time.tolist(), g.cost().tolist(), type(g).__name__
    ([3, 1], [7, 0], 'StateGraph')
    """
    return _DERIVED


def lazy_graph(arrays: dict[str, Any], **fields) -> StateGraph:
    """A :class:`StateGraph` from ``fields`` and ``arrays``, the :data:`DEVICE_FIELDS` given as
    device arrays (``costs``: a dict of them), each of which stays on the device until it is
    first read (then it is copied to the host, once). Those given as NumPy arrays are set as
    they are; with none on a device this is an ordinary StateGraph.

    The explorer builds its graph so when it finished on a GPU: ``dvecost analyze`` reads the
    answer, the counts and the states and edges of a few runs (:meth:`StateGraph.peek`), and
    copies none of the graph's arrays to the host. ``costs`` and ``time`` may also be given as
    :func:`derived` (with ``charge`` and ``palette``): a compact graph, whose costs and times
    are computed when first read.

    Examples
    --------
    NumPy arrays stand in for device arrays here (copying one to the host is itself):

    >>> g = lazy_graph({"indices": np.array([1, 0], np.int32)}, indptr=np.array([0, 1, 2]),
    ...                costs={"cost": np.array([3, 4])}, time=np.ones(2, np.int64),
    ...                action=np.zeros(2, np.int32), states=np.zeros((2, 1), np.int8),
    ...                parent=np.array([-1, 0]), parent_action=np.array([-1, 0], np.int32),
    ...                deadlocks=np.zeros(0, np.int64))
    >>> type(g).__name__, g.n_edges, g.indices.tolist()
    ('StateGraph', 2, [1, 0])
    """
    pending = {}
    for name, a in arrays.items():
        if name not in DEVICE_FIELDS:
            raise ValueError(f"{name!r} is not a field that can stay on a device")
        if a is _DERIVED:
            if name not in ("costs", "time") or fields.get("palette") is None:
                raise ValueError(f"{name!r} cannot be derived (costs and time can, with a "
                                 "palette)")
            pending[name] = a
            continue
        vals = a.values() if isinstance(a, dict) else (a,)
        if all(isinstance(v, np.ndarray) for v in vals):
            fields[name] = a
        else:
            pending[name] = a
    if not pending:
        return StateGraph(**fields)
    g = object.__new__(StateGraph)
    for f in dataclasses.fields(StateGraph):
        if f.name in pending:
            continue
        if f.name in fields:
            value = fields.pop(f.name)
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:
            value = f.default_factory()
        else:
            raise TypeError(f"lazy_graph() needs the field '{f.name}'")
        object.__setattr__(g, f.name, value)
    if fields:
        raise TypeError(f"lazy_graph() got unexpected fields: {', '.join(fields)}")
    object.__setattr__(g, "_pending", pending)
    return g


def _names(graph: StateGraph):
    """The layout names decoding needs (never the action names: those cost one description
    per action, and a ``system sync`` model has a product of them)."""
    cm = graph.model
    if cm is not None:
        return (tuple(s.name for s in cm.slots), tuple(s.kind for s in cm.slots),
                {p.name: p.states for p in cm.processes})
    return graph.slot_names, graph.slot_kinds, graph.process_states


def decode_state(graph: StateGraph, i: int) -> dict[str, Any]:
    """State ``i`` as ``{process: local state, variable: value, channel: contents}``.

    Arrays become lists, a buffered channel the list of its queued items (tuples for channels
    of several fields). The error state decodes as ``{'error': True}``.
    """
    i = int(i)
    if i == graph.error_state:
        return {"error": True}
    row = graph.peek("states", i)
    out: dict[str, Any] = {}
    for op in _decoding_plan(graph):
        kind, name, a = op[0], op[1], op[2]
        if kind == "pc":
            v, states = int(row[a]), op[3]
            # One past the last state marks process 0 of the (legacy, expanded) error state.
            out[name] = states[v] if v < len(states) else "<error>"
        elif kind == "var":
            out[name] = int(row[a])
        elif kind == "array":
            out[name] = row[a:op[3]].tolist()
        else:  # a buffered channel: its count, then its items field by field
            count, arity = int(row[a]), op[3]
            cells = row[a + 1:a + 1 + count * arity].tolist()
            out[name] = [cells[k] if arity == 1 else tuple(cells[k:k + arity])
                         for k in range(0, len(cells), arity)]
    return out


def _decoding_plan(graph: StateGraph) -> tuple[tuple, ...]:
    """How :func:`decode_state` reads a state vector, worked out once per graph from the slot
    names: ``('pc', name, slot, states)``, ``('var', name, slot)``, ``('array', name, first,
    end)`` and ``('chan', name, count slot, arity)``, in slot order (a state of 65,536 cells
    is then a slice, not 65,536 string operations)."""
    plan = graph.__dict__.get("_decoding_plan")
    if plan is not None:
        return plan
    names, kinds, pstates = _names(graph)
    out: list[tuple] = []
    j, n = 0, len(names)
    while j < n:
        name, kind = names[j], kinds[j]
        if kind == "pc":
            out.append(("pc", name, j, pstates[name]))
            j += 1
        elif kind == "var" and name.endswith("]"):
            base = name[:name.rindex("[")]
            k = j + 1
            while k < n and kinds[k] == "var" and names[k].startswith(base + "[") \
                    and names[k][len(base) + 1:-1].isdigit():
                k += 1
            out.append(("array", base, j, k))
            j = k
        elif kind == "var":
            out.append(("var", name, j))
            j += 1
        elif kind == "count":
            ch = name[:-len(".count")]
            k = j + 1
            while k < n and kinds[k] == "item":
                k += 1
            fields = {names[x].rsplit("].", 1)[1] for x in range(j + 1, k)}
            out.append(("chan", ch, j, max(len(fields), 1)))
            j = k
        else:  # pragma: no cover - an item slot always follows its channel's count
            j += 1
    plan = tuple(out)
    object.__setattr__(graph, "_decoding_plan", plan)  # a cache: the graph stays immutable
    return plan


@dataclass(frozen=True)
class TraceStep:
    """One step of a trace: ``source -> target`` by ``action`` (``description`` names the
    moving processes, their local states and the channel), with the edge's costs and time;
    ``edge`` is the edge's index in the CSR arrays."""

    source: int
    target: int
    action: int
    description: str
    costs: dict[str, int]
    time: int
    edge: int = -1


def shortest_edges(graph: StateGraph, i: int) -> list[int]:
    """The edges of a shortest run from the initial state to state ``i`` (breadth-first tree):
    what :func:`shortest_trace` tells as steps, for a caller that reads the edges only (the
    report's runs: no action is described twice).

    >>> import dve
    >>> from statespace import build_state_graph
    >>> text = "process P { state a, b, c; init a; trans a -> b {}, b -> c {}; } system async;"
    >>> g = build_state_graph(dve.load_model(text))
    >>> shortest_edges(g, 2), [s.edge for s in shortest_trace(g, 2)]
    ([0, 1], [0, 1])
    """
    return [e for _, _, _, e in _tree_path(graph, i)]


def _tree_path(graph: StateGraph, i: int) -> list[tuple[int, int, int, int]]:
    """``(source, target, action, edge)`` of each step of the breadth-first tree's run to
    ``i``."""
    i = int(i)
    if not 0 <= i < graph.n_states:
        raise ConfigurationError(f"no state {i}: the graph has {graph.n_states} states")
    # Element by element (StateGraph.peek): a graph still on a device copies a few values.
    chain = []
    while i > 0:
        chain.append(i)
        i = int(graph.peek("parent", i))
    steps = []
    for t in reversed(chain):
        s, a = int(graph.peek("parent", t)), int(graph.peek("parent_action", t))
        lo, hi = int(graph.indptr[s]), int(graph.indptr[s + 1])
        row_t, row_a = graph.peek("indices", slice(lo, hi)), graph.peek("action", slice(lo, hi))
        e = lo + int(np.flatnonzero((row_t == t) & (row_a == a))[0])
        steps.append((s, t, a, e))
    return steps


def shortest_trace(graph: StateGraph, i: int) -> list[TraceStep]:
    """A shortest run from the initial state to state ``i`` (breadth-first tree), as steps.

    Examples
    --------
    >>> import dve
    >>> from statespace import build_state_graph
    >>> text = "process P { state a, b, c; init a; trans a -> b {}, b -> c {}; } system async;"
    >>> g = build_state_graph(dve.load_model(text))
    >>> [(s.source, s.target, s.description) for s in shortest_trace(g, 2)]
    [(0, 1, 'P: a -> b'), (1, 2, 'P: b -> c')]
    """
    return [TraceStep(s, t, a, graph.describe_action(a),
                      {k: int(graph.peek("costs", e, k)) for k in graph.resources},
                      int(graph.peek("time", e)), e)
            for s, t, a, e in _tree_path(graph, i)]
