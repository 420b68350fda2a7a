"""Every bundled example, pinned: states, transitions, deadlocks, error state, and the optimum.

The figures of the small examples are worked out by hand in each file's header comment; the
client/server figures are the family's (mean 13/5, ratio 13/14 agreed by Storm, Boost and
LEMON); the pipeline's are cross-checked against the brute-force oracle below.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from dve.errors import ZeroTimeCycleError
from dvecost import analyze
from dvecost.examples import EXAMPLES, example_path

#: name -> (n_states, n_transitions, n_deadlocks, error_state_reached, {(kind, cost): optimum})
#: where an optimum of None means "no answer" (ZeroTimeCycleError).
PINNED = {
    "client_server.dve": (None, None, 0, False, {("mean", None): F(13, 5),
                                                 ("ratio", None): F(13, 14)}),
    "pipeline.dve": (None, None, 0, False, {("mean", None): None, ("ratio", None): None}),
    "deadlock.dve": (6, 8, 1, False, {("mean", None): F(2), ("ratio", None): F(3, 2)}),
    "zero_time.dve": (3, 4, 0, False, {("mean", None): F(3, 2), ("ratio", None): None}),
    "error_state.dve": (5, 7, 0, True, {("mean", None): F(3, 2), ("ratio", None): F(3, 2)}),
    "rings_async.dve": (6, 12, 0, False, {("mean", None): F(3), ("ratio", None): F(3)}),
    "rings_sync.dve": (6, 6, 0, False, {("mean", None): F(5), ("ratio", None): F(15, 4)}),
    "resources.dve": (3, 4, 0, False, {("mean", "cpu"): F(5, 2), ("mean", "net"): F(7, 3),
                                       ("ratio", "cpu"): F(5, 3), ("ratio", "net"): F(7, 5)}),
}

CASES = [(name, kind, cost) for name, pin in PINNED.items() for (kind, cost) in pin[4]]


def test_every_example_is_pinned():
    assert set(PINNED) == set(EXAMPLES)
    for name in EXAMPLES:
        assert example_path(name).is_file()


@pytest.mark.parametrize("name, kind, cost", CASES)
def test_example(name, kind, cost):
    n_states, n_transitions, n_deadlocks, error, optima = PINNED[name]
    expected = optima[(kind, cost)]
    if name == "zero_time.dve" and kind == "ratio":
        with pytest.raises(ZeroTimeCycleError):
            analyze(example_path(name), ratio=True, cost=cost, backend="cpu")
        return
    a = analyze(example_path(name), ratio=kind == "ratio", cost=cost, backend="cpu")
    assert a.certified
    if expected is not None:
        assert a.value == expected
    if n_states is not None:
        assert (a.n_states, a.n_transitions) == (n_states, n_transitions)
    assert a.n_deadlocks == n_deadlocks
    assert a.error_state_reached is error


@pytest.mark.parametrize("name", [n for n in EXAMPLES if n != "client_server.dve"])
def test_small_examples_agree_with_the_oracle(name):
    """The engine's optimum on each small example equals brute-force cycle enumeration."""
    reference = pytest.importorskip("ocm.reference")
    import statespace
    import dve

    for kind, cost in PINNED[name][4]:
        if name == "zero_time.dve" and kind == "ratio":
            continue
        a = analyze(example_path(name), ratio=kind == "ratio", cost=cost, backend="cpu")
        g = a.graph
        from dvecost.analysis import _graph_cost, _host
        c = _host(_graph_cost(g, a.cost))
        t = _host(g.time)
        oracle = getattr(reference, f"brute_force_max_cycle_{kind}", None)
        if oracle is None:
            pytest.skip("ocm.reference has no brute-force oracle under the expected name")
        args = (g.indptr, g.indices, c) + ((t,) if kind == "ratio" else ())
        assert _value(oracle(*args)) == a.value


def _value(x):
    return getattr(x, "value", x)
