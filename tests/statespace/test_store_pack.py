"""Keys of states (statespace/store.py ``KeyLayout``): packing a slot at a time and a block of
slots at a time give the same keys, and unpacking gives the states back, against keys packed
here with Python integers (each slot's value less its low bound, at its shift)."""

from __future__ import annotations

import numpy as np
import pytest

from statespace import store
from statespace.store import KeyLayout

# Slots of a byte, a bool, a negative range, a full int64 and many small ones (several words,
# a word boundary crossed by the 64-bit slot's neighbours).
LO = [0, 0, -5, -2**63, -128] + [0] * 40 + [3]
HI = [255, 1, 5, 2**63 - 1, 127] + [7] * 40 + [9]


def _keys_by_hand(lay, X):
    out = []
    for r in range(X.shape[1]):
        words = [0] * lay.n_words
        for j in range(X.shape[0]):
            words[lay.word[j]] |= (int(X[j, r]) - lay.lo[j]) << lay.shift[j]
        out.append(words)
    return np.array(out, dtype=np.uint64)


@pytest.mark.parametrize("per_slot", [True, False])
@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_pack_and_unpack(per_slot, dtype, monkeypatch):
    monkeypatch.setattr(store, "SLOT_AT_A_TIME", 512 if per_slot else 0)
    lo, hi = LO, HI
    if dtype == np.int32:
        lo = [max(v, -2**31) for v in lo]
        hi = [min(v, 2**31 - 1) for v in hi]
    lay = KeyLayout.from_bounds(lo, hi)
    assert lay.n_words > 2
    rng = np.random.default_rng(2)
    X = np.array([rng.integers(a, b, 200, endpoint=True, dtype=np.int64)
                  for a, b in zip(lo, hi)]).astype(dtype)
    X[:, 0] = np.array(lo)          # both ends of every range
    X[:, 1] = np.array(hi)
    keys = lay.pack(X, np)
    assert keys.dtype == np.uint64 and keys.flags.c_contiguous
    assert np.array_equal(keys, _keys_by_hand(lay, X))
    back = lay.unpack(keys, np, dtype=dtype)
    assert back.dtype == dtype and np.array_equal(back, X)
    assert lay.pack(X[:, :0], np).shape == (0, lay.n_words)
    assert lay.unpack(keys[:0], np).shape == (len(lo), 0)
