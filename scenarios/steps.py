"""The scenario DSL's steps, scenarios and servers: what a user writes, checked where it is
written (the system, its bounds and its model are :mod:`scenarios.dsl`'s).

>>> Scenario("u", [Think(2), Request("r", service=3)]).requests()
(Request(name='r', service=3, cost=1),)
"""

from __future__ import annotations

import keyword
from dataclasses import dataclass
from fractions import Fraction
from typing import Iterable, Mapping, Sequence, Union

from dve.errors import ConfigurationError

from .policy import POLICIES

__all__ = ["Think", "Request", "Choice", "Loop", "Step", "Scenario", "Server", "apportion",
           "MAX_UNROLLED", "MAX_BYTE", "SERVER_RESOURCE", "CLIENT_RESOURCE",
           "OCCUPANCY_RESOURCE", "DVE_KEYWORDS", "check_int", "check_name"]

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

#: The largest value of a byte of the model (counts, ticks, services, costs, clients).
MAX_BYTE = 255


# ---------------------------------------------------------------------------- steps

def check_int(what: str, value: object, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigurationError(f"{what} must be an integer, not {value!r}")
    if value < lo or (hi is not None and value > hi):
        top = f"..{hi}" if hi is not None else " or more"
        raise ConfigurationError(f"{what} must be {lo}{top}, not {value}")
    return value


def check_name(what: str, name: object) -> str:
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
        check_int("Think(ticks)", self.ticks, 0, MAX_BYTE + 1)


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
        check_name("a request name", self.name)
        check_int(f"Request('{self.name}') service", self.service, 1, MAX_BYTE)
        check_int(f"Request('{self.name}') cost", self.cost, 0, MAX_BYTE)


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
            ws = tuple(check_int("a Choice weight", w, 0) for w in weights)
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
            lo = check_int("Loop times lo", times[0], 0, MAX_BYTE)
            hi = None if times[1] is None else check_int("Loop times hi", times[1], lo,
                                                          MAX_BYTE)
        else:
            lo = hi = check_int("Loop times", times, 0, MAX_BYTE)
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
        object.__setattr__(self, "name", check_name("a scenario name", name))
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
    >>> Server(policy="lifo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: unknown server policy 'lifo': expected 'any', 'fifo' or ...
    """

    workers: int = 1
    admissions: int = 1
    policy: str = "any"
    order: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        check_int("Server(workers)", self.workers, 1, 16)
        check_int("Server(admissions)", self.admissions, 1, self.workers)
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
            check_name("a scenario name in Server(order)", x)
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
    check_int("the number of clients", n, 0)
    items = [(sc, Fraction(w)) for sc, w in weights.items()]
    if not items or any(w < 0 for _, w in items) or all(w == 0 for _, w in items):
        raise ConfigurationError("apportion needs scenarios with non-negative weights, "
                                 "not all zero")
    counts = [0] * len(items)
    for _ in range(n):
        best = max(range(len(items)), key=lambda i: (items[i][1] / (counts[i] + 1), -i))
        counts[best] += 1
    return {sc: k for (sc, _), k in zip(items, counts) if k > 0}
