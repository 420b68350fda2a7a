"""Renamings of interchangeable processes (statespace/renaming.py) against a plain oracle:
members moved one by one and keys renamed through a dict, on random states and renamings of
models with key-holding slots; the renaming found between a state and its image, and the
order of a renaming by composing it with itself."""

from __future__ import annotations

import numpy as np
import pytest

from dve import load_model
from statespace import compile_model
from statespace.renaming import apply_renaming, renaming_between, renaming_order
from statespace.symmetry import detect_symmetry

LAST = """
byte last;
process C(key id) { state a, b, c; init a;
    trans a -> b { effect last = id; }, b -> c {}, c -> a {}; }
for (k : 1 .. 5) { process C(k); }
system async;"""

SERVER = """
channel req;
process Server { byte who, prev; state idle, busy; init idle;
    trans idle -> busy { sync req?who; }, busy -> idle { effect prev = who, who = 0; }; }
process Client(key id) { byte n; state a, b; init a;
    trans a -> b { sync req!id; effect n = n + 1; }, b -> a { guard Server->who != id; }; }
for (k : 1 .. 4) { process Client(k); }
system async;"""


def _oracle(sym, X, perm):
    Y = np.array(X, copy=True)
    for g, order in zip(sym.groups, perm):
        M = np.asarray(g.member_slots)
        for p in range(g.size):
            Y[M[p]] = X[M[order[p]]]
        ren = {g.keys[order[p]]: g.keys[p] for p in range(g.size)}
        for j in g.key_slots:
            Y[j] = [ren.get(int(v), int(v)) for v in Y[j]]
    return Y


def _random_states(cm, sym, rng, k):
    X = np.zeros((cm.n_slots, k), np.int64)
    for j, s in enumerate(cm.slots):
        X[j] = rng.integers(s.lo, min(s.hi, s.lo + 6) + 1, k)
    for g in sym.groups:          # key slots hold keys (or 0) most of the time
        for j in g.key_slots:
            X[j] = rng.choice(np.asarray((0,) + tuple(g.keys)), k)
    return X


@pytest.mark.parametrize("text", [LAST, SERVER])
@pytest.mark.parametrize("seed", range(5))
def test_renaming_agrees_with_the_oracle(text, seed):
    cm = compile_model(load_model(text))
    sym = detect_symmetry(cm)
    assert sym.reduces and any(g.key_slots for g in sym.groups)
    rng = np.random.default_rng(seed)
    X = _random_states(cm, sym, rng, 40)
    perm = [rng.permutation(g.size) for g in sym.groups]
    Y = apply_renaming(sym, X, perm)
    assert np.array_equal(Y, _oracle(sym, X, perm))
    for c in range(0, 40, 7):
        pi = renaming_between(sym, X[:, c], Y[:, c])
        assert pi is not None
        assert np.array_equal(apply_renaming(sym, X[:, c:c + 1], pi)[:, 0], Y[:, c])
    # The order: the least k > 0 with pi^k the identity (composed by hand).
    for p in perm:
        k, q = 1, np.asarray(p)
        while not np.array_equal(q, np.arange(len(p))):
            q, k = q[p], k + 1
        assert renaming_order([p]) == k
