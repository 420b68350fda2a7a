"""The engine's own input check: values an int64 cannot hold, or whose negation it cannot
hold, are refused (never wrapped into a wrong, certified answer)."""

from __future__ import annotations

import numpy as np
import pytest

from ocm import optimal_cycle
from ocm.errors import InputError

LOOP = (np.array([0, 1]), np.array([0]))


def test_uint64_beyond_int64_is_refused():
    with pytest.raises(InputError, match=r"'cost'\[0\] = 9223372036854775813"):
        optimal_cycle(*LOOP, np.array([2**63 + 5], np.uint64))


def test_uint64_within_int64_is_exact():
    r = optimal_cycle(*LOOP, np.array([2**40 + 3], np.uint64))
    assert r.value == 2**40 + 3 and r.certified


@pytest.mark.parametrize("mode", ["max", "min"])
def test_cost_minus_2_to_63_is_refused(mode):
    with pytest.raises(InputError, match=r"-2\*\*63"):
        optimal_cycle(*LOOP, np.array([-2**63]), mode=mode)


def test_cost_minus_2_to_63_plus_1_is_exact_or_refused():
    # Within int64 and negatable: the engine answers exactly, or refuses sums it cannot bound
    # (InputError); never a wrapped value.
    try:
        r = optimal_cycle(*LOOP, np.array([-2**63 + 1]), mode="min")
    except InputError as exc:
        assert "2**62" in str(exc)
    else:
        assert r.value == -2**63 + 1 and r.certified
