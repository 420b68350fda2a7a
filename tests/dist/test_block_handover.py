"""The block hand-over in one process: the share's runs of ids, and its refusal of a share whose
rows are not its states' (the search's invariant it relies on to move nothing)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dve import load_model
from runtime.comm import SelfComm
from statespace.dist import explore_distributed
from statespace.dist.blocks import hand_over_blocks, share_runs

MODEL = ("process P { state a, b, c; init a; trans a -> b { cost 2; }, b -> c {}, "
         "c -> b { cost 4; }, c -> a {}; } system async;")


def test_rows_apart_from_their_states_are_refused():
    def swapped(share, comm, cm, **options):
        share = dataclasses.replace(share, row_ids=share.row_ids[::-1], deg=share.deg[::-1])
        return hand_over_blocks(share, comm, cm, **options)
    with pytest.raises(AssertionError, match="differ"):
        explore_distributed(load_model(MODEL), SelfComm(), handover=swapped)


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4)), max_size=30))
def test_property_share_runs_are_the_maximal_runs(steps):
    """Runs of ids going on by one, each with its states' edges: against a walk."""
    ids, deg, v = [], [], 0
    for gap, d in steps:
        v += gap + 1 if ids else gap
        ids.append(v)
        deg.append(d)
    indptr = np.concatenate([[0], np.cumsum(np.array(deg, np.int64))]).astype(np.int64)
    starts, lengths, edges = share_runs(np.array(ids, np.int64), indptr)
    want, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        want.append((ids[i], j - i + 1, sum(deg[i:j + 1])))
        i = j + 1
    assert list(zip(starts.tolist(), lengths.tolist(), edges.tolist())) == want
