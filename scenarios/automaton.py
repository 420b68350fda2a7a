"""A scenario as an automaton of ticks: the states and edges a client's process is rendered
from (:mod:`scenarios.render`), choices and loops unfolded, epsilon moves removed.

>>> from scenarios.steps import Scenario, Think, Request
>>> automaton(Scenario("u", [Think(1), Request("r", 1)]), True).states
['think', 'r', 'r_wait']
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from dve.errors import ConfigurationError

from .steps import Choice, Loop, Request, Scenario, Step, Think

__all__ = ["Tick", "Automaton", "automaton", "unique_names"]


@dataclass(frozen=True)
class Tick:
    """One tick of a client: an edge of its automaton.

    ``kind`` is ``'think'`` or ``'work'`` (``count`` ticks in one state, counted by the local
    variable ``timer``: ``phase`` ``'loop'`` while more are to come, ``'exit'`` on the last;
    ``phase`` ``'once'`` when ``count`` is 1), or ``'send'``, ``'wait'``, ``'reply'``.
    """
    kind: str
    request: Request | None = None
    count: int = 1
    phase: str = "once"


@dataclass
class Automaton:
    """A scenario as states and ticks (epsilon moves removed)."""
    states: list[str]
    init: int
    edges: list[tuple[int, int, Tick]]

    @property
    def uses_timer(self) -> bool:
        return any(t.phase != "once" for _, _, t in self.edges)


class _Nfa:
    """Steps -> a graph of tick edges and epsilon edges; each tick source belongs to one step."""

    def __init__(self, with_server: bool) -> None:
        self.with_server = with_server
        self.labels: list[str] = []
        self.eps: list[list[int]] = []
        self.ticks: list[list[tuple[int, Tick]]] = []

    def node(self, label: str = "") -> int:
        self.labels.append(label)
        self.eps.append([])
        self.ticks.append([])
        return len(self.labels) - 1

    def tick(self, a: int, b: int, t: Tick) -> None:
        self.ticks[a].append((b, t))

    def seq(self, steps: Sequence[Step], entry: int) -> int:
        cur = entry
        for st in steps:
            cur = self.step(st, cur)
        return cur

    def counted(self, entry: int, label: str, kind: str, count: int,
                request: Request | None = None) -> int:
        """``count`` ticks spent in one state (a counter, not a chain of states: the
        synchronous product's size does not change, its number of transitions does)."""
        if count == 0:
            return entry
        a, out = self.node(label), self.node()
        self.eps[entry].append(a)
        if count == 1:
            self.tick(a, out, Tick(kind, request))
        else:
            self.tick(a, a, Tick(kind, request, count, "loop"))
            self.tick(a, out, Tick(kind, request, count, "exit"))
        return out

    def step(self, st: Step, entry: int) -> int:
        if isinstance(st, Think):
            return self.counted(entry, "think", "think", st.ticks)
        if isinstance(st, Request):
            label = st.name.lower()
            if not self.with_server:
                return self.counted(entry, label, "work", st.service, st)
            send, wait, out = self.node(label), self.node(f"{label}_wait"), self.node()
            self.eps[entry].append(send)
            self.tick(send, wait, Tick("send", st))
            self.tick(wait, wait, Tick("wait", st))
            self.tick(wait, out, Tick("reply", st))
            return out
        if isinstance(st, Choice):
            out = self.node()
            for branch in st.branches:
                b = self.node()
                self.eps[entry].append(b)
                self.eps[self.seq(branch, b)].append(out)
            return out
        if isinstance(st, Loop):
            lo, hi = st.times
            cur = entry
            for _ in range(lo):
                b = self.node()
                self.eps[cur].append(b)
                cur = self.seq(st.body, b)
            out = self.node()
            self.eps[cur].append(out)
            if hi is None:          # any number of further rounds
                b = self.node()
                self.eps[cur].append(b)
                self.eps[self.seq(st.body, b)].append(cur)
            else:
                for _ in range(hi - lo):
                    b = self.node()
                    self.eps[cur].append(b)
                    cur = self.seq(st.body, b)
                    self.eps[cur].append(out)
            return out
        raise TypeError(st)  # unreachable: steps are type-checked on construction

    def closure(self, q: int) -> list[int]:
        """Tick sources reachable from ``q`` by epsilon moves, in a fixed (DFS) order."""
        out, seen, stack = [], {q}, [q]
        while stack:
            v = stack.pop()
            if self.ticks[v]:
                out.append(v)
            for w in reversed(self.eps[v]):
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        return out


def automaton(scenario: Scenario, with_server: bool) -> Automaton:
    """The scenario's states and ticks, as the rendering reads them: ``states`` (names),
    ``init`` (0) and ``edges`` ``(src, dst, tick)``, a tick's ``kind`` one of ``'think'``,
    ``'work'`` (counted in one state: ``phase`` ``'loop'``, ``'exit'`` or ``'once'``),
    ``'send'``, ``'wait'``, ``'reply'``; choices and loops unfolded, epsilon moves removed.

    >>> a = automaton(Scenario("u", [Think(2), Request("r", 1)]), True)
    >>> a.states
    ['think', 'r', 'r_wait']
    >>> [(x, y, t.kind) for x, y, t in a.edges]  # doctest: +NORMALIZE_WHITESPACE
    [(0, 0, 'think'), (0, 1, 'think'), (1, 2, 'send'), (2, 2, 'wait'),
     (2, 0, 'reply')]
    """
    nfa = _Nfa(with_server)
    start = nfa.node()
    end = nfa.seq(scenario.steps, start)
    nfa.eps[end].append(start)
    first = nfa.closure(start)
    if not first:
        raise ConfigurationError(f"scenario '{scenario.name}' takes no time: give it a Think "
                                 "or a Request")
    # Number the tick sources in BFS order from the initial one(s), dedup edges.
    order: dict[int, int] = {}
    queue: list[int] = []

    def visit(v: int) -> int:
        if v not in order:
            order[v] = len(order)
            queue.append(v)
        return order[v]

    if len(first) == 1:
        init_node = first[0]
        visit(init_node)
        init_edges: list[int] = []
    else:  # a scenario that starts with a choice: a start state with every first tick
        init_node = -1
        order[-1] = 0
        queue.append(-1)
        init_edges = first
    edges: list[tuple[int, int, Tick]] = []
    seen_edges: set[tuple[int, int, Tick]] = set()
    head = 0
    while head < len(queue):
        v = queue[head]
        head += 1
        sources = init_edges if v == -1 else [v]
        for src in sources:
            for q, t in nfa.ticks[src]:
                for r in nfa.closure(q):
                    e = (order[v], visit(r), t)
                    if e not in seen_edges:
                        seen_edges.add(e)
                        edges.append(e)
    labels = ["start" if v == -1 else nfa.labels[v] for v in order]
    return Automaton(states=unique_names(labels), init=0, edges=edges)


def unique_names(labels: list[str], taken: frozenset[str] = frozenset()) -> list[str]:
    """Distinct state names for ``labels``, none in ``taken``: a label keeps its name the
    first time (``label_s`` where ``taken`` has it), later ones get the first free
    ``_2``, ``_3``, ... A suffixed name is never one of the labels themselves, so a request
    named ``think_2`` keeps its name beside a second ``think``.

    >>> unique_names(["think", "think", "open"])
    ['think', 'think_2', 'open']
    >>> unique_names(["think", "think_2", "think"])
    ['think', 'think_2', 'think_3']
    >>> unique_names(["done", "done_s", "req"], frozenset({"done", "req"}))
    ['done_s_2', 'done_s', 'req_s']
    """
    raw = set(labels)
    used: set[str] = set()
    out = []
    for lab in labels:
        base = lab if lab not in taken else f"{lab}_s"
        name, k = base, 1
        while name in used or name in taken or (name != lab and name in raw):
            k += 1
            name = f"{base}_{k}"
        used.add(name)
        out.append(name)
    return out
