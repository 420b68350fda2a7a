"""Semantics of state generation on small models written for these tests
(docs/language.md: "Expressions", "Transitions", "The system line", "Cost and time")."""

from __future__ import annotations

import numpy as np
import pytest
from ss_helpers import graph
from ss_models import BUF, COMMIT2, PROD, RDV, RINGS_SYNC

from statespace import decode_state, shortest_trace


def states(g):
    return [decode_state(g, i) for i in range(g.n_states)]


def edges(g):
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr))
    return list(zip(src.tolist(), g.indices.tolist()))


# ---------------------------------------------------------------- rendezvous


def test_rendezvous_values_then_receiver_then_sender():
    g = graph(RDV)
    assert g.n_states == 3 and g.n_edges == 2  # one edge per (sender, receiver) pair
    s = states(g)
    # Values pass in order (y = 3, z = 4), then Q's effect (z = 8), then P's (x = 5).
    assert s[1] == {"P": "b", "Q": "b", "R": "a", "P.x": 5, "Q.y": 3, "Q.z": 8, "R.y": 0}
    # Two values into one target: the later one wins.
    assert s[2]["R.y"] == 4
    # Cost is the sum of both partners, time the maximum.
    assert g.cost().tolist() == [3, 6] and g.time.tolist() == [3, 7]


def test_rendezvous_needs_two_processes():
    g = graph("channel c; process P { state a; init a; trans a -> a { sync c!; }, "
              "a -> a { sync c?; }; } system async;")
    assert (g.n_states, g.n_edges, g.n_deadlocks) == (1, 0, 1)


def test_typed_rendezvous_casts_value():
    g = graph("channel {byte} c[0]; process P { int v = 300; state a, b; init a; "
              "trans a -> b { sync c!v; }; } process Q { byte w; state a, b; init a; "
              "trans a -> b { sync c?w; }; } system async;")
    assert states(g)[1]["Q.w"] == 300 % 256 and g.error_state == -1


def test_untyped_rendezvous_value_out_of_range_is_an_error():
    g = graph("channel c; process P { int v = 300; state a, b; init a; "
              "trans a -> b { sync c!v; }; } process Q { byte w; state a, b; init a; "
              "trans a -> b { sync c?w; }; } system async;")
    assert g.error_state == 1 and g.n_states == 2


# ---------------------------------------------------------------- buffered channels


def test_buffered_fifo():
    g = graph(BUF)
    s = states(g)
    # Sending stops when the buffer holds 2 items.
    assert max(len(d["q"]) for d in s) == 2
    full = [d for d in s if d["P.x"] == 2 and d["q"] and len(d["q"]) == 2]
    # Legacy order: the effect runs first, then the value (x + 1 already) is sent.
    assert full[0]["q"] == [(1, 11), (2, 12)]
    # The receiver takes items in FIFO order; its effect sees the old y (legacy order).
    last = [d for d in s if d["P.x"] == 3 and not d["q"]]
    assert {d["Q.y"] for d in last} == {3}
    assert all(d["Q.s"] == 12 for d in last)


def test_buffered_send_and_receive_are_single_steps():
    g = graph("channel {byte} q[1]; process P { state a, b; init a; trans a -> b { sync q!7; }; }"
              "process Q { byte v; state a, b; init a; trans a -> b { sync q?v; }; } "
              "system async;")
    assert g.n_states == 3 and g.n_edges == 2
    assert states(g)[1]["q"] == [7] and states(g)[2]["Q.v"] == 7


# ---------------------------------------------------------------- commit


def test_commit_blocks_others_and_deadlocks():
    g = graph(COMMIT2)
    assert (g.n_states, g.n_edges, g.n_deadlocks) == (8, 8, 2)
    for d in g.deadlocks:
        assert decode_state(g, d)["Pcom"] == "b"


# ---------------------------------------------------------------- the error state

@pytest.mark.parametrize("effect", [
    "x = 1 / y", "x = 1 % y", "x = a[y + 3]", "a[y + 3] = 1", "x = y - 1", "x = 256",
    "a[3] = 0", "x = a[-1]",
])
def test_faults_go_to_the_error_state(effect):
    g = graph(f"byte x, y; byte a[3]; process P {{ state s, t; init s; "
              f"trans s -> t {{ effect {effect}; }}; }} system async;")
    assert (g.n_states, g.n_edges, g.error_state) == (2, 1, 1)
    assert decode_state(g, 1) == {"error": True}
    assert g.n_deadlocks == 0 and g.successors(1).size == 0


def test_erroneous_guard_counts_as_true():
    g = graph("byte y; process P { state s, t; init s; trans s -> t { guard 1 / y == 5; }; } "
              "system async;")
    assert g.error_state == 1 and g.n_edges == 1


@pytest.mark.parametrize("guard", ["false and 1 / y", "true or 1 / y", "false imply 1 / y",
                                   "y != 0 and 10 / y > 1", "y == 0 or a[y + 7] == 0"])
def test_short_circuit_hides_faults(guard):
    g = graph(f"byte y; byte a[2]; process P {{ state s, t; init s; "
              f"trans s -> t {{ guard {guard}; }}; }} system async;")
    assert g.error_state == -1


def test_error_state_is_one_shared_state_with_a_trace():
    g = graph("byte x; process P { state s; init s; trans s -> s { guard x < 3; "
              "effect x = x + 1; }, s -> s { effect x = 10 / (2 - x); }; } system async;")
    # x = 2 divides by zero; x = 3, 5, 10 give negative values: four edges, one error state.
    assert g.error_state >= 0
    assert int((g.indices == g.error_state).sum()) == 4
    assert g.n_states == 7  # x in {0, 1, 2, 3, 5, 10} and the error state
    trace = shortest_trace(g, g.error_state)
    assert len(trace) == 2 and trace[-1].target == g.error_state
    assert decode_state(g, trace[-1].source)["x"] == 5   # 0 -> 5 -> error, found first


def test_legacy_32_bit_arithmetic():
    g = graph("int q, r, w, s; process P { state s0, s1; init s0; trans s0 -> s1 { effect "
              "q = -7 / 2, r = -7 % 2, w = (65536 * 65536 == 0), s = (1 << 33) + (-8 >> 1); "
              "}; } system async;")
    d = decode_state(g, 1)
    assert (d["q"], d["r"], d["w"], d["s"]) == (-3, -1, 1, 2 - 4)


def test_effects_are_sequential():
    g = graph("byte a[3]; byte i; process P { state s, t; init s; trans s -> t { "
              "effect i = 2, a[i] = i + 1, i = a[2] * 2; }; } system async;")
    assert decode_state(g, 1) == {"P": "t", "a": [0, 0, 3], "i": 6}


# ---------------------------------------------------------------- system sync


def test_sync_product_cost_sum_time_max():
    g = graph(RINGS_SYNC)
    assert (g.n_states, g.n_edges) == (6, 6)
    assert g.cost().tolist() == [6, 3, 8, 2, 7, 4]
    assert g.time.tolist() == [1, 1, 2, 1, 1, 2]


def test_sync_blocked_process_deadlocks_and_choices_multiply():
    g = graph("byte g; process A { state a, b; init a; trans a -> b {}, a -> b { effect g = 1; }; }"
              "process B { state a; init a; trans a -> a {}, a -> a {}; } system sync;")
    assert g.n_edges == 4  # 2 x 2 choices from the initial state
    assert g.n_deadlocks >= 1  # A is stuck in b: nobody moves


def test_sync_global_conflict_is_an_error():
    g = graph("byte g; process A { state a; init a; trans a -> a { effect g = 1; }; }"
              "process B { state a; init a; trans a -> a { effect g = 2; }; } system sync;")
    assert g.error_state == 1 and g.n_states == 2


# ---------------------------------------------------------------- property process


def test_property_product():
    g = graph(PROD % "qa -> qb { guard true; }, qb -> qc { guard true; }, qc -> qc { guard true; }")
    assert (g.n_states, g.n_edges) == (6, 12)   # DiVinE test3.dve
    g = graph(PROD % "qa -> qb { guard true; }")
    assert (g.n_states, g.n_edges, g.n_deadlocks) == (3, 2, 2)   # DiVinE test2.dve
    g = graph(PROD % "qa -> qb { guard true; }", property=False)
    assert (g.n_states, g.n_edges) == (4, 8)


def test_property_moves_alone_when_system_is_stuck():
    g = graph("process P { state a; init a; } process L { state q, r; init q; "
              "trans q -> r { guard P.a; }; } system async property L;")
    assert (g.n_states, g.n_edges) == (2, 1)


# ---------------------------------------------------------------- cost and time

def test_defaults_and_named_resources():
    g = graph("process J { state i, c, s; init i; trans i -> c { cost cpu: 1, net: 0; }, "
              "c -> i { cost cpu: 4; time 2; }, c -> s { cost cpu: 2, net: 1; }, "
              "s -> i { cost net: 6; time 3; }; } system async;")
    assert g.resources == ("cpu", "net")
    assert g.cost("cpu").tolist() == [1, 4, 2, 0] and g.cost("net").tolist() == [0, 0, 1, 6]
    assert g.time.tolist() == [1, 2, 1, 3]
    from dve.errors import ConfigurationError
    with pytest.raises(ConfigurationError, match="cpu, net"):
        g.cost()
    with pytest.raises(ConfigurationError, match="unknown cost resource 'gpu'"):
        g.cost("gpu")


def test_cost_depends_on_source_state():
    g = graph("byte x; process P { state s; init s; trans s -> s { guard x < 3; "
              "effect x = x + 1; cost x * 10; time x; }; } system async;")
    assert g.cost().tolist() == [0, 10, 20] and g.time.tolist() == [0, 1, 2]
    g = graph("process P { state s, t; init s; trans s -> t {}; } system async;")
    assert g.cost().tolist() == [0] and g.time.tolist() == [1]


# ---------------------------------------------------------------- counting

def test_duplicates_and_self_loops_are_counted():
    g = graph("process P { state a, b; init a; trans a -> b {}, a -> b {}, b -> b {}, "
              "b -> b {}; } system async;")
    assert (g.n_states, g.n_edges) == (2, 4)
    assert edges(g) == [(0, 1), (0, 1), (1, 1), (1, 1)]
    assert g.action.tolist() == [0, 1, 2, 3]


def test_legacy_error_state_successors():
    # The error state is all zeros with process 0 in a state without transitions: with
    # error_successors the other processes move on from their first declared state.
    text = ("byte x; process P { state s, t; init t; trans t -> t { effect x = 1 / x; }; } "
            "process Q { state a, b; init b; trans a -> b {}, b -> b { guard x == 0; }; } "
            "system async;")
    g = graph(text)
    assert (g.n_states, g.n_edges, g.error_state) == (2, 2, 1)
    g = graph(text, error_successors=True)
    assert g.n_states == 3 and g.successors(g.error_state).size == 1
    assert decode_state(g, 2) == {"P": "<error>", "Q": "b", "x": 0}


def test_sync_many_processes_action_ids_fit_int32():
    # 17 processes with 4 transitions each: 4**17 step codes (more than 2**31), few used.
    procs = "".join(f"process P{i} {{ state a, b; init a; trans a -> b {{}}, a -> b {{}}, "
                    f"b -> a {{ cost 1; }}, b -> b {{ guard false; }}; }}" for i in range(17))
    g = graph(procs + " system sync;")
    assert g.n_states == 2 and g.n_edges == 2**17 + 1
    assert g.action.dtype == np.int32 and int(g.action.max()) == 2**17
    last = g.action[-1]
    assert g.describe_action(last).count("b -> a") == 17 and g.cost()[-1] == 17
    assert g.action_moves(last)[0]["src"] == "b"
