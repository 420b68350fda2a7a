"""The rate program of scenarios.ratelp: its exact optimum against a slow primal oracle, and
the bound it gives against exact analysis (L <= load <= U) where it is tighter than the alone
rates added up."""

from __future__ import annotations

from fractions import Fraction as F
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dvecost.saturation import system_load
from scenarios import Loop, Request, Scenario, Server, System, Think
from scenarios.bounds import find_witness, upper_bound
from scenarios.ratelp import dual_value, optimum, rate_bound, round_shape


def exact(system: System) -> F:
    return system_load(system, backend="cpu").exact


def alone(one: System) -> F:
    assert one.n_clients == 1
    return exact(one)


def _primal_optimum(shapes, most, A, W) -> F:
    """max sum f_s C_s over f >= 0, f_s <= most_s, sum f Q <= A, sum f B <= W, by trying every
    vertex: each choice of S active constraints out of the 2S + 2, solved exactly."""
    S = len(shapes)
    rows = []                         # (coefficients, right-hand side) of a <= row
    for s in range(S):
        rows.append(([F(1) if i == s else F(0) for i in range(S)], F(most[s])))
        rows.append(([F(-1) if i == s else F(0) for i in range(S)], F(0)))
    rows.append(([F(q) for q, _, _ in shapes], F(A)))
    rows.append(([F(b) for _, b, _ in shapes], F(W)))
    best = None
    for pick in combinations(rows, S):
        m = [list(a) + [b] for a, b in pick]
        ok = True
        for c in range(S):                       # Gauss-Jordan in fractions
            piv = next((r for r in range(c, S) if m[r][c] != 0), None)
            if piv is None:
                ok = False
                break
            m[c], m[piv] = m[piv], m[c]
            for r in range(S):
                if r != c and m[r][c] != 0:
                    k = m[r][c] / m[c][c]
                    m[r] = [x - k * y for x, y in zip(m[r], m[c])]
        if not ok:
            continue
        f = [m[i][S] / m[i][i] for i in range(S)]
        if all(sum(a * x for a, x in zip(coef, f)) <= b for coef, b in rows):
            val = sum(x * c for x, (_, _, c) in zip(f, shapes))
            best = val if best is None else max(best, val)
    return best


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 6), st.integers(1, 9),
                          st.fractions(F(0), F(5), max_denominator=7)),
                min_size=1, max_size=3),
       st.integers(1, 4), st.integers(1, 6))
def test_the_dual_minimum_is_the_primal_optimum(items, A, W):
    shapes = [(q, q + extra, c) for q, extra, c, _ in items]
    most = [m for *_, m in items]
    got = optimum(shapes, most, A, W)
    assert got.value == _primal_optimum(shapes, most, A, W)
    # its dual point proves it, and no point of a grid does better (weak duality)
    assert dual_value(shapes, most, A, W, got.beta, got.gamma) == got.value
    assert all(dual_value(shapes, most, A, W, F(i, 3), F(j, 3)) >= got.value
               for i in range(0, 30, 4) for j in range(0, 30, 4))


QUICK = Scenario("quick", [Think(1), Request("q", 1)])
SLOW = Scenario("slow", [Think(3), Request("s", 5)])
TWICE = Scenario("twice", [Loop([Think(1), Request("t", 1)], times=2), Think(2)])


@pytest.mark.parametrize("system,tighter", [
    # One admission per tick caps the quick clients' rounds: the program is below the alone
    # rates added up, and exactly the load.
    pytest.param(System({QUICK: 4, SLOW: 1}, server=Server(workers=2)), True,
                 id="quick4-slow1-w2"),
    pytest.param(System({QUICK: 6, SLOW: 1}, server=Server(workers=3)), True,
                 id="quick6-slow1-w3"),
    pytest.param(System({QUICK: 3, SLOW: 1}, server=Server(workers=3)), False,
                 id="quick3-slow1-w3"),
    pytest.param(System({TWICE: 3, SLOW: 1}, server=Server(workers=3)), False,
                 id="twice3-slow1-w3"),
    pytest.param(System({QUICK: 3, SLOW: 1}, server=Server(workers=3, admissions=2)), False,
                 id="quick3-slow1-w3-a2"),
])
def test_the_rate_bound_holds_and_is_exact_where_admissions_bind(system, tighter):
    load = exact(system)
    ub = upper_bound(system, alone)
    lp = rate_bound(system, alone)
    shapes = [round_shape(sc) for sc, _ in system.counts]
    most = [k * alone(system.with_counts({sc: 1})) / sh[2]
            for (sc, k), sh in zip(system.counts, shapes)]
    assert lp.value == _primal_optimum(shapes, most, system.server.admissions,
                                       system.server.workers)
    run = find_witness(system, rows=10, max_ticks=600)
    assert run.mean <= load <= ub.value <= lp.value
    assert ub.value == min(ub.shape, ub.alone_sum, lp.value)
    if tighter:
        assert lp.value < ub.alone_sum and load == lp.value == run.mean
        assert "linear program" in ub.why
