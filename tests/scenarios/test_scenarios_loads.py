"""Loads worked out by hand, computed by the whole pipeline on the generated models.

Ticks of a client (docs/scenarios.md): ``Think(k)`` is ``k`` ticks; with a server a request of
``s`` ticks takes the client ``s + 2`` (send, served, reply), without one ``s`` (its own work).
A lone client's load is its service cost per cycle over its cycle's ticks.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from dvecost.saturation import system_load
from scenarios import Choice, Loop, Request, Scenario, Server, System, Think
from scenarios.templates import paper_no_server, paper_server


def load(system: System) -> F:
    """The worst load of the requests' cost (these tests are about cost: occupancy is
    tests/scenarios/test_occupancy.py's)."""
    ev = system_load(system.with_resource(system.cost_resource), backend="cpu")
    assert ev.certified
    return ev.exact


@pytest.mark.parametrize("k, s, c", [(3, 2, 3), (0, 1, 1), (5, 4, 2)])
def test_lone_client_without_server(k, s, c):
    u = Scenario("u", [Think(k), Request("r", service=s, cost=c)])
    assert load(System({u: 1})) == F(s * c, k + s)


@pytest.mark.parametrize("k, s, c", [(2, 4, 1), (0, 1, 1), (6, 3, 2)])
def test_lone_client_with_server(k, s, c):
    u = Scenario("u", [Think(k), Request("r", service=s, cost=c)])
    assert load(System({u: 1}, server=Server())) == F(s * c, k + s + 2)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_clients_without_server_add_up_under_sync(n):
    u = Scenario("u", [Think(3), Choice(Request("a", 1), Request("b", 2, cost=2))])
    lone = F(4, 5)  # the worst branch: 2 ticks at 2 after 3 thinking
    assert load(System({u: 1})) == lone
    assert load(System({u: n})) == n * lone


@pytest.mark.parametrize("n", [1, 2, 3])
def test_interleaved_clients_do_not_add_up(n):
    assert load(paper_no_server(n)) == F(6, 16)


@pytest.mark.parametrize("n, expected", [(1, F(1, 3)), (2, F(2, 3)), (3, F(1)), (4, F(1)),
                                         (5, F(1))])
def test_one_server_never_exceeds_one_worker_and_reaches_it(n, expected):
    """Heavy cycle: 1 + 6 + 1 + 10 = 18 ticks for 6 served: min(1, n/3)."""
    system = paper_server(n)
    assert load(system) == expected <= system.load_bound() == 1


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 6])
def test_two_workers(n):
    """Think 4, serve 4: 10 ticks for 4 served, 2/5 each, at most 2 workers: min(2, 2n/5)."""
    u = Scenario("u", [Think(4), Request("r", 4)])
    assert load(System({u: n}, server=Server(2))) == min(F(2), F(2 * n, 5))


@pytest.mark.parametrize("service, n", [(1, 3), (1, 4), (2, 4), (2, 5), (3, 6), (3, 8)])
def test_one_admission_per_tick_bounds_a_pool(service, n):
    """Four workers, requests of 1 to 3 ticks: the server admits one request per tick, so the
    load never passes ``service`` (the bound), and with clients enough to keep a request
    always waiting it reaches it. The load comes from the analysis of the rendered model, the
    bound from the system's shape alone."""
    u = Scenario("u", [Think(1), Request("r", service)])
    system = System({u: n}, server=Server(4))
    assert system.load_bound() == service < 4
    got = load(system)
    assert got <= service
    # A client's round alone: send, `service` ticks, reply, think: service + 3 ticks. From
    # that many clients on a request is always waiting and the bound is reached; below, each
    # client brings its own share (nobody waits for a worker).
    assert got == (service if n >= service + 3 else F(n * service, service + 3))


def test_cost_per_tick_scales_the_load_and_the_bound():
    u = Scenario("u", [Think(2), Request("r", service=2, cost=3)])
    assert load(System({u: 1}, server=Server())) == F(6, 6)
    three = System({u: 3}, server=Server())
    assert load(three) == 3 == three.with_resource("server").load_bound()
    assert three.load_bound() == 1          # occupancy: one worker


def test_loops():
    """A round is 4 ticks for 2 served; 1 to 3 rounds then 6 ticks: 3 rounds, 6/18. With no
    upper bound on the rounds the worst run stays in the loop: 2/4."""
    bounded = Scenario("l", [Loop([Request("r", 2)], times=(1, 3)), Think(6)])
    forever = Scenario("l", [Loop([Request("r", 2)], times=(1, None)), Think(6)])
    exact = Scenario("l", [Loop([Request("r", 2)], times=2), Think(6)])
    assert load(System({bounded: 1}, server=Server())) == F(1, 3)
    assert load(System({forever: 1}, server=Server())) == F(1, 2)
    assert load(System({exact: 1}, server=Server())) == F(4, 14)


def test_weights_are_ignored_by_the_worst_case():
    rare = Scenario("u", [Think(4), Choice(Request("a", 1), Request("b", 4), weights=(99, 1))])
    assert load(System({rare: 1}, server=Server())) == F(4, 10)


def test_a_cheap_client_can_lower_the_load():
    """Why the search checks monotonicity: a client whose long, free requests occupy the only
    worker makes the other client's paid requests wait."""
    paid = Scenario("paid", [Request("x", 1)])
    free = Scenario("free", [Request("idle", 10, cost=0)])
    assert load(System({paid: 1}, server=Server())) == F(1, 3)
    assert load(System({paid: 1, free: 1}, server=Server())) == F(1, 12)


def test_many_clients_in_lockstep():
    """16 identical server-free clients move in lockstep: 4 states, 16 times 2/4."""
    u = Scenario("u", [Think(2), Request("r", 2)])
    assert load(System({u: 15})) == F(15, 2)
    assert load(System({u: 16})) == 8
