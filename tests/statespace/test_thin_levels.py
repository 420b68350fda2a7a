"""Thin levels: the few-row paths of the explorer give the arrays of the general array paths.

A breadth-first level of one or two states (the ``system sync`` models that scenario files
render have thousands of them) is expanded by paths of their own: guards evaluated row by row
(``Transitions.few_rows_guard``), a process's enabled pairs built in Python
(``next_state.few_rows.few_pairs``), keys packed and unpacked in Python integers
(``KeyLayout.pack_few``). Each is checked here against the array path it replaces (the same
search with the thresholds at 0, every chunk then taking the array path) on generated and
bundled ``system sync`` models, whole and symmetry-reduced, array for array; against the
plain per-state interpreter of ``ss_oracle`` (no code shared); and piece by piece against
plain-Python oracles on random inputs.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import ss_oracle
from hypothesis import given, settings
from hypothesis import strategies as st
from ss_helpers import compiled
from ss_models import RINGS_SYNC
from test_explore_oracle import MIXED

from statespace import build_state_graph, canonical, store
from statespace.next_state import symmetric, sync_gen, transitions
from statespace.quotient import build_quotient_graph
from statespace.search import builder
from statespace.store import KeyLayout

ARRAYS = ("indptr", "indices", "action", "time", "states", "parent", "parent_action",
          "deadlocks")

#: A ``system sync`` model with what the few-row paths must get right: guard faults (a
#: division by zero), two processes writing one global (a fault of the step), a process
#: reading another's variable (not a per-pair process), one with more than eight control
#: states (the rows grouped by control state), arrays, several transitions from one state.
FAULTY_SYNC = """
byte g;
byte arr[3];
process A { byte x; state a0, a1, a2; init a0;
  trans a0 -> a1 { guard 12 / (x - 1) > 2 || x == 1; effect x = (x + 1) % 4, arr[x % 3] = x;
                   cost x + 1; time 1; },
        a0 -> a2 { guard x != 2; effect g = x; cost 2; time 2; },
        a1 -> a0 { cost 1; time 1; },
        a2 -> a0 { guard arr[x % 3] < 3; cost 3; time 1; }; }
process B { byte y; state b0, b1, b2, b3, b4, b5, b6, b7, b8, b9; init b0;
  trans b0 -> b1 { effect y = A->x; }, b1 -> b2 { effect g = y; cost 1; },
        b1 -> b3 {}, b2 -> b4 { guard g > 0; }, b2 -> b5 {}, b3 -> b6 { effect y = 0; },
        b4 -> b7 {}, b5 -> b8 { guard y < 2; }, b6 -> b9 {}, b7 -> b0 {}, b8 -> b0 {},
        b9 -> b0 { effect arr[y % 3] = 1; }, b5 -> b0 { guard 100 / (y - 3) > 0; }; }
process C { byte z; state c0; init c0;
  trans c0 -> c0 { guard z < 2; effect z = z + 1; cost z; time 1; },
        c0 -> c0 { guard z > 0; effect z = z - 1; time 2; },
        c0 -> c0 { guard z == 1; time 3; }; }
system sync;
"""

#: Interchangeable clients beside a server, explored whole and symmetry-reduced.
TEMPLATE_SYNC = """
byte who, busy;
process S { state s; init s;
  trans s -> s { guard who == 0; effect who = 1, busy = 0; },
        s -> s { guard who > 0; effect who = (who + 1) % 3, busy = (busy + 1) % 4; cost 1; }; }
process Cl(key i) { byte t; state idle, wait, done; init idle;
  trans idle -> wait { guard t < 1; effect t = t + 1; time 1; },
        idle -> idle { time 1; },
        wait -> done { guard busy > 1; time 1; },
        done -> idle { effect t = 0; cost 1; time 2; }; }
for (k : 1 .. 3) { process Cl(k); }
system sync;
"""


def few_paths_off(monkeypatch) -> None:
    """Every chunk by the array paths, however few its rows."""
    monkeypatch.setattr(transitions, "SCALAR_ROWS", 0)
    monkeypatch.setattr(sync_gen, "SCALAR_ROWS", 0)
    monkeypatch.setattr(sync_gen, "FEW_ROWS", 0)
    monkeypatch.setattr(store, "FEW_KEYS", 0)
    monkeypatch.setattr(sync_gen, "FEW_CODES", 0)
    monkeypatch.setattr(builder, "FEW_EDGES", 0)
    monkeypatch.setattr(canonical, "FEW_STATES", 0)
    monkeypatch.setattr(symmetric, "FEW_PAIRS", 0)


def arrays(g) -> dict:
    out = {name: np.asarray(getattr(g, name)) for name in ARRAYS}
    out.update({f"cost {r}": np.asarray(g.costs[r]) for r in sorted(g.costs)})
    out["codes"] = np.asarray(g.action_codes)
    out["counts"] = np.array([g.error_state, g.depth, g.n_expanded])
    return out


def assert_same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert a[name].dtype == b[name].dtype and a[name].shape == b[name].shape, name
        assert np.array_equal(a[name], b[name]), name


def both_ways(monkeypatch, build, chunk_sizes=(1, 2, 5)):
    """The arrays of ``build(chunk_size)`` with the few-row paths and without; each build
    with the paths is checked against the one without."""
    with monkeypatch.context() as m:
        few_paths_off(m)
        ref = arrays(build(None))
    for k in chunk_sizes:
        assert_same(arrays(build(k)), ref)
    return ref


def count_few_pairs(monkeypatch) -> list:
    """Records each chunk that ``few_pairs`` answered (a test of the fast path must run it)."""
    calls = []
    real = sync_gen.few_pairs

    def spy(*args):
        got = real(*args)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(sync_gen, "few_pairs", spy)
    return calls


@pytest.mark.parametrize("text", [FAULTY_SYNC, RINGS_SYNC, TEMPLATE_SYNC, MIXED],
                         ids=["faulty", "rings", "template", "async"])
def test_few_row_paths_give_the_array_paths_graph(monkeypatch, text):
    cm = compiled(text)
    calls = count_few_pairs(monkeypatch)
    ref = both_ways(monkeypatch, lambda k: build_state_graph(cm, chunk_size=k))
    assert any(calls) == (text is not MIXED)
    if text in (FAULTY_SYNC, MIXED):
        assert ref["counts"][0] >= 0   # the error state is reached: faults were exercised


def test_symmetry_reduced_thin_levels(monkeypatch):
    cm = compiled(TEMPLATE_SYNC)
    q = build_quotient_graph(cm, chunk_size=1)
    assert q.symmetry.groups, "the clients are interchangeable"
    both_ways(monkeypatch, lambda k: build_quotient_graph(cm, chunk_size=k).graph)
    both_ways(monkeypatch, lambda k: build_quotient_graph(cm, chunk_size=k,
                                                          counting=False).graph)


def test_thin_levels_against_the_interpreter():
    # The plain per-state interpreter shares no code with the explorer; one state a chunk
    # takes the few-row paths everywhere. (Its states are numbered by step code where ours
    # are by step id, first met: the graphs are compared as sets of labelled edges.)
    for text in (FAULTY_SYNC, RINGS_SYNC, TEMPLATE_SYNC):
        cm = compiled(text)
        g = build_state_graph(cm, chunk_size=1)
        st, ed = ss_oracle.explore(cm)
        states = [tuple(s) for s in g.states.astype(np.int64).tolist()]
        assert sorted(states) == sorted(tuple(s) for s in st)
        err = states[g.error_state] if g.error_state >= 0 else None
        src = np.repeat(np.arange(g.n_states), np.diff(g.indptr)).tolist()
        ours = sorted((states[s], states[t], g.model_action(a),
                       () if states[t] == err else (tuple(g.costs[r][e] for r in cm.resources),
                                                    int(g.time[e])))
                      for e, (s, t, a) in enumerate(zip(src, g.indices.tolist(),
                                                        g.action.tolist())))
        want = sorted((tuple(st[s]), tuple(st[t]), code,
                       () if tuple(st[t]) == err else (tuple(c[r] for r in cm.resources), tm))
                      for s, t, code, c, tm in ed)
        assert ours == want


@pytest.mark.parametrize("system", ["sync", "async"])
def test_generated_models(monkeypatch, system):
    # Generated models (the fuzzer's: arrays, faults, rendezvous, buffers, committed states,
    # templates); an async model's chunks of few rows take the row-by-row guards too.
    import sys

    from conftest import ROOT
    sys.path.insert(0, str(ROOT / "tests" / "fuzz"))
    try:
        import fuzz_gen
    finally:
        sys.path.pop(0)
    done, faults = 0, 0
    for seed in range(400):
        rng = random.Random(seed)
        model = fuzz_gen.gen_sym_model(rng) if seed % 2 else fuzz_gen.gen_model(rng)
        if model.system != system:
            continue
        cm = compiled(fuzz_gen.render(model))
        ref = both_ways(monkeypatch,
                        lambda k: build_state_graph(cm, chunk_size=k, max_states=3000),
                        chunk_sizes=(1, 3))
        done += 1
        faults += ref["counts"][0] >= 0
        if done == 12:
            break
    assert done == 12 and faults >= 2


def test_scenario_template_thin(monkeypatch):
    from scenarios.templates import TEMPLATES
    cm = compiled_model(TEMPLATES["editor"].family(2).to_model())
    both_ways(monkeypatch, lambda k: build_state_graph(cm, chunk_size=k), chunk_sizes=(1,))
    both_ways(monkeypatch, lambda k: build_quotient_graph(cm, chunk_size=k).graph,
              chunk_sizes=(1,))


@pytest.mark.slow
def test_editor_farm_at_four(monkeypatch):
    # The thin model of the issue: about 3,500 levels of one or two states.
    from scenarios.loader import load_spec
    from conftest import ROOT
    cm = compiled_model(load_spec(ROOT / "dvecost" / "examples" / "editor_farm.py")(4)
                        .to_model())
    ref = both_ways(monkeypatch, lambda k: build_quotient_graph(cm, chunk_size=k).graph,
                    chunk_sizes=(None,))
    assert ref["indptr"].shape[0] - 1 == 4192


def compiled_model(model):
    from statespace import compile_model
    return compile_model(model)


# ---------------------------------------------------------------------- pieces, by oracle

def renamed_keys_oracle(keys, ref, old):
    """The renaming of key-holding slots, one row and one slot at a time in plain Python."""
    K, k = len(ref), len(ref[0])
    n = len(keys)
    out = [[0] * k for _ in range(K)]
    for r in range(k):
        col = [ref[b][r] for b in range(K)]
        # A member's pattern: the set of slots referring to it.
        pattern = {}
        for b, m in enumerate(col):
            if m >= 0:
                pattern[m] = pattern.get(m, 0) | (1 << (K - 1 - b))
        for b, m in enumerate(col):
            if m < 0:
                out[b][r] = old[b][r]
            else:
                above = sum(1 for q in pattern.values() if q > pattern[m])
                out[b][r] = keys[n - 1 - above]
    return out


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_renamed_keys_against_oracle(data):
    n = data.draw(st.integers(1, 6))
    K = data.draw(st.integers(1, 9))
    k = data.draw(st.integers(1, 5))
    keys = np.array(sorted(data.draw(st.sets(st.integers(1, 200), min_size=n, max_size=n))))
    ref = np.array(data.draw(st.lists(st.lists(st.integers(-1, n - 1), min_size=k, max_size=k),
                                      min_size=K, max_size=K)))
    old = np.array(data.draw(st.lists(st.lists(st.integers(0, 300), min_size=k, max_size=k),
                                      min_size=K, max_size=K)))
    got = canonical.renamed_keys(keys, ref, old)
    assert got.tolist() == renamed_keys_oracle(keys.tolist(), ref.tolist(), old.tolist())


def test_renamed_keys_blocks(monkeypatch):
    # Rows in blocks give the rows at once.
    rng = np.random.default_rng(3)
    keys = np.array([2, 4, 6, 8])
    ref = rng.integers(-1, 4, size=(5, 40))
    old = rng.integers(0, 9, size=(5, 40))
    whole = canonical.renamed_keys(keys, ref, old)
    monkeypatch.setattr(canonical, "_RENAME_BLOCK", 7 * 25)
    assert np.array_equal(canonical.renamed_keys(keys, ref, old), whole)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_pack_few_is_pack(data):
    slots = data.draw(st.integers(1, 12))
    lo = data.draw(st.lists(st.integers(-40000, 300), min_size=slots, max_size=slots))
    span = data.draw(st.lists(st.integers(0, 2**33), min_size=slots, max_size=slots))
    lay = KeyLayout.from_bounds(lo, [a + s for a, s in zip(lo, span)])
    rows = data.draw(st.integers(0, store.FEW_KEYS))
    X = np.array([[data.draw(st.integers(a, a + s)) for _ in range(rows)]
                  for a, s in zip(lo, span)], np.int64).reshape(slots, rows)
    keys = lay.pack(X, np)
    # The general form: the same rows among more than FEW_KEYS of them.
    wide = lay.pack(np.concatenate([X] + [X[:, :1]] * (store.FEW_KEYS + 1), axis=1)
                    if rows else np.zeros((slots, store.FEW_KEYS + 1), np.int64), np)
    assert keys.dtype == np.uint64 and keys.shape == (rows, lay.n_words)
    assert np.array_equal(keys, wide[:rows])
    for dtype in (np.int64, np.int32):
        back = lay.unpack(keys, np, dtype=dtype)
        assert back.dtype == dtype and back.flags.c_contiguous
        big = lay.unpack(wide, np, dtype=dtype)[:, :rows]
        assert np.array_equal(back, big)
    assert np.array_equal(lay.unpack(keys, np, dtype=np.int64), X)


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_step_numbering_few_and_many(data):
    # Chunks of few codes (the dictionary) and of many (the sorted index), marks and rewinds
    # in any order, against a plain first-met numbering; codes of two words included.
    class P:
        def __init__(self, n):
            self.transitions = range(n)
    procs = [P(data.draw(st.sampled_from([2, 3, 1 << 40]))) for _ in range(3)]
    num = sync_gen.StepNumbering(procs)
    W = len(num.radix)
    seen: list[tuple] = []
    for _ in range(data.draw(st.integers(1, 8))):
        if seen and data.draw(st.booleans()) and data.draw(st.booleans()):
            keep = data.draw(st.integers(0, len(seen)))
            num.rewind(keep)
            del seen[keep:]
            continue
        size = data.draw(st.sampled_from([1, 2, sync_gen.FEW_CODES + 5]))
        rows = [tuple(data.draw(st.integers(0, min(r - 1, 4))) for r in num.radix)
                for _ in range(size)]
        got = num.number(np.array(rows, np.int64).reshape(size, W))
        want = []
        for w in rows:
            if w not in seen:
                seen.append(w)
            want.append(seen.index(w))
        assert got.dtype == np.int32 and got.tolist() == want
        assert num.codes == [num.codes[i] for i in range(len(seen))]
        assert [num.words_of(c) for c in num.codes] == seen


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_visited_set_few_and_many(data):
    # Batches of few keys (add_few) and of many, one and two words, keys sharing tags
    # included: the ids, ranks and new keys of a set that never takes the few-key path.
    # Tags kept aside move into runs when they are RECENT_MAX (drawn small here), and at a
    # snapshot; a restore forgets what came after it.
    W = data.draw(st.sampled_from([1, 2]))
    collide = W == 2 and data.draw(st.booleans())
    recent_max = data.draw(st.sampled_from([2, 3, store.RECENT_MAX]))
    few, many = store.VisitedSet(n_words=W), store.VisitedSet(n_words=W)
    snaps = None
    for _ in range(data.draw(st.integers(1, 10))):
        if data.draw(st.integers(0, 4)) == 0:
            if snaps is None:
                snaps = (few.snapshot(), many.snapshot())
            else:
                few.restore(snaps[0])
                many.restore(snaps[1])
                snaps = None
        m = data.draw(st.sampled_from([1, 2, 5, store.FEW_ADDED, store.FEW_ADDED + 3]))
        keys = np.array(data.draw(st.lists(st.lists(st.integers(0, 9), min_size=W,
                                                    max_size=W), min_size=m, max_size=m)),
                        np.uint64).reshape(m, W)
        rank = np.array(data.draw(st.permutations(range(3 * m)))[:m], np.int64)
        real, real_row = store._mix, store.mix_row
        saved, saved_max = store.FEW_ADDED, store.RECENT_MAX
        try:
            store.RECENT_MAX = recent_max
            if collide:   # every key the same tag: the exact slow path, from both
                store._mix = lambda k: np.zeros(k.shape[0], np.uint64)
                store.mix_row = lambda r: 0
            got = few.add(keys, rank)
            store.FEW_ADDED = 0
            want = many.add(keys, rank)
        finally:
            store.FEW_ADDED = saved
            store.RECENT_MAX = saved_max
            store._mix, store.mix_row = real, real_row
        for a, b in zip(got, want):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
        assert few.n == many.n


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_canonical_form_of_few_states(data):
    # canonicalize of a few states (the codes sorted in Python) against the same states
    # among many (the array sort and renamed_keys): members of several slots, key-holding
    # slots referring to members (several to one, or to none).
    from statespace.symmetry import Symmetry, SymmetryGroup
    n = data.draw(st.integers(2, 5))
    w = data.draw(st.integers(1, 3))
    K = data.draw(st.integers(0, 4))
    keys = tuple(sorted(data.draw(st.sets(st.integers(1, 30), min_size=n, max_size=n))))
    rows = tuple(tuple(range(i * w, (i + 1) * w)) for i in range(n))
    ks = tuple(range(n * w, n * w + K))
    g = SymmetryGroup("T", tuple(range(n)), keys, rows, ks)
    sym = Symmetry(groups=(g,))
    k = data.draw(st.integers(1, canonical.FEW_STATES))
    member = st.integers(0, 3)
    held = st.sampled_from(list(keys) + [0, 31])
    X = np.array([[data.draw(member) for _ in range(k)] for _ in range(n * w)]
                 + [[data.draw(held) for _ in range(k)] for _ in range(K)], np.int32)
    X = X.reshape(n * w + K, k)
    few = canonical.canonicalize(sym, X)
    many = canonical.canonicalize(sym, np.repeat(X, canonical.FEW_STATES + 1, axis=1))
    assert few.dtype == X.dtype
    assert np.array_equal(few, many[:, ::canonical.FEW_STATES + 1])
    # Which members repeat their neighbour, of a few canonical states and among many.
    # (And of the states as drawn: the masks are defined on any states.)
    wide = np.repeat(X, canonical.FEW_STATES + 1, axis=1)
    for a, b in ((few, many), (X, wide)):
        red_few = canonical.interchangeable(sym, a)
        red_many = canonical.interchangeable(sym, b)
        assert red_few.keys() == red_many.keys() == set(range(1, n))
        for p in red_few:
            assert red_few[p].dtype == bool
            assert red_few[p].tolist() == red_many[p][::canonical.FEW_STATES + 1].tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=20), min_size=1,
                max_size=4).filter(lambda k: len({len(r) for r in k}) == 1))
def test_mix_row_is_mix(keys):
    # The tag of one key in Python integers is the array tag (one to twenty words).
    assert [store.mix_row(r) for r in keys] == store._mix(np.array(keys, np.uint64)).tolist()
