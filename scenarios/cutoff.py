"""Cutoffs: from how many clients of a scenario on, one more changes no load.

A server admits at most one request per tick, and a client it admits is busy for a fixed
number of ticks before it waits again. So for a scenario whose clients follow one fixed cycle
with a single request (no :class:`~scenarios.dsl.Choice`, no loop of variable length, one
request step), only so many of its clients can be anything but *waiting* at once; with more,
one of them always waits, and one more waiting client changes nothing the server can see.

The argument (docs/algorithms.md, "Cutoffs of a scenario"). Let ``P`` be the period of one
client of the scenario alone with the server: the ticks from one admission of its request to
the next when the server admits it as soon as it can. A client admitted on tick ``t`` moves
on a fixed path (the server never preempts it; with a pool of workers it serves itself) and
waits again, unreferred by the server's ``adm``/``cur``/``done``, from time ``t + P`` on: it
is something else at ``P - 1`` times. Admissions happen on distinct ticks, so at any time at
most ``P - 1`` clients of the scenario are not unreferred waiters (the clients also start
together and move in step until their first wait). With ``n >= P`` clients at least one waits,
unreferred, in every reachable state. Then the systems with ``n`` and ``n + 1`` clients are
bisimilar with equal costs: relate a state of the first to the same state with one more
client in the local state of an unreferred waiter (or, before the first wait, of the others).
The server reads a waiting client only through "someone of this kind waits" (its guard of
being idle), the sum of the requests in service (a waiter adds 0) and the admission of one
client (the extra's admission is the twin's, up to renaming the two); the extra's own step is
the waiting self-loop, cost 0. After any step the first system again has an unreferred waiter
to be the twin. Bisimilar graphs with equal costs have the same maximal and minimal cycle
means, so the load with ``n >= P`` clients is the load with ``P``.

>>> from scenarios import Choice, Request, Scenario, Server, System, Think
>>> reader = Scenario("reader", [Request("open", service=2), Think(8)])
>>> pick = Scenario("pick", [Think(1), Choice(Request("a", 1), Request("b", 2))])
>>> system = System({reader: 1, pick: 1}, server=Server(workers=4))
>>> cutoff(system, "reader"), cutoff(system, "pick")
(12, None)
"""

from __future__ import annotations

from .dsl import Choice, Loop, Request, Scenario, System, Think

__all__ = ["cutoff"]


def _requests_on_fixed_path(steps) -> int | None:
    """The number of requests one round of ``steps`` sends, or ``None`` when the round's
    path is not fixed (a Choice, a loop of variable length)."""
    n = 0
    for st in steps:
        if isinstance(st, Request):
            n += 1
        elif isinstance(st, Think):
            continue
        elif isinstance(st, Loop):
            lo, hi = st.times
            inner = _requests_on_fixed_path(st.body)
            if hi != lo or inner is None:
                return None
            n += lo * inner
        else:           # Choice
            return None
    return n


def cutoff(system: System, scenario: str) -> int | None:
    """``P`` such that ``n >= P`` clients of ``scenario`` give the load of ``P`` (the other
    scenarios' counts and the server as in ``system``), or ``None`` when the module's argument
    does not apply: no server, a server admitting several requests per tick or with a policy
    other than ``'any'`` (:class:`~scenarios.dsl.Server`), a scenario whose
    round is not one fixed path with exactly one request, or a period that the solo run does
    not show.

    ``P`` is the period of the solo client (one of ``scenario``, alone with the server), read
    off its state graph, which must be a single path into a cycle.
    """
    from statespace import build_state_graph

    sc = system.scenario(scenario)
    if (system.server is None or system.server.admissions != 1 or sc is None
            or _requests_on_fixed_path(sc.steps) != 1 or system.server.policy != "any"):
        # (several admissions per tick: the argument counts one per tick; a policy other
        # than 'any' queues the extra waiter behind its twin instead of letting the server
        # take either: the two systems are not bisimilar, docs/algorithms.md)
        return None
    solo = System({sc: 1}, server=system.server, name=system.name)
    g = build_state_graph(solo.to_model())
    deg = g.indptr[1:] - g.indptr[:-1]
    if (deg != 1).any():
        return None
    seen: dict[int, int] = {}
    v, t = 0, 0
    while v not in seen:
        seen[v] = t
        v, t = int(g.indices[g.indptr[v]]), t + 1
    return t - seen[v]
