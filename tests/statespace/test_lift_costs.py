"""Decoding costs what it shows: lifting a symmetry quotient's runs reuses what exploration
built, looks transitions' images up without rewriting every transition, skips the twist search
where it cannot succeed, and the capacity commands decode only their answers' runs.

Each fast path is checked against something that shares no code with it: the images against
the model's own step function, the skipped search against running it, the reused code against
the code generated afresh (same runs).
"""

from __future__ import annotations

import dataclasses
import itertools
import random

import numpy as np
import pytest

import dve
import statespace.evaluate as evaluate_module
import statespace.quotient as quotient_module
from scenarios.templates import TEMPLATES
from statespace import build_state_graph, compile_model
from statespace.next_state import SyncGenerator
from statespace.quotient import build_quotient_graph
from statespace.renaming import ChoiceRenaming, apply_renaming
from statespace.symmetry import NO_SYMMETRY, detect_symmetry
from statespace.witness import decode_runs

import ocm


def _compiled(name: str, n: int):
    return compile_model(dve.load_model(TEMPLATES[name].family(n).to_model()))


def _critical(q, resource):
    g = q.graph
    r = ocm.optimal_cycle(g.indptr, g.indices, g.cost(resource), g.time, kind="mean",
                          mode="max", backend="cpu")
    return r.cycle_edges


@pytest.mark.parametrize("name,n", [("paper-server", 3), ("editor", 3)])
def test_renamed_steps_are_steps_of_the_model(name, n):
    """Every step of the full graph, renamed (members moved, the server's transition mapped by
    transition_image), is the model's step from the renamed state to the renamed successor:
    the model's own step function says so, with the same cost and time."""
    cm = _compiled(name, n)
    sym = detect_symmetry(cm)
    assert sym.reduces and sym.families       # the server names the clients: images needed
    g = build_state_graph(cm, )
    gen = SyncGenerator(cm)
    renaming = ChoiceRenaming(cm, sym)
    rng = random.Random(27)
    perms = [[np.array(rng.sample(range(gr.size), gr.size)) for gr in sym.groups]
             for _ in range(6)]
    edges = rng.sample(range(g.n_edges), min(g.n_edges, 150))
    src = np.searchsorted(g.indptr, edges, side="right") - 1
    checked = 0
    for perm in perms:
        images: dict = {}
        for e, s in zip(edges, src):
            if int(g.indices[e]) == g.error_state:
                continue
            C = np.asarray([cm.sync_choice(g.model_action(int(g.action[e])))], np.int64)
            C2 = renaming.rename(C, perm, images)
            X = apply_renaming(sym, g.states[s].reshape(-1, 1).astype(np.int64), perm)
            Y, err, costs, time = gen.step(X.astype(np.int32), np.zeros(1, np.int64), C2,
                                           np.zeros(1, bool))
            want = apply_renaming(sym, g.states[int(g.indices[e])].reshape(-1, 1)
                                  .astype(np.int64), perm)
            assert not err[0]
            assert np.array_equal(np.asarray(Y, np.int64)[:, 0], want[:, 0])
            for res in cm.resources:
                assert int(costs[res][0]) == int(g.cost(res)[e])
            checked += 1
    assert checked > 100


def _one_round_calls(monkeypatch):
    """Record, for each walk, whether _may_close allowed the search and whether the search
    (run whatever _may_close says) closed the walk in one round."""
    seen = []
    may, one = quotient_module._may_close, quotient_module._one_round

    def may_close(*a):
        seen.append([may(*a), None])
        return True

    def one_round(*a):
        got = one(*a)
        if seen:
            seen[-1][1] = got is not None
        return got

    monkeypatch.setattr(quotient_module, "_may_close", may_close)
    monkeypatch.setattr(quotient_module, "_one_round", one_round)
    return seen


def test_the_twist_search_is_skipped_only_where_it_fails(monkeypatch):
    """_may_close is a necessary condition: over the bundled templates' critical cycles (max
    and min, both resources), no walk it refuses closes in one round; it refuses some (it
    does cut the search), and some walks it allows do close."""
    seen = _one_round_calls(monkeypatch)
    for name, n in [("paper-server", 3), ("paper-server", 5), ("editor", 3), ("editor", 4)]:
        q = build_quotient_graph(_compiled(name, n))
        for res in q.model.resources:
            for mode in ("max", "min"):
                g = q.graph
                r = ocm.optimal_cycle(g.indptr, g.indices, g.cost(res), g.time, kind="mean",
                                      mode=mode, backend="cpu")
                quotient_module.lift_walk(q, r.cycle_edges)
    assert seen
    assert not [s for s in seen if not s[0] and s[1]], "a walk that closes was refused"
    assert any(not s[0] for s in seen) and any(s[1] for s in seen)


def test_a_refused_search_gives_the_same_lifted_cycle(monkeypatch):
    """paper-server 7's critical cycle needs three rounds: the search is refused, and the
    lifted run is the one the search (which fails) would have left."""
    q = build_quotient_graph(_compiled("paper-server", 7))
    edges = _critical(q, "server")
    fast = quotient_module.lift_walk(q, edges)
    seen = _one_round_calls(monkeypatch)
    slow = quotient_module.lift_walk(q, edges)
    assert seen == [[False, False]]
    assert [s.tolist() for s in fast[0]] == [s.tolist() for s in slow[0]]
    assert fast[1] == slow[1] and fast[2] == slow[2]
    assert len(fast[1]) == 3 * len(edges)


def _compile_counter(monkeypatch):
    calls = []
    real = compile

    def counting(*a, **k):
        calls.append(a[1] if len(a) > 1 else None)
        return real(*a, **k)

    monkeypatch.setattr(evaluate_module, "compile", counting, raising=False)
    return calls


def test_lifting_reuses_the_code_exploration_generated(monkeypatch):
    """A system sync quotient keeps the guards and effects its exploration generated; lifting
    its runs generates no code, and gives the same runs as lifting with code generated afresh
    (which does compile)."""
    q = build_quotient_graph(_compiled("editor", 4))
    assert q.transitions is not None
    edges = _critical(q, "busy")
    calls = _compile_counter(monkeypatch)
    runs = decode_runs(q, edges, "busy")
    assert calls == []
    fresh = decode_runs(dataclasses.replace(q, transitions=None), edges, "busy")
    assert calls, "lifting without the exploration's code generates it"
    assert [s.as_dict() for s in runs.prefix + runs.cycle] == \
        [s.as_dict() for s in fresh.prefix + fresh.cycle]
    assert runs.cycle


def test_a_full_product_keeps_no_code():
    """Without symmetry there is nothing to lift: the quotient holds no generated code."""
    q = build_quotient_graph(_compiled("paper-server", 2), symmetry=NO_SYMMETRY)
    assert not q.reduced and q.transitions is None


def _decode_counter(monkeypatch):
    import dvecost.analysis as analysis
    decoded, analysed = [], []
    real_decode, real_analyze = analysis.decode_runs, analysis.analyze

    def decode(*a, **k):
        decoded.append(a[2])
        return real_decode(*a, **k)

    def analyze(*a, **k):
        analysed.append(k.get("witness", True))
        return real_analyze(*a, **k)

    monkeypatch.setattr(analysis, "decode_runs", decode)
    monkeypatch.setattr(analysis, "analyze", analyze)
    return decoded, analysed


def test_headroom_decodes_only_its_answers_runs(monkeypatch):
    """headroom decodes the runs it shows: the critical cycle of the occupancy and that of the
    worst cost load, no other."""
    from dvecost.capacity import headroom
    decoded, analysed = _decode_counter(monkeypatch)
    r = headroom("paper-server", {"client": 3}, backend="cpu")
    assert decoded == ["busy", "server"]
    assert r.witness.cycle and r.cost_witness.cycle
    assert len(analysed) == 2


def test_saturate_decodes_only_the_answers_run(monkeypatch):
    """saturate evaluates many points and decodes the answer's runs only (every other point is
    analysed for its value alone)."""
    from dvecost.saturation import saturate
    decoded, analysed = _decode_counter(monkeypatch)
    r = saturate("paper-server", backend="cpu", method="exact", max_clients=6)
    held = [w for w in (r.witness, r.cost_witness) if w is not None and w.cycle]
    assert held and len(decoded) == len(held)
    assert analysed.count(True) == len(held)
    assert analysed.count(False) >= 2       # the search's points: values only
