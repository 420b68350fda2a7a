"""The engine sums costs along paths in int64: magnitudes that could wrap are refused."""

from __future__ import annotations

import numpy as np
import pytest

import ocm
from ocm.errors import InputError

RING = (np.array([0, 1, 2, 3]), np.array([1, 2, 0]))


def test_costs_whose_path_sums_could_wrap_are_refused():
    with pytest.raises(InputError, match="2\\*\\*62"):
        ocm.optimal_cycle(*RING, np.array([4 * 10**18] * 3))
    with pytest.raises(InputError, match="2\\*\\*62"):
        ocm.optimal_cycle(*RING, np.array([1, 1, 1]), np.array([2**61] * 3), kind="ratio")


def test_large_costs_within_the_bound_are_exact():
    r = ocm.optimal_cycle(*RING, np.array([10**15, 10**15 + 1, -(10**15)]))
    assert r.certified and r.exact == "1000000000000001/3"
