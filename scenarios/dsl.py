"""Client scenarios, a server and their composition, built into a DVE model (an AST, never text).

A **scenario** is the cyclic behaviour of one kind of client, written as steps:

- :class:`Think` ``(k)``: the client is busy on its own side for ``k`` ticks (no load);
- :class:`Request` ``(name, service, cost)``: the client asks for ``service`` ticks of work
  charged ``cost`` per tick (one CPU busy for a tick = cost 1);
- :class:`Choice` ``(branch, branch, ..., weights=...)``: one of the branches; the weights say how
  often real users take each branch and are *ignored* by the worst case, which may take any;
- :class:`Loop` ``(body, times)``: the body ``times`` times, or between ``lo`` and ``hi`` times
  (``times=(lo, hi)``, ``hi=None`` for any number).

When the last step ends the scenario starts again. A :class:`Server` has ``workers`` (default 1)
that serve requests one at a time each, and admits up to ``admissions`` requests per tick
(default 1), any waiting one or as its ``policy`` says (first come first served, priority:
:mod:`scenarios.policy`). A :class:`System` puts ``{scenario: count}`` clients
together, with a server or without one, and :meth:`System.to_model` builds the DVE model as a
:class:`dve.syntax.Model` with synthetic positions (``<scenario NAME>``), so a generated model
goes through the same checks as a hand-written one and can be written out with
:func:`dve.format_model`.

Time and composition
--------------------
A system with a server is composed with ``system sync``: every process takes exactly one
transition per step, so a step is a **tick** of a global clock, and a maximal cycle mean is a
worst sustainable **load per tick** (of busy workers, or of cost: see "Occupancy and cost").

Clients and server communicate through single-writer shared variables (``system sync`` passes no
values through channels, and two processes assigning one variable in the same step lead to the
error state; docs/language.md, "The system line"):

- ``req_C`` (written by client ``C`` only): 0, or the kind of its pending request (the constant
  named after the request, e.g. ``EDIT``);
- ``done`` (written by the server only, one worker): the number of the client whose request
  finished on the previous tick, else 0;
- ``adm`` (written by the server only, several workers): the number of the client admitted on
  the previous tick, else 0;
- ``phase`` and ``admK`` (written by the server only, several admissions per tick): see
  "Several admissions per tick" below.

A request takes the client one tick to send (``req_C = KIND``), then the client waits (one
self-loop per tick) until it sees its number in ``done``, and takes one tick to receive the
reply (``req_C = 0``). The server admits a pending request on the tick after it was sent and
serves its first tick in that same step, so a worker whose request ends on tick ``t`` can serve
the next one from tick ``t + 1``: with enough clients it is never idle. The server is work
conserving (it never idles while a worker is free and a request waits) and chooses freely which
waiting client to serve next; it admits at most one request per tick unless ``admissions``
says more.

Several workers are a *pool*: no worker has a name or a variable. The server admits a request
while fewer than ``WORKERS`` are in service and serves its first tick; the client, seeing its
number in ``adm`` on the next tick, serves the other ``service - 1`` ticks itself (charged to the
server's resource; ``req_C`` is ``BUSY`` while ticks remain after this one and ``SERVED`` on its
last) and replies on the tick after. That is the same load as named workers, the lowest free
one taking each request: which worker serves a request never changes a cost, and with no names
the only processes a renaming permutes are the clients of each scenario, so the symmetry
reduction of docs/algorithms.md covers servers with many workers too.

Several admissions per tick
---------------------------
``Server(workers=W, admissions=A)`` with ``A > 1`` admits up to ``A`` requests on one tick.
Under ``system sync`` every process reads the state before the step and two processes must not
write one variable, so admissions that see each other cannot happen in one step: a tick is
rendered as ``A + 1`` steps. In steps ``1..A`` (the global ``phase``) only the server moves:
its ``K``-th step admits one waiting client not yet admitted this tick (its number goes into
``admK``) while ``nbusy + K <= WORKERS``, ``nbusy`` being the requests ``BUSY`` from earlier
ticks; the clients take a self-loop. In step ``A + 1`` (``phase`` 0) every process moves as
in a one-step tick, the clients reading this tick's ``admK``. So the server admits exactly
``min(A, free workers, waiting requests)`` per tick, any of the waiting ones, and never has
more than ``W`` requests in service. Every tick has ``A + 1`` steps and only the move step
charges, ``(A + 1) * cost`` per tick of service, so the cycle mean per step is still the work
per tick. Each admission step takes one client out of ``m`` waiting: ``m`` successors, whose
classes the symmetry reduction merges, where ``A`` processes admitting side by side would make
``m ** A`` joint steps (docs/scenarios.md, "Several admissions per tick"). Every charge is on
the client's own transitions.

Occupancy and cost: two loads
-----------------------------
Every tick of service charges two resources: ``busy``, 1 (one worker busy on that tick), and
``server``, the request's ``cost`` (what a tick of its service consumes: CPU, memory, money).
With several admissions per tick the move step charges ``admissions + 1`` times each, as
above. Both are charged on the same transitions: the server's admission of a client and the
ticks of service (the one worker's, or those a pooled client serves itself). The cost of a
cycle of the state graph is what one period of a periodic run charges, and its length is the
period in ticks, so the cycle mean is a load per tick, and the maximal cycle mean is the worst
over every run the clients and the server can produce forever (docs/scenarios.md, section 3).

- The maximal cycle mean of ``busy`` is the **occupancy**: the most workers some run keeps
  busy per tick. The server is **saturated** when it equals ``workers``: some infinite run
  keeps every worker busy on every tick. This is what the capacity questions judge by default
  (:attr:`System.resource` is ``'busy'``), and it does not depend on the requests' costs.
- The maximal cycle mean of ``server`` is the worst **cost load**. With one cost ``c`` for
  every request it is ``c`` times the occupancy; with several costs it is not, and
  ``workers x largest cost`` is not a capacity: a run may keep every worker busy with cheap
  requests while a costlier mix leaves workers idle. It is judged only against a capacity the
  user gives (``System(..., resource='server')``).

A worker serves one request per tick, so no tick has more than ``workers`` busy; and the
server admits ``admissions`` requests per tick at most, each holding a worker ``service``
ticks, so no periodic run keeps more than ``admissions`` times the longest service busy per
tick. Every cycle mean of ``busy``, and so the occupancy, is at most the smaller bound
(:meth:`System.load_bound`), whatever the number of clients: with one admission per tick,
eight workers are all busy only with requests of eight ticks or more.

Without a server, requests are work the client does itself: ``service`` ticks of its own, each
charged ``cost`` under the resource ``work``, with no send or reply tick. Composed with
``system sync`` the clients' costs add up per tick (``k`` identical clients: ``k`` times the
load of one); composed with ``system async`` (the interleaved product) one client moves per step,
so the worst cycle is the worst client alone and more clients cannot raise the load.

Examples
--------
>>> from dve import format_model
>>> user = Scenario("user", [Think(2), Request("query", service=3)])
>>> system = System({user: 2}, server=Server())
>>> system.n_clients, system.resource, system.cost_resource, system.load_bound()
(2, 'busy', 'server', Fraction(1, 1))
>>> model = system.to_model()
>>> [p.name for p in model.processes]
['server', 'user_1', 'user_2']
>>> print(format_model(model).splitlines()[0])
const byte QUERY = 1;
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping, Sequence, Union

from dve import syntax as s
from dve.errors import ConfigurationError, SourcePos, synthetic_pos

from .policy import POLICIES, RANK, PolicyRendering

__all__ = [
    "Think", "Request", "Choice", "Loop", "Step", "Scenario", "Server", "System", "apportion",
    "SERVER_RESOURCE", "CLIENT_RESOURCE", "OCCUPANCY_RESOURCE", "DVE_KEYWORDS", "POLICIES",
]

#: Resource charged by the server's transitions (systems with a server).
SERVER_RESOURCE = "server"
#: Resource charged by the clients' own work (systems without a server).
CLIENT_RESOURCE = "work"
#: Occupancy (systems with a server): 1 for each worker busy on a tick, charged on exactly the
#: transitions that charge :data:`SERVER_RESOURCE`, whatever the request's cost. Its maximal
#: cycle mean is the most workers some run keeps busy per tick; the server is saturated when
#: that reaches the number of workers.
OCCUPANCY_RESOURCE = "busy"

#: Words DVE reserves (DiVinE 2 and 3, and the cost/time extension): not usable as names.
DVE_KEYWORDS = frozenset("""
    guard sync async effect process state init accept commit trans system true false and or not
    imply int byte const channel property buchi genbuchi streett rabin muller assert input
    expression key for if else ltl cost time local
""".split())

_MAX_BYTE = 255
#: A client's local counter of the ticks spent in a Think (or, with no server, a Request).
_TIMER = "timer"
#: The variable in which a client keeps the kind of its pending request (0: none).
_REQ = "req"


# ---------------------------------------------------------------------------- steps

def _check_int(what: str, value: object, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{what} must be an integer, not {value!r}")
    if value < lo or (hi is not None and value > hi):
        top = f"..{hi}" if hi is not None else " or more"
        raise ConfigurationError(f"{what} must be {lo}{top}, not {value}")
    return value


def _check_name(what: str, name: object) -> str:
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        raise ConfigurationError(f"{what} must be an identifier (letters, digits, '_'), "
                                 f"not {name!r}")
    if name.lower() in DVE_KEYWORDS or keyword.iskeyword(name):
        raise ConfigurationError(f"{what} '{name}' is a reserved word; choose another name")
    return name


def _steps(what: str, body: object) -> tuple["Step", ...]:
    """A step or a sequence of steps -> a tuple of steps (type-checked)."""
    items = (body,) if isinstance(body, _STEP_TYPES) else body
    try:
        items = tuple(items)  # type: ignore[arg-type]
    except TypeError:
        raise ConfigurationError(f"{what} must be a step or a list of steps, "
                                 f"not {body!r}") from None
    for item in items:
        if not isinstance(item, _STEP_TYPES):
            raise ConfigurationError(f"{what} holds {item!r}, which is not a step "
                                     "(Think, Request, Choice or Loop)")
    return items


@dataclass(frozen=True)
class Think:
    """The client works on its own side for ``ticks`` ticks: no load on anyone.

    >>> Think(3)
    Think(ticks=3)
    """

    ticks: int

    def __post_init__(self) -> None:
        _check_int("Think(ticks)", self.ticks, 0, _MAX_BYTE + 1)


@dataclass(frozen=True)
class Request:
    """A request for ``service`` ticks of work at ``cost`` per tick.

    With a server, a worker serves it (``service`` ticks, each charged ``cost`` to the resource
    ``server``) while the client waits; the client also spends one tick sending it and one tick
    receiving the reply. Without a server the client does the work itself (``service`` ticks
    charged ``cost`` each to the resource ``work``).

    Requests of one name are one kind: a system may use a name several times, always with the
    same ``service`` and ``cost``.

    >>> Request("save", service=2)
    Request(name='save', service=2, cost=1)
    """

    name: str
    service: int
    cost: int = 1

    def __post_init__(self) -> None:
        _check_name("a request name", self.name)
        _check_int(f"Request('{self.name}') service", self.service, 1, _MAX_BYTE)
        _check_int(f"Request('{self.name}') cost", self.cost, 0, _MAX_BYTE)


@dataclass(frozen=True, init=False)
class Choice:
    """One of several branches, each a step or a list of steps.

    ``weights`` record how often real users take each branch (documentation, and a hint for a
    future average-case analysis); the worst case ignores them and may take any branch.

    >>> c = Choice(Request("save", 1), [Think(1), Request("export", 6)], weights=(4, 1))
    >>> len(c.branches), c.weights
    (2, (4, 1))
    """

    branches: tuple[tuple["Step", ...], ...]
    weights: tuple[int, ...] | None = None

    def __init__(self, *branches: object, weights: Sequence[int] | None = None) -> None:
        if len(branches) < 1:
            raise ConfigurationError("Choice needs at least one branch")
        bs = tuple(_steps(f"Choice branch {i + 1}", b) for i, b in enumerate(branches))
        ws = None
        if weights is not None:
            ws = tuple(_check_int("a Choice weight", w, 0) for w in weights)
            if len(ws) != len(bs):
                raise ConfigurationError(f"Choice has {len(bs)} branches but {len(ws)} weights")
        object.__setattr__(self, "branches", bs)
        object.__setattr__(self, "weights", ws)


@dataclass(frozen=True, init=False)
class Loop:
    """The body (a step or a list of steps) repeated.

    ``times=n`` repeats it exactly ``n`` times; ``times=(lo, hi)`` between ``lo`` and ``hi``
    times, the number chosen anew each time (the worst case picks it); ``hi=None`` allows any
    number of rounds from ``lo`` on, including staying in the loop forever. Counts are
    0..255, and a loop may unroll to at most :data:`MAX_UNROLLED` steps (its body's, with
    inner loops unrolled, times its rounds: ``hi``, or ``lo + 1`` when ``hi`` is ``None``).

    >>> Loop([Think(2), Request("edit", 1)], times=(1, 3)).times
    (1, 3)
    >>> Loop(Think(1), times=10**8)
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: Loop times must be 0..255, not 100000000
    """

    body: tuple["Step", ...]
    times: tuple[int, int | None]

    def __init__(self, body: object, times: int | tuple[int, int | None] = 1) -> None:
        steps = _steps("Loop body", body)
        if isinstance(times, tuple):
            if len(times) != 2:
                raise ConfigurationError(f"Loop times must be n or (lo, hi), not {times!r}")
            lo = _check_int("Loop times lo", times[0], 0, _MAX_BYTE)
            hi = None if times[1] is None else _check_int("Loop times hi", times[1], lo,
                                                          _MAX_BYTE)
        else:
            lo = hi = _check_int("Loop times", times, 0, _MAX_BYTE)
        object.__setattr__(self, "body", steps)
        object.__setattr__(self, "times", (lo, hi))
        _check_unrolled(f"Loop(times={times!r})", (self,))


Step = Union[Think, Request, Choice, Loop]
_STEP_TYPES = (Think, Request, Choice, Loop)

#: The most steps a scenario may hold once its loops are unrolled (a loop of ``n`` rounds is
#: ``n`` copies of its body in the client's automaton): nested loops multiply, and a scenario
#: that unrolls to millions of steps would take minutes and gigabytes to render.
MAX_UNROLLED = 4096


def _unrolled(steps: Iterable[Step]) -> int:
    """The steps of ``steps`` with their loops unrolled (a ``Think`` or ``Request`` counts 1;
    a loop with no upper count, its ``lo`` rounds and one more)."""
    total = 0
    for st in steps:
        if isinstance(st, Choice):
            total += sum(_unrolled(b) for b in st.branches)
        elif isinstance(st, Loop):
            lo, hi = st.times
            total += _unrolled(st.body) * (lo + 1 if hi is None else hi)
        else:
            total += 1
    return total


def _check_unrolled(what: str, steps: tuple[Step, ...]) -> None:
    n = _unrolled(steps)
    if n > MAX_UNROLLED:
        raise ConfigurationError(f"{what} unrolls to {n:,} steps; a scenario may hold at most "
                                 f"{MAX_UNROLLED:,} (loops repeat their body, nested loops "
                                 "multiply): use fewer rounds, or a Think or a longer service "
                                 "for long waits")


@dataclass(frozen=True, init=False)
class Scenario:
    """The cyclic behaviour of one kind of client: its steps, repeated forever.

    Parameters
    ----------
    name : str
        An identifier; the clients' processes are named ``NAME_1``, ``NAME_2``, ...
    steps : step or sequence of steps
        :class:`Think`, :class:`Request`, :class:`Choice`, :class:`Loop`.

    Raises
    ------
    dve.errors.ConfigurationError
        A bad name, no steps, or something in ``steps`` that is not a step.

    Examples
    --------
    >>> reader = Scenario("reader", [Think(8), Request("open", service=2)])
    >>> reader.requests()
    (Request(name='open', service=2, cost=1),)
    """

    name: str
    steps: tuple[Step, ...]

    def __init__(self, name: str, steps: object) -> None:
        object.__setattr__(self, "name", _check_name("a scenario name", name))
        object.__setattr__(self, "steps", _steps(f"scenario '{name}'", steps))
        _check_unrolled(f"scenario '{name}'", self.steps)
        if not self.steps:
            # Refused here, where a scenario file's line of the call is known (rendering
            # would refuse it too, as taking no time, but at no position of the user's).
            raise ConfigurationError(f"scenario '{name}' has no steps: give it a Think or a "
                                     "Request")

    def requests(self) -> tuple[Request, ...]:
        """Every request the scenario can send, in order of first appearance, without repeats."""
        out: dict[Request, None] = {}

        def walk(steps: Iterable[Step]) -> None:
            for st in steps:
                if isinstance(st, Request):
                    out.setdefault(st)
                elif isinstance(st, Choice):
                    for b in st.branches:
                        walk(b)
                elif isinstance(st, Loop):
                    walk(st.body)

        walk(self.steps)
        return tuple(out)


@dataclass(frozen=True, repr=False)
class Server:
    """A server with ``workers`` workers, each serving one request at a time, that admits up
    to ``admissions`` waiting requests per tick (``1..workers``, default 1), choosing which by
    its ``policy``.

    With one admission per tick a server's load never passes the work of one request per
    tick, however many workers it has (:meth:`System.load_bound`); ``admissions=A`` lets it
    take up to ``A`` requests on one tick, as many as workers are free.

    Policies (:mod:`scenarios.policy`; docs/scenarios.md, "Server policies"):

    - ``'any'`` (the default): the server may take any waiting request, and the worst case
      takes the worst choice;
    - ``'fifo'``: first come, first served: requests in the order they were sent; requests
      sent on the same tick in the order of their scenarios in the system, then of their
      place in the scenario (the waiting state that the scenario's steps reach first);
    - ``'priority'``: by scenario, in the order ``order`` lists them (highest first; the
      system's other scenarios after them, in the system's order), and first come, first
      served within a scenario, ties as for ``'fifo'``.

    A policy other than ``'any'`` needs one admission per tick.

    >>> Server().workers, Server(workers=2).workers, Server(8, admissions=8).admissions
    (1, 2, 8)
    >>> Server(workers=2, admissions=3)
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: Server(admissions) must be 1..2, not 3
    >>> Server(policy="priority", order=["buyer", "browser"])
    Server(workers=1, admissions=1, policy='priority', order=('buyer', 'browser'))
    >>> Server(policy="lifo")
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: unknown server policy 'lifo': expected 'any', 'fifo' or 'priority'
    """

    workers: int = 1
    admissions: int = 1
    policy: str = "any"
    order: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        _check_int("Server(workers)", self.workers, 1, 16)
        _check_int("Server(admissions)", self.admissions, 1, self.workers)
        if self.policy not in POLICIES:
            raise ConfigurationError(f"unknown server policy {self.policy!r}: expected "
                                     + ", ".join(f"'{p}'" for p in POLICIES[:-1])
                                     + f" or '{POLICIES[-1]}'")
        order = self.order
        if isinstance(order, (str, Scenario)):
            order = (order,)
        try:
            names = tuple(x.name if isinstance(x, Scenario) else x for x in order)
        except TypeError:
            raise ConfigurationError(f"Server(order) must be a list of scenarios or their "
                                     f"names, not {order!r}") from None
        for x in names:
            _check_name("a scenario name in Server(order)", x)
        dup = sorted({x for x in names if names.count(x) > 1})
        if dup:
            raise ConfigurationError(f"Server(order) names the scenario '{dup[0]}' twice")
        object.__setattr__(self, "order", names)
        if self.policy == "priority" and not names:
            raise ConfigurationError("Server(policy='priority') needs order=[...]: the "
                                     "scenarios' names, highest priority first")
        if self.policy != "priority" and names:
            raise ConfigurationError(f"Server(order) is for policy='priority', not "
                                     f"policy={self.policy!r}")
        if self.policy != "any" and self.admissions > 1:
            raise ConfigurationError(f"Server(policy={self.policy!r}) admits one request per "
                                     f"tick; admissions={self.admissions} is rendered for "
                                     "policy='any' only")

    def __repr__(self) -> str:
        # (a server of the default policy prints as it did before policies existed)
        out = f"Server(workers={self.workers}, admissions={self.admissions}"
        if self.policy != "any":
            out += f", policy={self.policy!r}"
        if self.order:
            out += f", order={self.order!r}"
        return out + ")"

    def policy_words(self) -> str:
        """The policy in words, as reports say it.

        >>> Server().policy_words(), Server(policy="fifo").policy_words()
        ('any waiting request (the worst choice)', 'first come, first served')
        >>> Server(policy="priority", order=("buyer", "browser")).policy_words()
        'priority buyer > browser, first come, first served within each'
        """
        if self.policy == "fifo":
            return "first come, first served"
        if self.policy == "priority":
            return ("priority " + " > ".join(self.order)
                    + ", first come, first served within each")
        return "any waiting request (the worst choice)"


def apportion(weights: Mapping[Scenario, int | float | Fraction], n: int) -> dict[Scenario, int]:
    """Share ``n`` clients among scenarios in proportion to ``weights`` (D'Hondt).

    Seats are handed out one at a time, each to the scenario with the largest
    ``weight / (count + 1)`` (ties: the one listed first). The method is *house monotone*: going
    from ``n`` to ``n + 1`` clients adds exactly one client and removes none, which the
    saturation search relies on (Hamilton's largest-remainder method does not have this
    property: the Alabama paradox).

    >>> a, b = Scenario("a", Think(1)), Scenario("b", Think(1))
    >>> [sorted((sc.name, k) for sc, k in apportion({a: 2, b: 1}, n).items()) for n in (1, 3, 4)]
    [[('a', 1)], [('a', 2), ('b', 1)], [('a', 3), ('b', 1)]]
    """
    _check_int("the number of clients", n, 0)
    items = [(sc, Fraction(w)) for sc, w in weights.items()]
    if not items or any(w < 0 for _, w in items) or all(w == 0 for _, w in items):
        raise ConfigurationError("apportion needs scenarios with non-negative weights, "
                                 "not all zero")
    counts = [0] * len(items)
    for _ in range(n):
        best = max(range(len(items)), key=lambda i: (items[i][1] / (counts[i] + 1), -i))
        counts[best] += 1
    return {sc: k for (sc, _), k in zip(items, counts) if k > 0}


# ---------------------------------------------------------------------------- the system

@dataclass(frozen=True, init=False)
class System:
    """Clients of several scenarios, with a server or without one.

    Parameters
    ----------
    counts : mapping of Scenario to int
        How many clients follow each scenario (zero counts are dropped).
    server : Server, optional
        The server the clients send their requests to; ``None`` for a server-free system, where
        each client does its requests' work itself.
    composition : {'sync', 'async'}
        ``'sync'`` (default): the synchronous product, one tick per step, load over time.
        ``'async'``: the interleaved product (server-free systems only).
    name : str
        Names the model (``<scenario NAME>`` in positions).
    resource : str, optional
        The resource whose maximal cycle mean is this system's **load**
        (:attr:`resource`): with a server, ``'busy'`` (occupancy, the default: how many
        workers are busy per tick) or ``'server'`` (the requests' cost per tick); without
        one, ``'work'``. The model charges every resource either way; this only says which
        one the capacity questions judge.

    Raises
    ------
    dve.errors.ConfigurationError
        No clients, two scenarios of one name, one request name with two definitions, more
        than 255 clients with a server, a server under ``'async'``, or a system with no
        request at all (nothing to measure).

    Examples
    --------
    >>> job = Scenario("job", [Think(1), Request("run", service=2, cost=3)])
    >>> System({job: 4}).load_bound(), System({job: 4}, composition="async").load_bound()
    (Fraction(12, 1), Fraction(3, 1))
    """

    counts: tuple[tuple[Scenario, int], ...]
    server: Server | None
    composition: str
    name: str
    resource: str

    def __init__(self, counts: Mapping[Scenario, int], server: Server | None = None,
                 composition: str = "sync", name: str = "system",
                 resource: str | None = None) -> None:
        if not isinstance(counts, Mapping):
            raise ConfigurationError(f"a System needs a dict {{scenario: count}}, not {counts!r}")
        pairs: list[tuple[Scenario, int]] = []
        for sc, k in counts.items():
            if not isinstance(sc, Scenario):
                raise ConfigurationError(f"System counts are keyed by Scenario objects, "
                                         f"not {sc!r}")
            _check_int(f"the count of scenario '{sc.name}'", k, 0)
            if k:
                pairs.append((sc, k))
        if not pairs:
            raise ConfigurationError("a System needs at least one client")
        names = [sc.name for sc, _ in pairs]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise ConfigurationError(f"two different scenarios are named '{dup[0]}'")
        if server is not None and not isinstance(server, Server):
            raise ConfigurationError(f"server must be a Server or None, not {server!r}")
        if composition not in ("sync", "async"):
            raise ConfigurationError(f"unknown composition '{composition}': "
                                     "expected 'sync' or 'async'")
        if server is not None and composition != "sync":
            raise ConfigurationError("a system with a server must be composed with 'sync' "
                                     "(the server's load is measured per tick)")
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"a system name must be a non-empty string, not {name!r}")
        n = sum(k for _, k in pairs)
        if server is not None and n > _MAX_BYTE:
            raise ConfigurationError(f"at most {_MAX_BYTE} clients can share a server, not {n}")
        object.__setattr__(self, "counts", tuple(pairs))
        object.__setattr__(self, "server", server)
        object.__setattr__(self, "composition", composition)
        object.__setattr__(self, "name", name)
        measures = ((OCCUPANCY_RESOURCE, SERVER_RESOURCE) if server is not None
                    else (CLIENT_RESOURCE,))
        if resource is None:
            resource = measures[0]
        if resource not in measures:
            raise ConfigurationError(
                f"no resource '{resource}' in this system: it charges "
                + " and ".join(f"'{m}'" for m in measures)
                + (" (occupancy: busy workers per tick; server: the requests' cost per tick)"
                   if server is not None else " (the clients' own work; it has no server)"))
        object.__setattr__(self, "resource", resource)
        self.kinds()  # validates request names and that there is something to measure

    # -- views ------------------------------------------------------------------------------
    @property
    def scenarios(self) -> tuple[Scenario, ...]:
        """The scenarios, in the order given."""
        return tuple(sc for sc, _ in self.counts)

    @property
    def n_clients(self) -> int:
        """The total number of clients."""
        return sum(k for _, k in self.counts)

    @property
    def cost_resource(self) -> str:
        """The resource the requests' costs are charged to: ``'server'`` with a server,
        ``'work'`` without."""
        return SERVER_RESOURCE if self.server is not None else CLIENT_RESOURCE

    @property
    def occupancy_resource(self) -> str | None:
        """``'busy'`` (one per busy worker per tick) with a server, else ``None``."""
        return OCCUPANCY_RESOURCE if self.server is not None else None

    @property
    def occupancy(self) -> bool:
        """Whether the load is occupancy (:attr:`resource` is ``'busy'``)."""
        return self.resource == OCCUPANCY_RESOURCE

    def with_resource(self, resource: str | None) -> "System":
        """The same system judged on ``resource`` (``None``: the default, occupancy with a
        server).

        >>> u = Scenario("u", Request("r", 1, cost=3))
        >>> s = System({u: 2}, server=Server(2))
        >>> s.resource, s.with_resource("server").resource, s.with_resource("server").load_bound()
        ('busy', 'server', Fraction(3, 1))
        """
        return System(dict(self.counts), server=self.server, composition=self.composition,
                      name=self.name, resource=resource)

    @property
    def steps_per_tick(self) -> int:
        """Steps of the model per tick of the clock: ``admissions + 1`` for a server that
        admits several requests per tick (its admission steps, then the step in which every
        process moves), else 1. The load is the cycle mean per step all the same (charges
        are multiplied to match); a run of ``k`` steps lasts ``k / steps_per_tick`` ticks,
        which is also its time (the admission steps take none).

        >>> u = Scenario("u", Request("r", 1))
        >>> System({u: 2}, server=Server(4)).steps_per_tick
        1
        >>> System({u: 2}, server=Server(4, admissions=3)).steps_per_tick
        4
        """
        a = self.server.admissions if self.server is not None else 1
        return a + 1 if a > 1 else 1

    def count(self, scenario: str | Scenario) -> int:
        """The number of clients of a scenario (by object or name); 0 if absent."""
        name = scenario.name if isinstance(scenario, Scenario) else scenario
        return sum(k for sc, k in self.counts if sc.name == name)

    def scenario(self, name: str) -> Scenario | None:
        """The scenario called ``name``, or ``None``."""
        return next((sc for sc in self.scenarios if sc.name == name), None)

    def with_counts(self, counts: Mapping[Scenario, int]) -> "System":
        """The same server, composition, name and judged resource with other client counts."""
        return System(counts, server=self.server, composition=self.composition, name=self.name,
                      resource=self.resource)

    def kinds(self) -> tuple[Request, ...]:
        """The request kinds, in order of first appearance; kind ``i`` is numbered ``i + 1``."""
        seen: dict[str, Request] = {}
        consts: dict[str, str] = {}
        for sc in self.scenarios:
            for r in sc.requests():
                old = seen.get(r.name)
                if old is not None and old != r:
                    raise ConfigurationError(
                        f"request '{r.name}' is defined twice, as {old} and as {r}; "
                        "give different kinds different names")
                other = consts.get(r.name.upper())
                if other is not None and other != r.name:
                    raise ConfigurationError(f"requests '{other}' and '{r.name}' differ only "
                                             "in case; rename one")
                seen.setdefault(r.name, r)
                consts[r.name.upper()] = r.name
        if not seen:
            raise ConfigurationError("the system sends no request: there is no load to measure")
        if len(seen) > _MAX_BYTE:
            raise ConfigurationError(f"at most {_MAX_BYTE} kinds of request, not {len(seen)}")
        return tuple(seen.values())

    def load_bound(self) -> Fraction:
        """An upper bound on the load (the maximal cycle mean of :attr:`resource`), from the
        system's shape alone.

        With a server, judged on occupancy (``'busy'``): the smaller of ``workers`` (no tick
        has more busy workers than the server has) and ``admissions * max(service)`` (the
        server admits at most ``admissions`` requests per tick and a request holds a worker
        for ``service`` ticks: in a periodic run of ``L`` ticks at most ``admissions * L``
        requests are admitted per period, and the busy worker-ticks of one period are those
        of the requests admitted in it). Judged on the requests' cost (``'server'``): the same
        two with each tick weighted by its cost, ``workers * max(cost)`` and ``admissions *
        max(service * cost)``. Without a server, under ``'sync'``: the sum over clients of
        their largest cost per tick; under ``'async'``: the largest cost per tick (one client
        moves per step). No cycle mean, and so no load, can exceed it, whatever the number of
        clients.

        >>> quick = Scenario("q", [Think(1), Request("r", service=2, cost=3)])
        >>> System({quick: 9}, server=Server(4)).load_bound()  # 2 ticks per admission
        Fraction(2, 1)
        >>> System({quick: 9}, server=Server(4, admissions=3)).load_bound()  # min(4, 3 x 2)
        Fraction(4, 1)
        >>> System({quick: 9}, server=Server(4), resource="server").load_bound()  # 2 x 3
        Fraction(6, 1)
        """
        def top(sc: Scenario) -> int:
            return max((r.cost for r in sc.requests()), default=0)

        if self.server is not None:
            workers, big = self._server_bounds()
            return Fraction(min(workers, self.server.admissions * self._worth(big)))
        if self.composition == "sync":
            return Fraction(sum(k * top(sc) for sc, k in self.counts))
        return Fraction(max(top(sc) for sc in self.scenarios))

    def load_bound_why(self) -> str:
        """What :meth:`load_bound` rests on, in words.

        >>> quick = Scenario("q", [Think(1), Request("r", service=2)])
        >>> System({quick: 9}, server=Server(4)).load_bound_why()
        'one request admitted per tick, none holding a worker more than 2 ticks: r'
        >>> System({quick: 9}, server=Server(1)).load_bound_why()
        'no more workers busy than the server has'
        >>> System({quick: 9}, server=Server(8, admissions=3), resource="server").load_bound_why()
        '3 requests admitted per tick, none worth more than 2: r, 2 ticks x 1'
        """
        if self.server is None:
            return ("the clients' largest costs per tick added up" if self.composition == "sync"
                    else "interleaved: one client's largest cost per step")
        workers, big = self._server_bounds()
        a = self.server.admissions
        if a * self._worth(big) < workers:
            many = "one request" if a == 1 else f"{a} requests"
            if self.occupancy:
                return (f"{many} admitted per tick, none holding a worker more than "
                        f"{big.service} tick{'s' * (big.service != 1)}: {big.name}")
            return (f"{many} admitted per tick, none worth more than "
                    f"{big.service * big.cost}: {big.name}, {big.service} "
                    f"tick{'s' * (big.service != 1)} x {big.cost}")
        if self.occupancy:
            return "no more workers busy than the server has"
        return "workers x largest cost per tick"

    def _worth(self, r: Request) -> int:
        """What request ``r`` charges the judged resource in all: its ticks of service (on
        occupancy), or ``service * cost``."""
        return r.service if self.occupancy else r.service * r.cost

    def _server_bounds(self) -> tuple[int, Request]:
        """``(the most a tick can charge, the request kind worth the most in all)``: the two
        bounds of :meth:`load_bound` with a server (the second is also multiplied by the
        server's admissions per tick there)."""
        kinds = self.kinds()
        per_tick = 1 if self.occupancy else max(r.cost for r in kinds)
        return self.server.workers * per_tick, max(kinds, key=self._worth)

    def describe(self) -> str:
        """One line: the clients per scenario and the server.

        >>> u = Scenario("u", Request("r", 1))
        >>> System({u: 3}, server=Server(2)).describe()
        '3 clients (u: 3), server with 2 workers, system sync'
        >>> System({u: 3}, server=Server(4, admissions=2)).describe()
        '3 clients (u: 3), server with 4 workers admitting 2 requests per tick, system sync'
        >>> System({u: 3}, server=Server(policy="fifo")).describe()
        '3 clients (u: 3), server with 1 worker (first come, first served), system sync'
        """
        parts = ", ".join(f"{sc.name}: {k}" for sc, k in self.counts)
        n = self.n_clients
        srv = ("no server" if self.server is None else
               f"server with {self.server.workers} worker{'s' * (self.server.workers != 1)}")
        if self.server is not None and self.server.admissions > 1:
            srv += f" admitting {self.server.admissions} requests per tick"
        if self.server is not None and self.server.policy != "any":
            srv += f" ({self.server.policy_words()})"
        return f"{n} client{'s' * (n != 1)} ({parts}), {srv}, system {self.composition}"

    # -- the model --------------------------------------------------------------------------
    def to_model(self) -> s.Model:
        """Build the DVE model: an AST with positions in ``<scenario NAME>``.

        Returns
        -------
        dve.syntax.Model
            Constants for the request kinds and the server's ``done`` variable (with a
            server; with several workers the constants ``WORKERS``, ``BUSY``, ``SERVED`` and
            the variable ``adm`` instead; with several admissions per tick ``phase`` and
            ``adm1``, ..., ``admA`` instead of ``adm``; with a policy other than ``'any'``
            also ``ngroups`` and ``gone``), the server process, one process per client (with
            a server, each keeps its pending request in its own ``req``, which the server
            reads as ``C->req``, and under a policy its group of arrival in ``rank``:
            :mod:`scenarios.policy`), and ``system sync`` or ``system async``.

        Examples
        --------
        >>> u = Scenario("u", [Think(1), Request("r", 2)])
        >>> m = System({u: 1}, server=Server()).to_model()
        >>> m.system.kind, [d.name for d in m.globals]
        ('sync', ['R', 'done'])
        """
        return _Builder(self).build()


# ---------------------------------------------------------------------------- scenario automata

@dataclass(frozen=True)
class _Tick:
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
class _Automaton:
    """A scenario as states and ticks (epsilon moves removed)."""
    states: list[str]
    init: int
    edges: list[tuple[int, int, _Tick]]

    @property
    def uses_timer(self) -> bool:
        return any(t.phase != "once" for _, _, t in self.edges)


class _Nfa:
    """Steps -> a graph of tick edges and epsilon edges; each tick source belongs to one step."""

    def __init__(self, with_server: bool) -> None:
        self.with_server = with_server
        self.labels: list[str] = []
        self.eps: list[list[int]] = []
        self.ticks: list[list[tuple[int, _Tick]]] = []

    def node(self, label: str = "") -> int:
        self.labels.append(label)
        self.eps.append([])
        self.ticks.append([])
        return len(self.labels) - 1

    def tick(self, a: int, b: int, t: _Tick) -> None:
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
            self.tick(a, out, _Tick(kind, request))
        else:
            self.tick(a, a, _Tick(kind, request, count, "loop"))
            self.tick(a, out, _Tick(kind, request, count, "exit"))
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
            self.tick(send, wait, _Tick("send", st))
            self.tick(wait, wait, _Tick("wait", st))
            self.tick(wait, out, _Tick("reply", st))
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


def automaton(scenario: Scenario, with_server: bool) -> _Automaton:
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
    edges: list[tuple[int, int, _Tick]] = []
    seen_edges: set[tuple[int, int, _Tick]] = set()
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
    return _Automaton(states=_unique(labels), init=0, edges=edges)


def _unique(labels: list[str], taken: frozenset[str] = frozenset()) -> list[str]:
    """Distinct state names for ``labels``, none in ``taken``: a label keeps its name the
    first time (``label_s`` where ``taken`` has it), later ones get the first free
    ``_2``, ``_3``, ... A suffixed name is never one of the labels themselves, so a request
    named ``think_2`` keeps its name beside a second ``think``.

    >>> _unique(["think", "think", "open"])
    ['think', 'think_2', 'open']
    >>> _unique(["think", "think_2", "think"])
    ['think', 'think_2', 'think_3']
    >>> _unique(["done", "done_s", "req"], frozenset({"done", "req"}))
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


# ---------------------------------------------------------------------------- the AST builder

class _Builder(PolicyRendering):
    """Builds the model of one :class:`System`; every node gets the same synthetic position."""

    def __init__(self, system: System) -> None:
        self.sys = system
        self.pos: SourcePos = synthetic_pos(f"<scenario {system.name}>")
        self.kinds = system.kinds()
        # clients: (number from 1, process name, scenario)
        self.clients: list[tuple[int, str, Scenario]] = []
        for sc, k in system.counts:
            for i in range(1, k + 1):
                self.clients.append((len(self.clients) + 1, f"{sc.name}_{i}", sc))
        # A kind's constant is its name in capitals, clear of the processes' names (request
        # 'a_1' beside scenario 'A' would name both A_1); the kinds' names differ in more
        # than case (System.kinds), so their capitals are distinct.
        procs = {p for _, p, _ in self.clients} | {"server"}
        uppers = {r.name.upper() for r in self.kinds}
        self.kind_const: dict[str, str] = {}
        for r in self.kinds:
            name = r.name.upper()
            if name in procs:
                while name in procs or name in uppers or name in self.kind_const.values():
                    name += "_"
            self.kind_const[r.name] = name
        self.server = system.server
        self.workers = system.server.workers if system.server else 0
        # Several workers form a pool (server_pool): the names of its constants and of the
        # admission variable, clear of the request kinds' constants.
        kinds = set(self.kind_const.values())

        def clear(name: str) -> str:
            while name in kinds:
                name += "_"
            return name

        self.n_workers, self.busy, self.served, self.adm = (
            clear("WORKERS"), clear("BUSY"), clear("SERVED"), clear("adm"))
        # Several admissions per tick (server_phased): a tick is ``A + 1`` steps, the server's
        # ``A`` admission steps (``phase`` 1..A, the K-th writing ``admK``) and one step in
        # which everybody moves (``phase`` 0); charges are multiplied by ``A + 1`` (``mult``).
        self.admissions = system.server.admissions if system.server else 0
        self.phased = self.admissions > 1
        self.mult = self.admissions + 1 if self.phased else 1
        self.phase, self.nbusy = clear("phase"), clear("nbusy")
        self.adm_k = {k: clear(f"adm{k}") for k in range(1, self.admissions + 1)}
        # A server policy other than 'any' (scenarios.policy): ranks of arrival.
        self.setup_policy(clear)

    # -- expression helpers -----------------------------------------------------------------
    def lit(self, v: int) -> s.Expr:
        return s.IntLit(v, pos=self.pos)

    def var(self, name: str) -> s.Expr:
        return s.Name(name, pos=self.pos)

    def bin(self, op: str, a: s.Expr, b: s.Expr) -> s.Expr:
        return s.Binary(op, a, b, pos=self.pos)

    def all_of(self, xs: Sequence[s.Expr]) -> s.Expr:
        out = xs[0]
        for x in xs[1:]:
            out = self.bin("and", out, x)
        return out

    def any_of(self, xs: Sequence[s.Expr]) -> s.Expr:
        out = xs[0]
        for x in xs[1:]:
            out = self.bin("or", out, x)
        return out

    def assign(self, name: str, value: s.Expr) -> s.Assign:
        return s.Assign(s.Name(name, pos=self.pos), value, pos=self.pos)

    def cost(self, amount: s.Expr) -> tuple[s.Cost, ...]:
        """The charges of one tick of work: ``amount`` to the cost resource and, with a
        server, ``mult`` (one busy worker, on a tick of ``mult`` steps) to the occupancy
        resource. Every tick of service charges both, a request of cost 0 included."""
        costs = (s.Cost(self.sys.cost_resource, amount, named=True, pos=self.pos),)
        if self.server is not None:
            costs += (s.Cost(OCCUPANCY_RESOURCE, self.lit(self.mult), named=True,
                             pos=self.pos),)
        return costs

    def ref(self, name: str) -> s.StateRef:
        return s.StateRef(name, pos=self.pos)

    def trans(self, a: str, b: str, guard: Sequence[s.Expr] = (), effects: Sequence[s.Assign] = (),
              costs: Sequence[s.Cost] = (), time: int | None = None) -> s.Transition:
        return s.Transition(self.ref(a), self.ref(b), guard=tuple(guard), effects=tuple(effects),
                            costs=tuple(costs), pos=self.pos,
                            time=None if time is None else self.lit(time))

    def byte(self, name: str, init: int | None = None, const: bool = False) -> s.VarDecl:
        return s.VarDecl("byte", name, init=None if init is None else self.lit(init),
                         const=const, pos=self.pos)

    def req(self, proc: str) -> s.Expr:
        """The client's request, read by the server: ``proc->req``. Each client keeps it in a
        variable of its own, so the clients of one scenario are copies of one another up to
        their number (the symmetry reduction of docs/algorithms.md sees them as instances)."""
        return s.Remote(s.ProcRef(proc, pos=self.pos), _REQ, pos=self.pos)

    # -- the model --------------------------------------------------------------------------
    def build(self) -> s.Model:
        items: list[s.Item] = []
        self.autos: dict[str, _Automaton] = {}
        for _, _, sc in self.clients:
            if sc.name not in self.autos:
                self.autos[sc.name] = automaton(sc, self.server is not None)
        if self.server is not None:
            items += [self.byte(self.kind_const[r.name], i + 1, const=True)
                      for i, r in enumerate(self.kinds)]
            if self.workers == 1:
                items.append(self.byte("done"))
            else:
                nk = len(self.kinds)
                if nk + 2 > _MAX_BYTE:
                    raise ConfigurationError(f"at most {_MAX_BYTE - 2} kinds of request with "
                                             f"several workers, not {nk}")
                items += [self.byte(self.n_workers, self.workers, const=True),
                          self.byte(self.busy, nk + 1, const=True),
                          self.byte(self.served, nk + 2, const=True)]
                if self.phased:
                    items += [self.byte(self.phase), self.byte(self.nbusy)]
                    items += [self.byte(self.adm_k[k]) for k in self.adm_k]
                else:
                    items.append(self.byte(self.adm))
            items += self.policy_globals()
        # (the server of a policy reads the clients' states by name: known before it is built)
        self.global_names = {d.name for d in items if isinstance(d, s.VarDecl)}
        if self.server is not None:
            items.append(self.server_process())
        for j, proc, sc in self.clients:
            items.append(self.client_process(j, proc, self.autos[sc.name], sc))
        return s.Model(tuple(items), s.SystemDecl(self.sys.composition, pos=self.pos),
                       pos=self.pos)

    def state_names(self, sc: Scenario) -> list[str]:
        """The names of the states of a client of ``sc`` (its automaton's, made distinct and
        clear of the variables it sees)."""
        taken = self.global_names | {_TIMER, _REQ} | ({RANK} if self.ranked else set())
        return _unique(self.autos[sc.name].states, frozenset(taken))

    def client_process(self, j: int, proc: str, auto: _Automaton, sc: Scenario) -> s.Process:
        taken = self.global_names | {_TIMER, _REQ} | ({RANK} if self.ranked else set())
        names = self.state_names(sc)
        req = _REQ
        done_any = self.bin("==", self.var("done"), self.lit(j))
        done_none = self.bin("!=", self.var("done"), self.lit(j))
        trans = []
        v, n = self.var, self.lit
        extra: dict[str, str] = {}      # states of a pooled request's service
        self.taken = taken
        timer = False
        for a, b, t in auto.edges:
            src, dst = names[a], names[b]
            if t.kind in ("think", "work"):
                costs = (self.cost(n(t.request.cost)) if t.kind == "work" and t.request
                         and t.request.cost else ())
                last = n(t.count - 1)
                if t.phase == "once":
                    trans.append(self.trans(src, dst, costs=costs))
                elif t.phase == "loop":  # timer < k - 1: one more tick here
                    trans.append(self.trans(
                        src, dst, guard=[self.bin("<", v(_TIMER), last)],
                        effects=[self.assign(_TIMER, self.bin("+", v(_TIMER), n(1)))],
                        costs=costs))
                else:  # timer == k - 1: the last tick, on to the next step
                    trans.append(self.trans(
                        src, dst, guard=[self.bin("==", v(_TIMER), last)],
                        effects=[self.assign(_TIMER, n(0))], costs=costs))
            elif t.kind == "send":
                assert t.request is not None
                trans.append(self.trans(src, dst, effects=[
                    self.assign(req, self.var(self.kind_const[t.request.name]))]))
            elif self.phased:
                timer |= self.pooled_phased(j, src, dst, t, names, trans, extra)
            elif self.workers > 1:
                timer |= self.pooled(j, src, dst, t, names, trans, extra)
            elif t.kind == "wait":
                trans.append(self.trans(src, dst, guard=[done_none]))
            else:  # reply
                trans.append(self.trans(src, dst, guard=[done_any],
                                        effects=[self.assign(req, self.lit(0))]))
        decls = ((self.byte(_TIMER),) if auto.uses_timer or timer else ()) + \
            ((self.byte(_REQ),) if self.server is not None else ()) + \
            ((self.byte(RANK),) if self.ranked else ())
        trans = self.ranked_client(j, sc, trans)
        if self.phased:
            trans = self.phased_client(trans, names + list(extra.values()))
        return s.Process(proc, decls, tuple(s.StateDecl(x, pos=self.pos)
                                            for x in names + list(extra.values())),
                         self.ref(names[auto.init]), transitions=tuple(trans), pos=self.pos)

    def pooled(self, j: int, src: str, dst: str, t: _Tick, names: list[str],
               trans: list[s.Transition], extra: dict[str, str]) -> bool:
        """The wait and reply ticks of client ``j`` on a pool of workers (see
        :meth:`server_pool`): the client learns from ``adm`` that it was admitted on the tick
        before, and its request's other ticks of service are its own, charged to the server's
        resource (``req`` is ``BUSY`` while more are to come, ``SERVED`` on the tick of the
        reply). True when the client's ``timer`` counts them."""
        v, n = self.var, self.lit
        r = t.request
        assert r is not None
        admitted = self.bin("==", v(self.adm), n(j))
        costs = self.cost(n(r.cost))
        if t.kind == "wait":
            trans.append(self.trans(src, src, guard=[self.bin("!=", v(self.adm), n(j))]))
            if r.service == 1:
                return False
            fin = self.fresh(f"{src}_served", names, extra)
            if r.service == 2:
                trans.append(self.trans(src, fin, guard=[admitted], costs=costs,
                                        effects=[self.assign(_REQ, v(self.served))]))
                return False
            svc = self.fresh(f"{src}_served_more", names, extra)
            trans += self.service_ticks(src, svc, fin, admitted, costs, r.service - 2)
            return True
        # the reply: straight from waiting when one tick of service was all, else after it
        if r.service == 1:
            trans.append(self.trans(src, dst, guard=[admitted],
                                    effects=[self.assign(_REQ, n(0))]))
        else:
            trans.append(self.trans(self.fresh(f"{src}_served", names, extra), dst,
                                    effects=[self.assign(_REQ, n(0))]))
        return False

    def fresh(self, base: str, names: list[str], extra: dict[str, str]) -> str:
        """The client's state named after ``base`` (``base`` itself, or with a suffix when
        that is taken), made once: ``extra`` maps the bases to the names given."""
        if base not in extra:
            name, k = base, 1
            while name in names or name in extra.values() or name in self.taken:
                k += 1
                name = f"{base}_{k}"
            extra[base] = name
        return extra[base]

    def server_process(self) -> s.Process:
        if self.workers == 1:
            decls = (self.byte("cur"), self.byte("left"), self.byte("cpt"))
            trans = self.server_single()
        elif self.phased:
            decls, trans = (), self.server_phased()
        else:
            decls, trans = (), self.server_pool()
        return s.Process("server", decls, (s.StateDecl("serve", pos=self.pos),),
                         self.ref("serve"), transitions=tuple(trans), pos=self.pos)

    def admissible(self, j: int, proc: str) -> s.Expr:
        """Client ``j`` has a request waiting that the worker has not just finished (one
        worker; the server keeps the client it serves in ``cur`` and never admits it twice)."""
        return self.all_of([self.bin("!=", self.req(proc), self.lit(0)),
                            self.bin("!=", self.var("done"), self.lit(j))])

    def requests_of(self, sc: Scenario) -> tuple[Request, ...]:
        """The requests a client of ``sc`` can send: those of its automaton's ``send`` ticks
        (a request only in ``Loop(..., times=0)`` is never sent; the server's transitions
        about it would read state the client does not keep, such as its ``timer``)."""
        sent = {t.request for _, _, t in self.autos[sc.name].edges if t.kind == "send"}
        return tuple(r for r in sc.requests() if r in sent)     # (in the scenario's order)

    def server_single(self) -> list[s.Transition]:
        """One worker: a transition per case, readable as it stands."""
        cur, left, cpt, done = "cur", "left", "cpt", "done"
        v, n = self.var, self.lit
        free = self.bin("==", v(left), n(0))
        out = [
            # serving, more ticks to go
            self.trans("serve", "serve", guard=[self.bin(">", v(left), n(1))],
                       effects=self.keep_groups()
                       + [self.assign(left, self.bin("-", v(left), n(1)))],
                       costs=self.cost(v(cpt))),
            # serving the last tick: tell the client
            self.trans("serve", "serve", guard=[self.bin("==", v(left), n(1))],
                       effects=self.keep_groups()
                       + [self.assign(done, v(cur)), self.assign(cur, n(0)),
                          self.assign(left, n(0)), self.assign(cpt, n(0))],
                       costs=self.cost(v(cpt))),
            # free and nobody waiting
            self.trans("serve", "serve", guard=[self.all_of([free, s.Unary(
                "not", self.any_of([self.admissible(j, p) for j, p, _ in self.clients]),
                pos=self.pos)])], effects=self.keep_groups() + [self.assign(done, n(0))]),
        ]
        for j, proc, sc in self.clients:
            for r in self.requests_of(sc):
                last = r.service == 1
                guard = self.all_of([free, self.bin("==", self.req(proc),
                                                    v(self.kind_const[r.name])),
                                     self.bin("!=", v(done), n(j))])
                effects = ([self.assign(done, n(j))] if last else
                           [self.assign(cur, n(j)), self.assign(left, n(r.service - 1)),
                            self.assign(cpt, n(r.cost)), self.assign(done, n(0))])
                if self.ranked:
                    guard = self.bin("and", guard, self.best(j, proc, sc))
                    effects = self.admit_groups(j, proc) + effects
                out.append(self.trans("serve", "serve", guard=[guard], effects=effects,
                                      costs=self.cost(n(r.cost))))
        return out

    def holds_worker(self, j: int, proc: str, sc: Scenario) -> s.Expr:
        """Client ``j``'s request holds a worker during this tick: admitted on the tick before
        (``adm == j``) with more than one tick of service, or ``BUSY``."""
        v, n = self.var, self.lit
        held = self.bin("==", self.req(proc), v(self.busy))
        long = [self.bin("==", self.req(proc), v(self.kind_const[r.name]))
                for r in self.requests_of(sc) if r.service > 1]
        if not long:
            return held
        return self.bin("or", self.bin("and", self.bin("==", v(self.adm), n(j)),
                                       self.any_of(long)), held)

    def server_pool(self) -> list[s.Transition]:
        """Several workers, as a pool: the server admits at most one waiting request per tick
        while fewer than ``WORKERS`` requests are in service, serving its first tick (and
        charging it) and telling the client in ``adm``; the client serves the request's other
        ticks itself (:meth:`pooled`). No worker has a name, so the clients of a scenario stay
        the only processes that renaming permutes, and the workers need no reduction of their
        own: which worker serves a request never shows in the state.

        Any free worker taking the request is the same run up to naming the workers, so the
        loads are those of a server whose lowest free worker takes each request."""
        v, n = self.var, self.lit
        in_service = self.holds_worker(*self.clients[0])
        for j, proc, sc in self.clients[1:]:
            in_service = self.bin("+", in_service, self.holds_worker(j, proc, sc))
        free = self.bin("<", in_service, v(self.n_workers))

        def waiting(j: int, proc: str) -> s.Expr:
            return self.all_of([self.bin("!=", self.req(proc), n(0)),
                                self.bin("<", self.req(proc), v(self.busy)),
                                self.bin("!=", v(self.adm), n(j))])

        idle = s.Unary("not", self.all_of([free, self.any_of(
            [waiting(j, p) for j, p, _ in self.clients])]), pos=self.pos)
        out = [self.trans("serve", "serve", guard=[idle],
                          effects=self.keep_groups() + [self.assign(self.adm, n(0))])]
        for j, proc, sc in self.clients:
            for r in self.requests_of(sc):
                guard = self.all_of([free, self.bin("==", self.req(proc),
                                                    v(self.kind_const[r.name])),
                                     self.bin("!=", v(self.adm), n(j))])
                effects = [self.assign(self.adm, n(j))]
                if self.ranked:
                    guard = self.bin("and", guard, self.best(j, proc, sc))
                    effects = self.admit_groups(j, proc) + effects
                out.append(self.trans("serve", "serve", guard=[guard], effects=effects,
                                      costs=self.cost(n(r.cost))))
        return out

    # -- several admissions per tick: a tick of A + 1 steps -----------------------------------
    #
    # Server(workers=W, admissions=A), A > 1. Invariants, in every reachable state:
    # (1) ``phase`` is 0 before the step in which every process moves (the tick proper) and
    #     K (1..A) before the server's K-th admission step of the tick; the server alone
    #     writes it, going 0, 1, ..., A, 0, ... whatever else happens, so every tick is
    #     exactly A + 1 steps and every cycle of the state graph has A + 1 steps per tick.
    # (2) During the admission steps nobody but the server moves (each client takes its
    #     self-loop guarded ``phase != 0``). ``admK`` (K < the phase) is the client the
    #     server admitted at step K of this tick, 0 when it admitted none; all ``admK`` are
    #     0 at phase 1 (the move step clears them after the clients have read them).
    # (3) The requests in service during a tick are the clients whose ``req`` is ``BUSY``
    #     (admitted on an earlier tick, more ticks to serve: their number is ``nbusy``,
    #     which the server writes at the move step before the tick) and those admitted
    #     in this tick's admission steps. Step K admits only while ``nbusy + K <= WORKERS``
    #     and only a client that is waiting and not already in some ``admI``, I < K: so at
    #     most ``min(A, WORKERS - nbusy, waiting)`` distinct requests are admitted per tick,
    #     never more than ``WORKERS`` are in service, and, as the server admits whenever
    #     the guard lets it, exactly that many (it is work conserving, and it may take any
    #     waiting client at each step: the worst case is a maximum over every choice).
    # (4) Costs: only a client's own move steps charge, ``(A + 1) * cost`` for each tick
    #     of service of its request (its admission tick included: at the move step of that
    #     tick the client reads its number in some ``admK``). So a move step costs
    #     ``(A + 1) x`` the work of its tick, the admission steps cost 0, and a cycle's mean
    #     cost per step is exactly the work per tick: the load.
    # (5) Time: the admission steps take no time (``time 0`` on the server's admission
    #     transitions and the clients' self-loops), the move step the default 1, so a run's
    #     time is its number of ticks (the cycle ratio is ``A + 1`` times the load).

    def busy_next(self) -> s.Expr:
        """At the move step: the number of clients whose ``req`` will be ``BUSY`` on the next
        tick, i.e. whose request still has a tick of service then: ``BUSY`` now with more
        than one tick left (``timer > 1``), or admitted on this tick (in some ``admK``) for
        two ticks or more."""
        v, n = self.var, self.lit
        ks = range(1, self.admissions + 1)
        terms = []
        for j, p, sc in self.clients:
            long = [r for r in self.requests_of(sc) if r.service > 1]
            if not long:
                continue            # never BUSY
            timer = s.Remote(s.ProcRef(p, pos=self.pos), _TIMER, pos=self.pos)
            terms.append(self.bin("or", self.all_of([
                self.bin("==", self.req(p), v(self.busy)), self.bin(">", timer, n(1))]),
                self.all_of([self.any_of([self.bin("==", v(self.adm_k[k]), n(j)) for k in ks]),
                             self.any_of([self.bin("==", self.req(p), v(self.kind_const[r.name]))
                                          for r in long])])))
        if not terms:
            return n(0)
        out = terms[0]
        for x in terms[1:]:
            out = self.bin("+", out, x)
        return out

    def server_phased(self) -> list[s.Transition]:
        """The server of a tick of ``A + 1`` steps (invariants (1)-(3) above): at ``phase``
        0 it counts the requests ``BUSY`` on the next tick into ``nbusy`` (:meth:`busy_next`:
        one sum over the clients, written once, which every admission step reads), clears
        the ``admK`` and moves on; at step ``K`` it admits one waiting
        client not yet admitted this tick while ``nbusy + K <= WORKERS``, or idles when it
        may not or nobody waits, in no time (invariant (5)). It charges nothing (the clients
        do)."""
        v, n = self.var, self.lit
        A = self.admissions
        ph, busy = self.phase, v(self.nbusy)
        out = [self.trans("serve", "serve", guard=[self.bin("==", v(ph), n(0))],
                          effects=[self.assign(ph, n(1)), self.assign(self.nbusy, self.busy_next())]
                          + [self.assign(self.adm_k[k], n(0)) for k in range(1, A + 1)])]
        for k in range(1, A + 1):
            at = self.bin("==", v(ph), n(k))
            nxt = self.assign(ph, n(k + 1 if k < A else 0))
            free = self.bin("<=", self.bin("+", busy, n(k)), v(self.n_workers))

            def fresh(j: int) -> list[s.Expr]:
                return [self.bin("!=", v(self.adm_k[i]), n(j)) for i in range(1, k)]

            waiting = [self.all_of([self.bin("!=", self.req(p), n(0)),
                                    self.bin("<", self.req(p), v(self.busy))] + fresh(j))
                       for j, p, _ in self.clients]
            out.append(self.trans("serve", "serve", guard=[self.bin("and", at, s.Unary(
                "not", self.all_of([free, self.any_of(waiting)]), pos=self.pos))],
                effects=[nxt], time=0))
            for j, proc, sc in self.clients:
                for r in self.requests_of(sc):
                    guard = self.all_of([at, free, self.bin("==", self.req(proc),
                                                            v(self.kind_const[r.name]))]
                                        + fresh(j))
                    out.append(self.trans("serve", "serve", guard=[guard], time=0,
                                          effects=[self.assign(self.adm_k[k], n(j)), nxt]))
        return out

    def pooled_phased(self, j: int, src: str, dst: str, t: _Tick, names: list[str],
                      trans: list[s.Transition], extra: dict[str, str]) -> bool:
        """The wait and reply ticks of client ``j`` when the server admits several requests
        per tick (:meth:`server_phased`): at the move step of a tick the client reads whether
        one of this tick's ``admK`` holds its number; if so it serves its request's first
        tick then and there, and its other ticks on the following ones (``req`` is ``BUSY``
        while more are to come, ``SERVED`` before the reply), each charged ``(A + 1) *
        cost`` on its own transition. True when the client's ``timer`` counts them."""
        v, n = self.var, self.lit
        r = t.request
        assert r is not None
        if t.kind == "reply":
            trans.append(self.trans(self.fresh(f"{src}_served", names, extra), dst,
                                    effects=[self.assign(_REQ, n(0))]))
            return False
        ks = range(1, self.admissions + 1)
        admitted = self.any_of([self.bin("==", v(self.adm_k[k]), n(j)) for k in ks])
        costs = self.cost(n(self.mult * r.cost))
        fin = self.fresh(f"{src}_served", names, extra)
        trans.append(self.trans(src, src, guard=[self.all_of(
            [self.bin("!=", v(self.adm_k[k]), n(j)) for k in ks])]))
        if r.service == 1:
            trans.append(self.trans(src, fin, guard=[admitted], costs=costs,
                                    effects=[self.assign(_REQ, v(self.served))]))
            return False
        svc = self.fresh(f"{src}_served_more", names, extra)
        trans += self.service_ticks(src, svc, fin, admitted, costs, r.service - 1)
        return True

    def service_ticks(self, src: str, svc: str, fin: str, admitted: s.Expr, costs,
                      ticks: int) -> list[s.Transition]:
        """A request's service after admission, from the client's waiting state ``src``:
        into ``svc`` (``req = BUSY``, ``timer = ticks``) once ``admitted`` holds, a tick in
        ``svc`` while ``timer > 1``, then to ``fin`` (``req = SERVED``); each charging
        ``costs``. Both renderings of the server (one admission per tick or several) end a
        request so; they differ in the admission and in how many ticks are left for this."""
        v, n = self.var, self.lit
        return [
            self.trans(src, svc, guard=[admitted], costs=costs,
                       effects=[self.assign(_REQ, v(self.busy)), self.assign(_TIMER, n(ticks))]),
            self.trans(svc, svc, guard=[self.bin(">", v(_TIMER), n(1))], costs=costs,
                       effects=[self.assign(_TIMER, self.bin("-", v(_TIMER), n(1)))]),
            self.trans(svc, fin, guard=[self.bin("==", v(_TIMER), n(1))], costs=costs,
                       effects=[self.assign(_TIMER, n(0)), self.assign(_REQ, v(self.served))]),
        ]

    def phased_client(self, trans: list[s.Transition], states: list[str]) -> list[s.Transition]:
        """A client's transitions in a tick of ``A + 1`` steps: each one only at the move
        step (``phase == 0``), and a self-loop taking no time in every state for the
        admission steps."""
        v, n = self.var, self.lit
        move = self.bin("==", v(self.phase), n(0))
        out = [s.Transition(tr.src, tr.dst, guard=(self.all_of([move, *tr.guard]),),
                            effects=tr.effects, costs=tr.costs, pos=self.pos) for tr in trans]
        hold = self.bin("!=", v(self.phase), n(0))
        return out + [self.trans(x, x, guard=[hold], time=0) for x in states]
