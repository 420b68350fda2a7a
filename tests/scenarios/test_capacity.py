"""The capacity-planning searches against brute force over the grid, with stand-in evaluators."""

from __future__ import annotations

import itertools
import multiprocessing
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dve.errors import ConfigurationError
from runtime.errors import StateSpaceError
from scenarios import Request, Scenario, Server, System, Think
from scenarios.capacity import frontier, workers_needed
from scenarios.saturation import Evaluation
from dvecost.capacity_report import (frontier_csv, frontier_markdown, frontier_text,
                                     workers_text)

X = Scenario("x", [Think(1), Request("r", 1)])
Y = Scenario("y", [Think(2), Request("r", 1)])
Z = Scenario("z", [Think(3), Request("r", 1)])
SPEC = System({X: 1, Y: 1, Z: 1}, server=Server())


def counts(model) -> dict[str, int]:
    """Clients per scenario and the number of workers, read off the model built."""
    out = {"x": 0, "y": 0, "z": 0}
    for p in model.processes:
        if p.name != "server":
            out[p.name.rsplit("_", 1)[0]] += 1
    # The server's workers: a constant WORKERS, or (as rendered before) one 'done' array each.
    names = [getattr(i, "name", "") for i in model.items]
    out["w"] = (model.items[names.index("WORKERS")].init.value if "WORKERS" in names
                else sum(1 for n in names if n.startswith("done")))
    return out


def evaluator(load, calls):
    """A stand-in load of occupancy (``resource='busy'``); the cost load asked beside it is
    the same value and is not counted in ``calls``."""
    def evaluate(model, *, resource, witness):
        c = counts(model)
        if resource == "busy":
            calls.append(c)
        return Evaluation(Fraction(load(c)), n_states=1 + c["x"] + c["y"])
    return evaluate


MONOTONE_LOADS = [
    lambda c: Fraction(3 * c["x"] + 2 * c["y"] + c["z"], 10),
    lambda c: Fraction(c["x"] * c["y"] + c["y"], 4),
    lambda c: min(Fraction(2), Fraction(c["x"], 3) + Fraction(c["y"] ** 2, 7)),
]


@pytest.mark.parametrize("load", MONOTONE_LOADS)
@pytest.mark.parametrize("z", [0, 1])
def test_frontier_is_the_brute_force_staircase(load, z):
    calls: list = []
    r = frontier(SPEC, "x", "y", evaluate=evaluator(load, calls), max_clients=(5, 6),
                 others={"z": z} if z else None)
    cap = Fraction(1)
    expect = []
    for na in range(6):
        ok = [nb for nb in range(7) if load({"x": na, "y": nb, "z": z}) < cap]
        expect.append((na, max(ok) if ok else None))
    assert r.stair == tuple(expect)
    assert r.monotone and not r.violations
    # The walk: far fewer analyses than the grid, never a point twice, every load recorded.
    # (column 0 by exponential and binary search: at most 2 * 3 probes for 0..6)
    assert r.analyses <= 5 + 6 + 2 + 2 * 3 < 42
    assert len({(p.n_a, p.n_b) for p in r.points}) == len(r.points)
    for p in r.points:
        assert p.exact == load({"x": p.n_a, "y": p.n_b, "z": z})
        assert p.saturated == (p.exact >= cap)
    assert len(calls) == r.analyses
    assert all(c["z"] == z for c in calls)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=24), st.integers(0, 9))
@settings(max_examples=150, deadline=None)
def test_frontier_of_random_staircases(drops, top):
    """A random non-increasing stair (answer of column 0 ``top``, then drops of 0 to 3 per
    column; (0, 0) has no client, load 0), as a monotone load: the walk finds it exactly, analyses each point at most once,
    and needs at most about two probes per level of the stair plus logarithms."""
    max_a, max_b = len(drops) - 1, 9
    stair = [top]
    for d in drops[1:]:
        stair.append(max(-1, stair[-1] - d))
    # Monotone: saturated (>= 1) above the stair, and a small load growing in both counts.
    load = lambda c: (int(c["y"] > stair[c["x"]])
                      + Fraction(c["x"] + c["y"], 1000))
    r = frontier(SPEC, "x", "y", evaluate=evaluator(load, []), max_clients=(max_a, max_b))
    assert r.stair == tuple((a, None if s < 0 else s) for a, s in enumerate(stair))
    assert r.monotone
    assert len({(p.n_a, p.n_b) for p in r.points}) == len(r.points)
    levels = len(set(stair))
    assert r.analyses <= 2 * 4 + levels * (2 * 5 + 1) + (top - stair[-1]) + 1
    for a, b in r.stair:  # a stair point is below capacity; its range holds its load
        if b is not None:
            low, high = r.load_range(a, b)
            assert high < 1 and (low is None or low <= load({"x": a, "y": b}) <= high)


def test_a_flat_frontier_is_not_walked_column_by_column():
    """The load depends on y alone, within 1/1000 per x: one level, 40 columns. The walk
    gallops (1, 3, 7, 15, 31, 40): far fewer analyses than columns; the table marks the
    columns it did not analyse and bounds their load; the JSON says which were."""
    load = lambda c: Fraction(c["y"], 10) + Fraction(c["x"], 1000)
    r = frontier(SPEC, "x", "y", evaluate=evaluator(load, []), max_clients=(40, 12))
    assert r.stair == tuple((a, 9) for a in range(41))
    assert r.analyses <= 6 + 6 + 1 and r.analyses < 41
    d = r.as_dict()
    analysed = [e["n_a"] for e in d["stair"] if e["analysed"]]
    assert analysed == [p.n_a for p in r.points if p.n_b == 9]
    assert 0 in analysed and 40 in analysed and len(analysed) < 10
    e2 = d["stair"][2]  # between the points at 1 and 3, on level 9
    assert not e2["analysed"] and (e2["load_low"], e2["load_high"]) == ("901/1000", "903/1000")
    rows = {row.split()[0]: row.split() for row in frontier_text(r).splitlines()[3:44]}
    assert rows["2"][1:] == ["9", "901/1000..903/1000*", "1", "at", "(0,10)"]
    assert rows["1"][2] == "901/1000"  # analysed: the exact load, no mark
    assert "* not analysed" in frontier_text(r)


def test_frontier_reports_a_non_monotone_load():
    # An x past 1 takes the x load away: (2, 0) is below (1, 0), which the walk evaluates.
    load = lambda c: Fraction(c["y"] + (c["x"] if c["x"] <= 1 else 0), 2)
    r = frontier(SPEC, "x", "y", evaluate=evaluator(load, []), max_clients=(3, 4))
    assert not r.monotone
    for p, q in r.violations:
        assert p.n_a <= q.n_a and p.n_b <= q.n_b and p.exact > q.exact
    assert "not monotone" in frontier_text(r)


def test_frontier_table_json_csv():
    load = MONOTONE_LOADS[0]
    r = frontier(SPEC, "x", "y", evaluate=evaluator(load, []), max_clients=(2, 3))
    text = frontier_text(r).splitlines()
    assert text[0].startswith("system: frontier of x x y (0..2 x 0..3)")
    assert f"{r.analyses} analyses of 12 grid points" in text[0]
    rows = [line.split() for line in text[3:]]
    assert [row[0] for row in rows] == ["0", "1", "2"]
    # x=0: 2y < 10 for all y <= 3, so the limit is not reached: '≥ 3'.
    assert rows[0][1:3] == ["≥", "3"]
    # x=2: 6 + 2y < 10 -> y <= 1; the load there 8/10 = 4/5, at y=2 it is 1.
    assert rows[2][1:] == ["1", "4/5", "1"]
    d = r.as_dict()
    assert [(e["n_a"], e["max_n_b"]) for e in d["stair"]] == list(r.stair)
    for e in d["stair"]:  # every stair point of this walk was analysed: its load, exactly
        assert e["analysed"] and e["load_low"] == e["load_high"] == str(
            load({"x": e["n_a"], "y": e["max_n_b"], "z": 0}))
    assert d["grid"] == 12 and d["analyses"] == r.analyses
    lines = frontier_csv(r).splitlines()
    assert lines[0] == "x,y,exact,value,saturated,n_states"
    assert len(lines) == 1 + len(r.points)
    assert "| x |" in frontier_markdown(r)


def test_frontier_says_which_points_are_not_certified():
    def evaluate(model, *, resource, witness):
        c = counts(model)
        return Evaluation(Fraction(c["y"], 3), n_states=1, certified=c["y"] != 2)
    r = frontier(SPEC, "x", "y", evaluate=evaluate, max_clients=(0, 4))
    last = frontier_text(r).splitlines()[-1]
    assert last == ("not certified (the exact check failed; values as "
                    "computed): (0,2)")
    assert [p.certified for p in r.points] == [p.n_b != 2 for p in r.points]


def test_frontier_stops_at_a_limit():
    def evaluate(model, *, resource, witness):
        if counts(model)["y"] >= 3:
            raise StateSpaceError("state limit 10 reached")
        return Evaluation(Fraction(0), 1)
    r = frontier(SPEC, "x", "y", evaluate=evaluate, max_clients=(2, 3))
    assert r.status == "limit" and "(0, 3)" in r.stopped and r.stair == ()


def test_frontier_errors():
    ev = evaluator(MONOTONE_LOADS[0], [])
    with pytest.raises(ConfigurationError, match="no scenario 'nope'"):
        frontier(SPEC, "x", "nope", evaluate=ev)
    with pytest.raises(ConfigurationError, match="two different"):
        frontier(SPEC, "x", "x", evaluate=ev)


@pytest.mark.parametrize("n", [1, 4, 7, 12])
def test_workers_needed_is_the_first_unsaturated(n):
    # Worst load of n clients with w workers: min(w, n/3); capacity w (cost 1 per tick).
    load = lambda c: min(Fraction(c["w"]), Fraction(c["x"], 3))
    calls: list = []
    r = workers_needed(SPEC, {"x": n}, evaluate=evaluator(load, calls), max_workers=8)
    brute = next((w for w in range(1, 9) if load({"x": n, "w": w}) < w), None)
    assert r.workers == brute
    assert [p.workers for p in r.tried] == list(range(1, (brute or 8) + 1))
    assert [c["w"] for c in calls] == [p.workers for p in r.tried]
    assert all(p.capacity == p.workers for p in r.tried)
    assert r.monotone
    assert f"{brute} worker" in workers_text(r).splitlines()[0]


def test_workers_none_within_limit_and_violation():
    load = lambda c: Fraction(c["w"])
    r = workers_needed(SPEC, {"x": 2}, evaluate=evaluator(load, []), max_workers=3)
    assert r.workers is None and len(r.tried) == 3
    assert r.monotone
    load2 = lambda c: Fraction(3, 2) if c["w"] == 1 else Fraction(1)
    r2 = workers_needed(SPEC, {"x": 2}, evaluate=evaluator(load2, []), max_workers=3)
    assert r2.workers == 2
    assert not r2.monotone and r2.violations == ((1, 2),)
    assert "drops between workers 1 and 2" in workers_text(r2)
    assert "saturates every server up to 3 workers" in workers_text(r)


def test_workers_say_which_values_are_not_certified():
    def evaluate(model, *, resource, witness):
        w = counts(model)["w"]
        return Evaluation(min(Fraction(w), Fraction(5, 2)), n_states=1, certified=w != 2)
    r = workers_needed(SPEC, {"x": 3}, evaluate=evaluate, max_workers=4)
    assert r.workers == 3
    assert workers_text(r).splitlines()[-1] == ("not certified (the exact check failed; values as "
                                       "computed): workers 2")


def test_workers_needed_errors():
    ev = evaluator(MONOTONE_LOADS[0], [])
    with pytest.raises(ConfigurationError, match="max_workers"):
        workers_needed(SPEC, {"x": 1}, evaluate=ev, max_workers=17)
    with pytest.raises(ConfigurationError, match="no server"):
        workers_needed(System({X: 1}), {"x": 1}, evaluate=ev)
    with pytest.raises(ConfigurationError, match="at least one client"):
        workers_needed(SPEC, {"x": 0}, evaluate=ev)


def _key(r):
    return [(p.n_a, p.n_b, p.exact, p.saturated, p.n_states) for p in r.points]


@pytest.mark.parametrize("load", MONOTONE_LOADS)
def test_frontier_in_two_processes_is_the_same_walk(load):
    """jobs=2 evaluates ahead in forked workers; the points the walk uses, their order, the
    staircase and what progress hears are those of jobs=1."""
    heard = {1: [], 2: []}
    one, two = (frontier(SPEC, "x", "y", evaluate=evaluator(load, []), max_clients=(9, 9),
                         jobs=j, progress=heard[j].append) for j in (1, 2))
    assert two.stair == one.stair and _key(two) == _key(one)
    assert [(p.n_a, p.n_b) for p in heard[2]] == [(p.n_a, p.n_b) for p in one.points]
    assert multiprocessing.active_children() == []


def test_a_limit_at_a_point_evaluated_ahead_only_counts_if_the_walk_needs_it():
    load = MONOTONE_LOADS[0]
    plain = frontier(SPEC, "x", "y", evaluate=evaluator(load, []), max_clients=(4, 4))
    used = {(p.n_a, p.n_b) for p in plain.points}
    ahead = [(a, b) for a in range(5) for b in range(5) if (a, b) not in used]

    def limited(bad):
        def evaluate(model, *, resource, witness):
            c = counts(model)
            if (c["x"], c["y"]) in bad:
                raise StateSpaceError("state limit 10 reached")
            return Evaluation(Fraction(load(c)), n_states=1 + c["x"] + c["y"])
        return evaluate

    r = frontier(SPEC, "x", "y", evaluate=limited(set(ahead)), max_clients=(4, 4), jobs=2)
    assert r.status == "ok" and _key(r) == _key(plain)
    last = plain.points[-1]
    r = frontier(SPEC, "x", "y", evaluate=limited({(last.n_a, last.n_b)}),
                 max_clients=(4, 4), jobs=2)
    assert r.status == "limit" and r.stopped.startswith(f"({last.n_a}, {last.n_b}): state")
    assert _key(r) == _key(plain)[:-1]


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_interrupted_frontier_keeps_its_points_and_ends_its_workers(jobs):
    load = MONOTONE_LOADS[1]
    heard: list = []

    def progress(p):
        heard.append(p)
        if len(heard) == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        frontier(SPEC, "x", "y", evaluate=evaluator(load, []), max_clients=(6, 6), jobs=jobs,
                 progress=progress)
    part = info.value.partial
    assert part.status == "interrupted" and part.stopped.endswith("interrupted")
    assert list(part.points[:4]) == heard
    # What was evaluated ahead is kept too, each point exact.
    assert all(p.exact == load({"x": p.n_a, "y": p.n_b, "z": 0}) for p in part.points)
    assert multiprocessing.active_children() == []


def test_workers_needed_in_two_processes():
    load = lambda c: min(Fraction(c["w"]), Fraction(c["x"], 3))
    one, two = (workers_needed(SPEC, {"x": 10}, evaluate=evaluator(load, []), max_workers=8,
                               jobs=j) for j in (1, 2))
    assert one.workers == two.workers == 4 and one.status == two.status == "ok"
    strip = lambda r: [(p.workers, p.exact, p.capacity, p.n_states) for p in r.tried]
    assert strip(one) == strip(two) == [(w, min(Fraction(w), Fraction(10, 3)), w, 11)
                                        for w in range(1, 5)]


def test_an_interrupted_workers_search_keeps_the_values_tried():
    load = lambda c: min(Fraction(c["w"]), Fraction(c["x"], 3))

    def progress(p):
        if p.workers == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        workers_needed(SPEC, {"x": 12}, evaluate=evaluator(load, []), max_workers=8, jobs=2,
                       progress=progress)
    part = info.value.partial
    assert part.status == "interrupted" and part.workers is None
    assert [p.workers for p in part.tried][:2] == [1, 2]
    assert all(p.exact == load({"x": 12, "w": p.workers}) for p in part.tried)
    assert "stopped (workers=2: interrupted)" in workers_text(part)
    assert multiprocessing.active_children() == []


def test_a_worker_process_that_dies_stops_the_walk_as_a_limit():
    """A worker killed (as for memory) while analysing a point the walk needs: the walk stops
    with the points so far, status 'limit', naming the point."""
    import os
    import signal

    load = MONOTONE_LOADS[0]

    def evaluate(model, *, resource, witness):
        c = counts(model)
        if (c["x"], c["y"]) == (1, 3):
            os.kill(os.getpid(), signal.SIGKILL)
        return Evaluation(Fraction(load(c)), n_states=1)

    r = frontier(SPEC, "x", "y", evaluate=evaluate, max_clients=(4, 4), jobs=2)
    # (1, 4) saturates, so the walk needs (1, 3); it may have been started ahead of its turn.
    assert r.status == "limit" and "a worker process died (killed for memory?)" in r.stopped
    assert r.stopped.startswith(("(1, 3): ", "(1, 4): "))
    assert r.stair == ((0, 4),) and (1, 3) not in {(p.n_a, p.n_b) for p in r.points}
    assert multiprocessing.active_children() == []


def test_a_frontier_the_admissions_decide_analyses_nothing():
    """Requests of one tick on four workers: one admission per tick keeps at most one worker
    busy, so no mix reaches the capacity 4 and no point is analysed; the table says why."""
    def evaluate(model, *, resource, witness):
        raise AssertionError("nothing should be analysed")

    spec = System({X: 1, Y: 1, Z: 1}, server=Server(4))
    r = frontier(spec, "x", "y", evaluate=evaluate, max_clients=(3, 5))
    assert r.stair == tuple((a, 5) for a in range(4)) and r.points == () and r.analyses == 0
    why = ("the load can never reach 4: it is at most 1 (one request admitted per tick, none "
           "holding a worker more than 1 tick: r)")
    assert r.note == why and r.as_dict()["note"] == why
    text = frontier_text(r)
    assert f"why: {why}" in text and "*" not in text and "None" not in text
