"""Every run that ``analyze`` prints is a run of the model: replayed step by step by an
interpreter that shares no code with the report (tests/dvecost/replay.py)."""

from __future__ import annotations

import copy
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dve
import scenarios
from dvecost import analyze
from dvecost.analysis import NoCycleRun, ZeroTimeCycleRun
from dvecost.cli import main
from dvecost.examples import EXAMPLES, example_path
from replay import ReplayError, Replayer, replay_analysis, replay_run


def replayed(model_text_or_path, **kw) -> int:
    """Analyse, then replay everything the JSON object shows; the number of steps checked."""
    a = analyze(model_text_or_path, backend="cpu", **kw)
    n = replay_analysis(dve.load_model(model_text_or_path, defines=kw.get("defines")),
                        a.as_dict())
    assert n >= len(a.cycle) > 0
    return n


# ---------------------------------------------------------------------------- bundled examples

def _example_runs():
    for name in EXAMPLES:
        resources = dve.load_model(example_path(name))
        costs = sorted({c.resource for p in resources.processes for t in p.transitions
                        for c in t.costs}) or [None]
        for cost in costs:
            for ratio in (False, True):
                for mode in ("max", "min"):
                    yield pytest.param(name, cost, ratio, mode,
                                       id=f"{name}-{cost}-{'ratio' if ratio else 'mean'}-{mode}")


@pytest.mark.parametrize("name, cost, ratio, mode", list(_example_runs()))
def test_every_bundled_example_replays(name, cost, ratio, mode):
    path = example_path(name)
    try:
        replayed(path, cost=cost, ratio=ratio, mode=mode)
    except ZeroTimeCycleRun as exc:
        check_zero_time(dve.load_model(path), exc, cost or "cost")


def check_zero_time(model, exc: ZeroTimeCycleRun, resource: str) -> None:
    """The zero-time cycle of the error message is a cycle of the model taking no time."""
    rp = Replayer(model, resource)
    prefix = [s.as_dict() for s in exc.prefix]
    start, _, _ = replay_run(rp, rp.initial(), prefix, where="prefix", start_id=0)
    cycle = [s.as_dict() for s in exc.trace]
    end, _, time = replay_run(rp, start, cycle, where="zero-time cycle",
                              start_id=cycle[0]["from"])
    assert end == start and time == 0 and cycle[-1]["to"] == cycle[0]["from"]


# ---------------------------------------------------------------------------- scenario templates

def _template_text(name: str, n: int) -> tuple[str, str]:
    system = scenarios.TEMPLATES[name].family(n)
    return dve.format_model(system.to_model()), system.resource


@pytest.mark.parametrize("name", list(scenarios.TEMPLATES))
@pytest.mark.parametrize("n", [1, 2, 3])
def test_every_template_replays_at_small_n(name, n):
    text, resource = _template_text(name, n)
    replayed(text, cost=resource)


@pytest.mark.parametrize("name", list(scenarios.TEMPLATES))
@pytest.mark.parametrize("n", [4, 5])
def test_every_template_replays_at_n_4_and_5(name, n):
    """Where symmetry reduces the clients, the runs shown are the lifted ones."""
    text, resource = _template_text(name, n)
    replayed(text, cost=resource)
    replayed(text, cost=resource, ratio=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(scenarios.TEMPLATES))
@pytest.mark.parametrize("n", [4, 5])
def test_every_template_replays_at_n_4_and_5_without_symmetry(name, n):
    text, resource = _template_text(name, n)
    replayed(text, cost=resource, symmetry="off")


# ---------------------------------------------------------------------------- kinds of models

KINDS = {
    "async-arrays": """
        byte a[3] = {1, 2, 0}; int s = -5;
        process P { byte i; state x, y; init x;
            trans x -> y { guard i < 3; effect s = (s + a[i]) % 7 - 3, i = (i + 1) % 3;
                           cost a[0] + 1; time 2; },
                  y -> x { effect a[0] = (a[0] * 3) % 7; cost 2; };
        }
        process Q { state q; init q; trans q -> q { guard s < 0; effect s = s + 4; cost 1; }; }
        system async;""",
    "sync-shared-variable": """
        byte x;
        process A { state a0, a1, a2; init a0;
            trans a0 -> a1 { effect x = x + 1; cost 1; }, a1 -> a2 { cost 2; time 3; },
                  a2 -> a0 { guard x > 0; effect x = x - 1; cost 3; }; }
        process B { byte k; state b0, b1; init b0;
            trans b0 -> b1 { effect k = (k + 1) % 3; cost 5; }, b1 -> b0 { guard k != 2; cost k; },
                  b1 -> b1 { guard k == 2; effect k = 0; cost 4; time 2; }; }
        system sync;""",
    "rendezvous-values": """
        channel {byte, int} put[0]; channel go;
        byte got; int sum;
        process Client { byte n; state think, ask; init think;
            trans think -> ask { effect n = (n + 1) % 4; cost 1; },
                  ask -> think { sync put!{n, 0 - n}; cost n; time 2; },
                  ask -> ask { sync go!; }; }
        process Server { int v; state idle, busy; init idle;
            trans idle -> busy { sync put?{got, v}; effect sum = (sum + v) % 50; cost 3; },
                  busy -> idle { cost 2; time 3; },
                  idle -> idle { sync go?; cost 7; time 9; }; }
        system async;""",
    "buffered": """
        channel {byte} q[2]; byte last;
        process Prod { byte n; state p; init p;
            trans p -> p { sync q!n; effect n = (n + 1) % 3; cost 1; }; }
        process Cons { byte m; state c, d; init c;
            trans c -> d { sync q?m; effect last = m; cost m + 1; }, d -> c { time 2; }; }
        system async;""",
    "property": """
        byte x;
        process P { state a, b; init a;
            trans a -> b { effect x = (x + 1) % 3; cost 2; }, b -> a { cost 1; }; }
        process Prop { state s, t; init s; accept t;
            trans s -> t { guard x == 2; }, t -> s {}, s -> s {}; }
        system async property Prop;""",
    "property-with-charges": """
        byte x;
        process P { state a, b; init a;
            trans a -> b { effect x = (x + 1) % 3; cost 2; }, b -> a { cost 1; time 3; }; }
        process Prop { state s, t; init s; accept t;
            trans s -> t { guard x == 2; cost 5; }, t -> s { time 7; }, s -> s { cost x; }; }
        system async property Prop;""",
    "wide-costs": """
        int v = 30000;
        process P { state a, b, c; init a;
            trans a -> b { cost v * v * 1000; time v; },
                  b -> a { guard v > 0; cost 100000 * 100000; time 2; },
                  b -> c { guard v > 29999; cost 1; time v - 40000; }; }
        system async;""",
    "commit": """
        byte x;
        process P { state a, b, c; init a; commit b;
            trans a -> b { cost 1; }, b -> c { effect x = 1; cost 5; }, c -> a { effect x = 0; }; }
        process Q { state q; init q; trans q -> q { guard x == 0; cost 3; }; }
        system async;""",
    "deadlock-and-error": """
        byte x; byte d = 1;
        process P { state a, b, c, dead; init a;
            trans a -> c { cost 1; }, c -> c { effect x = (x + 1) % 2; cost 4; time 2; },
                  a -> b { effect x = 200; cost 1; }, b -> dead { cost 9; }; }
        process Q { state q, r; init q;
            trans q -> r { guard P.b; effect d = 0; }, r -> r { guard P.b; effect x = x / d; }; }
        system async;""",
}


@pytest.mark.parametrize("name", list(KINDS))
@pytest.mark.parametrize("ratio", [False, True])
def test_kinds_of_models_replay(name, ratio):
    replayed(KINDS[name], ratio=ratio)


def test_deadlock_and_error_traces_are_replayed():
    a = analyze(KINDS["deadlock-and-error"], backend="cpu")
    assert a.deadlock_trace and a.error_trace and a.error_trace[-1].error
    n = replay_analysis(dve.load_model(KINDS["deadlock-and-error"]), a.as_dict())
    assert n == len(a.prefix) + len(a.cycle) + len(a.deadlock_trace) + len(a.error_trace)


@pytest.mark.parametrize("text, end", [
    ("process P { state a, b, c; init a; trans a -> b { cost 1; }, b -> c {}; } system async;",
     "deadlock"),
    ("byte x = 250; process P { state a; init a; trans a -> a { effect x = x + 3; }; } "
     "system async;", "error"),
])
def test_no_cycle_traces_are_runs_of_the_model(text, end):
    with pytest.raises(NoCycleRun) as info:
        analyze(text, backend="cpu")
    steps = [s.as_dict() for s in info.value.trace]
    assert steps
    rp = Replayer(dve.load_model(text), "cost")
    last, _, _ = replay_run(rp, rp.initial(), steps, where=end, start_id=0)
    assert (last is None) == (end == "error")


# ---------------------------------------------------------------------------- generated models

@st.composite
def small_models(draw):
    """Two or three processes over one shared byte and one local byte each, with guards,
    rendezvous (``c``) and buffered (``q``) syncs passing values, effects, costs and times
    drawn from a small grammar; async or sync (where rendezvous labels are ignored)."""
    system = draw(st.sampled_from(["async", "sync"]))
    atoms = st.sampled_from(["g", "k", "1", "2", "3"])

    def expr():
        a, b = draw(atoms), draw(atoms)
        op = draw(st.sampled_from(["+", "-", "*", "%", "/"]))
        return f"({a} {op} {b})" if op not in "%/" else f"({a} {op} ({b} + 1))"

    procs = []
    for p in range(draw(st.integers(2, 3))):
        n_states = draw(st.integers(1, 3))
        trans = []
        for _ in range(draw(st.integers(1, 4))):
            src, dst = draw(st.integers(0, n_states - 1)), draw(st.integers(0, n_states - 1))
            parts = []
            if draw(st.booleans()):
                parts.append(f"guard {expr()} {draw(st.sampled_from(['<', '>', '!=']))} 2;")
            sync = draw(st.sampled_from([None, None, "c!", "c?", "q!", "q?"]))
            if sync is not None:
                parts.append(f"sync {sync}{expr() + ' % 4' if sync[1] == '!' else 'k'};")
            if draw(st.booleans()):
                var = draw(st.sampled_from(["g", "k"]))
                parts.append(f"effect {var} = {expr()} % 4;")
            parts.append(f"cost {draw(st.integers(0, 9))};")
            parts.append(f"time {draw(st.integers(1, 3))};")
            trans.append(f"s{src} -> s{dst} {{ {' '.join(parts)} }}")
        states = ", ".join(f"s{i}" for i in range(n_states))
        procs.append(f"process P{p} {{ byte k; state {states}; init s0; trans "
                     + ", ".join(trans) + "; }")
    return ("byte g; channel c; channel {byte} q[2];\n" + "\n".join(procs)
            + f"\nsystem {system};\n")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_models(), st.booleans())
def test_generated_models_replay(text, ratio):
    try:
        a = analyze(text, backend="cpu", ratio=ratio)
    except NoCycleRun as exc:
        rp = Replayer(dve.load_model(text), "cost")
        replay_run(rp, rp.initial(), [s.as_dict() for s in exc.trace], where="trace",
                   start_id=0)
        return
    except ZeroTimeCycleRun:  # times are at least 1: cannot happen
        raise
    replay_analysis(dve.load_model(text), a.as_dict())


# ---------------------------------------------------------------------------- the checker bites

def _rings_sync():
    path = example_path("rings_sync")
    return dve.load_model(path), analyze(path, backend="cpu")


def test_the_checker_rejects_unmapped_sync_labels():
    """The defect of issue 11: a system sync edge's label read as the model's step code."""
    model, a = _rings_sync()
    g = a.graph
    d = a.as_dict()
    for step in d["cycle"]:
        label = int(g.action[step["edge"]])
        step["moves"] = [{"process": mv["process"], "from": mv["src"], "to": mv["dst"],
                          "line": mv["pos"].line}
                         for mv in g.model.action_moves(label)]   # not mapped: the old bug
    with pytest.raises(ReplayError, match="not enabled"):
        replay_analysis(model, d)


@pytest.mark.parametrize("corrupt, message", [
    (lambda d: d["cycle"][1].update(cost=d["cycle"][1]["cost"] + 1), "cost/time"),
    (lambda d: d["cycle"][2].update(time=7), "cost/time"),
    (lambda d: d["cycle"][0]["state"].update(A="a2"), "state after"),
    (lambda d: d.update(exact="6"), "printed value"),
    (lambda d: d.update(cycle_cost=1), "cycle totals"),
    (lambda d: d["cycle"].pop(), "does not close"),
    (lambda d: d["initial"].update(B="b1"), "initial state"),
])
def test_the_checker_rejects_corrupted_runs(corrupt, message):
    model, a = _rings_sync()
    d = copy.deepcopy(a.as_dict())
    replay_analysis(model, d)
    corrupt(d)
    with pytest.raises(ReplayError, match=message):
        replay_analysis(model, d)


def test_the_checker_rejects_wrong_changes():
    model = dve.load_model(KINDS["async-arrays"])
    d = copy.deepcopy(analyze(KINDS["async-arrays"], backend="cpu").as_dict())
    step = next(s for s in d["cycle"] if s["changed"])
    step["changed"] = {}
    with pytest.raises(ReplayError, match="changes"):
        replay_analysis(model, d)


# ---------------------------------------------------------------------------- what is printed

def test_the_printed_table_is_the_replayed_run(capsys):
    """The text report's rows name the same moves, costs and times as the replayed JSON."""
    path = example_path("rings_sync")
    assert main(["analyze", str(path), "--backend", "cpu", "--json"]) == 0
    d = __import__("json").loads(capsys.readouterr().out)
    replay_analysis(dve.load_model(path), d)
    assert main(["analyze", str(path), "--backend", "cpu"]) == 0
    text = capsys.readouterr().out
    rows = re.findall(r"^\s+(\d*)\s+(\w+)\s+(\w+ -> \w+)(?:\s+(\d+)\s+(\d+))?\s*$", text, re.M)
    printed = []
    for k, proc, trans, cost, time in rows:
        if k:
            printed.append((int(cost), int(time), []))
        printed[-1][2].append((proc, trans))
    assert printed == [(s["cost"], s["time"],
                        [(m["process"], m["transition"]) for m in s["moves"]])
                       for s in d["cycle"]]
    # the lock-step rings: A and B advance together at every step
    assert [m["transition"] for s in d["cycle"] for m in s["moves"] if m["process"] == "A"] \
        == ["a0 -> a1", "a1 -> a2", "a2 -> a0"] * 2


# ---------------------------------------------------------------------------- decoding costs

def test_only_the_printed_states_are_decoded(monkeypatch):
    """A run of k steps decodes its k + 1 states once each and describes each of its actions
    once, however large the graph (here a system sync model of 1188 states)."""
    import statespace.graph
    import statespace.witness as witness

    system = scenarios.TEMPLATES["editor"].family(4)
    decoded, described = [], []
    real_decode = witness.decode_state
    # A label is described through the model's action it stands for (Witness.moves; without
    # symmetry and without an error state, nothing else asks during analyze).
    real_action = statespace.graph.StateGraph.model_action
    monkeypatch.setattr(witness, "decode_state", lambda g, i: decoded.append(int(i))
                        or real_decode(g, i))
    monkeypatch.setattr(statespace.graph.StateGraph, "model_action",
                        lambda g, a: described.append(int(a)) or real_action(g, a))
    a = analyze(system.to_model(), cost=system.resource, backend="cpu", symmetry="off")
    assert a.n_states == 1188
    runs = [a.cycle, a.prefix, a.deadlock_trace or (), a.error_trace or ()]
    shown = {0} | {s.target for run in runs for s in run} | {s.source for run in runs for s in run}
    assert sorted(decoded) == sorted(shown)           # each shown state once, no other
    labels = {int(a.graph.action[s.edge]) for run in runs for s in run}
    assert sorted(described) == sorted(labels)         # each shown action once
    bare = analyze(system.to_model(), cost=system.resource, backend="cpu", witness=False,
                   symmetry="off")
    assert bare.value == a.value and len(decoded) == len(shown)  # value only: nothing decoded
