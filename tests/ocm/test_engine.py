"""Errors, closed forms, the certificate's independence, edge lists and big integers."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import ocm
from ocm.errors import InputError, NoCycleError, ZeroTimeCycleError
from ocm import certify, primitives as P
from ocm.howard import solve


def ring(costs, times=None):
    n = len(costs)
    indptr = np.arange(n + 1)
    indices = (np.arange(n) + 1) % n
    return indptr, indices, np.array(costs), None if times is None else np.array(times)


@pytest.mark.parametrize("n", [1, 2, 5, 17])
def test_ring_closed_form(n):
    costs = list(range(-n, n, 2))[:n]
    r = ocm.max_cycle_mean(*ring(costs)[:3])
    assert r.value == Fraction(sum(costs), n)
    assert r.cycle == tuple(range(n))
    assert r.certified


def test_no_cycle():
    with pytest.raises(NoCycleError, match="no cycle"):
        ocm.max_cycle_mean(np.array([0, 1, 2, 2]), np.array([1, 2]), np.array([1, 1]))
    with pytest.raises(NoCycleError):
        ocm.max_cycle_mean(np.array([0]), np.array([], dtype=int), np.array([], dtype=int))


def test_zero_time_cycle_names_it():
    # 0 -> 1 -> 2 -> 1 with times 1, 0, 0: the cycle 1 -> 2 -> 1 has time 0.
    indptr, indices = np.array([0, 1, 2, 3]), np.array([1, 2, 1])
    with pytest.raises(ZeroTimeCycleError) as info:
        ocm.max_cycle_ratio(indptr, indices, np.array([1, 2, 3]), np.array([1, 0, 0]))
    assert info.value.cycle == (1, 2)
    assert info.value.edges == (1, 2)
    assert "1 -> 2 -> 1" in str(info.value)
    # The mean ignores times.
    assert ocm.max_cycle_mean(indptr, indices, np.array([1, 2, 3])).value == Fraction(5, 2)


@pytest.mark.parametrize("time, match", [
    ([1, -1], "non-negative"),
    ([1.5, 1], "integers"),
    (["a", "b"], "integers"),
])
def test_bad_times(time, match):
    with pytest.raises(InputError, match=match):
        ocm.max_cycle_ratio(np.array([0, 1, 2]), np.array([1, 0]), np.array([1, 1]),
                            np.array(time))


def test_bad_arrays_and_options():
    with pytest.raises(InputError, match="indices"):
        ocm.max_cycle_mean(np.array([0, 1]), np.array([3]), np.array([1]))
    with pytest.raises(InputError, match="indptr"):
        ocm.max_cycle_mean(np.array([0, 2]), np.array([0]), np.array([1]))
    with pytest.raises(InputError, match="cost"):
        ocm.max_cycle_mean(np.array([0, 1]), np.array([0]), np.array([1, 2]))
    with pytest.raises(InputError, match="kind"):
        ocm.optimal_cycle(np.array([0, 1]), np.array([0]), np.array([1]), kind="median")
    with pytest.raises(InputError, match="time"):
        ocm.optimal_cycle(np.array([0, 1]), np.array([0]), np.array([1]), kind="ratio")
    with pytest.raises(InputError, match="backend"):
        ocm.max_cycle_mean(np.array([0, 1]), np.array([0]), np.array([1]), backend="tpu")


def test_float_integral_inputs_accepted():
    r = ocm.max_cycle_ratio(np.array([0, 1]), np.array([0]), np.array([3.0]), np.array([2.0]))
    assert r.value == Fraction(3, 2)


def test_certificate_rejects_wrong_potentials():
    indptr, indices, cost, _ = ring([1, 2, 6])
    st = solve(indptr, indices, cost, None, xp=np)
    ok = certify.check_potentials(indptr, indices, cost, None, st.rank, st.rank_num,
                                  st.rank_den, st.potential, np)
    assert ok.ok and ok.exact_path == "int64"
    # Claim a smaller value (2 instead of 3): some edge must fail.
    bad = certify.check_potentials(indptr, indices, cost, None, st.rank, np.array([2]),
                                   np.array([1]), st.potential, np)
    assert not bad.ok and bad.n_violations > 0
    # Python-int path agrees.
    obj = certify.check_potentials(indptr, indices, cost, None, st.rank, st.rank_num,
                                   st.rank_den, st.potential.astype(object), np)
    assert obj.ok and obj.exact_path == "python-int"


def test_huge_costs_use_python_ints():
    # Costs near 2**31 on a long cycle with times near 2**31: int64 products would overflow.
    rng = np.random.default_rng(5)
    n = 200
    indptr = np.arange(0, 2 * n + 1, 2)
    indices = np.stack([(np.arange(n) + 1) % n, rng.integers(0, n, n)], axis=1).ravel()
    cost = rng.integers(-2**31 + 1, 2**31 - 1, 2 * n)
    time = rng.integers(1, 2**31 - 1, 2 * n)
    r = ocm.max_cycle_ratio(indptr, indices, cost, time)
    assert r.certified
    c, t = certify.cycle_sums(indptr, indices, cost, time, list(r.cycle), list(r.cycle_edges))
    assert Fraction(c, t) == r.value
    # Every SCC optimum is at most the global one.
    assert max(s.value for s in r.scc_optima) == r.value


def test_rank_fractions_equal_floats_distinct_values():
    # 1/3 and (2**53)/(3 * 2**53 + 1) round to nearby floats; exact ordering must hold.
    num = np.array([1, 2**40, 2**40 + 1, 1])
    den = np.array([3, 3 * 2**40 + 1, 3 * 2**40 + 3, 3])
    rank, a, b = P.rank_fractions(num, den, np)
    vals = [Fraction(int(x), int(y)) for x, y in zip(num, den)]
    for i in range(4):
        for j in range(4):
            assert (rank[i] < rank[j]) == (vals[i] < vals[j])


def test_parallel_edges_and_self_loops():
    # Vertex 0: self-loops of cost 1 and 4, parallel edges to 1 of costs 0 and 10; 1 -> 0 cost 0.
    indptr = np.array([0, 4, 5])
    indices = np.array([0, 0, 1, 1, 0])
    cost = np.array([1, 4, 0, 10, 0])
    r = ocm.max_cycle_mean(indptr, indices, cost)
    assert r.value == 5 and r.cycle == (0, 1) and r.cycle_edges == (3, 4)
    r = ocm.min_cycle_mean(indptr, indices, cost)
    assert r.value == 0 and r.cycle == (0, 1) and r.cycle_edges == (2, 4)


def test_edge_list_roundtrip(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("3 4\n2 0 6 2\n0 1 1 1\n1 2 2 1\n1 1 2 2\n")
    g = ocm.read_edge_list(p)
    assert g.indptr.tolist() == [0, 1, 3, 4]
    assert g.line.tolist() == [1, 2, 3, 0]
    r = ocm.max_cycle_ratio(g.indptr, g.indices, g.cost, g.time)
    assert r.exact == "9/4"
    q = tmp_path / "h.txt"
    ocm.edgelist.write_edge_list(q, g.indptr, g.indices, g.cost, g.time)
    h = ocm.read_edge_list(q)
    assert h.indices.tolist() == g.indices.tolist() and h.time.tolist() == g.time.tolist()


@pytest.mark.parametrize("text, match", [
    ("", "empty"),
    ("2 1\n0 1 1\n", "4 integers"),
    ("2 1\n0 5 1 1\n", "outside"),
    ("2 1\n0 1 x 1\n", "integers"),
])
def test_edge_list_errors(tmp_path, text, match):
    p = tmp_path / "g.txt"
    p.write_text(text)
    with pytest.raises(InputError, match=match):
        ocm.read_edge_list(p)


def test_trim_mode_matches_scc_mode():
    rng = np.random.default_rng(1)
    for _ in range(30):
        n, m = 30, 60
        u = np.sort(rng.integers(0, n, m))
        indptr = np.concatenate([[0], np.cumsum(np.bincount(u, minlength=n))])
        indices = rng.integers(0, n, m)
        cost = rng.integers(-9, 9, m)
        time = rng.integers(1, 4, m)
        try:
            a = ocm.max_cycle_ratio(indptr, indices, cost, time)
        except NoCycleError:
            continue
        b = ocm.max_cycle_ratio(indptr, indices, cost, time, per_scc=False)
        assert a.value == b.value and b.certified and b.scc_optima is None


def test_primitives_generic_paths_match_numpy_fast_paths():
    rng = np.random.default_rng(2)
    n = 500
    succ = rng.integers(0, n, n)
    fast = P.cycle_reps(succ, np)
    # Generic pointer doubling (what a backend without a kernel runs).
    ar = np.arange(n)
    jump, low = succ.copy(), ar.copy()
    for _ in range(10):
        low = np.minimum(low, low[jump])
        jump = jump[jump]
    on = np.zeros(n, bool)
    on[jump] = True
    assert np.array_equal(fast, np.where(on, low, -1))
    # tree_sums: levels path against doubling.
    parent = np.where(fast == ar, ar, succ)
    w = rng.integers(-5, 5, n)
    r1, (s1,) = P.tree_sums(parent, [w], np)
    old, P.MAX_LEVELS = P.MAX_LEVELS, 0
    try:
        r2, (s2,) = P.tree_sums(parent, [w], np)
    finally:
        P.MAX_LEVELS = old
    assert np.array_equal(r1, r2) and np.array_equal(s1, s2)
