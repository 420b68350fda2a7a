"""Scenario systems and symmetry reduction: the clients of one scenario with no server are
instances of one template (``client_1``, ``client_2``, ...) and are explored per class, with the
optimum of the full product; systems with a server keep a request variable per client
(``req_client_1``, ...) and are explored in full, saying why."""

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


def test_a_server_system_is_explored_in_full_with_the_reason():
    model = TEMPLATES["paper-server"].family(2).to_model()
    a = analyze(model, cost="server", backend="cpu", witness=False)
    assert not a.symmetry["reduced"]
    assert "req_client_1" in a.symmetry["reason"]
    assert a.n_states == analyze(model, cost="server", backend="cpu", witness=False,
                                 symmetry="off").n_states
