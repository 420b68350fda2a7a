"""Routing a level's successors to their owners (:mod:`statespace.dist.route`): the owners
against a plain Python mix of the key words, the grouping against a stable sort by owner
written out by hand, and on a GPU the device partition against the host's, element for
element."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statespace.dist.route import owner_of, routed

M = 2**64 - 1


def python_owner(words: list[int], P: int) -> int:
    """The owner of one key, in Python integers (the mix spelled out, no NumPy)."""
    h = 0
    for w, x in enumerate(words):
        if w:
            x ^= h
        x = (x * 0xBF58476D1CE4E5B9) & M
        x ^= x >> 31
        x = (x * 0x94D049BB133111EB) & M
        x ^= x >> 29
        h = x
    return h % P


def by_hand(keys: np.ndarray, rank: np.ndarray, P: int):
    """Stable grouping by owner, one successor at a time."""
    owners = [python_owner([int(v) for v in row], P) for row in keys]
    order = [i for q in range(P) for i in range(len(owners)) if owners[i] == q]
    counts = [owners.count(q) for q in range(P)]
    return order, counts


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 60), st.integers(1, 3), st.integers(1, 9), st.randoms())
def test_routed_groups_stably_by_owner(n, W, P, rnd):
    keys = np.array([[rnd.getrandbits(64) for _ in range(W)] for _ in range(n)],
                    np.uint64).reshape(n, W)
    rank = np.array([rnd.getrandbits(62) for _ in range(n)], np.int64)
    order, counts, send = routed(np, keys, rank, P)
    want_order, want_counts = by_hand(keys, rank, P)
    assert order.tolist() == want_order and counts.tolist() == want_counts
    assert send.shape == (n, W + 1) and send.dtype == np.uint64
    assert send[:, :W].tolist() == keys[want_order].tolist()
    assert send[:, W].view(np.int64).tolist() == rank[want_order].tolist()
    assert owner_of(keys, P).tolist() == [python_owner([int(v) for v in r], P) for r in keys]


@pytest.mark.gpu
@pytest.mark.parametrize("P", [2, 3, 4, 5, 8, 16])
@pytest.mark.parametrize("W", [1, 2, 3])
def test_device_partition_equals_the_hosts(P, W):
    cp = pytest.importorskip("cupy")
    from conftest import gpu_available
    if not gpu_available():
        pytest.skip("no GPU")
    rng = np.random.default_rng(P * 10 + W)
    for n in (0, 1, 31, 4095, 4096, 4097, 100_003):
        keys = rng.integers(0, 2**63, (n, W), dtype=np.int64).view(np.uint64)
        keys[: n // 3] = keys[0] if n else keys[:0]   # repeated keys: one owner, order kept
        rank = rng.integers(0, 2**62, n, dtype=np.int64)
        order, counts, send = routed(np, keys, rank, P)
        d_order, d_counts, d_send = routed(cp, cp.asarray(keys), cp.asarray(rank), P)
        assert d_counts.tolist() == counts.tolist()
        assert np.array_equal(cp.asnumpy(d_order), order)
        assert np.array_equal(cp.asnumpy(d_send), send)
