"""``system sync`` quotients with the joint choices made per class
(statespace/next_state/symmetric.py, ``SyncChoiceGenerator``) against the sorting loop over
states (``QuotientGenerator``, ``counting=False``): the same graph, array for array; and
against the plain interpreter of tests/statespace/ss_oracle.py, which steps every concrete
combination of a representative's choices."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dve
import statespace
from ss_oracle import Interp, successors
from statespace.next_state import SyncChoiceGenerator
from statespace.quotient import build_quotient_graph
from test_symmetry import SYNC
from test_symmetry_counting import same_graph

# Clients of two local variables and three branches: runs of equal members split three ways.
WIDE = SYNC.replace("byte n;", "byte n; byte m;").replace(
    "think -> heavy { guard n == 2; effect n = 0; cost 3; time 2; },",
    "think -> heavy { guard n == 2; effect n = 0; cost 3; time 2; },\n"
    "        think -> heavy { guard n == 2; effect n = 0, m = (m + 1) % 2; cost 2; time 5; },")


def compiled(text, **defines):
    return statespace.compile_model(dve.load_model(text, defines=defines))


def _scenario(name, n, workers=None):
    from scenarios import Server, System
    from scenarios.templates import TEMPLATES
    system = TEMPLATES[name].family(n)
    if workers is not None:
        system = System(dict(system.counts), server=Server(workers=workers), name=name)
    return statespace.compile_model(system.to_model())


CASES = [("sync", lambda: compiled(SYNC, N=2)), ("sync", lambda: compiled(SYNC, N=5)),
         ("wide", lambda: compiled(WIDE, N=4)),
         ("paper-server", lambda: _scenario("paper-server", 3)),
         ("editor", lambda: _scenario("editor", 5)),
         ("editor-pool", lambda: _scenario("editor", 5, workers=2))]


@pytest.mark.parametrize("i", range(len(CASES)))
@pytest.mark.parametrize("chunk", [None, 16])
def test_per_class_choices_build_the_sorting_explorers_graph(i, chunk):
    cm = CASES[i][1]()
    sort = build_quotient_graph(cm, counting=False, chunk_size=chunk)
    per_class = build_quotient_graph(cm, chunk_size=chunk)
    assert per_class.reduced and per_class.graph.n_states < per_class.full_size()
    same_graph(sort.graph, per_class.graph)
    assert np.array_equal(sort.graph.states, per_class.graph.states)
    assert per_class.full_size() == sort.full_size()


def test_sync_models_use_the_per_class_explorer(monkeypatch):
    made = []
    real = SyncChoiceGenerator.__init__

    def spy(self, *a):
        made.append(self)
        real(self, *a)
    monkeypatch.setattr(SyncChoiceGenerator, "__init__", spy)
    build_quotient_graph(compiled(SYNC, N=3))
    assert len(made) == 1
    build_quotient_graph(compiled(SYNC, N=3), counting=False)
    assert len(made) == 1


def _orbit(members, st):
    """An orbit's name, written here: the slots outside the group, then the members' local
    vectors as a sorted list (these models hold no keys)."""
    inside = {s for row in members for s in row}
    rest = tuple(v for j, v in enumerate(st) if j not in inside)
    return rest, tuple(sorted(tuple(st[s] for s in row) for row in members))


@pytest.mark.parametrize("text,n", [(SYNC, 4), (WIDE, 3), (WIDE, 4)])
def test_each_class_steps_once_per_multiset_of_its_runs_choices(text, n):
    cm = compiled(text, N=n)
    q = build_quotient_graph(cm)
    g = q.graph
    (group,) = q.symmetry.groups
    members = [list(row) for row in group.member_slots]
    cols = {p: i for i, p in enumerate(p.index for p in cm.system_processes)}
    member_cols = [cols[p] for p in group.processes]
    it = Interp(cm)
    err = tuple(cm.error_state)
    res = cm.resources[0]
    for s in range(g.n_states):
        st = [int(v) for v in g.states[s]]
        if tuple(st) == err:
            continue
        got = [(_orbit(members, [int(v) for v in g.states[int(t)]]),
                int(g.costs[res][e]), int(g.time[e]))
               for e, t in zip(range(g.indptr[s], g.indptr[s + 1]),
                               g.indices[g.indptr[s]:g.indptr[s + 1]])]
        want, multisets = set(), set()
        for code, new, costs, tm in successors(it, cm, st):
            want.add((_orbit(members, new), costs[res], tm))
            # The choice of each process (digits of the step code), members' as runs of equal
            # local vectors: one multiset per run.
            digits = []
            for p in reversed(cm.system_processes):
                base = max(1, len(p.transitions))
                digits.append(code % base)
                code //= base
            digits.reverse()
            runs = {}
            for k, c in enumerate(member_cols):
                runs.setdefault(tuple(st[x] for x in members[k]), []).append(digits[c])
            others = tuple(d for c, d in enumerate(digits) if c not in member_cols)
            multisets.add((others, tuple(sorted((v, tuple(sorted(d))) for v, d in runs.items()))))
        assert set(got) == want
        assert len(got) == len(multisets)


@pytest.mark.parametrize("i", [3, 4, 5])
@pytest.mark.parametrize("how", ["from-steps", "too-wide"])
def test_codes_from_pairs_and_from_the_steps_agree(i, how, monkeypatch):
    """A group whose members' effects are their own gets its sort codes from the members'
    (row, transition) pairs; the same graph when they are read from the written steps, and
    when the codes are too wide to pack (the members' slots written, then sorted)."""
    cm = CASES[i][1]()
    ref = build_quotient_graph(cm, chunk_size=16)
    if how == "from-steps":
        monkeypatch.setattr(SyncChoiceGenerator, "_fusable",
                            lambda self: [False] * len(self.sym.groups))
    else:
        monkeypatch.setattr(sys.modules["statespace.next_state.symmetric"], "_CODE_BITS", 0)
    got = build_quotient_graph(cm, chunk_size=16)
    same_graph(ref.graph, got.graph)
    assert np.array_equal(ref.graph.states, got.graph.states)
