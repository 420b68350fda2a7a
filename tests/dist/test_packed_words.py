"""The host search's one-word exchanges (:mod:`statespace.dist.search`): a successor's key and
its rank relative to the level packed in one uint64 (against Python integers), one-word keys'
owners by the multiplicative hash (against the formula in Python integers, and balanced), and
explorations whose levels travel packed or not, level by level, with one-word and several-word
keys: every array the one-process build's (the oracle: the one-process explorer, which packs,
routes and numbers nothing). P ranks as threads in lockstep (``lockstep.py``)."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statespace.dist.search as dist_search
from statespace import build_state_graph, compile_model
from statespace.dist import explore_distributed
from statespace.dist.route import owner_of
from statespace.store import KeyLayout

from mpirun import ROOT

sys.path.insert(0, str(ROOT / "tests" / "dist"))
sys.path.insert(0, str(ROOT / "tests" / "statespace"))
from dist_worker import load  # noqa: E402
from device_stand_in import same_graph  # noqa: E402
from lockstep import run_lockstep  # noqa: E402

EX = ROOT / "dvecost" / "examples"
M64 = (1 << 64) - 1


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 63), st.integers(0, 2**40), st.data())
def test_packed_words_give_back_key_and_rank_and_sort_as_ranks(key_bits, base, data):
    rank_bits = min(64 - key_bits, 61)   # (the search's ranks stay below 2**62)
    n = data.draw(st.integers(0, min(30, 1 << rank_bits)))
    rel = data.draw(st.lists(st.integers(0, (1 << rank_bits) - 1), min_size=n, max_size=n,
                             unique=True))
    keys = data.draw(st.lists(st.integers(0, (1 << key_bits) - 1), min_size=n, max_size=n))
    rank = np.array([base + r for r in rel], np.int64)
    p = dist_search._Packed(np, key_bits, base)
    w = p.pack(rank, np.array(keys, np.uint64).reshape(-1, 1))
    assert w.tolist() == [(r << key_bits) | k for r, k in zip(rel, keys)]
    got_rank, got_keys = p.unpack(w)
    assert got_rank.tolist() == rank.tolist() and got_keys.ravel().tolist() == keys
    # Distinct ranks: the words' order is the ranks' order, whatever the keys.
    assert np.argsort(w, kind="stable").tolist() == np.argsort(rank, kind="stable").tolist()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, M64), max_size=40), st.integers(1, 9))
def test_word_owners_are_the_hash_in_python_integers(words, size):
    got = dist_search.word_owners(np.array(words, np.uint64), size).tolist()
    want = []
    for k in words:
        h = (k * 0x9E3779B97F4A7C15) & M64
        if size & (size - 1) == 0:
            want.append(h >> (64 - (size - 1).bit_length()) if size > 1 else 0)
        else:
            want.append(((h >> 32) * size) >> 32)
    assert got == want and all(0 <= o < size for o in got)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, M64), max_size=60), st.integers(1, 5))
def test_word_groups_group_by_the_owners_stably(words, size):
    """The route's grouping, by the hash's sign for two processes: against the owners in
    Python integers (as above) grouped by a stable sort in Python."""
    order, counts = dist_search.word_groups(np.array(words, np.uint64), size)
    owner = [((((k * 0x9E3779B97F4A7C15) & M64) >> 32) * size) >> 32 if size & (size - 1)
             else (((k * 0x9E3779B97F4A7C15) & M64) >> (64 - (size - 1).bit_length())
                   if size > 1 else 0) for k in words]
    want = sorted(range(len(words)), key=lambda i: owner[i])
    assert order.tolist() == want
    assert counts.tolist() == [owner.count(q) for q in range(size)]


def test_word_owners_balance_packed_states():
    """The states of a model, packed (structured keys, most bits constant): within 5 % of an
    even split, as close as owner_of's mix."""
    cm = compile_model(load(str(EX / "client_server_template.dve") + ":6"))
    g = build_state_graph(cm)
    lay = KeyLayout.for_model(cm)
    keys = lay.pack(np.ascontiguousarray(g.states.T).astype(np.int64), np)[:, 0]
    for size in (2, 3, 4):
        counts = np.bincount(dist_search.word_owners(keys, size), minlength=size)
        mix = np.bincount(owner_of(keys.reshape(-1, 1), size), minlength=size)
        assert keys.shape[0] > 5000 and counts.sum() == keys.shape[0]
        assert counts.min() > 0.95 * keys.shape[0] / size, (size, counts)
        assert counts.max() - counts.min() <= 2 * (mix.max() - mix.min()) + 0.01 * keys.shape[0]


@pytest.mark.parametrize("P", [2, 3])
@pytest.mark.parametrize("spec", ["client_server.dve", "rings_sync.dve", "error_state.dve",
                                  "resources.dve", "pipeline.dve"])
def test_levels_packed_or_not_give_the_one_process_graph(spec, P, monkeypatch):
    """Every other level travels unpacked (as one whose ranks do not fit beside the key): the
    owners stay the run's, and every array is the one-process build's."""
    monkeypatch.setattr(dist_search, "_defer_signals", lambda search: {})
    monkeypatch.setattr(dist_search, "_restore_signals", lambda saved: None)
    packing = dist_search._Search._packing
    seen = {"packed": 0, "not": 0}

    def every_other(self, lo, hi, A):
        # (Each rank's search counts its own levels: the ranks agree level by level.)
        self.levels_asked = getattr(self, "levels_asked", 0) + 1
        got = packing(self, lo, hi, A) if self.levels_asked % 2 else None
        seen["packed" if got is not None else "not"] += 1
        return got

    monkeypatch.setattr(dist_search._Search, "_packing", every_other)
    model = load(str(EX / spec))
    got = run_lockstep(P, lambda comm: explore_distributed(model, comm))
    same_graph(build_state_graph(model), got[0])
    assert all(g is None for g in got[1:])
    words = KeyLayout.for_model(compile_model(model)).n_words
    assert seen["not"] > 0 and (seen["packed"] > 0) == (words == 1), seen
