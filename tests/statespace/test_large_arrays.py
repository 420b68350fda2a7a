"""Arrays of many cells written through a computed index (one block per array, not a pair
per cell): the explorer's graphs against the plain interpreter, and the key layout's block
operations against packing done by hand with Python integers."""

from __future__ import annotations

import numpy as np
import pytest
import ss_oracle
from ss_helpers import compiled

from statespace import build_state_graph, validate_graph
from statespace.evaluate import Writes
from statespace.store import KeyLayout

# Words of several slot widths: 70 ints (16 bits) and 300 bytes cross many word boundaries.
ASYNC = """
int a[70];
byte b[300];
byte i;
process P { byte loc[90]; state s, t; init s;
  trans s -> t { guard i < 6; effect b[i * 50 + 7] = b[i * 50 + 7] + 3, a[i * 13] = -1000 * i,
                                     loc[i * 17] = i + 1, i = i + 1; cost 1; },
        t -> s { guard a[(i - 1) * 13] < 0 or i == 1; effect b[299 - i] = i; cost 2; },
        t -> t { guard loc[(i - 1) * 17] == 3; effect loc[(i - 1) * 17] = 0; }; }
process Q { state q; init q;
  trans q -> q { guard b[i * 50 + 7] == 3 and i < 6; effect b[i * 50 + 7] = 4; time 2; }; }
system async;
"""

# Q may always idle; its write of b next to P's is a write conflict (the error state).
SYNC = ASYNC.replace("system async", "system sync").replace(
    "trans q -> q {", "trans q -> q {}, q -> q {")


@pytest.mark.parametrize("text", [ASYNC, SYNC], ids=["async", "sync"])
@pytest.mark.parametrize("chunk_size", [1, 1 << 17])
def test_array_writes_match_the_interpreter(text, chunk_size):
    cm = compiled(text)
    g = build_state_graph(cm, chunk_size=chunk_size)
    validate_graph(g)
    states, edges = ss_oracle.explore(cm)
    assert g.n_states > 12
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr)).tolist()
    if cm.system == "async":   # same numbering, same edge order
        assert g.states.astype(np.int64).tolist() == [list(s) for s in states]
        assert list(zip(src, g.indices.tolist(), g.action.tolist())) == \
            [e[:3] for e in edges]
        ok = g.indices != g.error_state   # a faulting step's charge is unspecified
        assert g.cost()[ok].tolist() == [e[3]["cost"] for e, o in zip(edges, ok) if o]
        assert g.time[ok].tolist() == [e[4] for e, o in zip(edges, ok) if o]
    else:                      # sync steps numbered as met: compare by state vectors
        vec = [tuple(r) for r in g.states.astype(np.int64).tolist()]
        assert sorted(vec) == sorted(states)
        err = tuple(cm.error_state)
        ours = sorted((vec[s], vec[t], g.model_action(a), int(c), int(tm)) for s, t, a, c, tm
                      in zip(src, g.indices.tolist(), g.action.tolist(),
                             g.cost().tolist(), g.time.tolist()))
        theirs = sorted((states[s], states[t], a, c["cost"], tm) for s, t, a, c, tm in edges)
        assert [e[:3] for e in ours] == [e[:3] for e in theirs]
        assert [e for e in ours if e[1] != err] == [e for e in theirs if e[1] != err]


def test_effects_return_array_blocks():
    from statespace.evaluate import Evaluator
    cm = compiled(ASYNC)
    ev = Evaluator(cm, np).prepare()
    X = np.array([cm.initial] * 2, np.int32).T.copy()
    writes, err = ev.effect((0,))(X, np.arange(2))
    assert isinstance(writes, Writes)
    base_b = cm.variables["b"].base
    assert sorted((base, v.shape) for base, v in writes.blocks) == [
        (cm.variables[n].base, (cm.variables[n].size, 2)) for n in ("a", "b", "P.loc")]
    cells = dict(writes)   # every cell as a pair of its own, as callers that iterate see it
    assert cells[base_b + 7].tolist() == [3, 3] and cells[base_b + 8].tolist() == [0, 0]
    assert len(cells) == len(writes) == len(writes.scalars) + sum(
        v.shape[0] for _, v in writes.blocks)


def _pack_by_hand(lo, hi, values):
    """Words as Python integers: slots in order, a new word when the next does not fit."""
    words, word, used = [], 0, 0
    for a, b, v in zip(lo, hi, values):
        bits = max(1, (b - a).bit_length())
        if used + bits > 64:
            words.append(word)
            word, used = 0, 0
        word |= (v - a) << used
        used += bits
    return words + [word]


def test_pack_and_block_change_against_python_integers():
    rng = np.random.default_rng(7)
    n = 5000
    lo = rng.choice([0, -32768, -3, 0], size=n).tolist()
    hi = [a + int(w) for a, w in zip(lo, rng.choice([1, 255, 65535, 6], size=n))]
    lay = KeyLayout.from_bounds(lo, hi)
    X = np.array([[int(rng.integers(a, b + 1)) for a, b in zip(lo, hi)] for _ in range(3)],
                 np.int64).T
    keys = lay.pack(X, np)
    for r in range(3):
        assert [int(k) for k in keys[r]] == _pack_by_hand(lo, hi, X[:, r].tolist())
    # A block of 3,000 slots from slot 1,234 changes: the words change by the difference.
    base, m = 1234, 3000
    Y = X.copy()
    Y[base:base + m] = np.array([[int(rng.integers(lo[j], hi[j] + 1)) for _ in range(3)]
                                 for j in range(base, base + m)])
    w, d = lay.block_change(base, Y[base:base + m], X[base:base + m], np)
    new = keys.copy()
    new[:, w:w + d.shape[1]] += d
    assert np.array_equal(new, lay.pack(Y, np))
    assert np.array_equal(lay.unpack(new, np, dtype=np.int64), Y)


CHANNELS = """
byte a[5];
channel {byte, int} q[3];
channel {byte} r[2];
process P { byte k; int loc[3]; state s, t; init s;
  trans s -> s { guard k < 4; sync q!{k, -k}; effect a[k] = k + 1, k = k + 1, loc[k % 3] = -k; },
        s -> t { sync r!k; },
        t -> s { guard a[k] > 0; effect a[k] = 0; }; }
process Q { byte x; int y; state u; init u;
  trans u -> u { sync q?{x, y}; },
        u -> u { guard x == 3; sync r?x; effect x = 300 / (x - 3); }; }
system async;
"""


def _decode_by_hand(names, kinds, pstates, row):
    """Slot by slot, from the names alone (the decoding decode_state must agree with)."""
    out, chans = {}, {}
    for name, kind, v in zip(names, kinds, row):
        if kind == "pc":
            out[name] = pstates[name][v] if v < len(pstates[name]) else "<error>"
        elif kind == "var" and name.endswith("]"):
            out.setdefault(name[:name.rindex("[")], []).append(v)
        elif kind == "var":
            out[name] = v
        elif kind == "count":
            chans[name[:-6]] = (v, [])
            out[name[:-6]] = None
        else:
            ch, rest = name.rsplit("[", 1)
            idx, field = (int(x) for x in rest.split("]."))
            items = chans[ch][1]
            if field == 0:
                items.append([])
            items[idx].append(v)
    for ch, (count, items) in chans.items():
        out[ch] = [it[0] if len(it) == 1 else tuple(it) for it in items[:count]]
    return out


def test_decode_state_against_decoding_by_hand(tmp_path):
    from statespace import decode_state, load_graph, save_graph
    cm = compiled(CHANNELS)
    g = build_state_graph(cm)
    assert g.n_states > 20 and g.error_state >= 0
    names = [s.name for s in cm.slots]
    kinds = [s.kind for s in cm.slots]
    pstates = {p.name: p.states for p in cm.processes}
    save_graph(g, tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")   # no model: decoded from the saved names
    seen_items = 0
    for i in range(g.n_states):
        want = ({"error": True} if i == g.error_state
                else _decode_by_hand(names, kinds, pstates, g.states[i].tolist()))
        got = decode_state(g, i)
        assert got == want and list(got) == list(want)
        assert decode_state(h, i) == want
        seen_items += len(got.get("q", ())) > 1
    assert seen_items   # some state holds two or more items of the two-field channel


def test_jsonable_keeps_plain_lists_and_converts_the_rest():
    from statespace.witness import jsonable
    big = list(range(70000))
    out = jsonable({"a": big, "q": [(1, -2), (3, 4)], "n": np.int64(5), "m": [np.int32(1), 2],
                    "b": [True, 2]})
    assert out == {"a": big, "q": [[1, -2], [3, 4]], "n": 5, "m": [1, 2], "b": [True, 2]}
    assert out["a"] is not big and type(out["m"][0]) is int


def test_block_change_off_the_host_path_agrees():
    """The running-sum form (used on a device: no scatter, no data-dependent sizes) against
    the host's sparse form, on a module that is not NumPy but computes with it."""
    import types
    fake = types.ModuleType("not_numpy")
    for k in dir(np):
        if not k.startswith("__"):
            setattr(fake, k, getattr(np, k))
    rng = np.random.default_rng(3)
    lay = KeyLayout.from_bounds([0] * 3000 + [-32768] * 500, [255] * 3000 + [32767] * 500)
    old = rng.integers(0, 256, size=(3500, 4)).astype(np.int32)
    new = old.copy()
    new[rng.integers(0, 3500, size=40), rng.integers(0, 4, size=40)] = 7
    for base, m in ((0, 3500), (2990, 20), (17, 1)):
        a = lay.block_change(base, new[base:base + m], old[base:base + m], np)
        b = lay.block_change(base, new[base:base + m], old[base:base + m], fake)
        assert a[0] == b[0] and np.array_equal(a[1], b[1])


QUEUES = """
channel {byte, int} q[40];
channel {byte} r[3];
byte n;
process A { state s; init s;
  trans s -> s { guard n < 6; sync q!{n * 40, 1000 - n}; effect n = n + 1; cost 1; },
        s -> s { guard n == 6; sync r!n; effect n = 7; }; }
process B { byte x; int y; state s, t; init s;
  trans s -> t { sync q?{x, y}; cost 2; time 3; },
        t -> s { guard y > 996; },
        t -> s { guard y <= 996; effect x = 250 / (x - 160); },
        s -> s { sync r?x; }; }
system async;
"""


@pytest.mark.parametrize("chunk_size", [1, 1 << 17])
def test_long_queues_match_the_interpreter(chunk_size):
    cm = compiled(QUEUES)
    g = build_state_graph(cm, chunk_size=chunk_size)
    validate_graph(g)
    states, edges = ss_oracle.explore(cm)
    assert g.n_states > 12 and g.error_state >= 0   # x = 160 divides by zero
    assert max(s[cm.channels["q"].count_slot] for s in states) == 6
    assert g.states.astype(np.int64).tolist() == [list(s) for s in states]
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr)).tolist()
    assert list(zip(src, g.indices.tolist(), g.action.tolist())) == [e[:3] for e in edges]


def test_queue_operations_are_blocks():
    from statespace.evaluate import Evaluator
    cm = compiled(QUEUES)
    ev = Evaluator(cm, np).prepare()
    ch = cm.channels["q"]
    for tid in (0, 2):   # A's send, B's receive
        src = ev.sources[("effect", tid)]
        assert src.count("\n") < 30, src   # not a line per item
    X = np.array([cm.initial], np.int32).T.copy()
    writes, _ = ev.effect((0,))(X, np.arange(1))
    assert [(b, v.shape[0]) for b, v in writes.blocks] == [(ch.items, 80)]
