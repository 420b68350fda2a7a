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
(default 1). A :class:`System` puts ``{scenario: count}`` clients
together, with a server or without one, and :meth:`System.to_model` builds the DVE model as a
:class:`dve.syntax.Model` with synthetic positions (``<scenario NAME>``), so a generated model
goes through the same checks as a hand-written one and can be written out with
:func:`dve.format_model`.

Time and composition
--------------------
A system with a server is composed with ``system sync``: every process takes exactly one
transition per step, so a step is a **tick** of a global clock, and the maximal cycle mean of the
server's cost is its worst sustainable **load per tick**.

Clients and server communicate through single-writer shared variables (``system sync`` passes no
values through channels, and two processes assigning one variable in the same step lead to the
error state; docs/dve-reference.md section 7):

- ``req_C`` (written by client ``C`` only): 0, or the kind of its pending request (the constant
  named after the request, e.g. ``EDIT``);
- ``done`` (written by the server only, one worker): the number of the client whose request
  finished on the previous tick, else 0;
- ``adm`` (written by the server only, several workers): the number of the client admitted on
  the previous tick, else 0;
- ``admK``, ``moreK`` (written by desk ``K`` only, several admissions per tick) and ``held``
  (written by the server only): see "Several admissions per tick" below.

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
One process cannot take several admissions in one ``system sync`` step without a transition
per set of clients, and several processes cannot share a counter, so the rendering has ``A``
*desks*, processes ``desk1``, ..., ``deskA``. Desk ``K`` admits one waiting client per tick,
writing its number into ``admK`` (and into ``moreK`` whether the request holds its worker on
the next tick too), while ``held + dl + K <= WORKERS``: ``held`` (written by the server, which
only counts) is the number of ``BUSY`` requests, ``dl`` the distinct clients the desks admitted
on the tick before whose request goes on. So never more than ``W`` requests are in service, at
most ``A`` are admitted per tick, and at least one whenever a worker is free and a request
waits. Two desks may take the same client on one tick (each reads the state before the tick);
it is admitted once, and that tick admits fewer than it could have: the worst case ranges over
these runs too. Desks hold client numbers as ``adm`` does and have one transition per client,
a family that renaming permutes, so the symmetry reduction still applies. The desks charge
nothing: a client charges the tick of service spent on its admission tick on its own first
step after it (``2 * cost`` there, or ``cost`` on the reply of a one-tick request), so every
charge of a request is on its client's transitions, and a cycle's cost is the work done on it.

Why the mean is the load, and its bound
---------------------------------------
Only the server's transitions (and, with a pool of workers, the ticks of service that clients
serve themselves) carry cost, under the resource ``server``; a step costs the sum of
``cost`` over the requests its workers serve during that tick (with several admissions per
tick, a request's admission tick is charged on the tick after it instead). The cost of a cycle of the state
graph is the work done in one period of a periodic run, and its length is the period in ticks, so
the cycle mean is the work per tick of that run; the maximal cycle mean is the worst over every
run the clients and the server can produce forever (DESIGN.md, "Saturation"). A worker serves
one request per tick at most, so no tick does more than ``workers * max(cost)`` of work; and
the server admits ``admissions`` requests per tick at most, each worth ``service * cost`` in
all, so no periodic run does more work per tick than ``admissions`` times the largest of
those. Every cycle mean, and so the load, is at most the smaller bound
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
>>> system.n_clients, system.resource, system.load_bound()
(2, 'server', Fraction(1, 1))
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

__all__ = [
    "Think", "Request", "Choice", "Loop", "Step", "Scenario", "Server", "System", "apportion",
    "SERVER_RESOURCE", "CLIENT_RESOURCE", "DVE_KEYWORDS",
]

#: Resource charged by the server's transitions (systems with a server).
SERVER_RESOURCE = "server"
#: Resource charged by the clients' own work (systems without a server).
CLIENT_RESOURCE = "work"

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
    number of rounds from ``lo`` on, including staying in the loop forever.

    >>> Loop([Think(2), Request("edit", 1)], times=(1, 3)).times
    (1, 3)
    """

    body: tuple["Step", ...]
    times: tuple[int, int | None]

    def __init__(self, body: object, times: int | tuple[int, int | None] = 1) -> None:
        steps = _steps("Loop body", body)
        if isinstance(times, tuple):
            if len(times) != 2:
                raise ConfigurationError(f"Loop times must be n or (lo, hi), not {times!r}")
            lo = _check_int("Loop times lo", times[0], 0)
            hi = None if times[1] is None else _check_int("Loop times hi", times[1], lo)
        else:
            lo = hi = _check_int("Loop times", times, 0)
        object.__setattr__(self, "body", steps)
        object.__setattr__(self, "times", (lo, hi))


Step = Union[Think, Request, Choice, Loop]
_STEP_TYPES = (Think, Request, Choice, Loop)


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
        A bad name, or something in ``steps`` that is not a step.

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


@dataclass(frozen=True)
class Server:
    """A server with ``workers`` workers, each serving one request at a time, that admits up
    to ``admissions`` waiting requests per tick (``1..workers``, default 1).

    With one admission per tick a server's load never passes the work of one request per
    tick, however many workers it has (:meth:`System.load_bound`); ``admissions=A`` lets it
    take up to ``A`` requests on one tick, as many as workers are free.

    >>> Server().workers, Server(workers=2).workers, Server(8, admissions=8).admissions
    (1, 2, 8)
    >>> Server(workers=2, admissions=3)
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: Server(admissions) must be 1..2, not 3
    """

    workers: int = 1
    admissions: int = 1

    def __post_init__(self) -> None:
        _check_int("Server(workers)", self.workers, 1, 16)
        _check_int("Server(admissions)", self.admissions, 1, self.workers)


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

    def __init__(self, counts: Mapping[Scenario, int], server: Server | None = None,
                 composition: str = "sync", name: str = "system") -> None:
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
    def resource(self) -> str:
        """The cost resource whose mean is the load: ``'server'`` or ``'work'``."""
        return SERVER_RESOURCE if self.server is not None else CLIENT_RESOURCE

    def count(self, scenario: str | Scenario) -> int:
        """The number of clients of a scenario (by object or name); 0 if absent."""
        name = scenario.name if isinstance(scenario, Scenario) else scenario
        return sum(k for sc, k in self.counts if sc.name == name)

    def scenario(self, name: str) -> Scenario | None:
        """The scenario called ``name``, or ``None``."""
        return next((sc for sc in self.scenarios if sc.name == name), None)

    def with_counts(self, counts: Mapping[Scenario, int]) -> "System":
        """The same server, composition and name with other client counts."""
        return System(counts, server=self.server, composition=self.composition, name=self.name)

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
        """An upper bound on the load, from the system's shape alone.

        With a server, the smaller of two: ``workers * max(cost)`` (a worker serves one request
        per tick, so no tick does more work), and ``admissions * max(service * cost)`` over
        the request kinds (the server admits at most ``admissions`` requests per tick, and a
        request brings ``service * cost`` of work in all: in a periodic run of ``L`` ticks at
        most ``admissions * L`` requests are admitted per period, and the work of one period
        is the work of the requests admitted in it, so the work per tick is at most the sum
        of the ``admissions`` largest request works, each at most the largest). Without a
        server, under ``'sync'``: the sum over clients of their largest cost per tick; under
        ``'async'``: the largest cost per tick (one client moves per step). No cycle mean, and
        so no load, can exceed it, whatever the number of clients.

        >>> quick = Scenario("q", [Think(1), Request("r", service=2)])
        >>> System({quick: 9}, server=Server(4)).load_bound()  # 2 ticks per admission
        Fraction(2, 1)
        >>> System({quick: 9}, server=Server(4, admissions=3)).load_bound()  # min(4, 3 x 2)
        Fraction(4, 1)
        """
        def top(sc: Scenario) -> int:
            return max((r.cost for r in sc.requests()), default=0)

        if self.server is not None:
            workers, big = self._server_bounds()
            return Fraction(min(workers, self.server.admissions * big.service * big.cost))
        if self.composition == "sync":
            return Fraction(sum(k * top(sc) for sc, k in self.counts))
        return Fraction(max(top(sc) for sc in self.scenarios))

    def load_bound_why(self) -> str:
        """What :meth:`load_bound` rests on, in words.

        >>> quick = Scenario("q", [Think(1), Request("r", service=2)])
        >>> System({quick: 9}, server=Server(4)).load_bound_why()
        'one request admitted per tick, none worth more than 2: r, 2 ticks x 1'
        >>> System({quick: 9}, server=Server(1)).load_bound_why()
        'workers x largest cost per tick'
        >>> System({quick: 9}, server=Server(8, admissions=3)).load_bound_why()
        '3 requests admitted per tick, none worth more than 2: r, 2 ticks x 1'
        """
        if self.server is None:
            return ("the clients' largest costs per tick added up" if self.composition == "sync"
                    else "interleaved: one client's largest cost per step")
        workers, big = self._server_bounds()
        a = self.server.admissions
        if a * big.service * big.cost < workers:
            many = "one request" if a == 1 else f"{a} requests"
            return (f"{many} admitted per tick, none worth more than "
                    f"{big.service * big.cost}: {big.name}, {big.service} "
                    f"tick{'s' * (big.service != 1)} x {big.cost}")
        return "workers x largest cost per tick"

    def _server_bounds(self) -> tuple[int, Request]:
        """``(workers x largest cost per tick, the request kind worth the most work)``: the
        two bounds of :meth:`load_bound` with a server (the second is also multiplied by
        the server's admissions per tick there)."""
        kinds = self.kinds()
        return (self.server.workers * max(r.cost for r in kinds),
                max(kinds, key=lambda r: r.service * r.cost))

    def describe(self) -> str:
        """One line: the clients per scenario and the server.

        >>> u = Scenario("u", Request("r", 1))
        >>> System({u: 3}, server=Server(2)).describe()
        '3 clients (u: 3), server with 2 workers, system sync'
        >>> System({u: 3}, server=Server(4, admissions=2)).describe()
        '3 clients (u: 3), server with 4 workers admitting 2 requests per tick, system sync'
        """
        parts = ", ".join(f"{sc.name}: {k}" for sc, k in self.counts)
        n = self.n_clients
        srv = ("no server" if self.server is None else
               f"server with {self.server.workers} worker{'s' * (self.server.workers != 1)}")
        if self.server is not None and self.server.admissions > 1:
            srv += f" admitting {self.server.admissions} requests per tick"
        return f"{n} client{'s' * (n != 1)} ({parts}), {srv}, system {self.composition}"

    # -- the model --------------------------------------------------------------------------
    def to_model(self) -> s.Model:
        """Build the DVE model: an AST with positions in ``<scenario NAME>``.

        Returns
        -------
        dve.syntax.Model
            Constants for the request kinds and the server's ``done`` variable (with a
            server; with several workers the constants ``WORKERS``, ``BUSY``, ``SERVED`` and
            the variable ``adm`` instead; with several admissions per tick, ``admK`` and
            ``moreK`` per desk ``K`` and ``held`` instead of ``adm``), the server process (and
            then the desks ``desk1``, ..., ``deskA``), one process per client (with a
            server, each keeps its pending request in its own ``req``, which the server reads
            as ``C->req``), and ``system sync`` or ``system async``.

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


def _automaton(scenario: Scenario, with_server: bool) -> _Automaton:
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


def _unique(labels: list[str]) -> list[str]:
    """``think, think, open`` -> ``think, think_2, open``."""
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if seen[lab] == 1 else f"{lab}_{seen[lab]}")
    return out


# ---------------------------------------------------------------------------- the AST builder

class _Builder:
    """Builds the model of one :class:`System`; every node gets the same synthetic position."""

    def __init__(self, system: System) -> None:
        self.sys = system
        self.pos: SourcePos = synthetic_pos(f"<scenario {system.name}>")
        self.kinds = system.kinds()
        self.kind_const = {r.name: r.name.upper() for r in self.kinds}
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
        # Several admissions per tick (server_desks): desk k (1..A) is a process of its own
        # that writes only its globals ``admK`` (the client it admitted on the tick before,
        # 0: none) and ``moreK`` (1 when that request holds its worker on the next tick too);
        # the server writes only ``held``. Desk processes are named ``deskK`` (no ``_``, so
        # never taken for instances of a template, nor equal to a client's ``NAME_i``).
        self.admissions = system.server.admissions if system.server else 0
        self.desks = tuple(range(1, self.admissions + 1)) if self.admissions > 1 else ()
        self.adm_k = {k: clear(f"adm{k}") for k in self.desks}
        self.more_k = {k: clear(f"more{k}") for k in self.desks}
        self.held = clear("held")
        # clients: (number from 1, process name, scenario)
        self.clients: list[tuple[int, str, Scenario]] = []
        for sc, k in system.counts:
            for i in range(1, k + 1):
                self.clients.append((len(self.clients) + 1, f"{sc.name}_{i}", sc))

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
        return (s.Cost(self.sys.resource, amount, named=True, pos=self.pos),)

    def ref(self, name: str) -> s.StateRef:
        return s.StateRef(name, pos=self.pos)

    def trans(self, a: str, b: str, guard: Sequence[s.Expr] = (), effects: Sequence[s.Assign] = (),
              costs: Sequence[s.Cost] = ()) -> s.Transition:
        return s.Transition(self.ref(a), self.ref(b), guard=tuple(guard), effects=tuple(effects),
                            costs=tuple(costs), pos=self.pos)

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
                if self.desks:
                    for k in self.desks:
                        items += [self.byte(self.adm_k[k]), self.byte(self.more_k[k])]
                    items.append(self.byte(self.held))
                else:
                    items.append(self.byte(self.adm))
            items.append(self.server_process())
            items += [self.desk_process(k) for k in self.desks]
        global_names = {d.name for d in items if isinstance(d, s.VarDecl)}
        autos: dict[str, _Automaton] = {}
        for _, _, sc in self.clients:
            if sc.name not in autos:
                autos[sc.name] = _automaton(sc, self.server is not None)
        for j, proc, sc in self.clients:
            items.append(self.client_process(j, proc, autos[sc.name], global_names))
        return s.Model(tuple(items), s.SystemDecl(self.sys.composition, pos=self.pos),
                       pos=self.pos)

    def client_process(self, j: int, proc: str, auto: _Automaton,
                       global_names: set[str]) -> s.Process:
        taken = global_names | {_TIMER, _REQ}
        names = [n if n not in taken else f"{n}_s" for n in auto.states]
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
            elif self.workers > 1:
                timer |= self.pooled(j, src, dst, t, names, trans, extra)
            elif t.kind == "wait":
                trans.append(self.trans(src, dst, guard=[done_none]))
            else:  # reply
                trans.append(self.trans(src, dst, guard=[done_any],
                                        effects=[self.assign(req, self.lit(0))]))
        decls = ((self.byte(_TIMER),) if auto.uses_timer or timer else ()) + \
            ((self.byte(_REQ),) if self.server is not None else ())
        return s.Process(proc, decls, tuple(s.StateDecl(x, pos=self.pos)
                                            for x in names + list(extra.values())),
                         self.ref(names[auto.init]), transitions=tuple(trans), pos=self.pos)

    def pooled(self, j: int, src: str, dst: str, t: _Tick, names: list[str],
               trans: list[s.Transition], extra: dict[str, str]) -> bool:
        """The wait and reply ticks of client ``j`` on a pool of workers (see
        :meth:`server_pool`): the client learns from ``adm`` that it was admitted on the tick
        before, and its request's other ticks of service are its own, charged to the server's
        resource (``req`` is ``BUSY`` while more are to come, ``SERVED`` on the tick of the
        reply). True when the client's ``timer`` counts them.

        With several admissions per tick (:meth:`server_desks`) the client learns it from the
        desks' ``admK`` (any of them may hold its number, several at once), and the tick of
        service spent on the admission tick is charged here too, on the client's first
        transition after it (the one that reads ``admK == j``): ``2 * cost`` when it serves
        a second tick in that step, ``cost`` on the reply of a one-tick request. So every
        charge of a client's request is on that client's own transitions, once."""
        v, n = self.var, self.lit
        r = t.request
        assert r is not None
        if self.desks:
            admitted = self.any_of([self.bin("==", v(self.adm_k[k]), n(j)) for k in self.desks])
            not_admitted = self.all_of([self.bin("!=", v(self.adm_k[k]), n(j))
                                        for k in self.desks])
            first = self.cost(n(2 * r.cost))      # the admission tick's and this one's
        else:
            admitted = self.bin("==", v(self.adm), n(j))
            not_admitted = self.bin("!=", v(self.adm), n(j))
            first = self.cost(n(r.cost))          # the admission tick: the server's charge
        costs = self.cost(n(r.cost))
        if t.kind == "wait":
            trans.append(self.trans(src, src, guard=[not_admitted]))
            if r.service == 1:
                return False
            fin = self.fresh(f"{src}_served", names, extra)
            if r.service == 2:
                trans.append(self.trans(src, fin, guard=[admitted], costs=first,
                                        effects=[self.assign(_REQ, v(self.served))]))
                return False
            svc = self.fresh(f"{src}_served_more", names, extra)
            trans += [
                self.trans(src, svc, guard=[admitted], costs=first,
                           effects=[self.assign(_REQ, v(self.busy)),
                                    self.assign(_TIMER, n(r.service - 2))]),
                self.trans(svc, svc, guard=[self.bin(">", v(_TIMER), n(1))], costs=costs,
                           effects=[self.assign(_TIMER, self.bin("-", v(_TIMER), n(1)))]),
                self.trans(svc, fin, guard=[self.bin("==", v(_TIMER), n(1))], costs=costs,
                           effects=[self.assign(_TIMER, n(0)), self.assign(_REQ, v(self.served))]),
            ]
            return True
        # the reply: straight from waiting when one tick of service was all, else after it
        if r.service == 1:
            trans.append(self.trans(src, dst, guard=[admitted],
                                    effects=[self.assign(_REQ, n(0))],
                                    costs=costs if self.desks else ()))
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
        elif self.desks:
            decls, trans = (), self.server_desks()
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
        return sc.requests()

    def server_single(self) -> list[s.Transition]:
        """One worker: a transition per case, readable as it stands."""
        cur, left, cpt, done = "cur", "left", "cpt", "done"
        v, n = self.var, self.lit
        free = self.bin("==", v(left), n(0))
        out = [
            # serving, more ticks to go
            self.trans("serve", "serve", guard=[self.bin(">", v(left), n(1))],
                       effects=[self.assign(left, self.bin("-", v(left), n(1)))],
                       costs=self.cost(v(cpt))),
            # serving the last tick: tell the client
            self.trans("serve", "serve", guard=[self.bin("==", v(left), n(1))],
                       effects=[self.assign(done, v(cur)), self.assign(cur, n(0)),
                                self.assign(left, n(0)), self.assign(cpt, n(0))],
                       costs=self.cost(v(cpt))),
            # free and nobody waiting
            self.trans("serve", "serve", guard=[self.all_of([free, s.Unary(
                "not", self.any_of([self.admissible(j, p) for j, p, _ in self.clients]),
                pos=self.pos)])], effects=[self.assign(done, n(0))]),
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
        out = [self.trans("serve", "serve", guard=[idle], effects=[self.assign(self.adm, n(0))])]
        for j, proc, sc in self.clients:
            for r in self.requests_of(sc):
                guard = self.all_of([free, self.bin("==", self.req(proc),
                                                    v(self.kind_const[r.name])),
                                     self.bin("!=", v(self.adm), n(j))])
                out.append(self.trans("serve", "serve", guard=[guard],
                                      effects=[self.assign(self.adm, n(j))],
                                      costs=self.cost(n(r.cost))))
        return out

    # -- several admissions per tick: the desks -----------------------------------------------
    #
    # Invariants (every reachable state; t is the tick about to be taken):
    # (1) ``held`` is the number of clients whose ``req`` is ``BUSY``: the requests admitted
    #     two or more ticks before t that still have a tick of service at t. The server alone
    #     writes it, on every tick, from the state before (server_desks).
    # (2) ``admK`` is the client desk K admitted on tick t - 1 (0: none), ``moreK`` 1 when
    #     that request has a second tick of service, i.e. holds a worker during t. Several
    #     desks may hold the same client; that client was admitted once.
    # (3) The requests holding a worker during t, besides those admitted on t, number
    #     ``held + dl`` (dl: desk_load, the desks' distinct clients with ``moreK == 1``).
    #     Desk K admits only while ``held + dl + K <= WORKERS``, so the distinct clients
    #     admitted on t are at most ``WORKERS - held - dl``: never more than ``WORKERS``
    #     requests in service on any tick.
    # (4) A client admitted on t sees its number in some ``admK`` on t + 1 and leaves its
    #     waiting state then, so no desk admits it twice (a desk's guard wants every
    #     ``admI != j``). Charges: the client's transitions only (pooled): the admission
    #     tick's cost on its first step after it, every later tick of service on that tick.
    #     A tick's cost is therefore the work of that tick, except that a request admitted on
    #     t - 1 brings the cost of its admission tick to t: the cost of every cycle is the
    #     work done in it (each admission on the cycle is followed, on the cycle, by the
    #     client's step that charges it), and the cycle means are the loads.

    def desk_load(self) -> s.Expr:
        """The number of distinct clients the desks admitted on the tick before whose request
        holds a worker on this tick too: ``moreK`` counted once per client (a desk whose
        client a lower desk also holds adds nothing)."""
        v = self.var
        terms = [v(self.more_k[1])]
        for k in self.desks[1:]:
            terms.append(self.all_of(
                [self.bin("==", v(self.more_k[k]), self.lit(1))]
                + [self.bin("!=", v(self.adm_k[k]), v(self.adm_k[i])) for i in range(1, k)]))
        out = terms[0]
        for x in terms[1:]:
            out = self.bin("+", out, x)
        return out

    def busy_next(self, j: int, proc: str, sc: Scenario) -> s.Expr | None:
        """Client ``j``'s ``req`` will be ``BUSY`` on the next tick: it is ``BUSY`` now with
        more than one tick left (its ``timer``), or a desk admitted it on the tick before
        for a request of three ticks or more. ``None`` when the scenario has no such
        request (its clients are never ``BUSY``)."""
        v, n = self.var, self.lit
        long3 = [r for r in self.requests_of(sc) if r.service > 2]
        if not long3:
            return None
        stay = self.all_of([self.bin("==", self.req(proc), v(self.busy)),
                            self.bin(">", s.Remote(s.ProcRef(proc, pos=self.pos), _TIMER,
                                                   pos=self.pos), n(1))])
        admitted = self.any_of([self.bin("==", v(self.adm_k[k]), n(j)) for k in self.desks])
        kinds = self.any_of([self.bin("==", self.req(proc), v(self.kind_const[r.name]))
                             for r in long3])
        return self.bin("or", stay, self.all_of([admitted, kinds]))

    def server_desks(self) -> list[s.Transition]:
        """With several admissions per tick the server only counts: one transition, every
        tick, that sets ``held`` to the number of requests ``BUSY`` on the next tick. One
        process writes it and every desk reads it, so the desks' guards stay small (the sum
        over the clients is written once, not once per desk and client)."""
        terms = [x for j, p, sc in self.clients if (x := self.busy_next(j, p, sc)) is not None]
        total: s.Expr = self.lit(0)
        if terms:
            total = terms[0]
            for x in terms[1:]:
                total = self.bin("+", total, x)
        return [self.trans("serve", "serve", effects=[self.assign(self.held, total)])]

    def desk_process(self, k: int) -> s.Process:
        """Desk ``k`` of ``A``: on each tick it admits one waiting client that no desk
        admitted on the tick before, while ``held + dl + k <= WORKERS`` (invariant (3)),
        and idles only when it may not or nobody waits. It charges nothing (the client
        does). Two desks may take the same client on one tick; the client is admitted once,
        and fewer requests than desks were free are admitted then: the server admits at
        least one request on every tick a worker is free and a request waits, and at most
        ``min(A, free workers, waiting requests)``."""
        v, n = self.var, self.lit
        free = self.bin("<=", self.bin("+", self.bin("+", v(self.held), self.desk_load()),
                                       n(k)), v(self.n_workers))

        def unclaimed(j: int) -> list[s.Expr]:
            return [self.bin("!=", v(self.adm_k[i]), n(j)) for i in self.desks]

        def waiting(j: int, proc: str) -> s.Expr:
            return self.all_of([self.bin("!=", self.req(proc), n(0)),
                                self.bin("<", self.req(proc), v(self.busy))] + unclaimed(j))

        adm, more = self.adm_k[k], self.more_k[k]
        idle = s.Unary("not", self.all_of([free, self.any_of(
            [waiting(j, p) for j, p, _ in self.clients])]), pos=self.pos)
        trans = [self.trans("admit", "admit", guard=[idle],
                            effects=[self.assign(adm, n(0)), self.assign(more, n(0))])]
        for j, proc, sc in self.clients:
            for r in self.requests_of(sc):
                guard = self.all_of([free, self.bin("==", self.req(proc),
                                                    v(self.kind_const[r.name]))] + unclaimed(j))
                trans.append(self.trans("admit", "admit", guard=[guard], effects=[
                    self.assign(adm, n(j)), self.assign(more, n(int(r.service > 1)))]))
        return s.Process(f"desk{k}", (), (s.StateDecl("admit", pos=self.pos),),
                         self.ref("admit"), transitions=tuple(trans), pos=self.pos)
