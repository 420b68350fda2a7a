"""The canonical form (statespace/symmetry.py ``canonicalize``) against a per-state sort written
here: members ordered by (which key-holding slots refer to them, local vector), stably, their
local vectors moved and the keys held renamed to the new positions; the sort code packed into
one integer per member and lexsort's columns give the same states."""

from __future__ import annotations

import numpy as np
import pytest

import dve
import statespace
from statespace import symmetry
from statespace.symmetry import canonicalize, detect_symmetry
from test_symmetry import CS, QUEUE


def _canon_row(g, st):
    members = [list(row) for row in g.member_slots]
    keys = list(g.keys)
    ks = list(g.key_slots)

    def sort_key(p):
        held = tuple(int(st[j] == keys[p]) for j in ks)
        return held, tuple(st[s] for s in members[p])
    order = sorted(range(g.size), key=sort_key)
    out = list(st)
    for pos, p in enumerate(order):
        for a, b in zip(members[pos], members[p]):
            out[a] = st[b]
    rename = {keys[p]: keys[pos] for pos, p in enumerate(order)}
    for j in ks:
        out[j] = rename.get(st[j], st[j])
    return out


def _random_states(cm, g, k, rng):
    """``k`` states (slots x rows) with every slot drawn from its range, key slots from the
    keys or 0, and many members equal (so that ties and runs occur)."""
    X = np.empty((cm.n_slots, k), np.int64)
    for j, s in enumerate(cm.slots):
        X[j] = rng.integers(s.lo, min(s.hi, s.lo + 3) + 1, k)
    for j in g.key_slots:
        X[j] = rng.choice(list(g.keys) + [0], k)
    return X


@pytest.mark.parametrize("text,n", [(CS, 5), (QUEUE, 4)])
@pytest.mark.parametrize("packed", [True, False])
def test_canonical_form_is_the_sort_by_reference_and_local_vector(text, n, packed, monkeypatch):
    if not packed:
        monkeypatch.setattr(symmetry, "_packed_sort_code", lambda cols: None)
    cm = statespace.compile_model(dve.load_model(text, defines={"N": n}))
    sym = detect_symmetry(cm)
    (g,) = sym.groups
    X = _random_states(cm, g, 400, np.random.default_rng(n))
    Y = canonicalize(sym, X.astype(np.int32))
    for r in range(X.shape[1]):
        assert Y[:, r].tolist() == _canon_row(g, X[:, r].tolist()), r


def test_sort_codes_wider_than_62_bits_fall_back_to_lexsort():
    rng = np.random.default_rng(1)
    cols = [rng.integers(-2**20, 2**20, (4, 50)) for _ in range(3)]
    assert symmetry._packed_sort_code(cols) is None
    narrow = [c % 5 for c in cols] + [rng.random((4, 50)) < 0.5]
    code = symmetry._packed_sort_code(narrow)
    assert np.array_equal(np.argsort(code, axis=0, kind="stable"), np.lexsort(narrow, axis=0))
