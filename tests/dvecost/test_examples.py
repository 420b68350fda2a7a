"""Every bundled example, pinned: states, transitions, deadlocks, error state, and the optimum.

The figures of the small examples are worked out by hand in each file's header comment; the
client/server optima are the family's (mean 13/5, ratio 13/14, agreed by Storm, Boost and
LEMON), its state count the explorer's (checked against BEEM elsewhere). Every small example is
also cross-checked against the oracles of ``ocm.reference``, in both modes.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest

from ocm.errors import ZeroTimeCycleError
from dvecost import analyze
from dvecost.examples import EXAMPLES, example_path

#: name -> (n_states, n_transitions, n_deadlocks, error_state_reached, {(kind, cost): optimum})
#: (the zero-time example's ratio has no answer: ZeroTimeCycleError).
PINNED = {
    "client_server.dve": (135, 360, 0, False, {("mean", None): F(13, 5),
                                                 ("ratio", None): F(13, 14)}),
    "pipeline.dve": (126, 240, 0, False, {("mean", None): F(7, 5), ("ratio", None): F(5, 3)}),
    "deadlock.dve": (6, 8, 1, False, {("mean", None): F(2), ("ratio", None): F(3, 2)}),
    "zero_time.dve": (3, 4, 0, False, {("mean", None): F(3, 2), ("ratio", None): None}),
    "error_state.dve": (5, 7, 0, True, {("mean", None): F(3, 2), ("ratio", None): F(3, 2)}),
    "rings_async.dve": (6, 12, 0, False, {("mean", None): F(3), ("ratio", None): F(3)}),
    "rings_sync.dve": (6, 6, 0, False, {("mean", None): F(5), ("ratio", None): F(15, 4)}),
    "printer.dve": (7, 9, 0, False, {("mean", None): F(4, 3), ("ratio", None): F(2, 7)}),
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
    assert a.value == expected
    assert (a.n_states, a.n_transitions) == (n_states, n_transitions)
    assert a.n_deadlocks == n_deadlocks
    assert a.error_state_reached is error


@pytest.mark.parametrize("mode", ["max", "min"])
@pytest.mark.parametrize("name", [n for n in EXAMPLES if n != "client_server.dve"])
def test_small_examples_agree_with_the_oracles(name, mode):
    """On every small example the pipeline's optimum agrees with Karp's theorem, computed on
    the same state graph: directly for the mean; for the ratio p/q, the optimal cycle mean of
    ``q * cost - p * time`` must be 0 (every cycle takes time > 0 here). Graphs of at most 12
    states are also checked by enumerating their simple cycles."""
    import numpy as np

    from ocm.reference import brute_force_cycle, karp_cycle_mean

    for kind, cost in PINNED[name][4]:
        if name == "zero_time.dve" and kind == "ratio":
            continue
        a = analyze(example_path(name), ratio=kind == "ratio", cost=cost, mode=mode,
                    backend="cpu")
        g = a.graph
        c = np.asarray(g.costs[a.cost], dtype=object)
        t = np.asarray(g.time, dtype=object)
        p, q = a.value.numerator, a.value.denominator
        if kind == "mean":
            assert karp_cycle_mean(g.indptr, g.indices, c, mode) == a.value
        else:
            assert karp_cycle_mean(g.indptr, g.indices, q * c - p * t, mode) == 0
        if g.n_states <= 12:
            brute = brute_force_cycle(g.indptr, g.indices, c, t if kind == "ratio" else None,
                                      mode)
            assert brute[0] == a.value


def test_tutorial_model_is_the_bundled_printer():
    """docs/tutorial.md shows printer.dve in full; the two must not drift apart."""
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    text = (root / "docs" / "tutorial.md").read_text()
    block = text.split("## 1. A first model", 1)[1].split("```\n", 2)[1]
    assert block == example_path("printer").read_text()
