"""Certified bounds on the load of a scenario system, and runs that attain a load.

Exact analysis of the symmetry-reduced state graph gives the load of a system (the maximal
cycle mean of the server's cost, :mod:`scenarios.dsl`), but the classes grow quickly when
clients of several scenarios stand in many phases. Deciding whether ``N`` clients *saturate*
needs less: only which side of the capacity the load lies on. Two bounds that need no state
graph of the ``N``-client system often settle it:

- :func:`upper_bound`, ``U``: the smaller of :meth:`~scenarios.dsl.System.load_bound` (the
  system's shape) and the sum over the clients of their scenario's *alone rate* ``rho_s``,
  the exact load of the same server with one client of scenario ``s`` (a tiny analysis). No
  cycle of the ``N``-client system has a larger mean: each unit of the server's cost is
  charged on a transition of the client it serves, or on the server's transition that serves
  or admits that client, and a client's share of any run is a run of its alone system with
  waiting ticks of cost 0 inserted (docs/algorithms.md, "Saturation by bounds").
  ``U < capacity`` proves the system below capacity.
- :func:`find_witness`, ``L``: simulate the concrete compiled model from its initial state
  under a batch of policies (which enabled transition each process takes at each tick: oldest
  waiting client first, heaviest request first, seeded random), rows of one state matrix
  stepped together with the model's own next-state generator, until states repeat. The ticks
  between two visits of one state are a closed walk of the state graph, so their mean is at
  most the maximal cycle mean: a lower bound, with the run that shows it. Where clients are
  interchangeable, a state that comes back only up to a renaming of them closes a walk too:
  the walk repeated through the renaming's powers is a concrete cycle of the same mean
  (:class:`scenarios.simulate.Lift`). ``L >= capacity`` proves the system saturated.

:func:`scenarios.saturate` (``method='auto'`` or ``'bounds'``) decides each point it probes
with these where they meet the capacity and falls back to exact analysis where they do not.

Examples
--------
Three clients who think 10 ticks and ask for 6 of service each load one worker 1/3 alone
(send, 6 served, reply, 10 thinking: 18 ticks); with three the bound reaches 1, and the
simulation finds the run that keeps the worker busy on every tick:

>>> from fractions import Fraction
>>> from scenarios import Scenario, Server, System, Think, Request
>>> user = Scenario("user", [Think(10), Request("job", service=6)])
>>> three = System({user: 3}, server=Server())
>>> upper_bound(three, lambda alone: Fraction(1, 3)).value
Fraction(1, 1)
>>> run = find_witness(three, target=Fraction(1))
>>> run.mean, run.cycle_len
(Fraction(1, 1), 18)
"""

from __future__ import annotations

import dataclasses
import functools
import time as _time
from dataclasses import dataclass
from fractions import Fraction
from typing import Callable

import numpy as np

from .dsl import Choice, Loop, Request, Scenario, System, Think
from .simulate import Lift, Simulator

__all__ = ["UpperBound", "WitnessRun", "upper_bound", "alone_rate", "alone_rates", "bound_gap",
           "find_witness", "ticks", "POLICIES"]


# ---------------------------------------------------------------------------- the upper bound

@dataclass(frozen=True)
class UpperBound:
    """``U(S)``, an upper bound on the load of a system, and what it rests on.

    Attributes
    ----------
    value : Fraction
        ``min(shape, alone_sum)``, or ``shape`` alone when the alone rates do not apply.
    shape : Fraction
        :meth:`~scenarios.dsl.System.load_bound`.
    alone : tuple of (str, int, Fraction)
        Per scenario: its name, its count, its alone rate ``rho_s``; empty when not used.
    alone_sum : Fraction or None
        ``sum(count * rho_s)``; ``None`` when the alone rates do not apply (:func:`bound_gap`).
    gap : str or None
        Why the alone rates were not used, or ``None``.
    rates : Fraction or None
        The rate program's optimum (:func:`scenarios.ratelp.rate_bound`: the alone rates
        under the server's admissions and workers per tick), where it applies.
    """

    value: Fraction
    shape: Fraction
    alone: tuple[tuple[str, int, Fraction], ...] = ()
    alone_sum: Fraction | None = None
    gap: str | None = None
    rates: Fraction | None = None

    @property
    def why(self) -> str:
        """``'the clients' alone rates added up: 3 x 1/6 + 2 x 2/9'``, the rate program's
        bound, or the shape's bound."""
        if self.rates is not None and self.rates == self.value and (
                self.alone_sum is None or self.rates < self.alone_sum) and \
                self.rates < self.shape:
            return ("the scenarios' rates of rounds under the server's admissions and "
                    "workers per tick (a linear program)")
        if self.alone_sum is not None and self.alone_sum <= self.shape:
            return "the clients' alone rates added up: " + " + ".join(
                f"{k} x {rho}" for _, k, rho in self.alone)
        return "the system's shape"


def bound_gap(system: System) -> str | None:
    """Why the alone-rate bound is not proven for the rendering of ``system``, or ``None``
    when it is.

    The argument (docs/algorithms.md, "Saturation by bounds") reads the model as
    :class:`~scenarios.dsl.System` renders it: every charge of the resource belongs to one
    client (its own transitions, the server's admission of it, the ticks the one worker
    serves it), and a client's projection of a run is a run of its alone system with cost-0
    waiting ticks inserted. It was checked for the renderings below; a server rendered any
    other way (a field this module does not know) gets the shape's bound only, and the
    search analyses such a point exactly.

    >>> from scenarios import Scenario, Server, System, Request
    >>> u = Scenario("u", Request("r", 2))
    >>> bound_gap(System({u: 2}, server=Server(workers=3))) is None
    True
    """
    for sc in system.scenarios:
        if not ticks(sc):
            # Its alone system has no rendering (no tick to measure): nothing is proven.
            return (f"scenario '{sc.name}' takes no time, so it has no alone rate: the "
                    "shape's bound only")
    server = system.server
    if server is None:
        return None        # clients that serve themselves: their costs are their own
    # The renderings read: one worker (``done``, ``cur``), a pool admitting one request per
    # tick (``adm``), and several admissions per tick through desks (``admK``), any counts.
    # A policy (scenarios.policy) only narrows which waiting client the server admits:
    # every run of its model is a run of the 'any' model with the same charges, so the
    # bound of 'any' holds for it (docs/algorithms.md, "Server policies").
    known = {"workers", "admissions", "policy", "order"}
    odd = {f.name: getattr(server, f.name) for f in dataclasses.fields(server)
           if f.name not in known}
    if odd:
        names = ", ".join(f"{k}={v!r}" for k, v in odd.items())
        return (f"the alone-rate bound is not proven for a server with {names}: the "
                "shape's bound only")
    return None


def ticks(scenario: Scenario) -> bool:
    """Whether ``scenario`` has a tick at all (a Think of some ticks or a Request that a
    round may reach); one that has none cannot be rendered (``takes no time``).

    >>> from scenarios import Scenario, Think, Request, Loop
    >>> ticks(Scenario("a", [Think(0), Request("r", 1)])), ticks(Scenario("z", Think(0)))
    (True, False)
    >>> ticks(Scenario("z", Loop(Request("r", 1), times=0)))
    False
    """
    def walk(steps) -> bool:
        for st in steps:
            if isinstance(st, Think) and st.ticks > 0 or isinstance(st, Request):
                return True
            if isinstance(st, Choice) and any(walk(b) for b in st.branches):
                return True
            if isinstance(st, Loop) and st.times[1] != 0 and walk(st.body):
                return True
        return False

    return walk(scenario.steps)


def alone_rates(system: System, alone: Callable[[System], Fraction]) -> tuple[
        tuple[str, int, Fraction], ...]:
    """``(scenario, count, rho_s)`` per scenario of ``system``: ``rho_s = alone(system with one
    client of s)`` (same server, composition and name).

    A scenario whose alone model never charges the system's resource (no request, or
    requests that charge nothing) has ``rho_s = 0`` without analysis: every run's load of a
    resource no transition charges is 0 (the analysis would refuse the model for lacking it).

    >>> from scenarios import Scenario, System, Think, Request
    >>> free = Scenario("free", [Think(1), Request("f", 1, cost=0)])
    >>> paid = Scenario("paid", [Think(1), Request("p", 1)])
    >>> alone_rates(System({free: 2, paid: 1}), lambda one: Fraction(1, 2))
    (('free', 2, Fraction(0, 1)), ('paid', 1, Fraction(1, 2)))
    """
    return tuple((sc.name, k, alone_rate(system, sc, alone)) for sc, k in system.counts)


def alone_rate(system: System, scenario: Scenario,
               alone: Callable[[System], Fraction]) -> Fraction:
    """``rho_s`` of ``scenario`` on the server and composition of ``system`` (see
    :func:`alone_rates`)."""
    if not scenario.requests():
        return Fraction(0)      # (a system of it alone sends nothing: it cannot be built)
    one = system.with_counts({scenario: 1})
    return Fraction(alone(one)) if _charges(one) else Fraction(0)


@functools.lru_cache(maxsize=256)
def _charges(one: System) -> bool:
    """Whether the model of ``one`` has a transition that charges ``one.resource``."""
    model = one.to_model()
    return any(c.resource == one.resource for p in model.processes
               for t in p.transitions for c in t.costs)


def upper_bound(system: System, alone: Callable[[System], Fraction]) -> UpperBound:
    """``U(S) = min(S.load_bound(), sum over clients of rho_s)``.

    Parameters
    ----------
    system : System
    alone : callable
        ``alone(system1) -> Fraction``: the exact load of a system with one client (the
        search passes its evaluator, memoised by scenario).

    Returns
    -------
    UpperBound
        With the shape's bound only where :func:`bound_gap` says the alone rates do not apply.

    Examples
    --------
    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> a = Scenario("a", [Think(2), Request("r", 2)])
    >>> b = upper_bound(System({a: 3}, server=Server(workers=4)), lambda s: Fraction(1, 3))
    >>> b.value, b.shape, b.why
    (Fraction(1, 1), Fraction(2, 1), "the clients' alone rates added up: 3 x 1/3")
    """
    shape = Fraction(system.load_bound())
    gap = bound_gap(system)
    if gap is not None:
        return UpperBound(shape, shape, gap=gap)
    from .ratelp import rate_bound

    rates = alone_rates(system, alone)
    total = sum((k * rho for _, k, rho in rates), Fraction(0))
    lp = rate_bound(system, alone)
    lp_value = None if lp is None else lp.value
    value = min(shape, total) if lp_value is None else min(shape, total, lp_value)
    return UpperBound(value, shape, rates, total, rates=lp_value)


# ---------------------------------------------------------------------------- the witness

#: The policies :func:`find_witness` runs, one per row of its state matrix (rows beyond these
#: repeat them with other seeds): how each process picks among its enabled transitions.
#:
#: - ``oldest``: a transition that concerns one other process (the server admitting a client:
#:   its guard reads that client's variables) scores how many ticks that process has stood
#:   still, so the longest waiting client goes first; ties to the lowest process;
#: - ``oldest-random``: the same, ties broken at random;
#: - ``heavy``: the request worth the most work first (the server's admissions and a client's
#:   choice between requests), then the oldest;
#: - ``newest``: the client that waited least first (a different interleaving);
#: - ``random``: a random order of the transitions, drawn once per row (a policy that depends
#:   on the state only, so the run ends in a cycle);
#: - ``priority``: the transition listed first (the server's admissions in the order of the
#:   clients), whatever the waiting: clients late in the order may wait forever, which the
#:   server is free to make them do, and the others settle into their own period;
#: - ``heavy-priority``: the heaviest request first, then as ``priority``.
#:
#: In every policy a transition about a process that another process already chose one about
#: in the same tick (two desks admitting one client) comes last.
POLICIES = ("oldest", "heavy", "oldest-random", "newest", "random", "priority",
            "heavy-priority")


def round_ticks(steps) -> int:
    """The ticks of one round of a scenario's ``steps`` when its requests never wait: a
    request's send, service and reply, every think; a choice its longest branch, a loop its
    largest count of rounds (one where the count is unbounded). It only steers
    :func:`find_witness`'s ``spread`` rows.

    >>> from scenarios.templates import EDITOR_SCENARIOS
    >>> [round_ticks(sc.steps) for sc in EDITOR_SCENARIOS]
    [12, 18, 22]
    """
    from .dsl import Choice, Loop, Request, Think

    total = 0
    for st in steps:
        if isinstance(st, Think):
            total += st.ticks
        elif isinstance(st, Request):
            total += st.service + 2
        elif isinstance(st, Choice):
            total += max(round_ticks(b) for b in st.branches)
        elif isinstance(st, Loop):
            lo, hi = st.times
            total += round_ticks(st.body) * max(1, lo, hi or 0)
    return total


def spread_aims(system: System, mixes) -> list[list[int]]:
    """Per mix (active clients per scenario), the aims of :func:`find_witness`'s ``spread``
    row that spreads them evenly: the ``j``-th of ``a`` active clients of a scenario of round
    ``T`` at ``j T / a`` ticks of waiting, the others ``-1``.

    >>> from scenarios import Scenario, Server, System, Request, Think
    >>> u = Scenario("u", [Think(4), Request("r", 2)])     # a round of 8 ticks
    >>> spread_aims(System({u: 5}, server=Server(workers=2, admissions=2)), [(4,), (5,)])
    [[0, 2, 4, 6, -1], [0, 1, 3, 4, 6]]
    """
    out = []
    for mix in mixes:
        row: list[int] = []
        for (sc, k), a in zip(system.counts, mix):
            T = round_ticks(sc.steps)
            row += [j * T // a if j < a else -1 for j in range(k)]
        out.append(row)
    return out


def _spread_label(system: System, aim) -> str:
    """``'spread 19:11:7'`` (active clients per scenario), with ``' (shifted)'`` where the
    aims are not the even ones of :func:`spread_aims`."""
    mix, at = [], 0
    for _, k in system.counts:
        mix.append(sum(1 for x in aim[at:at + k] if x >= 0))
        at += k
    even = spread_aims(system, [mix])[0] == [int(x) for x in aim]
    return "spread " + ":".join(map(str, mix)) + ("" if even else " (shifted)")


#: :func:`spread_mixes` looks at this many mixes at most before it keeps the best.
SPREAD_LOOKS = 50_000


def spread_mixes(system: System, cap: Fraction, alone: dict[str, Fraction],
                 most: int = 24) -> tuple[tuple[int, ...], ...]:
    """Mixes of *active* clients for :func:`find_witness`'s ``spread`` rows: per scenario of
    ``system``, how many of its clients a row spreads over their round (the others are
    admitted only when nobody active waits). The mixes whose alone rates (``alone``, by
    scenario name) add up to ``cap`` or more, smallest surplus first, ``most`` of them: a
    run that keeps the server full is carried by clients whose rates reach the capacity,
    and a small surplus leaves little waiting to place. A heuristic only: whatever the mix,
    the run found is checked step by step.

    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> u = Scenario("u", [Think(4), Request("r", 2)])
    >>> v = Scenario("v", [Think(2), Request("q", 1)])
    >>> spread_mixes(System({u: 5, v: 2}, server=Server(workers=2, admissions=2)),
    ...              Fraction(2), {"u": Fraction(1, 2), "v": Fraction(1, 4)}, most=3)
    ((3, 2), (4, 0), (4, 1))
    """
    counts = [k for _, k in system.counts]
    rho = [Fraction(alone[sc.name]) for sc, _ in system.counts]
    # rest[i]: what the scenarios from i on add at most
    rest = [sum((counts[j] * rho[j] for j in range(i, len(counts))), Fraction(0))
            for i in range(len(counts) + 1)]
    out: list[tuple[Fraction, tuple[int, ...]]] = []
    looks = [0]

    def walk(i: int, acc: tuple[int, ...], total: Fraction) -> None:
        if looks[0] >= SPREAD_LOOKS:
            return
        if i == len(counts):
            looks[0] += 1
            out.append((total - cap, acc))
            return
        for a in range(counts[i], -1, -1):
            if total + a * rho[i] + rest[i + 1] < cap:
                break
            walk(i + 1, acc + (a,), total + a * rho[i])

    walk(0, (), Fraction(0))
    out.sort()
    return tuple(m for _, m in out[:most]) or (tuple(counts),)


@dataclass(frozen=True)
class WitnessRun:
    """A concrete run of a system's model: a prefix from the initial state, then a cycle.

    Attributes
    ----------
    mean : Fraction
        The cycle's mean cost per step (the load's measure; per tick, as a server admitting
        several requests per tick charges its ticks' steps to match): a lower bound on the
        load, exact when it meets an upper bound.
    cycle_cost, cycle_len, prefix_len : int
        The cycle's cost and steps, the prefix's steps (steps of the model:
        :attr:`~scenarios.dsl.System.steps_per_tick` to a tick).
    graph : statespace.StateGraph
        The run as a small graph of the full model: state 0 the initial state, one edge per
        step, each state's breadth-first parent its predecessor on the prefix (so
        :func:`statespace.shortest_trace` and :class:`statespace.witness.Witness` tell it).
    cycle_edges : tuple of int
        The cycle's edges in ``graph``, in order.
    policy : str
        The policy whose row found it (:data:`POLICIES`, with its seed).
    steps : int
        Steps simulated (per row) before it was found or the search gave up.
    rows : int
        Runs simulated side by side.
    seconds : float
        Wall time of the simulation.
    resource : str
        The cost resource measured.
    """

    mean: Fraction
    cycle_cost: int
    cycle_len: int
    prefix_len: int
    graph: object
    cycle_edges: tuple[int, ...]
    policy: str
    steps: int
    rows: int
    seconds: float
    resource: str


#: :func:`find_witness` tells its ``progress`` every this many ticks.
PROGRESS_TICKS = 50

#: The longest cycle :func:`find_witness` builds by lifting a walk that closes up to a
#: renaming of the clients (its steps times the renaming's order); longer ones are not kept.
MAX_LIFTED_STEPS = 200_000


def find_witness(system: System, *, target: Fraction | None = None,
                 upper: Fraction | None = None, rows: int = 20, max_ticks: int = 3000,
                 patience: int | None = None, seed: int = 0,
                 time_limit: float | None = None,
                 policies: tuple[str, ...] = POLICIES,
                 spread=(), plans=(), shortest: bool = False, lifting: bool = True,
                 progress: Callable[[int, int, Fraction | None], None] | None = None
                 ) -> WitnessRun | None:
    """Simulate the model of ``system`` under :data:`POLICIES` and return the best closed walk.

    Each of ``rows`` runs starts in the initial state; each tick every process takes one
    enabled transition (``system sync``), chosen by its row's policy. Whenever a row comes
    back to a state it visited, the ticks since the last visit form a closed walk of the
    state graph; its mean is a lower bound on the load (a closed walk is a union of cycles,
    and its mean an average of theirs). Where the model has groups of interchangeable
    clients, a row whose state at a tick's first step comes back up to a renaming ``pi``
    (equal canonical forms) closes a walk as well; it is lifted to a concrete cycle by
    walking it again through ``pi, pi^2, ...`` (:class:`_Lift`, every step checked; walks
    whose cycle would pass :data:`MAX_LIFTED_STEPS` are not kept). The best simple cycle
    inside the best walk is kept, with a loop-free prefix to it.

    Parameters
    ----------
    system : System
        A ``system sync`` system (with a server, or clients that serve themselves).
    target : Fraction, optional
        Stop as soon as a cycle of this mean or more is found (the capacity).
    upper : Fraction, optional
        A known upper bound on the load: stop as soon as a cycle reaches it (none can do
        better).
    rows : int
        Runs side by side (the policies in turn, each further round with new seeds).
    max_ticks : int
        Ticks per run at most.
    patience : int, optional
        Stop when the best walk has not improved for this many ticks.
    time_limit : float, optional
        Seconds at most (checked every tick).
    policies : tuple of str
        The rows' policies in turn (:data:`POLICIES`).
    spread : sequence of sequence of int
        *Aims* (:func:`spread_aims`), one more row each: per client (in the order of
        ``system.counts``, then by number), ticks of waiting modulo its scenario's round
        (:func:`round_ticks` ``T``), or ``-1`` for a client left out. Of the clients waiting,
        the row's server admits first those whose waiting is on target, then those farthest
        from it, those left out last. Aiming the ``j``-th of ``a`` clients of a scenario at
        ``j T / a`` spreads their phases evenly over the round: when their rates add up to
        the capacity exactly, nobody waits and the server is full on every tick.
    plans : sequence of sequence of sequence of int
        Admission plans (:func:`scenarios.periodic.admissions`), one more row each: per tick
        of the model, the clients (columns as in ``spread``) the server admits first; past
        the plan's last tick, the row admits the longest waiting clients first.
    shortest : bool
        Run all ``max_ticks`` (no stop at ``target`` or ``upper``) and, among the closed walks
        of the best mean, keep the one whose cycle is shortest once lifted (an exact repeat
        after a few rounds of a plan's period may beat a renaming of large order found
        earlier).
    lifting : bool
        Whether walks that close up to a renaming are lifted at all (``False``: exact
        repeats only, and the model's symmetry is not computed).
    progress : callable, optional
        ``progress(ticks, max_ticks, best)`` every :data:`PROGRESS_TICKS` ticks: the ticks
        simulated, the most, and the best mean of a closed walk so far (``None`` before the
        first).

    Returns
    -------
    WitnessRun or None
        ``None`` when no row closed a walk (every row deadlocked, or no state repeated).

    Examples
    --------
    >>> from scenarios import Scenario, Server, System, Think, Request
    >>> u = Scenario("u", [Think(2), Request("r", service=2)])
    >>> run = find_witness(System({u: 1}, server=Server()))
    >>> run.mean, run.cycle_len, run.prefix_len   # send, 2 served, reply, 2 thinking
    (Fraction(1, 3), 6, 0)
    """
    t0 = _time.perf_counter()
    sim = Simulator(system)
    R = max(1, int(rows))
    # Budgets in ticks; a server admitting several requests per tick takes several steps.
    per_tick = int(getattr(system, "steps_per_tick", 1))
    max_steps = max(1, int(max_ticks)) * per_tick
    patience = None if patience is None else patience * per_tick
    rng = np.random.default_rng(seed)
    unknown = set(policies) - set(POLICIES)
    if not policies or unknown:
        raise ValueError(f"unknown policies {sorted(unknown)}: expected some of {POLICIES}")
    policy = [policies[r % len(policies)] for r in range(R)]
    code = {name: k for k, name in enumerate(POLICIES)}
    code["spread"] = len(POLICIES)
    pol = np.array([code[x] for x in policy] + [code["spread"]] * len(spread))
    # The spread rows: per row and process, the client's round T (0: not a client) and the
    # waiting it is aimed at modulo T (-1: not active in the row's mix).
    n_pro = len(sim.procs)
    spread_T = np.zeros(n_pro, np.int64)
    spread_at = np.full((R + len(spread), n_pro), -1, np.int64)
    if len(spread):
        where = {p.name: i for i, p in enumerate(sim.procs)}
        column = 0
        for g, (sc, k) in enumerate(system.counts):
            T = max(1, round_ticks(sc.steps))
            for j in range(k):
                i = where.get(f"{sc.name}_{j + 1}")
                if i is not None:
                    spread_T[i] = T
                    for row, aim in enumerate(spread, start=R):
                        spread_at[row, i] = aim[column] % T if aim[column] >= 0 else -1
                column += 1
        policy += [_spread_label(system, aim) for aim in spread]
        R += len(spread)
    # The plan rows: per row, tick and process, whether the plan admits that client then.
    plan_rows = R
    planned: list[list[np.ndarray]] = []
    if len(plans):
        where = {p.name: i for i, p in enumerate(sim.procs)}
        names = [f"{sc.name}_{j + 1}" for sc, k in system.counts for j in range(k)]
        for plan in plans:
            ticks = []
            for chosen in plan:
                mark = np.zeros(len(sim.procs), bool)
                mark[[where[names[c]] for c in chosen if names[c] in where]] = True
                ticks.append(mark)
            planned.append(ticks)
        pol = np.concatenate([pol, np.full(len(plans), code["oldest"])])
        policy += [f"plan {n + 1} ({len(p)} ticks)" for n, p in enumerate(plans)]
        R += len(plans)
        spread_at = np.concatenate([spread_at, np.full((len(plans), n_pro), -1, np.int64)])
    # Random tie-breaks, fixed per row and transition for the run (a positional policy where
    # ages tie: the run settles into a cycle instead of wandering).
    noise = rng.random((R, len(sim.cm.transitions)))
    noise[np.isin(pol, [code["oldest"], code["heavy"], code["priority"],
                        code["heavy-priority"], code["spread"]])] = 0.0
    noise[pol == code["random"]] *= 1e6      # the order itself, not a tie-break
    age = np.zeros((R, len(sim.procs)), np.float64)
    waited = np.zeros((R, len(sim.procs)), np.int64)      # ticks stood still (spread rows)
    n_tr = float(len(sim.cm.transitions) + 1)

    def scores(i: int, r: np.ndarray, tids: np.ndarray) -> np.ndarray:
        q = sim.concerns[tids]
        a = np.where(q >= 0, age[r, np.maximum(q, 0)], 0.0)
        w = sim.weight[tids].astype(np.float64)
        p = pol[r]
        tie = noise[r, tids] - tids / n_tr * 1e-3     # lowest transition first on a tie
        out = a + tie
        out = np.where(p == code["heavy"], w * 1e4 + a + tie, out)
        out = np.where(p == code["newest"], -a + tie, out)
        out = np.where(p == code["random"], tie, out)
        out = np.where(p == code["priority"], tie, out)
        out = np.where(p == code["heavy-priority"], w * 1e4 + tie, out)
        if spread:
            # On target (no waiting left to do: key T) first, then the most left to do;
            # inactive clients (key 0) last.
            qq = np.maximum(q, 0)
            T = np.maximum(spread_T[qq], 1)
            at = spread_at[r, qq]
            key = np.where(at >= 0, (at - waited[r, qq] - 1) % T + 1, 0)
            out = np.where(p == code["spread"], np.where(q >= 0, key, 0) + tie, out)
        if planned:
            # A client the plan admits on this tick first (the model's tick: per_tick steps).
            # (A tick's admissions follow its move step: count tick t's are steps
            # (t - 1) per_tick + 1 .. t per_tick - 1.)
            at = (step[0] + per_tick - 1) // per_tick
            for n, ticks in enumerate(planned):
                if at < len(ticks):
                    m = r == plan_rows + n
                    out = np.where(m & (q >= 0), 1e6 * ticks[at][np.maximum(q, 0)], out)
        # A client another process already chose this tick comes last.
        return out - 1e9 * np.where(q >= 0, sim.claimed[r, np.maximum(q, 0)], False)

    X = sim.initial(R)
    keys = sim.ex.layout.pack(X, np)
    seen: list[dict[bytes, int]] = [{keys[r].tobytes(): 0} for r in range(R)]
    # Where clients are interchangeable, states are also keyed by their canonical form: a
    # run whose clients rotate comes back to its state up to a renaming long before it comes
    # back exactly (_Lift makes such a walk a concrete cycle).
    lift = Lift.of(sim) if lifting else None
    if lift is not None:
        ckeys = sim.ex.layout.pack(lift.canon(X), np)
        cseen: list[dict[bytes, int]] = [{ckeys[r].tobytes(): 0} for r in range(R)]
    cum = np.zeros((max_steps + 1, R), np.int64)
    hist_keys = [keys]
    hist_choice: list[np.ndarray] = []
    hist_time: list[np.ndarray] = []
    alive = np.ones(R, bool)
    best: tuple | None = None     # (mean, row, i, j, pi: None for an exact repeat)
    best_len = 0                  # (its cycle's steps once lifted)
    exact: tuple | None = None    # the best exact repeat (where a lift fails)
    enough = min((x for x in (target, upper) if x is not None), default=None)
    tick = improved = 0
    step = [0]              # (the step being taken, for the plan rows' scores)
    while tick < max_steps and alive.any():
        step[0] = tick
        Y, C, cost, dead = sim.step(X, scores)
        moved = np.zeros((R, len(sim.procs)), bool)
        for i, sl in enumerate(sim.local):
            moved[:, i] = (Y[sl] != X[sl]).any(axis=0)
        age = np.where(moved, 0.0, age + 1.0)
        if tick % per_tick == 0:            # the tick's move step (phase 0 comes first)
            waited += ~moved
        alive &= ~dead
        tick += 1
        cum[tick] = cum[tick - 1] + cost
        keys = sim.ex.layout.pack(Y, np)
        hist_keys.append(keys)
        hist_choice.append(C)
        hist_time.append(sim.time)
        # (Canonical forms once per tick, sorting the clients costs several steps' time: in
        # the state just after the step in which everybody moves, the tick's admissions
        # cleared. A state before that step holds whom the server admitted, which the
        # state after it determines; a policy that reads more than the state (a spread
        # row's waiting so far) may admit others from equal states, so the walks closing
        # after the move are more than those closing before it.)
        canonical = lift is not None and tick % per_tick == 1 % per_tick
        if canonical:
            ckeys = sim.ex.layout.pack(lift.canon(Y), np)
        for r in np.flatnonzero(alive).tolist():
            k = keys[r].tobytes()
            i = seen[r].get(k)
            seen[r][k] = tick
            if i is not None:
                mean = Fraction(int(cum[tick, r] - cum[i, r]), tick - i)
                if exact is None or mean > exact[0] or (
                        shortest and mean == exact[0] and tick - i < exact[3] - exact[2]):
                    exact = (mean, r, i, tick, None)
                if best is None or mean > best[0] or (
                        shortest and mean == best[0] and tick - i < best_len):
                    best, best_len = exact, tick - i
                    improved = tick
            if not canonical:
                continue
            k = ckeys[r].tobytes()
            c = cseen[r].get(k)
            cseen[r][k] = tick
            if c is None or c == i:
                continue
            # A repeat up to a renaming pi: s_tick = pi.s_c. Kept only where the lifted
            # cycle (pi's order rounds of the walk) stays small enough to build.
            mean = Fraction(int(cum[tick, r] - cum[c, r]), tick - c)
            if best is None or mean > best[0] or shortest and mean == best[0]:
                pi = lift.between(hist_keys[c][r], keys[r])
                size = None if pi is None else lift.order(pi) * (tick - c)
                if size is not None and size <= MAX_LIFTED_STEPS and (
                        best is None or mean > best[0] or size < best_len):
                    best, best_len = (mean, r, c, tick, pi), size
                    improved = tick
        X = Y
        if best is not None and enough is not None and best[0] >= enough and not shortest:
            break
        if best is not None and patience is not None and tick - improved >= patience:
            break
        if progress is not None and tick % (PROGRESS_TICKS * per_tick) == 0:
            progress(tick // per_tick, max_steps // per_tick,
                     None if best is None else best[0])
        if time_limit is not None and _time.perf_counter() - t0 > time_limit:
            break
    if best is not None and best[4] is not None:
        _, r, i, j, pi = best
        label = f"{policy[r]} (row {r}, seed {seed})"
        # The walk i..j closes up to pi: walked again through pi, pi^2, ... it is a concrete
        # cycle of the same mean, from s_i back to s_i (one row's history, extended).
        K = np.stack([hist_keys[t][r] for t in range(j + 1)])
        Ch = np.stack([hist_choice[t][r] for t in range(j)])
        Tm = np.array([int(hist_time[t][r]) for t in range(j)], np.int64)
        Cs = cum[:j + 1, r].copy()
        try:
            K, Ch, Tm, Cs = lift.extend(K, Ch, Tm, Cs, i, pi)
        except AssertionError:
            best = exact        # never a run that is not one: the exact repeats only
        else:
            label += (", closed up to a renaming of the clients in "
                      f"{(K.shape[0] - 1 - i) // (j - i)} rounds")
            return _lasso(sim, 0, i, K.shape[0] - 1, K[:, None, :], Ch[:, None, :],
                          Tm[:, None], Cs[:, None], label, tick, R,
                          _time.perf_counter() - t0)
    if best is None:
        return None
    _, r, i, j, _ = best
    label = f"{policy[r]} (row {r}, seed {seed})"
    return _lasso(sim, r, i, j, hist_keys, hist_choice, hist_time, cum, label, tick, R,
                  _time.perf_counter() - t0)


def _lasso(sim: Simulator, r: int, i: int, j: int, hist_keys, hist_choice, hist_time, cum,
           label: str, ticks: int, rows: int, seconds: float) -> WitnessRun:
    """The best simple cycle of row ``r``'s closed walk ``i..j`` and a loop-free prefix to
    it, as a :class:`WitnessRun` (its graph: one state per distinct state of the run)."""
    from statespace.graph import StateGraph

    key = [hist_keys[t][r].tobytes() for t in range(j + 1)]
    step_cost = [int(cum[t + 1, r] - cum[t, r]) for t in range(j)]
    # The walk i..j split into simple cycles: a stack of positions whose states are
    # distinct; a state met again pops the cycle it closes. Every tick of the walk lies on
    # one of them, so the best has a mean at least the walk's.
    stack: list[int] = []
    where: dict[bytes, int] = {}
    cyc: tuple[Fraction, int, int] | None = None
    for t in range(i, j + 1):
        k = key[t]
        if k in where:
            a = where[k]
            c = Fraction(sum(step_cost[stack[x]] for x in range(a, len(stack))),
                         len(stack) - a)
            if cyc is None or c > cyc[0]:
                cyc = (c, stack[a], t)
            for x in stack[a:]:
                del where[key[x]]
            del stack[a:]
        where[k] = len(stack)
        stack.append(t)
    assert cyc is not None      # key[i] == key[j]
    _, a, b = cyc
    # The cycle's ticks a..b-1 (states key[a..b-1] distinct, key[b] == key[a]). The prefix
    # runs to the first position whose state is on the cycle, and the cycle is turned to
    # start there; loops of the prefix are cut out (a state met again continues from its
    # first visit, the step out of it being the one taken at its last visit).
    on_cycle = {key[t]: t for t in range(a, b)}
    first = next(t for t in range(a + 1) if key[t] in on_cycle)
    pre: list[int] = []
    at: dict[bytes, int] = {}
    for t in range(first + 1):
        k = key[t]
        if k in at:
            del pre[at[k] + 1:]
            at = {key[x]: n for n, x in enumerate(pre)}
            continue
        at[k] = len(pre)
        pre.append(t)
    o = on_cycle[key[first]]
    turn = list(range(o, b)) + list(range(a, o))        # the cycle's ticks from key[first]
    node: dict[bytes, int] = {}
    rep: list[int] = []          # a run position holding each node's state
    for t in pre + turn[1:]:
        node[key[t]] = len(rep)
        rep.append(t)
    # (source node, tick of the run, target node)
    steps = [(node[key[pre[n]]], pre[n + 1] - 1, node[key[pre[n + 1]]])
             for n in range(len(pre) - 1)]
    steps += [(node[key[t]], t, node[key[t + 1]]) for t in turn]
    n = len(rep)
    X = sim.ex.layout.unpack(np.stack([hist_keys[t][r] for t in rep]), np, dtype=np.int64)
    code = {t: sim.code(hist_choice[t][r]) for _, t, _ in steps}
    codes = sorted(set(code.values()))
    label_of = {c: k for k, c in enumerate(codes)}
    out: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for src, t, dst in steps:
        out[src].append((dst, t))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum([len(x) for x in out], out=indptr[1:])
    flat = [x for row in out for x in row]
    edge_of = {t: e for e, (_, t) in enumerate(flat)}
    costs = {res: np.zeros(len(flat), np.int64) for res in sim.cm.resources}
    if sim.resource in costs:
        costs[sim.resource][:] = [step_cost[t] for _, t in flat]
    parent = np.full(n, -1, np.int64)
    pact = np.full(n, -1, np.int32)
    for src, t, dst in steps:
        if dst != 0 and parent[dst] < 0:
            parent[dst] = src
            pact[dst] = label_of[code[t]]
    big = any(c >= 2**63 for c in codes)
    graph = StateGraph(
        indptr=indptr, indices=np.array([d for d, _ in flat], np.int32), costs=costs,
        time=np.array([int(hist_time[t][r]) for _, t in flat], np.int64),
        action=np.array([label_of[code[t]] for _, t in flat], np.int32),
        states=np.ascontiguousarray(X.T), parent=parent, parent_action=pact,
        deadlocks=np.zeros(0, np.int64), error_state=-1,
        action_codes=np.array(codes, dtype=object if big else np.int64), model=sim.cm,
        name=sim.cm.name)
    cycle_cost = sum(step_cost[t] for t in turn)
    return WitnessRun(Fraction(cycle_cost, len(turn)), cycle_cost, len(turn), len(pre) - 1,
                      graph, tuple(edge_of[t] for t in turn), label, ticks, rows, seconds,
                      sim.resource)
