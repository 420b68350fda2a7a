"""Scenario systems and symmetry reduction: the clients of one scenario are copies of one
another up to their number (each keeps its request in its own ``req``; the server has a
transition per client, a family that renaming the clients permutes), so they are explored per
class, with the optimum and the size of the full product."""

from __future__ import annotations

import pytest

from dvecost import analyze
from scenarios.templates import TEMPLATES


@pytest.mark.parametrize("n", [2, 3])
def test_paper_no_server_reduces_with_the_full_products_value(n):
    model = TEMPLATES["paper-no-server"].family(n).to_model()
    a = analyze(model, cost="work", backend="cpu")
    off = analyze(model, cost="work", backend="cpu", symmetry="off")
    assert a.symmetry["reduced"] and a.value == off.value
    assert a.symmetry["full_states"] == off.n_states > a.n_states


def test_lockstep_clients_reduce_in_system_sync():
    from scenarios import Request, Scenario, System, Think
    u = Scenario("u", [Think(2), Request("r", service=1)])
    model = System({u: 4}, composition="sync", name="lock").to_model()
    a = analyze(model, cost="work", backend="cpu", ratio=True)
    off = analyze(model, cost="work", backend="cpu", ratio=True, symmetry="off")
    assert a.symmetry["reduced"] and a.value == off.value


@pytest.mark.parametrize("name,n", [("paper-server", 2), ("paper-server", 3), ("editor", 3),
                                    ("editor", 5)])
def test_server_systems_reduce_with_the_full_products_value(name, n):
    model = TEMPLATES[name].family(n).to_model()
    a = analyze(model, cost="server", backend="cpu", ratio=True)
    off = analyze(model, cost="server", backend="cpu", ratio=True, symmetry="off")
    assert a.symmetry["reduced"] and a.value == off.value
    assert a.symmetry["full_states"] == off.n_states > a.n_states


def test_paper_server_classes_are_the_orbits_counted_in_issue_14():
    # Issue 14 counted the orbits of the full paper-server graphs under permutations of the
    # clients by brute force: 320 and 543 classes for 4 and 5 clients.
    for n, classes, full in ((4, 320, 6314), (5, 543, 48514)):
        a = analyze(TEMPLATES["paper-server"].family(n).to_model(), cost="server",
                    backend="cpu", witness=False)
        assert (a.n_states, a.symmetry["full_states"]) == (classes, full)


def test_several_workers_reduce_too():
    from scenarios import Server, System
    from scenarios.templates import paper_server
    client = paper_server(1).scenarios[0]
    model = System({client: 3}, server=Server(workers=2), name="w").to_model()
    a = analyze(model, cost="server", backend="cpu", ratio=True)
    off = analyze(model, cost="server", backend="cpu", ratio=True, symmetry="off")
    assert a.symmetry["reduced"] and a.value == off.value
    assert a.symmetry["full_states"] == off.n_states


@pytest.mark.parametrize("n,w", [(2, 3), (4, 2)])
def test_a_pool_of_workers_reduces_with_the_full_products_value(n, w):
    # Several workers are a pool (no worker has a name): the clients stay the only group, and
    # the load is min(w, n/3) as with named workers (tests/scenarios/test_scenarios_loads.py).
    from fractions import Fraction
    from scenarios import Server, System
    from scenarios.templates import paper_server
    client = paper_server(1).scenarios[0]
    model = System({client: n}, server=Server(workers=w), name="pool").to_model()
    a = analyze(model, cost="server", backend="cpu", witness=False)
    off = analyze(model, cost="server", backend="cpu", witness=False, symmetry="off")
    assert a.value == off.value == min(Fraction(w), Fraction(n, 3))
    assert [g["template"] for g in a.symmetry["groups"]] == ["client"]
    assert a.symmetry["full_states"] == off.n_states > a.n_states


@pytest.mark.slow
def test_eight_workers_saturate_at_22_analysts():
    # dvecost/examples/analysts.py: 4/11 of a worker per analyst, eight workers; about 4 s.
    import pathlib
    import dvecost.examples
    from dvecost.saturation import saturate
    path = pathlib.Path(dvecost.examples.__file__).parent / "analysts.py"
    r = saturate(str(path), backend="cpu", method="exact")
    assert r.saturating_clients == 22
    by_n = {p.clients: p for p in r.curve}
    assert str(by_n[22].exact) == "8" and str(by_n[21].exact) == "84/11"
    assert by_n[22].certified
