"""A server that admits several requests per tick (``Server(workers=W, admissions=A)``).

The loads of the rendered models (the whole pipeline: DSL, explorer, cycle engine) are checked
against an oracle written here from the semantics alone (docs/scenarios.md): a client's round
is a fixed list of ``Think`` and ``Request`` steps, a request takes one tick to send, ``s``
ticks of service from the tick it is admitted (the earliest the tick after it was sent) and
one tick for the reply; on each tick the server admits exactly ``min(A, free workers, waiting
requests)`` of the waiting requests, any of them. The oracle enumerates those ticks as a graph
of tuples and takes its maximal cycle mean with Karp's algorithm; it shares no code with the
renderer or the engines.
"""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import pytest

import statespace
from dve import format_model, load_model
from dve.errors import ConfigurationError
from dvecost import analyze
from scenarios import Request, Scenario, Server, System, Think


# ------------------------------------------------------------------------------ the oracle

def _start(steps, i):
    """A client's state at the start of step ``i`` (Think(0) takes no tick)."""
    while True:
        i %= len(steps)
        if steps[i][0] == "req":
            return ("S", i)
        if steps[i][1] > 0:
            return ("T", i, steps[i][1])
        i += 1


def _tick(steps, st, admitted):
    """(next state, work done this tick) of one client."""
    kind = st[0]
    if kind == "T":
        return (("T", st[1], st[2] - 1) if st[2] > 1 else _start(steps, st[1] + 1)), 0
    if kind == "S":
        return ("W", st[1]), 0
    if kind == "R":
        return _start(steps, st[1] + 1), 0
    _, s, c = steps[st[1]]
    if kind == "W":
        if not admitted:
            return st, 0
        return (("V", st[1], s - 1) if s > 1 else ("R", st[1])), c
    rem = st[2] - 1                               # "V": one more tick of service
    return (("V", st[1], rem) if rem else ("R", st[1])), c


def oracle_graph(rounds, workers, admissions):
    """The tick graph of clients with the given rounds (lists of ``("think", k)`` and
    ``("req", service, cost)``): ``{state: [(successor, work), ...]}``."""
    init = tuple(_start(r, 0) for r in rounds)
    graph, todo = {}, [init]
    while todo:
        x = todo.pop()
        if x in graph:
            continue
        busy = sum(st[0] == "V" for st in x)
        waiting = [i for i, st in enumerate(x) if st[0] == "W"]
        k = min(admissions, workers - busy, len(waiting))
        assert busy <= workers
        out = []
        for chosen in itertools.combinations(waiting, k):
            nxt, work = [], 0
            for i, st in enumerate(x):
                y, w = _tick(rounds[i], st, i in chosen)
                nxt.append(y)
                work += w
            assert sum(y[0] == "V" for y in nxt) <= workers
            out.append((tuple(nxt), work))
            todo.append(tuple(nxt))
        graph[x] = out
    return graph


def karp_max_mean(graph):
    """The maximal mean of a cycle (Karp 1978, every vertex a start: walks of exactly ``k``
    edges ending at each vertex)."""
    nodes = list(graph)
    idx = {v: i for i, v in enumerate(nodes)}
    n = len(nodes)
    edges = [(idx[u], idx[v], w) for u in nodes for v, w in graph[u]]
    NEG = None
    D = [[0] * n]
    for _ in range(n):
        prev, cur = D[-1], [NEG] * n
        for u, v, w in edges:
            if prev[u] is not NEG and (cur[v] is NEG or prev[u] + w > cur[v]):
                cur[v] = prev[u] + w
        D.append(cur)
    best = None
    for v in range(n):
        if D[n][v] is NEG:
            continue
        worst = min(F(D[n][v] - D[k][v], n - k) for k in range(n) if D[k][v] is not NEG)
        best = worst if best is None or worst > best else best
    return best


def rounds_of(counts):
    out = []
    for sc, k in counts.items():
        r = [("think", st.ticks) if isinstance(st, Think) else ("req", st.service, st.cost)
             for st in sc.steps]
        out += [r] * k
    return out


def load(system, symmetry="auto"):
    a = analyze(system.to_model(), cost="server", backend="cpu", witness=False,
                symmetry=symmetry)
    assert a.certified
    return a.value


U1 = Scenario("u", [Request("r", service=1)])
U3 = Scenario("u", [Think(1), Request("r", service=3)])
V = Scenario("v", [Request("q", service=1, cost=2), Think(2)])
X = Scenario("x", [Think(2), Request("a", service=2), Request("b", service=1, cost=3)])


# ------------------------------------------------------------------------------ the tests

@pytest.mark.parametrize("admissions, expected", [(1, F(1)), (2, F(2))])
def test_loads_worked_by_hand(admissions, expected):
    """Six clients sending one-tick requests with no pause, two workers: a round is 3 ticks
    (send, served, reply), a third of a worker per client, 2 for six. Admitting one request
    per tick caps the load at 1 (one tick of work per admission, and someone always waits);
    admitting two, the clients fall into three pairs a tick apart and both workers are busy
    on every tick."""
    system = System({U1: 6}, server=Server(workers=2, admissions=admissions))
    assert load(system) == expected == system.load_bound()


@pytest.mark.parametrize("counts, workers", [
    ({U1: 4}, 2), ({U3: 3}, 2), ({U3: 2, V: 2}, 2), ({V: 2, X: 1}, 3), ({U3: 4}, 3),
    ({X: 2, U1: 1}, 2)])
def test_loads_equal_the_oracles(counts, workers):
    """Every number of admissions from 1 (the one-admission rendering) to the workers, with
    and without the symmetry reduction, against the oracle's tick graph."""
    rounds = rounds_of(counts)
    for a in range(1, workers + 1):
        system = System(counts, server=Server(workers=workers, admissions=a))
        want = karp_max_mean(oracle_graph(rounds, workers, a))
        assert load(system) == load(system, "off") == want, (a, want)
        assert want <= system.load_bound()


def test_admissions_can_lower_the_load():
    """Taking more requests at once is not always worse for the server: two workers, two
    clients of 3-tick requests and two of 1-tick ones at cost 2. The oracle and the model
    agree that the worst case with one admission per tick is higher."""
    counts = {U3: 2, V: 2}
    one = load(System(counts, server=Server(2)))
    two = load(System(counts, server=Server(2, admissions=2)))
    assert (one, two) == (F(22, 13), F(5, 3))


def _consts(model):
    return {d.name: d.init.value for d in model.globals if d.const}


@pytest.mark.parametrize("counts, workers, admissions", [
    ({U3: 3, V: 2}, 3, 2), ({U1: 5}, 2, 2), ({X: 2, V: 1}, 3, 3)])
def test_every_state_respects_the_workers_and_admits_what_it_must(counts, workers, admissions):
    """The full state graph (no reduction), read from the variables' values: before each
    step in which everybody moves (``phase`` 0), the requests in service this tick (``req``
    ``BUSY`` from earlier ticks, and this tick's admissions) are at most the workers; the
    admitted clients are distinct and waiting; and their number is ``min(A, free workers,
    waiting)``. Every state has a successor and none is the error state."""
    model = load_model(System(counts, server=Server(workers, admissions)).to_model())
    g = statespace.build_state_graph(model)
    assert g.n_deadlocks == 0 and g.error_state < 0          # -1: no error state reached
    c = _consts(model)
    names = [slot.name for slot in statespace.compile_model(model).slots]
    reqs = [i for i, nm in enumerate(names) if nm.endswith(".req")]
    adms = [names.index(f"adm{k}") for k in range(1, admissions + 1)]
    phase = names.index("phase")
    client_of = {j + 1: reqs[j] for j in range(len(reqs))}   # clients numbered in order
    checked = 0
    for row in g.states:
        if row[phase] != 0:
            continue
        busy = sum(row[i] == c["BUSY"] for i in reqs)
        waiting = [i for i in reqs if 0 < row[i] < c["BUSY"]]
        taken = [int(row[i]) for i in adms if row[i] != 0]
        assert len(set(taken)) == len(taken)
        assert all(client_of[j] in waiting for j in taken)
        assert busy + len(taken) <= workers
        assert len(taken) == min(admissions, workers - busy, len(waiting))
        checked += 1
    assert checked > 10


def test_ticks_are_a_plus_one_steps_and_charges_scale():
    """One client alone: think 1, a request of 3 ticks: a round of 1 + 1 + 3 + 1 = 6 ticks
    with 3 of work, load 1/2; with two admissions a tick is 3 steps, so the critical cycle
    has 18 steps and costs 3 x 3; the admission steps take no time, so its time is the 6
    ticks."""
    a = analyze(System({U3: 1}, server=Server(2, admissions=2)).to_model(), cost="server",
                backend="cpu")
    assert a.value == F(1, 2)
    d = a.as_dict()
    assert (len(d["cycle"]), d["cycle_cost"], d["cycle_time"]) == (18, 9, 6)


def test_symmetry_reduces_the_clients_only():
    model = System({U3: 3, V: 2}, server=Server(3, admissions=3)).to_model()
    a = analyze(model, cost="server", backend="cpu", witness=False)
    off = analyze(model, cost="server", backend="cpu", witness=False, symmetry="off")
    assert a.symmetry["reduced"] and a.symmetry["not_reduced"] == []
    assert [g["template"] for g in a.symmetry["groups"]] == ["u", "v"]
    assert a.value == off.value and a.symmetry["full_states"] == off.n_states > a.n_states


# One admission per tick renders as before this feature (the pool with ``adm``): the model of
# a small system as the renderer wrote it then (commit 30bd686), long lines continued by a
# backslash.
ONE_ADMISSION = """\
const byte R = 1;
const byte WORKERS = 2;
const byte BUSY = 2;
const byte SERVED = 3;
byte adm;

process server {
    state serve;
    init serve;
    trans
        serve -> serve { guard not ((adm == 1 and u_1->req == R or u_1->req == BUSY) + (adm == 2 \
and u_2->req == R or u_2->req == BUSY) < WORKERS and (u_1->req != 0 and u_1->req < BUSY and adm != \
1 or (u_2->req != 0 and u_2->req < BUSY and adm != 2))); effect adm = 0; },
        serve -> serve { guard (adm == 1 and u_1->req == R or u_1->req == BUSY) + (adm == 2 and \
u_2->req == R or u_2->req == BUSY) < WORKERS and u_1->req == R and adm != 1; effect adm = 1; cost \
server: 1, busy: 1; },
        serve -> serve { guard (adm == 1 and u_1->req == R or u_1->req == BUSY) + (adm == 2 and \
u_2->req == R or u_2->req == BUSY) < WORKERS and u_2->req == R and adm != 2; effect adm = 2; cost \
server: 1, busy: 1; };
}

process u_1 {
    byte timer;
    byte req;
    state think, r, r_wait, r_wait_served, r_wait_served_more;
    init think;
    trans
        think -> r {},
        r -> r_wait { effect req = R; },
        r_wait -> r_wait { guard adm != 1; },
        r_wait -> r_wait_served_more { guard adm == 1; effect req = BUSY, timer = 1; cost server: \
1, busy: 1; },
        r_wait_served_more -> r_wait_served_more { guard timer > 1; effect timer = timer - 1; cost \
server: 1, busy: 1; },
        r_wait_served_more -> r_wait_served { guard timer == 1; effect timer = 0, req = SERVED; \
cost server: 1, busy: 1; },
        r_wait_served -> think { effect req = 0; };
}

process u_2 {
    byte timer;
    byte req;
    state think, r, r_wait, r_wait_served, r_wait_served_more;
    init think;
    trans
        think -> r {},
        r -> r_wait { effect req = R; },
        r_wait -> r_wait { guard adm != 2; },
        r_wait -> r_wait_served_more { guard adm == 2; effect req = BUSY, timer = 1; cost server: \
1, busy: 1; },
        r_wait_served_more -> r_wait_served_more { guard timer > 1; effect timer = timer - 1; cost \
server: 1, busy: 1; },
        r_wait_served_more -> r_wait_served { guard timer == 1; effect timer = 0, req = SERVED; \
cost server: 1, busy: 1; },
        r_wait_served -> think { effect req = 0; };
}

system sync;
"""


@pytest.mark.parametrize("server", [Server(2), Server(2, admissions=1), Server(workers=2)])
def test_one_admission_renders_as_before(server):
    assert format_model(System({U3: 2}, server=server).to_model()) == ONE_ADMISSION


@pytest.mark.parametrize("kwargs, message", [
    ({"workers": 2, "admissions": 3}, "Server(admissions) must be 1..2, not 3"),
    ({"workers": 4, "admissions": 0}, "Server(admissions) must be 1..4, not 0"),
    ({"workers": 1, "admissions": 2}, "Server(admissions) must be 1..1, not 2"),
    ({"workers": 2, "admissions": 1.5}, "Server(admissions) must be an integer, not 1.5"),
    ({"workers": 2, "admissions": True}, "Server(admissions) must be an integer, not True"),
])
def test_admissions_out_of_range(kwargs, message):
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)")
                       .replace(".", r"\.")):
        Server(**kwargs)


def test_bound_and_its_reason_count_the_admissions():
    quick = Scenario("q", [Think(1), Request("r", service=2, cost=3)])
    one = System({quick: 9}, server=Server(8))
    three = System({quick: 9}, server=Server(8, admissions=3))
    four = System({quick: 9}, server=Server(8, admissions=4))
    # occupancy: min(workers, admissions x the longest service)
    assert (one.load_bound(), three.load_bound(), four.load_bound()) == (2, 6, 8)
    assert one.load_bound_why() == "one request admitted per tick, none holding a worker " \
                                   "more than 2 ticks: r"
    assert four.load_bound_why() == "no more workers busy than the server has"
    # cost: min(workers x largest cost, admissions x the largest service x cost)
    one, three, four = (s.with_resource("server") for s in (one, three, four))
    assert (one.load_bound(), three.load_bound(), four.load_bound()) == (6, 18, 24)
    assert one.load_bound_why() == "one request admitted per tick, none worth more than 6: " \
                                   "r, 2 ticks x 3"
    assert three.load_bound_why() == "3 requests admitted per tick, none worth more than 6: " \
                                     "r, 2 ticks x 3"
    assert four.load_bound_why() == "workers x largest cost per tick"
    assert three.describe() == ("9 clients (q: 9), server with 8 workers admitting 3 requests "
                                "per tick, system sync")


def test_another_number_of_workers_keeps_the_admissions():
    """``dvecost workers`` and ``--workers`` rebuild the server with other workers: the
    admissions per tick stay, capped at the workers."""
    from scenarios.capacity import system_for
    base = System({U3: 2}, server=Server(8, admissions=4))
    _, build = system_for(base, {"u": 2})
    assert [build({"u": 2}, workers=w).server for w in (None, 6, 3)] == [
        Server(8, admissions=4), Server(6, admissions=4), Server(3, admissions=3)]


def test_the_editor_farm_example():
    """dvecost/examples/editor_farm.py with 3 users (2 readers, a writer): eight workers
    admitting eight requests per tick never make anyone wait, so the load is the sum of the
    users' loads alone, 2 x 2/12 + 4/18 = 5/9; the same with and without the reduction."""
    import pathlib

    import dvecost.examples
    from scenarios import resolve_spec

    path = pathlib.Path(dvecost.examples.__file__).parent / "editor_farm.py"
    system = resolve_spec(str(path))[1](3)
    assert system.server == Server(workers=8, admissions=8) and system.steps_per_tick == 9
    assert {sc.name: k for sc, k in system.counts} == {"reader": 2, "writer": 1}
    assert load(system) == load(system, "off") == F(5, 9)
    assert system.load_bound() == 8
