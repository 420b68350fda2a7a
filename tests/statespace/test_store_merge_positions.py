"""The visited set's device merge (placing every element by its computed position) against
the host merge (masks), on random sorted runs with equal tags within and across them."""

import numpy as np
import pytest

from statespace.store import _merge, _merge_by_positions


@pytest.mark.parametrize("seed", range(40))
def test_merge_by_positions_equals_the_masked_merge(seed):
    rng = np.random.default_rng(seed)
    na, nb = int(rng.integers(0, 60)), int(rng.integers(0, 60))
    top = int(rng.integers(1, 40))        # few distinct tags: many ties within and across
    ah = np.sort(rng.integers(0, top, na).astype(np.uint64))
    bh = np.sort(rng.integers(0, top, nb).astype(np.uint64))
    ai = rng.permutation(na).astype(np.int64)
    bi = (na + rng.permutation(nb)).astype(np.int64)
    h1, i1 = _merge(ah, ai, bh, bi)
    h2, i2 = _merge_by_positions(ah, ai, bh, bi)
    assert h2.tolist() == h1.tolist() and i2.tolist() == i1.tolist()
    # And the merge itself: sorted, every element once, a's before b's among equal tags.
    assert h1.tolist() == sorted(ah.tolist() + bh.tolist())
    assert sorted(i1.tolist()) == list(range(na + nb))
    for t in set(h1.tolist()):
        ids = i1[h1 == t].tolist()
        assert ids == [x for x in ids if x < na] + [x for x in ids if x >= na]
