"""The ``system sync`` product from each process's enabled (row, transition) pairs
(statespace/next_state/sync_gen.py: ``SyncGenerator.pairs``, the effects of a process that
reads and writes only its own variables computed once per pair) against the plain interpreter of
tests/statespace/ss_oracle.py; and the pairs' two constructions and the per-pair effects
against the per-transition grouping, array for array."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import ss_oracle
from device_stand_in import same_graph
from ss_helpers import compiled

from statespace import build_state_graph
from statespace.next_state import SyncGenerator, reads_own_only

# A and C read and write only their own variables (C's guard reads A, which is allowed:
# guards are evaluated on the source state); D writes a global that E reads in an effect,
# and B reads A's variable in an effect, so the order of the processes matters for them.
# Faults: C's byte overflows (c * 2), A divides by zero, C's guard divides by zero.
MODEL = """
byte g;
process A { byte x; byte y; state s, t; init s;
  trans s -> s { guard x < 3; effect x = x + 1, y = (y + x) % 4; cost 1; time 2; },
        s -> t { guard y != 3; effect y = 6 / (2 - x); cost x; },
        t -> s { effect x = 0; time 3; },
        t -> t { guard y > 1; effect y = y - 1, x = x + 1; };
}
process B { byte v; state a; init a;
  trans a -> a { effect v = (v + 1) % 3; cost 2; },
        a -> a { guard v == 2; effect v = A->x; };
}
process C { byte c; state p, q; init p;
  trans p -> q { guard A->x != 1; effect c = c + 100; cost 3; time 4; },
        q -> p { effect c = c * 2 % 256; cost 1; },
        q -> q { guard c > 150; effect c = c * 2; },
        p -> p { guard 4 / (2 - A->x) > 1; };
}
process D { state d; init d;
  trans d -> d { effect g = (g + 1) % 3; }, d -> d { guard g == 2; time 5; };
}
process E { byte e; state u; init u;
  trans u -> u { effect e = g; cost 1; }, u -> u { guard e == 1; effect e = 0; };
}
system sync;
"""


def _oracle_edges(cm, g):
    """The graph's edges as (source state, target state, cost, time) sets per source, and
    the oracle's, for every expanded state (faulty steps: target only)."""
    it = ss_oracle.Interp(cm)
    res = cm.resources[0] if cm.resources else None
    err = tuple(cm.error_state)
    ours, want = [], []
    for s in range(g.n_states):
        st = tuple(int(v) for v in g.states[s])
        if st == err:
            continue
        for e in range(g.indptr[s], g.indptr[s + 1]):
            t = tuple(int(v) for v in g.states[g.indices[e]])
            lab = (None, None) if t == err else (
                int(g.costs[res][e]) if res else 0, int(g.time[e]))
            ours.append((st, t, g.model_action(int(g.action[e])), lab))
        for code, new, costs, tm in ss_oracle.successors(it, cm, list(st)):
            t = err if new is None else tuple(new)
            lab = (None, None) if t == err else (costs.get(res, 0) if res else 0, tm)
            want.append((st, t, code, lab))
    return sorted(ours), sorted(want)


def test_locality_of_the_processes():
    cm = compiled(MODEL)
    assert [reads_own_only(cm, p) for p in cm.system_processes] == \
        [True, False, True, False, False]


@pytest.mark.parametrize("chunk", [1, 5, None])
def test_steps_are_the_oracles(chunk):
    cm = compiled(MODEL)
    g = build_state_graph(cm, chunk_size=chunk)
    assert g.n_states > 40 and g.error_state >= 0
    st, _ = ss_oracle.explore(cm)
    assert sorted(map(tuple, g.states.astype(np.int64).tolist())) == sorted(map(tuple, st))
    ours, want = _oracle_edges(cm, g)
    assert ours == want


@pytest.mark.parametrize("chunk", [3, None])
def test_pair_constructions_and_per_pair_effects_agree(chunk, monkeypatch):
    cm = compiled(MODEL)
    ref = build_state_graph(cm, chunk_size=chunk)
    # The pairs sorted by a stable sort of their rows (past the mask's size).
    monkeypatch.setattr(sys.modules["statespace.next_state.sync_gen"], "_PAIR_MATRIX", 0)
    same_graph(ref, build_state_graph(cm, chunk_size=chunk))
    # No process's effects computed per pair: every one grouped by transition.
    monkeypatch.setattr(SyncGenerator, "local", lambda self: [False] * 5)
    same_graph(ref, build_state_graph(cm, chunk_size=chunk))
