"""Server policies (``Server(policy='any'|'fifo'|'priority')``): the rendered models' loads
against an independent simulator of each policy, written here from docs/scenarios.md's
description of ticks and sharing nothing with the rendering.

The simulator keeps every client as an explicit tuple and the queue of waiting clients as a
tuple of groups (the clients that sent on one tick), builds the state graph by a plain
breadth-first search, and takes the maximal cycle mean of the busy workers per tick with
Karp's algorithm on each strongly connected component.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dve.errors import ConfigurationError
from dvecost.analysis import analyze
from scenarios import Request, Scenario, Server, System, Think

# ---------------------------------------------------------------------------- the oracle
#
# A client's local state: ("think", i, ticks done), ("send", i), ("wait", i),
# ("serve", i, ticks left after this one), ("reply", i); i is its step. A request of s
# ticks: send on tick t, admitted at the earliest on t + 1 (its first tick of service),
# served s ticks, the reply on the tick after the last (docs/scenarios.md, sections 2-3).


def _enter(steps, i):
    """The local state of a client entering step ``i`` (mod the round), skipping Think(0)."""
    for _ in range(len(steps) + 1):
        st = steps[i % len(steps)]
        if isinstance(st, Think):
            if st.ticks > 0:
                return ("think", i % len(steps), 0)
            i += 1
            continue
        return ("send", i % len(steps))
    raise AssertionError("a round with no tick")


def _oracle_graph(system: System):
    """{state: [(busy workers this tick, next state), ...]} of the system, from its initial
    state."""
    clients = [(sc, place) for place, (sc, k) in enumerate(system.counts) for _ in range(k)]
    server = system.server
    W = server.workers
    order = [x for x in server.order if system.scenario(x) is not None]
    order += [sc.name for sc in system.scenarios if sc.name not in order]

    def choices(local, queue):
        waiting = [c for c, x in enumerate(local) if x[0] == "wait"]
        if not waiting:
            return [None]
        if server.policy == "any":
            return waiting
        group = {c: g for g, members in enumerate(queue) for c in members}

        def key(c):
            sc, place = clients[c]
            pri = order.index(sc.name) if server.policy == "priority" else 0
            return (pri, group[c], place, local[c][1])

        best = min(key(c) for c in waiting)
        return [c for c in waiting if key(c) == best]

    def successors(state):
        local, queue = state
        busy_now = sum(1 for x in local if x[0] == "serve")
        picks = choices(local, queue) if busy_now < W else [None]
        out = []
        for pick in picks:
            nxt, sent = [], []
            for c, x in enumerate(local):
                steps = clients[c][0].steps
                kind, i = x[0], x[1]
                if kind == "think":
                    done = x[2] + 1
                    nxt.append(("think", i, done) if done < steps[i].ticks
                               else _enter(steps, i + 1))
                elif kind == "send":
                    nxt.append(("wait", i))
                    sent.append(c)
                elif kind == "wait":
                    if c == pick:
                        left = steps[i].service - 1
                        nxt.append(("serve", i, left) if left else ("reply", i))
                    else:
                        nxt.append(x)
                elif kind == "serve":
                    left = x[2] - 1
                    nxt.append(("serve", i, left) if left else ("reply", i))
                else:   # reply
                    nxt.append(_enter(steps, i + 1))
            q = tuple(g for g in (tuple(m for m in grp if m != pick) for grp in queue) if g)
            if sent:
                q += (tuple(sent),)
            out.append((busy_now + (pick is not None), (tuple(nxt), q)))
        return out

    init = (tuple(_enter(sc.steps, 0) for sc, _ in clients), ())
    graph, todo = {}, [init]
    while todo:
        s = todo.pop()
        if s in graph:
            continue
        graph[s] = successors(s)
        todo += [t for _, t in graph[s] if t not in graph]
    return graph


def _max_cycle_mean(graph) -> F:
    """Karp's maximal cycle mean, per strongly connected component (Tarjan)."""
    index, low, on, stack, comps, counter = {}, {}, set(), [], [], [0]

    def strong(v):              # iterative Tarjan
        work = [(v, iter(graph[v]))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        while work:
            u, it = work[-1]
            for _, w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on:
                    low[u] = min(low[u], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[u])
                if low[u] == index[u]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == u:
                            break
                    comps.append(comp)

    for v in graph:
        if v not in index:
            strong(v)
    best = None
    for comp in comps:
        members = set(comp)
        edges = [(u, c, w) for u in comp for c, w in graph[u] if w in members]
        if not edges:
            continue
        n, src = len(comp), comp[0]
        NEG = None
        D = [{v: NEG for v in comp} for _ in range(n + 1)]
        D[0][src] = 0
        for k in range(1, n + 1):
            for u, c, w in edges:
                if D[k - 1][u] is not None and (D[k][w] is None or D[k - 1][u] + c > D[k][w]):
                    D[k][w] = D[k - 1][u] + c
        for v in comp:
            if D[n][v] is None:
                continue
            worst = min(F(D[n][v] - D[k][v], n - k) for k in range(n) if D[k][v] is not None)
            best = worst if best is None or worst > best else best
    return best


def oracle_load(system: System) -> F:
    return _max_cycle_mean(_oracle_graph(system))


def model_load(system: System, symmetry: str = "auto") -> F:
    a = analyze(system.to_model(), cost=system.resource, symmetry=symmetry, witness=False,
                backend="cpu")
    assert a.certified
    return F(a.exact)


# ---------------------------------------------------------------------------- by hand

def test_hand_worked_fifo_example():
    """docs/scenarios.md, "Server policies": a ping (think 2, 1 tick of service) and a job
    (2 ticks of service, no think) on one worker. Both clients are deterministic, so under
    FIFO the whole system is: one run, which from tick 12 repeats a 5-tick cycle with 3 busy
    ticks (both send on one tick, the ping goes first as its scenario is listed first). The
    adversarial server does better by taking the job first: 2/3. Priority to the job is
    that choice made a rule."""
    ping = Scenario("ping", [Think(2), Request("ping", service=1)])
    job = Scenario("job", [Request("job", service=2)])
    loads = {}
    for name, server in [("any", Server()), ("fifo", Server(policy="fifo")),
                         ("ping first", Server(policy="priority", order=["ping"])),
                         ("job first", Server(policy="priority", order=["job"]))]:
        system = System({ping: 1, job: 1}, server=server)
        loads[name] = model_load(system)
        assert loads[name] == oracle_load(system)
    assert loads == {"any": F(2, 3), "fifo": F(3, 5), "ping first": F(3, 5),
                     "job first": F(2, 3)}
    fifo = analyze(System({ping: 1, job: 1}, server=Server(policy="fifo")).to_model(),
                   cost="busy", backend="cpu")
    assert len(fifo.prefix) == 11 and len(fifo.cycle) == 5


# ---------------------------------------------------------------------------- properties

_KINDS = [Request("a", service=1), Request("b", service=2), Request("c", service=3)]
_step = st.one_of(st.builds(Think, st.integers(0, 3)), st.sampled_from(_KINDS))


@st.composite
def _systems(draw):
    n_sc = draw(st.integers(1, 2))
    scenarios = []
    for i in range(n_sc):
        steps = draw(st.lists(_step, min_size=1, max_size=3))
        if not any(isinstance(x, Request) for x in steps):
            steps.append(draw(st.sampled_from(_KINDS)))
        scenarios.append(Scenario(f"s{i}", steps))
    counts = {sc: draw(st.integers(1, 2)) for sc in scenarios}
    workers = draw(st.integers(1, 2))
    return counts, workers, [sc.name for sc in draw(st.permutations(scenarios))]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_systems(), st.sampled_from(["any", "fifo", "priority"]))
def test_policy_loads_equal_the_oracle_and_symmetry_off(spec, policy):
    counts, workers, order = spec
    server = Server(workers=workers, policy=policy,
                    order=order if policy == "priority" else ())
    system = System(counts, server=server)
    expected = oracle_load(system)
    assert model_load(system) == expected
    assert model_load(system, "off") == expected


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_systems())
def test_policies_never_exceed_any(spec):
    counts, workers, order = spec
    worst = model_load(System(counts, server=Server(workers=workers)))
    for server in (Server(workers=workers, policy="fifo"),
                   Server(workers=workers, policy="priority", order=order)):
        assert model_load(System(counts, server=server)) <= worst


# ---------------------------------------------------------------------------- the DSL

def test_server_policy_validation():
    with pytest.raises(ConfigurationError, match="needs order"):
        Server(policy="priority")
    with pytest.raises(ConfigurationError, match="is for policy='priority'"):
        Server(policy="fifo", order=["a"])
    with pytest.raises(ConfigurationError, match="twice"):
        Server(policy="priority", order=["a", "a"])
    with pytest.raises(ConfigurationError, match="admits one request per tick"):
        Server(workers=4, admissions=2, policy="fifo")
    a = Scenario("a", [Think(1), Request("r", 1)])
    assert Server(policy="priority", order=[a]).order == ("a",)
    assert repr(Server(workers=2)) == "Server(workers=2, admissions=1)"


# ---------------------------------------------------------------------------- capacity questions

_SPEC = '''
from scenarios import Request, Scenario, Server, Think

ping = Scenario("ping", [Think(2), Request("ping", service=1)])
job = Scenario("job", [Request("job", service=2)])
server = Server({server})


def system(n):
    return {{ping: n, job: 1}}
'''


def _spec(tmp_path, server: str) -> str:
    path = tmp_path / "pj.py"
    path.write_text(_SPEC.format(server=server))
    return str(path)


def _cli(capsys, *argv):
    from dvecost.cli import main
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


@pytest.mark.parametrize("server, policy, words", [
    ("", None, None),
    ("policy='fifo'", "fifo", "first come, first served"),
    ("policy='priority', order=['job', 'ping']", "priority",
     "priority job > ping, first come, first served within each")])
def test_headroom_says_the_policy_and_gives_the_oracle_load(tmp_path, capsys, server, policy,
                                                            words):
    import json
    spec = _spec(tmp_path, server)
    code, out, _ = _cli(capsys, "headroom", spec, "--clients", "ping=1,job=1", "--json")
    assert code == 0
    data = json.loads(out)
    ping = Scenario("ping", [Think(2), Request("ping", service=1)])
    job = Scenario("job", [Request("job", service=2)])
    srv = eval(f"Server({server})")
    assert F(data["exact"]) == oracle_load(System({ping: 1, job: 1}, server=srv))
    assert data.get("policy") == policy and data.get("policy_words") == words
    code, out, _ = _cli(capsys, "headroom", spec, "--clients", "ping=1,job=1")
    head = out.splitlines()[0]
    assert (f"on a server with 1 worker ({words}), capacity 1" if words
            else "on a server with 1 worker, capacity 1") in head


def test_saturate_and_workers_with_a_fifo_server(tmp_path, capsys):
    """The FIFO shop of pings and one job: each point's load is the oracle's, the answer is
    the first N whose load reaches the capacity, and the policy is named in the text and in
    the JSON; ``workers`` on two workers agrees with the loads of one and two."""
    import json
    spec = _spec(tmp_path, "policy='fifo'")
    code, out, _ = _cli(capsys, "saturate", spec, "--json", "--max-clients", "4",
                        "--no-witness")
    data = json.loads(out)
    ping = Scenario("ping", [Think(2), Request("ping", service=1)])
    job = Scenario("job", [Request("job", service=2)])
    loads = {n: oracle_load(System({ping: n, job: 1}, server=Server(policy="fifo")))
             for n in range(1, 5)}
    for point in data["curve"]:
        if point.get("exact") is not None:
            assert F(point["exact"]) == loads[point["clients"]]
    first = min((n for n, x in loads.items() if x >= 1), default=None)
    assert data["saturating_clients"] == first
    assert "server policy: first come, first served" in data["capacity_why"]
    code, out, _ = _cli(capsys, "saturate", spec, "--max-clients", "4", "--no-witness")
    assert "server policy: first come, first served" in out
    code, out, _ = _cli(capsys, "workers", spec, "--clients", "ping=3,job=1", "--json")
    data = json.loads(out)
    one = oracle_load(System({ping: 3, job: 1}, server=Server(policy="fifo")))
    two = oracle_load(System({ping: 3, job: 1}, server=Server(workers=2, policy="fifo")))
    tried = {x["workers"]: F(x["exact"]) for x in data["tried"]}
    assert tried[1] == one and tried.get(2, two) == two
    assert data["workers"] == (1 if one < 1 else 2 if two < 2 else None)
    assert data["policy"] == "fifo"
    code, out, _ = _cli(capsys, "workers", spec, "--clients", "ping=3,job=1")
    assert out.startswith("3 ping, 1 job (first come, first served): ")


# ---------------------------------------------------------------------------- symmetry, cutoffs

@pytest.mark.parametrize("workers", [1, 2])
def test_policy_models_are_reduced_by_symmetry(workers):
    """The clients of a scenario stay interchangeable under a policy: the groups are found,
    fewer classes than states, and the load is the full product's."""
    u = Scenario("u", [Think(2), Request("r", service=2)])
    v = Scenario("v", [Think(1), Request("s", service=1)])
    for server in (Server(workers, policy="fifo"),
                   Server(workers, policy="priority", order=["v"])):
        system = System({u: 3, v: 2}, server=server)
        a = analyze(system.to_model(), cost="busy", backend="cpu", witness=False)
        assert a.symmetry["reduced"]
        assert {g["template"]: g["instances"] for g in a.symmetry["groups"]} == {"u": 3, "v": 2}
        assert a.symmetry["classes"] < a.symmetry["full_states"]
        assert F(a.exact) == model_load(system, "off") == oracle_load(system)


def test_no_cutoff_under_a_policy_and_why():
    """Past the free server's cutoff one more client changes the FIFO load (and lowers it):
    the cutoff's bisimulation does not hold with a queue, so none is given."""
    from scenarios.cutoff import cutoff
    x = Scenario("x", [Request("x", service=1)])
    y = Scenario("y", [Request("y", service=2)])
    free = System({x: 1, y: 1}, server=Server(2))
    assert cutoff(free, "x") == 3
    assert cutoff(System({x: 1, y: 1}, server=Server(2, policy="fifo")), "x") is None
    fifo = [oracle_load(System({x: n, y: 1}, server=Server(2, policy="fifo"))) for n in (3, 4)]
    assert fifo == [F(6, 5), F(7, 6)]
    assert [model_load(System({x: n, y: 1}, server=Server(2, policy="fifo")))
            for n in (3, 4)] == fifo
    anyl = [oracle_load(System({x: n, y: 1}, server=Server(2))) for n in (3, 4)]
    assert anyl[0] == anyl[1]


def test_the_editor_under_each_policy():
    """docs/scenarios.md's table, at 4 and 5 users."""
    from scenarios import apportion
    from scenarios.templates import EDITOR_SCENARIOS, EDITOR_WEIGHTS
    table = {Server(): (F(16, 19), F(22, 23)),
             Server(policy="fifo"): (F(5, 6), F(12, 13)),
             Server(policy="priority", order=["exporter", "writer", "reader"]): (F(18, 23),
                                                                                 F(10, 11)),
             Server(policy="priority", order=["reader", "writer", "exporter"]): (F(5, 6),
                                                                                 F(12, 13))}
    for server, loads in table.items():
        got = tuple(model_load(System(apportion(dict(zip(EDITOR_SCENARIOS, EDITOR_WEIGHTS)),
                                                n), server=server)) for n in (4, 5))
        assert got == loads, server


# ---------------------------------------------------------------------------- on the device

@pytest.fixture(scope="module")
def cupy():
    from runtime.device import gpu_available
    if not gpu_available():
        pytest.skip("no CuPy or no CUDA device")
    import cupy
    return cupy


@pytest.mark.gpu
@pytest.mark.parametrize("workers", [1, 2])
def test_policy_models_explored_on_the_device(workers, cupy, monkeypatch):
    """The rank bookkeeping (remote state tests, conditions used as numbers) explored on the
    GPU gives the host's graph, array for array, and the same load."""
    import numpy as np

    import dve
    from statespace import build_state_graph, compile_model
    from statespace.search import Placement
    monkeypatch.setattr(Placement, "device_min_rows", 0)
    u = Scenario("u", [Think(2), Request("r", service=2)])
    v = Scenario("v", [Think(1), Request("s", service=1), Request("r", service=2)])
    for server in (Server(workers, policy="fifo"),
                   Server(workers, policy="priority", order=["v", "u"])):
        system = System({u: 2, v: 2}, server=server)
        cm = compile_model(dve.load_model(system.to_model()))
        ref = build_state_graph(cm)
        got = build_state_graph(cm, xp=cupy)
        pairs = [(getattr(ref, name), getattr(got, name))
                 for name in ("indptr", "indices", "time", "states")]
        pairs += [(ref.cost(r), got.cost(r)) for r in ("busy", "server")]
        for name, (a, b) in zip(("indptr", "indices", "time", "states", "busy", "server"),
                                pairs):
            b = b.get() if hasattr(b, "get") else b
            assert np.array_equal(np.asarray(a), np.asarray(b)), name
        gpu = analyze(system.to_model(), cost="busy", backend="gpu", symmetry="off",
                      witness=False)
        assert F(gpu.exact) == model_load(system, "off") == oracle_load(system)
