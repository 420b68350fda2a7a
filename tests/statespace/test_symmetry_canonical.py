"""The canonical form (statespace/symmetry.py ``canonicalize``) against a per-state sort written
here: members ordered by (which key-holding slots refer to them, local vector), stably, their
local vectors moved and the keys held renamed to the new positions. The three ways of
computing it give the same states: sorting the packed codes' values and decoding them (the
default), an argsort of the packed codes and a gather, and lexsort's columns."""

from __future__ import annotations

import numpy as np
import pytest

import dve
import statespace
from statespace import canonical as symmetry
from statespace.canonical import canonicalize
from statespace.symmetry import detect_symmetry
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


def _force(path, monkeypatch):
    """Make :func:`canonicalize` take ``path``: 'values' (its default), 'argsort' or
    'lexsort'."""
    if path != "values":
        monkeypatch.setattr(symmetry, "_sort_values", lambda g, Y: False)
    if path == "lexsort":
        monkeypatch.setattr(symmetry, "_packed_sort_code", lambda cols: None)


PATHS = ["values", "argsort", "lexsort"]


@pytest.mark.parametrize("text,n", [(CS, 5), (QUEUE, 4)])
@pytest.mark.parametrize("path", PATHS)
def test_canonical_form_is_the_sort_by_reference_and_local_vector(text, n, path, monkeypatch):
    _force(path, monkeypatch)
    cm = statespace.compile_model(dve.load_model(text, defines={"N": n}))
    sym = detect_symmetry(cm)
    (g,) = sym.groups
    X = _random_states(cm, g, 400, np.random.default_rng(n))
    X32 = X.astype(np.int32)
    Y = canonicalize(sym, X32)
    assert np.array_equal(X32, X)          # a new matrix: the argument is left alone
    for r in range(X.shape[1]):
        assert Y[:, r].tolist() == _canon_row(g, X[:, r].tolist()), r
    # In place: the same states, written into the argument.
    Z = canonicalize(sym, X32, copy=False)
    assert Z is X32 and np.array_equal(Z, Y)


@pytest.mark.parametrize("path", PATHS)
def test_two_groups_sharing_a_key_slot(path, monkeypatch):
    """The editor's readers and exporters (a server of four workers): the server's ``adm``
    holds keys of both groups; each group is sorted by itself, its keys renamed."""
    from scenarios import Server, System
    from scenarios.templates import EDITOR_SCENARIOS
    _force(path, monkeypatch)
    reader, _, exporter = EDITOR_SCENARIOS
    cm = statespace.compile_model(
        System({reader: 4, exporter: 3}, server=Server(workers=4)).to_model())
    sym = detect_symmetry(cm)
    assert [g.template for g in sym.groups] == ["reader", "exporter"]
    assert all(g.key_slots == sym.groups[0].key_slots for g in sym.groups)
    rng = np.random.default_rng(7)
    X = np.empty((cm.n_slots, 300), np.int64)
    for j, s in enumerate(cm.slots):
        X[j] = rng.integers(s.lo, min(s.hi, s.lo + 3) + 1, X.shape[1])
    keys = [k for g in sym.groups for k in g.keys]
    for j in sym.groups[0].key_slots:
        X[j] = rng.choice(keys + [0], X.shape[1])
    Y = canonicalize(sym, X.astype(np.int16))
    assert Y.dtype == np.int16
    for r in range(X.shape[1]):
        want = X[:, r].tolist()
        for g in sym.groups:
            want = _canon_row(g, want)
        assert Y[:, r].tolist() == want, r


def test_a_slot_equal_in_every_member_and_no_rows(monkeypatch):
    """Constant columns take no bits (and stay as they are); an empty matrix stays empty."""
    cm = statespace.compile_model(dve.load_model(QUEUE, defines={"N": 4}))
    sym = detect_symmetry(cm)
    (g,) = sym.groups
    X = _random_states(cm, g, 50, np.random.default_rng(3))
    for row in g.member_slots:
        X[row[0]] = 1                  # every member in its second control state
    Y = canonicalize(sym, X)
    for r in range(X.shape[1]):
        assert Y[:, r].tolist() == _canon_row(g, X[:, r].tolist()), r
    assert canonicalize(sym, X[:, :0]).shape == (cm.n_slots, 0)


def test_sort_codes_wider_than_62_bits_fall_back_to_lexsort():
    rng = np.random.default_rng(1)
    cols = [rng.integers(-2**20, 2**20, (4, 50)) for _ in range(3)]
    assert symmetry._packed_sort_code(cols) is None
    narrow = [c % 5 for c in cols] + [rng.random((4, 50)) < 0.5]
    code = symmetry._packed_sort_code(narrow)
    assert np.array_equal(np.argsort(code, axis=0, kind="stable"), np.lexsort(narrow, axis=0))


@pytest.mark.parametrize("n", [2, 3, 5, 7, 8, 9, 13, 16])
def test_sorting_network_sorts_every_zero_one_input(n):
    """By the 0-1 principle a comparator network sorts every input when it sorts every
    sequence of zeros and ones: all 2**n of them, as the columns of one matrix."""
    cols = (np.arange(2 ** n)[None, :] >> np.arange(n)[:, None]) & 1
    code = cols.astype(np.int16)
    symmetry._sort_columns(code, np.empty(code.shape[1], np.int16))
    assert np.array_equal(code, np.sort(cols, axis=0))
    assert all(a < b < n for a, b in symmetry.sorting_network(n))


def test_groups_past_the_network_are_sorted_too(monkeypatch):
    rng = np.random.default_rng(5)
    code = rng.integers(-50, 50, (6, 1000))
    want = np.sort(code, axis=0)
    monkeypatch.setattr(symmetry, "NETWORK_MAX", 4)
    symmetry._sort_columns(code, np.empty(1000, code.dtype))
    assert np.array_equal(code, want)


@pytest.mark.parametrize("dtype,base,span", [(np.int16, -30000, 5), (np.int32, 100000, 5),
                                             (np.int32, -2**31, 2**31 + 70000),
                                             (np.int64, 2**33, 5), (np.int64, 2**33, 2**31 + 7)])
def test_members_values_far_from_zero(dtype, base, span):
    """Local values whose range is narrow but whose bounds do not fit the code's type (int16
    codes of values near 100,000 or 2**33), or whose range does not fit the states' type:
    the codes are differences, the values come back exactly."""
    text = QUEUE.replace("process Client(key id) { state a, b;",
                         "process Client(key id) { int v; state a, b;")
    cm = statespace.compile_model(dve.load_model(text, defines={"N": 5}))
    sym = detect_symmetry(cm)
    (g,) = sym.groups
    rng = np.random.default_rng(11)
    X = _random_states(cm, g, 300, rng)
    for row in g.member_slots:
        X[row[1]] = base + rng.integers(0, span, X.shape[1]) * rng.integers(0, 2, X.shape[1])
    X = X.astype(dtype)       # (wrapping for the int32 range past 2**31: states as they are)
    Y = canonicalize(sym, X)
    assert Y.dtype == dtype
    for r in range(X.shape[1]):
        assert Y[:, r].tolist() == _canon_row(g, X[:, r].tolist()), r
    assert len({int(v) for v in X[g.member_slots[0][1]]}) > 1
