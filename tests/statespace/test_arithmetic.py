"""DVE arithmetic in the explorer: exact 64-bit costs and times, overflow and negative time as
runtime faults, C division without warnings, values out of range to the error state; each
against the independent interpreter of ``ss_oracle``."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
import ss_oracle
from ss_exprs import LEAVES32, LEAVES64, exprs
from ss_helpers import compiled, graph

from dve.arith import array_helpers, binop
from dve.errors import EvaluationError

I64_MAX = 2**63 - 1


def _edges(g):
    """[(source, target, cost, time)] of a state graph, in edge order."""
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr))
    return list(zip(src.tolist(), g.indices.tolist(), g.cost().tolist(), g.time.tolist()))


def _oracle_edges(text):
    """The oracle's [(source, target, cost, time)], faulting steps without a charge."""
    cm = compiled(text)
    states, edges = ss_oracle.explore(cm)
    err = tuple(cm.error_state)
    res = cm.resources[0]
    return [(s, d, None if states[d] == err else c[res], None if states[d] == err else t)
            for s, d, _, c, t in edges], states.index(err) if err in states else -1


def _same_as_oracle(text):
    g = graph(text)
    want, err = _oracle_edges(text)
    got = _edges(g)
    assert g.error_state == err
    assert [e[:2] for e in got] == [e[:2] for e in want]
    for (s, d, c, t), (_, _, wc, wt) in zip(got, want):
        if d == err:
            assert (c, t) == (0, 0)  # a faulting step has no charge
        else:
            assert (c, t) == (wc, wt)
    return g


def test_large_literal_cost_is_exact():
    g = _same_as_oracle("process P { state s; init s; trans s -> s { cost 1000000000000000; }; }"
                        " system async;")
    assert g.cost().tolist() == [10**15]


def test_cost_is_computed_in_64_bits():
    g = _same_as_oracle("int x = 32767; process P { state s; init s; "
                        "trans s -> s { cost x * x * x; time x * x * 4; }; } system async;")
    assert g.cost().tolist() == [32767**3] and g.time.tolist() == [32767**2 * 4]


@pytest.mark.parametrize("cost", ["x * 4611686018427387904 * 2", "-9223372036854775807 - x - 1",
                                  "x << 63", "(0 - 9223372036854775807 - 1) / (0 - x)",
                                  "-(0 - 9223372036854775807 - x)"])
def test_cost_overflow_at_run_time_is_a_fault(cost):
    # x = 0 charges a representable cost, x = 1 overflows: that step goes to the error state.
    text = ("byte x; process P { state s; init s; trans s -> s { guard x < 2; effect x = x + 1; "
            f"cost {cost}; }}; }} system async;")
    g = _same_as_oracle(text)
    assert g.error_state >= 0
    into_error = [e for e in _edges(g) if e[1] == g.error_state]
    assert len(into_error) == 1 and into_error[0][2:] == (0, 0)


def test_cost_just_inside_64_bits_is_kept():
    g = _same_as_oracle("byte x; process P { state s; init s; trans s -> s { guard x < 1; "
                        "effect x = 1; cost 9223372036854775806 + 1 - x; }; } system async;")
    assert g.error_state < 0 and g.cost().tolist() == [I64_MAX]


def test_rendezvous_cost_sum_overflow_is_a_fault():
    g = _same_as_oracle("""channel c;
        process P { state s; init s; trans s -> s { sync c!; cost 9223372036854775807; }; }
        process Q { state s; init s; trans s -> s { sync c?; cost 1; }, s -> s { cost 3; }; }
        system async;""")
    assert g.error_state >= 0
    assert sorted(e[2] for e in _edges(g) if e[1] != g.error_state) == [3]


def test_sync_cost_sum_overflow_is_a_fault():
    _same_as_oracle("""byte k;
        process A { state s; init s; trans s -> s { cost 9223372036854775000 + k; }; }
        process B { state s; init s; trans s -> s { guard k < 1000; effect k = k + 500; cost k; }; }
        system sync;""")


def test_negative_time_at_run_time_is_a_fault():
    g = _same_as_oracle("byte x; process P { state s; init s; trans s -> s { guard x < 3; "
                        "effect x = x + 1; cost 1; time 1 - x; }; } system async;")
    assert g.error_state >= 0 and min(g.time.tolist()) == 0


def test_assignment_out_of_range_goes_to_the_error_state():
    # 65536 * 65536 wraps to 0 in 32 bits; + 40000 does not fit an int: the error state.
    g = _same_as_oracle("int x; process P { state s, t; init s; "
                        "trans s -> t { effect x = 65536 * 65536 + 40000; }, t -> t {}; } "
                        "system async;")
    assert g.n_states == 2 and g.error_state == 1


def test_int_min_divided_by_minus_one_wraps_without_a_warning():
    text = ("int z; process P { state s, t; init s; trans s -> t { guard (z-2147483647-1) / -1 "
            "< 0 and (z-2147483647-1) % -1 == 0; cost 1; }, t -> t { cost 2; }; } system async;")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = _same_as_oracle(text)
    assert g.n_states == 2 and g.error_state < 0  # -2**31 / -1 wraps to -2**31 (C, 32 bits)


def test_literal_out_of_range_is_refused_by_the_compiler():
    with pytest.raises(EvaluationError, match="literal-out-of-range|does not fit"):
        graph("int x; process P { state s; init s; trans s -> s { effect x = 4294967296; }; } "
              "system async;")


def test_minimum_int32_literal_is_allowed():
    g = _same_as_oracle("int x; process P { state s, t; init s; trans s -> t { guard "
                        "-2147483648 < x; effect x = -2147483648 / 65536; }, t -> t {}; } "
                        "system async;")
    assert g.states[1].tolist()[-1] == -32768


# The array helpers against the scalar rules, on the values where C arithmetic is delicate.
_EDGE32 = [-2**31, -2**31 + 1, -65536, -7, -1, 0, 1, 2, 7, 65535, 2**31 - 1]
_EDGE64 = [-2**63, -2**63 + 1, -2**32, -3, -1, 0, 1, 3, 2**31, 2**32 + 1, 2**62, 2**63 - 1]


def test_array_division_matches_the_scalar_rule():
    h = array_helpers(np)
    a, b = np.array([[x, y] for x in _EDGE32 for y in _EDGE32], np.int32).T
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        q, zq = h["_div"](a, b)
        r, zr = h["_mod"](a, b)
    for x, y, qv, rv, z1, z2 in zip(a.tolist(), b.tolist(), q.tolist(), r.tolist(),
                                    zq.tolist(), zr.tolist()):
        assert z1 == z2 == (y == 0)
        if y:
            assert (qv, rv) == (binop("/", x, y), binop("%", x, y))
    # The lighter twins, for operands whose bounds exclude INT32_MIN / -1.
    keep = ~((a == -2**31) & (b == -1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        qz, _ = h["_divz"](a[keep], b[keep])
        rz, _ = h["_modz"](a[keep], b[keep])
    sel = keep & (b != 0)
    assert qz[b[keep] != 0].tolist() == q[sel].tolist()
    assert rz[b[keep] != 0].tolist() == r[sel].tolist()


@pytest.mark.parametrize("op,helper", [("+", "_add64"), ("-", "_sub64"), ("*", "_mul64"),
                                       ("/", "_div64"), ("%", "_mod64"), ("<<", "_shl64")])
def test_checked_64_bit_helpers_flag_exactly_the_overflows(op, helper):
    h = array_helpers(np)
    pairs = [(x, y) for x in _EDGE64 for y in _EDGE64]
    if op == "<<":
        pairs = [(x, k) for x in _EDGE64 for k in (0, 1, 2, 31, 32, 62, 63)]
    a = np.array([p[0] for p in pairs], np.int64)
    b = np.array([p[1] for p in pairs], np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r, bad = h[helper](a, b)
    for (x, y), rv, f in zip(pairs, r.tolist(), bad.tolist()):
        if op in "/%":
            q = abs(x) // abs(y) * (1 if (x >= 0) == (y >= 0) else -1) if y else None
            exact = None if q is None else q if op == "/" else x - y * q
        else:
            exact = {"+": lambda: x + y, "-": lambda: x - y, "*": lambda: x * y,
                     "<<": lambda: x * 2**y}[op]()
        ok = exact is not None and -2**63 <= exact < 2**63
        assert f == (not ok), (x, op, y)
        if ok:
            assert rv == exact, (x, op, y)


def test_division_by_a_constant_zero_in_a_skipped_operand_runs_nothing():
    text = ("const byte N = 0; byte x; process P { state s; init s; trans "
            "s -> s { guard N != 0 and x / N > 1; }, s -> s { guard x < 2 and x % N == 0; "
            "effect x = x + 1; }, s -> s { guard x == 2 or x / N > 0; cost 3; }; } system async;")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = _same_as_oracle(text)
    assert g.error_state >= 0  # x % 0 runs where x < 2, x / 0 where x != 2


_FAULTY = {
    "local": "byte x; int y = 1; byte a[2]; process P { state s; init s; trans "
             "s -> s { guard x < 4 and 8 / (2 - x) >= 0; effect x = x + 1; cost y * 2; time 3 - x; }, "
             "s -> s { guard x == 4; effect a[x - 3] = 7, a[x] = 1; }; } system async;",
    "rendezvous": "channel c; int g; process P { state s; init s; trans s -> s { sync c!g + 40000; "
                  "effect g = g + 1; }; } process Q { int v; state s; init s; trans "
                  "s -> s { sync c?v; effect g = 2; cost 9223372036854775807 - v; }; } system async;",
    "sync": "byte k; process A { state s; init s; trans s -> s { effect k = k + 1; cost k; }; } "
            "process B { state s; init s; trans s -> s { guard k < 3; cost 9223372036854775806; }, "
            "s -> s { effect k = 0; }; } system sync;",
}


@pytest.mark.parametrize("name", sorted(_FAULTY))
def test_every_faulting_step_is_explained_with_its_line(name):
    from statespace.evaluate import explain_fault
    g = _same_as_oracle(_FAULTY[name])
    cm = g.model
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr))
    n_faults = 0
    for e in range(g.n_edges):
        u, v = int(src[e]), int(g.indices[e])
        if u == g.error_state:
            continue
        why = explain_fault(cm, g.states[u].tolist(), g.model_action(int(g.action[e])))
        assert (why is not None) == (v == g.error_state), (u, v, why)
        if why is not None:
            n_faults += 1
            assert why.startswith("<test>:1:"), why
    assert n_faults >= 1


# ------------------------------------------------------------------ random expressions

# DVECOST_ARITH_EXAMPLES=1500 searches harder (about 2 minutes); CI runs 60.
@settings(max_examples=int(os.environ.get("DVECOST_ARITH_EXAMPLES", 60)), deadline=None,
          derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(guard=exprs(LEAVES32), value=exprs(LEAVES32), cost=exprs(LEAVES64),
       time=exprs(LEAVES64), x0=st.sampled_from([-32768, -1, 0, 1, 3, 32767]),
       y0=st.sampled_from([0, 1, 2, 255]))
def test_random_expressions_agree_with_the_oracle(guard, value, cost, time, x0, y0):
    # Two steps from the initial state: one guarded, assigning x (range faults), charging the
    # random cost and time (64-bit faults, negative times); one that always moves on.
    text = (f"int x = {x0}; byte y = {y0};\nprocess P {{ state s, t; init s; trans "
            f"s -> t {{ guard {guard}; effect x = {value}, y = (y + 1) % 256; cost {cost}; "
            f"time {time}; }}, s -> t {{ effect y = y / 2; }}, t -> s {{ guard y > 0; }}; }} "
            "system async;")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _same_as_oracle(text)


@settings(max_examples=int(os.environ.get("DVECOST_ARITH_EXAMPLES", 60)), deadline=None,
          derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(guard=exprs(["0", "1", "-1", "2", "7", "2147483647", "-2147483648", "65536"]))
def test_static_check_and_explorer_agree_on_constant_guards(guard):
    from dve.check import check_model
    from dve.errors import ModelErrors
    from dve.parser import parse_model
    text = f"process P {{ state s, t; init s; trans s -> t {{ guard {guard}; }}; }} system async;"
    try:
        found = check_model(parse_model(text, "<test>"))
    except ModelErrors as exc:
        found = exc.errors
    codes = {p.code for p in found}
    g = graph(text)
    if "division-by-zero" in codes:      # a division by 0 that runs: the error state
        assert g.error_state == 1 and g.n_edges == 1
    elif "dead-transition" in codes:     # always false: the step never happens
        assert g.n_edges == 0
    else:                                # true, without a fault
        assert g.n_edges == 1 and g.error_state == -1
