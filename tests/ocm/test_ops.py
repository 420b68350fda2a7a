"""``ocm.ops``: which implementation of each primitive runs for an array module."""

from __future__ import annotations

import types

import numpy as np

from ocm import kernels as K
from ocm import primitives as P
from ocm.ops import NAMES, ops


class OtherXp(types.ModuleType):
    """NumPy under another name: what the engine sees of an array module that is not NumPy."""

    def __init__(self) -> None:
        super().__init__("otherxp")

    def __getattr__(self, name):
        return getattr(np, name)


def test_numpy_gets_the_generic_primitives():
    O = ops(np)
    assert all(getattr(O, name) is getattr(P, name) for name in NAMES)
    assert set(vars(O)) == set(NAMES)


def test_another_module_gets_every_twin_and_the_same_names():
    O = ops(OtherXp())
    assert set(vars(O)) == set(vars(ops(np)))
    assert all(getattr(O, name) is getattr(K, name) for name in K.TWINS)
    assert set(K.TWINS) <= set(NAMES)


def test_policy_sums_composes_the_building_blocks_it_is_given():
    """Off NumPy the generic composition runs, over the cycle_reps and tree_sums passed in."""
    xp, calls = OtherXp(), []

    def reps(succ, xp):
        calls.append("reps")
        return P.cycle_reps(succ, np)

    def sums(parent, weights, xp):
        calls.append("sums")
        return P.tree_sums(parent, weights, np)

    succ, w = np.array([1, 2, 1, 3, 3]), [np.array([10, 20, 30, 40, 50])]
    root, is_rep, (s,) = P.policy_sums(succ, w, xp, reps=reps, sums=sums)
    assert calls == ["reps", "sums"]
    ref_root, ref_is_rep, (ref_s,) = P.policy_sums(succ, w, np)
    assert root.tolist() == ref_root.tolist() == [1, 1, 1, 3, 3]
    assert is_rep.tolist() == ref_is_rep.tolist() and s.tolist() == ref_s.tolist()
