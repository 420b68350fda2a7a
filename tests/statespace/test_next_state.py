"""The public next-state interface (statespace/next_state) against the plain interpreter of
tests/statespace/ss_oracle.py, state by state: every reachable state of a model given to its
generator as one chunk, and each state's steps (action or step code, successor or the error
state, costs and time) compared with the interpreter's; the steps of a chunk do not depend on
how the states are split into chunks."""

from __future__ import annotations

import numpy as np
import pytest
import ss_oracle
from ss_helpers import compiled
from ss_models import BUF, COMMIT2, PROD, RDV, RINGS_SYNC, WIDE_KEYS

from statespace import build_state_graph
from statespace.next_state import AsyncGenerator, SyncGenerator, generator_for

PROD_AB = PROD % "qa -> qb { guard P1.b; }, qb -> qc {}, qc -> qc {}"

MODELS = {"rdv": RDV, "buf": BUF, "commit": COMMIT2, "sync": RINGS_SYNC, "wide": WIDE_KEYS,
          "property": PROD_AB}


def _chunk(cm, g):
    """Every state of ``g`` as a chunk (keys, X), the error state hidden as a search hides it."""
    gen = generator_for(cm)
    X = np.ascontiguousarray(g.states.T.astype(np.int32))
    keys = gen.layout.pack(X, np)
    if g.error_state >= 0:
        X[[p.slot for p in cm.processes], g.error_state] = -1
    return gen, keys, X


def _steps(cm, gen, s):
    """Per source row: sorted (action or code, successor tuple or None, charges or None)."""
    out: dict[int, list] = {}
    Y = gen.layout.unpack(s.keys, np, dtype=np.int64)
    for k in range(len(s)):
        a = int(s.action[k])
        code = gen.step_codes()[a] if cm.system == "sync" else a
        if s.error[k]:
            out.setdefault(int(s.source[k]), []).append((code, None, None))
            continue
        if s.costs is None:
            ct, tt = gen.charge_table
            charge = (tuple(int(ct[j][a]) for j in range(len(cm.resources))), int(tt[a]))
        else:
            charge = (tuple(int(s.costs[r][k]) for r in cm.resources), int(s.time[k]))
        out.setdefault(int(s.source[k]), []).append((code, tuple(Y[:, k].tolist()), charge))
    return {r: sorted(v, key=repr) for r, v in out.items()}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_successors_agree_with_the_interpreter(name):
    cm = compiled(MODELS[name])
    g = build_state_graph(cm)
    gen, keys, X = _chunk(cm, g)
    assert isinstance(gen, SyncGenerator if cm.system == "sync" else AsyncGenerator)
    got = _steps(cm, gen, gen.successors(keys, X))
    it = ss_oracle.Interp(cm)
    for r in range(g.n_states):
        want = []
        if r != g.error_state:
            for code, new, costs, tm in ss_oracle.successors(it, cm, [int(v) for v in g.states[r]]):
                if new is None:
                    want.append((code, None, None))
                else:
                    want.append((code, tuple(int(v) for v in new),
                                 (tuple(int(costs[x]) for x in cm.resources), int(tm))))
        assert got.get(r, []) == sorted(want, key=repr), (name, r)


@pytest.mark.parametrize("name", sorted(MODELS))
@pytest.mark.parametrize("cut", [1, 2, 5])
def test_steps_do_not_depend_on_the_chunks(name, cut):
    cm = compiled(MODELS[name])
    g = build_state_graph(cm)
    gen, keys, X = _chunk(cm, g)
    whole = _steps(cm, gen, gen.successors(keys, X))
    parts: dict[int, list] = {}
    for lo in range(0, g.n_states, cut):
        hi = min(g.n_states, lo + cut)
        s = gen.successors(keys[lo:hi], np.ascontiguousarray(X[:, lo:hi]))
        for r, v in _steps(cm, gen, s).items():
            parts[r + lo] = v
    assert parts == whole
