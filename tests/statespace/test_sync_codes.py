"""``system sync`` step codes of any width: codes past 64 bits explore (checked against the
plain interpreter), multi-word codes number steps exactly as one-word codes do, and the cap
on distinct steps is a clean error (exit 3 with the counts), not a traceback."""

from __future__ import annotations

import json

import numpy as np
import pytest
import ss_oracle
from ss_helpers import compiled
from ss_models import RINGS_SYNC

from dvecost.cli import main
from statespace import build_state_graph, validate_graph
from statespace.next_state import sync_gen


def wide_model(n: int = 22) -> str:
    """``n`` processes of 10 transitions each (codes of about 3.3 n bits; 22 give 10**22,
    past 2**73). Six transitions of each are never enabled, so the graph stays small: from the
    initial state every process goes to ``b`` (the first two may go to ``c`` instead), then
    back to ``a``."""
    procs = []
    for i in range(n):
        dead = ", ".join("a -> c { guard x > 5; }" for _ in range(6))
        alt = "a -> c { cost 2; }" if i < 2 else "a -> c { guard x > 5; }"
        procs.append(f"process P{i} {{ state a, b, c; init a;\n"
                     f"  trans {dead},\n"
                     f"        a -> b {{ cost 1; }}, {alt},\n"
                     f"        b -> a {{ time 2; }}, c -> a {{}}; }}")
    return "byte x;\n" + "\n".join(procs) + "\nsystem sync;\n"


WIDE = wide_model()


def against_oracle(cm, chunk_size):
    """The graph of ``cm`` equals the plain interpreter's up to the numbering of states (the
    explorer breaks ties between the steps of one state by their dense ids, numbered as met,
    the interpreter by their codes): the same initial state and state vectors, the same edges
    (source, target, step code, costs, time), the same breadth-first depth of every state."""
    g = build_state_graph(cm, chunk_size=chunk_size)
    validate_graph(g)
    states, edges = ss_oracle.explore(cm)
    vec = [tuple(r) for r in g.states.astype(np.int64).tolist()]
    assert vec[0] == states[0] and sorted(vec) == sorted(states)
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr)).tolist()
    ours = sorted((vec[s], vec[t], g.model_action(a),
                   tuple(int(g.costs[r][k]) for r in cm.resources), int(g.time[k]))
                  for k, (s, t, a) in enumerate(zip(src, g.indices.tolist(),
                                                    g.action.tolist())))
    theirs = sorted((states[s], states[t], a, tuple(c[r] for r in cm.resources), tm)
                    for s, t, a, c, tm in edges)
    err = tuple(cm.error_state)
    # The charge of a faulting step is unspecified (the explorer books 0).
    assert [e[:3] for e in ours] == [e[:3] for e in theirs]
    assert [e for e in ours if e[1] != err] == [e for e in theirs if e[1] != err]
    depth = dict(zip(states, _bfs_depth(len(states), [(s, t) for s, t, *_ in edges])))
    parent = g.parent.tolist()
    for i, v in enumerate(vec):
        d, j = 0, i
        while parent[j] >= 0:
            d, j = d + 1, parent[j]
        assert d == depth[v], v
    return g


def _bfs_depth(n, pairs):
    out = [[] for _ in range(n)]
    for s, t in pairs:
        out[s].append(t)
    depth = [-1] * n
    depth[0], queue = 0, [0]
    for s in queue:
        for t in out[s]:
            if depth[t] < 0:
                depth[t] = depth[s] + 1
                queue.append(t)
    return depth


def same_graph(a, b):
    for name in ("indptr", "indices", "time", "action", "states", "parent", "parent_action",
                 "deadlocks"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for r in a.costs:
        assert np.array_equal(a.costs[r], b.costs[r]), r
    assert [int(c) for c in a.action_codes] == [int(c) for c in b.action_codes]


@pytest.mark.parametrize("chunk_size", [1, 1 << 17])
def test_codes_past_64_bits_explore_as_the_oracle_does(chunk_size):
    cm = compiled(WIDE)
    g = against_oracle(cm, chunk_size)
    assert (g.n_states, g.n_edges) == (5, 8)
    codes = [int(c) for c in g.action_codes]
    assert max(codes) > 2**64 and g.action_codes.dtype == object
    # The step ids decode to the transitions that moved: every process takes 'a -> b' in the
    # first step but the first two, which take 'a -> c' in the last one (ids in code order).
    last = g.action[g.indptr[0]:g.indptr[1]].max()
    moves = g.action_moves(int(last))
    assert [(m["process"], m["dst"]) for m in moves[:3]] == [("P0", "c"), ("P1", "c"),
                                                            ("P2", "b")]


@pytest.mark.parametrize("text", [RINGS_SYNC, WIDE])
@pytest.mark.parametrize("chunk_size", [1, 3, 1 << 17])
def test_words_do_not_change_the_numbering(monkeypatch, text, chunk_size):
    """One digit per word (a word limit of 4) against the default packing: identical arrays."""
    cm = compiled(text)
    ref = build_state_graph(cm, chunk_size=chunk_size)
    monkeypatch.setattr(sync_gen, "SYNC_WORD_LIMIT", 4)
    assert len(sync_gen._sync_words(cm.system_processes)[1]) == len(cm.system_processes)
    same_graph(build_state_graph(cm, chunk_size=chunk_size), ref)


VARS = """
byte x, y;
process A { state s, t; init s;
  trans s -> t { guard x < 3; effect x = x + 1; cost 1; },
        s -> s { guard y > 0; effect y = y - 1; },
        t -> s { cost 2; time 3; }; }
process B { byte k; state u; init u;
  trans u -> u { guard k < 2; effect k = k + 1, y = y + 1; },
        u -> u { guard k == 2; effect k = 0; cost 4; },
        u -> u { guard x == 3; effect x = 0; }; }
process C { state p, q; init p; trans p -> q {}, q -> p { guard x > 1; }, q -> q { cost 1; }; }
system sync;
"""


def test_words_with_guards_effects_and_write_conflicts(monkeypatch):
    cm = compiled(VARS)
    ref = against_oracle(cm, 1000)
    assert ref.n_states > 1000 and ref.error_state >= 0   # A and B both assign x: a fault
    monkeypatch.setattr(sync_gen, "SYNC_WORD_LIMIT", 3)
    same_graph(against_oracle(cm, 1000), ref)


def test_too_many_distinct_steps_is_a_clean_error(monkeypatch, tmp_path, capsys):
    path = tmp_path / "wide.dve"
    path.write_text(WIDE)
    monkeypatch.setattr(sync_gen, "MAX_SYNC_STEPS", 3)
    assert main(["explore", str(path)]) == 3
    err = capsys.readouterr().err
    assert "Traceback" not in err
    # The initial state's four steps are the first chunk: nothing was expanded before it.
    assert ("dvecost: more than 3 distinct system sync steps (the explorer numbers them "
            "with 32-bit ids); 1 state, 0 transitions (0 expanded) found so far") in err


@pytest.mark.parametrize("command", ["explore", "analyze"])
def test_too_many_distinct_steps_is_a_limit_in_json(command, monkeypatch, tmp_path, capsys):
    # Like --max-states: exit 3 and one JSON object with status 'limit', the limit and counts.
    path = tmp_path / "wide.dve"
    path.write_text(WIDE)
    monkeypatch.setattr(sync_gen, "MAX_SYNC_STEPS", 3)
    assert main([command, str(path), "--json"]) == 3
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
    d = json.loads(out[0])
    assert d["status"] == "limit"
    assert d["limit"] == {"name": "system sync steps", "value": "3"}
    states = d["counts"]["states"] if command == "analyze" else d["n_states"]
    assert states == 1


def test_wide_codes_through_the_command_line(tmp_path, capsys):
    path = tmp_path / "wide.dve"
    path.write_text(WIDE)
    assert main(["explore", str(path), "--json"]) == 0
    out = capsys.readouterr().out
    assert '"n_states": 5' in out and '"n_transitions": 8' in out


def test_wide_codes_survive_save_and_load(tmp_path):
    from statespace import load_graph, save_graph
    g = build_state_graph(compiled(WIDE))
    save_graph(g, tmp_path / "g.npz")
    h = load_graph(tmp_path / "g.npz")
    assert [int(c) for c in h.action_codes] == [int(c) for c in g.action_codes]
    assert max(int(c) for c in h.action_codes) > 2**64
    assert [h.describe_action(a) for a in range(len(h.action_codes))] == \
        [g.describe_action(a) for a in range(len(g.action_codes))]
