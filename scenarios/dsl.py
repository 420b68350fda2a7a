"""Client scenarios, a server and their composition, built into a DVE model (an AST, never text).

This module holds the :class:`System` and says what its model means; the steps, scenarios and
servers a user writes are :mod:`scenarios.steps`' (all importable from here), a scenario's
automaton :mod:`scenarios.automaton`'s, the rendering :mod:`scenarios.render`'s and the
server policies :mod:`scenarios.policy`'s.

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

from dataclasses import dataclass
from fractions import Fraction
from typing import Mapping

from dve import syntax as s
from dve.errors import ConfigurationError

from .automaton import automaton
from .policy import POLICIES
from .render import ModelBuilder
from .steps import (CLIENT_RESOURCE, DVE_KEYWORDS, MAX_BYTE, MAX_UNROLLED, OCCUPANCY_RESOURCE,
                    SERVER_RESOURCE, Choice, Loop, Request, Scenario, Server, Step, Think,
                    apportion, check_int)

__all__ = [
    "Think", "Request", "Choice", "Loop", "Step", "Scenario", "Server", "System", "apportion",
    "SERVER_RESOURCE", "CLIENT_RESOURCE", "OCCUPANCY_RESOURCE", "DVE_KEYWORDS", "POLICIES",
    "MAX_UNROLLED", "automaton",
]


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
            check_int(f"the count of scenario '{sc.name}'", k, 0)
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
        if server is not None and n > MAX_BYTE:
            raise ConfigurationError(f"at most {MAX_BYTE} clients can share a server, not {n}")
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
        if len(seen) > MAX_BYTE:
            raise ConfigurationError(f"at most {MAX_BYTE} kinds of request, not {len(seen)}")
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
        return ModelBuilder(self).build()
