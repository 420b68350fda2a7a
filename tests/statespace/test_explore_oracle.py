"""The vectorised engine against a plain per-state interpreter, determinism, save/load."""

from __future__ import annotations

import numpy as np
import pytest
import ss_oracle
import ss_trees
from ss_helpers import compiled
from ss_models import BUF, COMMIT2, PROD, RDV, RINGS_SYNC

from statespace import (
    build_state_graph,
    compile_model,
    decode_state,
    load_graph,
    save_graph,
    validate_graph,
)

MIXED = """
byte g[4] = {1, 2};
int acc = -6;
channel c, d;
channel {byte} q[3];
process A { byte i; state s0, s1, s2; init s0;
  trans s0 -> s1 { guard i < 4; effect g[i] = (g[i] + 3) % 7, i = i + 1; cost g[0]; },
        s1 -> s0 { sync c!i * 2; time 2; },
        s1 -> s2 { guard g[i % 4] >= 0; sync q!g[1]; },
        s2 -> s0 { guard acc < 0 || 100 / acc > 1; effect acc = acc + 3; cost 1; time 0; }; }
process B { byte v; state t0, t1; init t0;
  trans t0 -> t1 { sync c?v; effect acc = acc - v; cost 2; },
        t1 -> t0 { sync q?v; effect g[v % 4] = v; },
        t1 -> t0 { guard v != 5 || not (acc < 0); };
}
system async;
"""


def check_against_oracle(cm, chunk_size=3):
    g = build_state_graph(cm, chunk_size=chunk_size)
    validate_graph(g)
    st, ed = ss_oracle.explore(cm)
    assert g.n_states == len(st)
    assert g.n_edges == len(ed)
    assert g.states.astype(np.int64).tolist() == [list(s) for s in st]
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr))
    # Edge labels as the model numbers them (system sync: the step codes).
    acts = [g.model_action(a) for a in g.action.tolist()]
    ours = list(zip(src.tolist(), g.indices.tolist(), acts, range(g.n_edges)))
    if cm.system == "sync":
        # Dense sync ids are numbered as met, so rows are in (target, id) order; the oracle's
        # are in (target, code) order: compare as sorted lists.
        ours.sort(key=lambda e: e[:3])
    assert [e[:3] for e in ours] == [e[:3] for e in ed]
    order = [e[3] for e in ours]
    ok = (g.indices != g.error_state)[order]  # cost and time of a faulty step: unspecified
    for r in cm.resources:
        assert g.costs[r][order][ok].tolist() == [e[3][r] for e, o in zip(ed, ok) if o]
    assert g.time[order][ok].tolist() == [e[4] for e, o in zip(ed, ok) if o]
    return g


@pytest.mark.parametrize("k", [1, 2, 3])
def test_client_server_trees(k):
    check_against_oracle(compile_model(ss_trees.client_server(k)))


@pytest.mark.parametrize("text", [RDV, BUF, COMMIT2, RINGS_SYNC, MIXED,
                                  PROD % "qa -> qb { guard P1.b; }, qb -> qc {}, qc -> qc {}"],
                         ids=["rdv", "buf", "commit", "sync", "mixed", "prod"])
def test_small_models(text):
    check_against_oracle(compiled(text))


def test_mixed_model_is_interesting():
    g = check_against_oracle(compiled(MIXED))
    assert g.n_states > 50 and g.error_state >= 0


@pytest.mark.parametrize("name", ["bridge.1.dve", "lup.1.dve", "fischer.1.dve",
                                  "needham.1.dve", "firewire_link.1.dve", "anderson.2.dve",
                                  "lifts.1.dve", "protocols.1.dve", "public_subscribe.1.dve"])
def test_small_beem_against_oracle(beem_dir, name):
    from dve.loader import load_model
    path = beem_dir / "models" / name
    if not path.exists():
        pytest.skip(f"{name} not in the BEEM copy")
    check_against_oracle(compile_model(load_model(path)), chunk_size=1000)


@pytest.mark.parametrize("chunk_size", [1, 7, 1 << 17])
def test_numbering_does_not_depend_on_chunk_size(chunk_size):
    cm = compile_model(ss_trees.client_server(4))
    a = build_state_graph(cm, chunk_size=chunk_size)
    b = build_state_graph(cm)
    for name in ("indptr", "indices", "time", "action", "states", "parent", "parent_action",
                 "deadlocks"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert np.array_equal(a.cost(), b.cost())


def test_two_builds_identical():
    a = build_state_graph(compiled(MIXED))
    b = build_state_graph(compiled(MIXED))
    for name in ("indptr", "indices", "time", "action", "states", "parent"):
        assert np.array_equal(getattr(a, name), getattr(b, name))


def test_save_load_roundtrip(tmp_path):
    g = build_state_graph(compiled(MIXED))
    save_graph(g, tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    validate_graph(h)
    for name in ("indptr", "indices", "time", "action", "states", "parent", "deadlocks"):
        assert np.array_equal(getattr(g, name), getattr(h, name))
    assert h.error_state == g.error_state and h.depth == g.depth
    for i in range(0, g.n_states, 7):
        assert decode_state(g, i) == decode_state(h, i)
    assert h.describe_action(int(g.action[0])) == g.describe_action(int(g.action[0]))


def test_validate_catches_broken_graphs():
    from dataclasses import replace

    from runtime.errors import StateSpaceError
    g = build_state_graph(compiled(RDV))
    bad = replace(g, indices=g.indices[::-1].copy())
    with pytest.raises(StateSpaceError, match="sorted"):
        validate_graph(bad)
    with pytest.raises(StateSpaceError, match="indices"):
        validate_graph(replace(g, indices=(g.indices + 10).astype(np.int32)))


def test_multiword_keys():
    # 12 bytes of arrays plus control states: more than one 64-bit word.
    text = ("byte a[6], b[6]; process P { byte i; state s; init s; trans "
            "s -> s { guard i < 5; effect a[i] = i * 40, i = i + 1; }, "
            "s -> s { guard i > 0; effect b[i] = a[i - 1] + 1, i = i - 1; }; } system async;")
    cm = compiled(text)
    from statespace.store import KeyLayout
    assert KeyLayout.for_model(cm).n_words > 1
    check_against_oracle(cm, chunk_size=4)


def test_visited_set_exact_under_tag_collisions(monkeypatch):
    # Force every multi-word key to the same tag: the exact slow path must keep all states.
    from statespace import store
    monkeypatch.setattr(store, "_mix", lambda keys: np.zeros(keys.shape[0], np.uint64))
    monkeypatch.setattr(store, "mix_row", lambda words: 0)   # (the tag of a few keys)
    vs = store.VisitedSet(n_words=2)
    keys = np.array([[1, 2], [3, 4], [1, 2], [5, 6]], dtype=np.uint64)
    ids, rank, new = vs.add(keys)
    assert ids.tolist() == [0, 1, 0, 2] and rank.tolist() == [0, 1, 3]
    ids, rank, new = vs.add(np.array([[5, 6], [7, 8]], dtype=np.uint64))
    assert ids.tolist() == [2, 3] and rank.tolist() == [1] and new.tolist() == [[7, 8]]
    # Discovery order follows the ranks, not the batch order.
    ids, rank, new = vs.add(np.array([[9, 9], [8, 8]], dtype=np.uint64), np.array([5, 2]))
    assert ids.tolist() == [5, 4] and rank.tolist() == [2, 5]
