"""States of thousands of slots: the packed-key paths for many words and many written slots.

An array cell written at a computed index writes every cell of the array, and ``byte b[100]``
with ``int w[40]`` packs into 23 words: the engine handles both in whole-array NumPy passes (issue 12: a
``byte b[16000]`` model of 201 states took 32 s, one pass per slot and per word at every
level). The graphs are checked against the plain per-state interpreter of ``ss_oracle``.
"""

from __future__ import annotations

import time

import numpy as np
import ss_oracle
from ss_helpers import compiled

import dve
from statespace import build_state_graph, validate_graph

WIDE = """
byte b[100];
int w[40];
byte i, j;
process A { state s; init s;
  trans s -> s { guard i < 4; effect b[(i * 7) % 100] = b[i] + i + 1, i = i + 1; cost i; },
        s -> s { guard i < 4 && i % 2 == 0; effect w[i % 40] = w[i % 40] - 300 * i; }; }
process B { state t, u; init t;
  trans t -> u { guard j < 3; effect b[99 - j] = 200 + j, j = j + 1; },
        u -> t { effect w[j] = -32768 + j, b[j * 50] = 255; }; }
system async;
"""


def test_wide_states_match_the_oracle():
    cm = compiled(WIDE)
    g = build_state_graph(cm, chunk_size=3)  # small chunks: many levels, several rows each
    validate_graph(g)
    states, edges = ss_oracle.explore(cm)
    assert g.n_states == len(states) > 30
    assert g.states.astype(np.int64).tolist() == [list(s) for s in states]
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr))
    ours = list(zip(src.tolist(), g.indices.tolist(),
                    [g.model_action(a) for a in g.action.tolist()]))
    assert ours == [e[:3] for e in edges]


def test_a_large_array_written_at_a_computed_index_is_quick():
    model = dve.load_model("byte b[16000];\nbyte i;\nprocess P { state s; init s;\n"
                           "  trans s -> s { guard i < 200; effect b[i] = 1, i = i + 1; };\n}\n"
                           "system async;\n")
    t0 = time.process_time()
    g = build_state_graph(model)
    assert time.process_time() - t0 < 10  # 32 s before (16 s of CPU), about 1.5 s now
    assert (g.n_states, g.n_edges) == (201, 200)
    last = g.states[-1]  # the control state (0), b[0..199] = 1, the rest of b 0, i = 200
    assert np.count_nonzero(last == 1) == 200 and np.count_nonzero(last) == 201
    assert last.max() == 200 and len(last) == 16002


def _ring(n: int) -> str:
    """A process of ``n`` control states in a ring with shortcuts, a second one committed at
    times: many source states (rows grouped by control state), with and without commit."""
    states = ", ".join(f"s{k}" for k in range(n))
    trans = [f"s{k} -> s{(k + 1) % n} {{ cost 1; }}" for k in range(n)]
    trans += [f"s{k} -> s{(k * 7 + 3) % n} {{ guard x < 2; effect x = x + 1; cost 2; }}"
              for k in range(0, n, 5)]
    return (f"byte x;\nprocess P {{ state {states}; init s0;\n  trans {', '.join(trans)};\n}}\n"
            "process Q { state a, b, c; init a; commit b;\n"
            "  trans a -> b { guard x == 1; }, b -> c { effect x = 0; }, c -> a {}; }\n"
            "system async;\n")


def test_many_control_states_match_the_oracle():
    cm = compiled(_ring(120))
    g = build_state_graph(cm, chunk_size=7)
    validate_graph(g)
    states, edges = ss_oracle.explore(cm)
    assert g.n_states == len(states) > 300
    assert g.states.astype(np.int64).tolist() == [list(s) for s in states]
    src = np.repeat(np.arange(g.n_states), np.diff(g.indptr))
    assert list(zip(src.tolist(), g.indices.tolist(),
                    [g.model_action(a) for a in g.action.tolist()])) == [e[:3] for e in edges]
