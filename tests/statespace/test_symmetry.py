"""Symmetry reduction (issue 14): the quotient against the full product.

The full product comes from the slow interpreter ``ss_oracle`` (it shares no code with the
explorer); orbits are counted here by applying every permutation of the keys to its states,
with slot names read off the layout (no code of ``statespace.symmetry``).
"""

from __future__ import annotations

import itertools
import math
import pathlib
import re
from fractions import Fraction

import pytest
import ss_oracle

import dve
import ocm
import statespace
from statespace.quotient import build_quotient_graph, lift_walk
from statespace.symmetry import NO_SYMMETRY, detect_symmetry

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "dvecost" / "examples"
CS = (EXAMPLES / "client_server_template.dve").read_text()

# A key-indexed array (the server marks the client it finished with), a counter per client.
DONE = """
input int N = 3;
byte done[N + 1];
channel req;
process Server { byte who; state idle, busy; init idle;
  trans idle -> busy { sync req?who; cost 1; time 2; },
        busy -> idle { effect done[who] = 1, who = 0; cost 3; };
}
process Client(key id) { byte n; state a, b; init a;
  trans a -> b { guard n < 2; sync req!id; effect n = n + 1; time 1; },
        b -> a { guard done[id] == 1; effect done[id] = 0; cost 2; time 3; },
        a -> a { guard n == 2; effect n = 0; cost 1; };
}
for (k : 1 .. N) { process Client(k); }
system async;
"""

# Keys queued in a buffered channel, and a second server that remembers the last client.
QUEUE = """
input int N = 3;
channel {byte} q[2];
byte last;
process Server { byte who; state idle, busy; init idle;
  trans idle -> busy { sync q?who; time 1; },
        busy -> idle { guard who != last; effect last = who, who = 0; cost 5; time 2; },
        busy -> idle { guard who == last; effect who = 0; cost 1; time 1; };
}
process Client(key id) { state a, b; init a;
  trans a -> b { sync q!id; cost 1; time 1; },
        b -> a { guard Server.idle and Server->who != id; cost 1; time 3; };
}
for (k : 1 .. N) { process Client(k); }
system async;
"""

# Two groups, clients and workers; a worker serves through a rendezvous.
TWO = """
input int N = 2;
input int W = 2;
channel job;
process Client(key id) { state a, b; init a;
  trans a -> b { sync job!; cost 1; time 1; }, b -> a { cost 0; time 2; };
}
process Worker(key w) { byte n; state idle, busy; init idle;
  trans idle -> busy { sync job?; effect n = (n + 1) % 2; time 1; },
        busy -> idle { guard n == 0; cost 3; time 4; },
        busy -> idle { guard n == 1; cost 1; time 1; };
}
for (k : 1 .. N) { process Client(k); }
for (k : 1 .. W) { process Worker(k); }
system async;
"""

# system sync: clients step in lockstep, so many stand in one branching state at once.
SYNC = """
input int N = 3;
process Server { byte k; state idle, busy; init idle;
  trans idle -> idle { guard k < 1; effect k = k + 1; },
        idle -> busy { guard k == 1; effect k = 0; cost 1; },
        busy -> idle { cost 2; time 3; };
}
process Client(key id) { byte n; state think, light, heavy; init think;
  trans think -> think { guard n < 2; effect n = n + 1; time 1; },
        think -> light { guard n == 2; effect n = 0; cost 1; },
        think -> heavy { guard n == 2; effect n = 0; cost 3; time 2; },
        light -> think { guard Server.idle; cost 1; },
        heavy -> think { guard Server.busy; cost 2; time 4; },
        light -> light { guard Server.busy; },
        heavy -> heavy { guard Server.idle; };
}
for (k : 1 .. N) { process Client(k); }
system sync;
"""

# A server written with a transition per client (what the scenario DSL writes): the family
# is permuted by renaming the keys, and so is the guard "nobody is waiting".
FAMILY = """
byte req[4];
byte done;
process Server { byte cur; state idle, busy; init idle;
  trans idle -> busy { guard req[1] != 0 and done != 1; effect cur = 1; cost 1; },
        idle -> busy { guard req[2] != 0 and done != 2; effect cur = 2; cost 1; },
        idle -> busy { guard done != 3 and req[3] == 2; effect cur = 3; cost 3; time 2; },
        idle -> busy { guard req[1] == 2 and done != 1; effect cur = 1; cost 3; time 2; },
        idle -> busy { guard req[2] == 2 and done != 2; effect cur = 2; cost 3; time 2; },
        idle -> busy { guard req[3] != 0 and done != 3; effect cur = 3; cost 1; },
        busy -> idle { effect done = cur, cur = 0; cost 2; time 3; },
        idle -> idle { guard not ((req[1] != 0 and done != 1) or (req[3] != 0 and done != 3)
                                  or (req[2] != 0 and done != 2)); effect done = 0; };
}
process Client(key id) { state think, wait; init think;
  trans think -> wait { effect req[id] = 1; time 2; },
        think -> wait { effect req[id] = 2; time 1; },
        wait -> think { guard done == id; effect req[id] = 0; cost 1; };
}
for (k : 1 .. 3) { process Client(k); }
system async;
"""

# name -> (text, {template: (arrays indexed by its keys, slot names holding its keys)})
MODELS = {
    "cs": (CS, {"Client": ((), ("Server.who",))}),
    "done": (DONE, {"Client": (("done",), ("Server.who",))}),
    "queue": (QUEUE, {"Client": ((), ("Server.who", "last", "q[0].0", "q[1].0"))}),
    "two": (TWO, {"Client": ((), ()), "Worker": ((), ())}),
    "sync": (SYNC, {"Client": ((), ())}),
    "family": (FAMILY, {"Client": (("req",), ("done", "Server.cur"))}),
}


def compiled(text: str, **defines):
    return statespace.compile_model(dve.load_model(text, defines=defines))


def orbit_key(cm, spec, state):
    """The least image of ``state`` under all permutations of each group's keys."""
    names = [s.name for s in cm.slots]
    best = None
    groups = []
    for t, (arrays, holders) in spec.items():
        keys = sorted(int(m.group(1)) for p in cm.processes
                      for m in [re.fullmatch(rf"{t}_(\d+)", p.name)] if m)
        groups.append((t, keys, arrays, holders))
    for perms in itertools.product(*[itertools.permutations(k) for _, k, _, _ in groups]):
        new = list(state)
        for (t, keys, arrays, holders), image in zip(groups, perms):
            ren = dict(zip(keys, image))
            for j, name in enumerate(names):
                m = re.fullmatch(rf"{t}_(\d+)((\..*)?)", name)
                if m and int(m.group(1)) in ren:
                    new[names.index(f"{t}_{ren[int(m.group(1))]}{m.group(2)}")] = state[j]
                for a in arrays:
                    m = re.fullmatch(rf"{re.escape(a)}\[(\d+)\]", name)
                    if m and int(m.group(1)) in ren:
                        new[names.index(f"{a}[{ren[int(m.group(1))]}]")] = state[j]
                if name in holders:
                    new[j] = ren.get(state[j], state[j])
        t = tuple(new)
        if best is None or t < best:
            best = t
    return best


def full_graph(cm):
    states, edges = ss_oracle.explore(cm)
    out = {i: [] for i in range(len(states))}
    for s, d, a, costs, tm in edges:
        out[s].append((d, a, tuple(costs[r] for r in cm.resources), tm))
    return states, out


CASES = [("cs", {"N": 2}), ("cs", {"N": 3}), ("cs", {"N": 4}), ("done", {"N": 2}),
         ("done", {"N": 3}), ("queue", {"N": 2}), ("queue", {"N": 3}), ("two", {"N": 2, "W": 2}),
         ("two", {"N": 3, "W": 2}), ("sync", {"N": 2}), ("sync", {"N": 3}), ("sync", {"N": 4}),
         ("family", {})]


@pytest.mark.parametrize("name,defines", CASES)
def test_classes_are_the_orbits_and_edges_match(name, defines):
    text, spec = MODELS[name]
    cm = compiled(text, **defines)
    sym = detect_symmetry(cm)
    assert sorted(g.template for g in sym.groups) == sorted(spec), sym.reason
    q = build_quotient_graph(cm)
    states, succ = full_graph(cm)
    orbit = {st: orbit_key(cm, spec, st) for st in states}
    reps = [tuple(int(v) for v in row) for row in q.graph.states]
    # One representative per orbit, every orbit represented.
    assert len({orbit[r] for r in reps}) == len(reps) == len(set(orbit.values()))
    assert q.full_size() == len(states)
    # Bisimulation with labels: from each representative, the full graph's (orbit of target,
    # costs, time) set equals the quotient's.
    ids = {st: i for i, st in enumerate(states)}
    g = q.graph
    res = list(g.costs)
    for i, r in enumerate(reps):
        want = {(orbit[states[d]], c, tm) for d, _, c, tm in succ[ids[r]]}
        got = set()
        for e in range(g.indptr[i], g.indptr[i + 1]):
            tgt = reps[int(g.indices[e])]
            got.add((orbit[tgt], tuple(int(g.costs[k][e]) for k in res), int(g.time[e])))
        assert got == want, (name, i)


def _value(g, kind, mode):
    return ocm.optimal_cycle(g.indptr, g.indices, g.cost(), g.time if kind == "ratio" else None,
                             kind=kind, mode=mode, backend="cpu")


@pytest.mark.parametrize("name,defines", CASES)
def test_values_equal_the_full_product_and_witness_replays(name, defines):
    text, _ = MODELS[name]
    cm = compiled(text, **defines)
    q = build_quotient_graph(cm)
    assert q.reduced
    full = statespace.build_state_graph(cm)
    it = ss_oracle.Interp(cm)
    for kind in ("mean", "ratio"):
        for mode in ("max", "min"):
            rq, rf = _value(q.graph, kind, mode), _value(full, kind, mode)
            assert rq.value == rf.value, (kind, mode)
            states, actions, used, _ = lift_walk(q, rq.cycle_edges)
            assert len(actions) % len(rq.cycle_edges) == 0
            assert tuple(states[0]) == tuple(states[-1])
            cost = time = 0
            for st, a, nxt in zip(states, actions, states[1:]):
                steps = [(c, tm) for act, new, c, tm in
                         ss_oracle.successors(it, cm, [int(v) for v in st])
                         if act == a and new is not None
                         and tuple(new) == tuple(int(v) for v in nxt)]
                assert steps, f"step {cm.describe_action(a)} does not replay"
                c, tm = steps[0]
                cost += c[cm.resources[0]]
                time += tm
            den = time if kind == "ratio" else len(actions)
            assert Fraction(cost, den) == rq.value


def test_lifted_witness_names_real_clients_and_closes_after_rounds():
    # The cheapest cycle serves every client in turn: the quotient cycle rotates the clients,
    # and the run must go round until each is back in its own state.
    cm = compiled(CS, N=3)
    q = build_quotient_graph(cm)
    r = _value(q.graph, "mean", "min")
    states, actions, _, _ = lift_walk(q, r.cycle_edges)
    assert len(actions) == 3 * len(r.cycle_edges)
    movers = {m["process"] for a in actions for m in cm.action_moves(a)}
    assert {"Client_1", "Client_2", "Client_3"} <= movers


def test_class_count_formula_for_the_template_family():
    # Issue 14: C(N+2, 2) + 4 C(N+1, 2) classes for the client/server family.
    for n in (5, 30):
        q = build_quotient_graph(compiled(CS, N=n))
        assert q.graph.n_states == math.comb(n + 2, 2) + 4 * math.comb(n + 1, 2)
    assert q.full_size() > 10**15


def test_sync_successors_are_counted_per_class():
    # 12 clients in lockstep reach their branching state together: 2^12 concrete steps, but
    # 13 classes of successors (how many take the heavy branch).
    cm = compiled(SYNC, N=12)
    q = build_quotient_graph(cm)
    g = q.graph
    deg = g.indptr[1:] - g.indptr[:-1]
    assert q.reduced and q.full_size() > 10 * g.n_states
    # From the state where all 12 clients branch at once (times the server's two choices).
    assert 13 <= int(deg.max()) <= 13 * 2


def test_sync_members_sharing_a_global_are_not_reduced():
    # Effects run process by process in a sync step: a global every member writes makes the
    # order of the members matter.
    text = "byte g;\n" + SYNC.replace("effect n = 0; cost 1;", "effect n = 0, g = n; cost 1;")
    cm = compiled(text, N=3)
    q = build_quotient_graph(cm)
    assert not q.reduced and "writes 'g'" in q.symmetry.reason
    assert q.graph.n_states == statespace.build_state_graph(cm).n_states


def test_off_explores_the_full_product():
    cm = compiled(CS, N=3)
    q = build_quotient_graph(cm, symmetry=NO_SYMMETRY)
    assert not q.reduced and q.graph.n_states == q.full_size() == 135


REFUSED = [
    ("literal key", "who == 2", "renaming of the keys"),
    ("arithmetic on a key", "who + 1 == 2", "used as data"),
    ("order on keys", "who < 2", "used as data"),
    ("another instance named", "Client_1.a", "names instances"),
]


def _variant(guard: str) -> str:
    return f"""
channel req;
process Server {{ byte who; state idle, busy; init idle;
  trans idle -> busy {{ sync req?who; }}, busy -> idle {{ guard {guard}; effect who = 0; }},
        busy -> idle {{ guard not ({guard}); effect who = 0; cost 1; }}; }}
process Client(key id) {{ state a, b; init a;
  trans a -> b {{ sync req!id; }}, b -> a {{ guard Server->who != id; }}; }}
for (k : 1 .. 3) {{ process Client(k); }}
system async;"""


@pytest.mark.parametrize("what,guard,reason", REFUSED)
def test_asymmetric_models_are_not_reduced_and_say_why(what, guard, reason):
    cm = compiled(_variant(guard))
    sym = detect_symmetry(cm)
    assert not sym.reduces
    assert reason in sym.reason
    q = build_quotient_graph(cm)
    assert q.graph.n_states == statespace.build_state_graph(cm).n_states


def test_a_family_that_misses_a_key_is_refused():
    # Client 3 has no heavy request in the server: renaming keys does not map the family
    # onto itself.
    text = FAMILY.replace("idle -> busy { guard done != 3 and req[3] == 2; effect cur = 3; "
                          "cost 3; time 2; },", "")
    sym = detect_symmetry(compiled(text))
    assert not sym.reduces and "renaming of the keys" in sym.reason


@pytest.mark.parametrize("text,reason", [
    (CS.replace("think -> ready { cost 0; time 4; }",
                "think -> ready { cost id; time 4; }"), "used as data"),
    (DONE.replace("byte n;", "byte n, me = id;"), "holds keys"),
    (DONE.replace("byte done[N + 1];", "byte done[N + 1] = {0, 1};"), "different values"),
])
def test_key_misuse_in_templates_is_refused(text, reason):
    sym = detect_symmetry(compiled(text, N=3))
    assert not sym.reduces and reason in sym.reason


def test_expanded_per_client_processes_are_not_groups():
    # The expanded cs_N form (a process and a reply channel per client) has no template.
    cm = compiled((EXAMPLES / "client_server.dve").read_text())
    sym = detect_symmetry(cm)
    assert not sym.reduces and sym.reason
