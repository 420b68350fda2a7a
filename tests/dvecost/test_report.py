"""Rendering an Analysis (text, JSON, DOT, Markdown, HTML) on hand-built data: no exploration."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest

from dvecost.report import render_dot, render_json, render_steps, render_text
from dvecost.result import Analysis, Move, Step, demo
from report_shapes import JSON_KEYS, assert_dotish

#: Keys the issue promises in the --json object.
def rendezvous_analysis(**over) -> Analysis:
    """A client and a server: one local step, one rendezvous step (two moves)."""
    s1 = Step(0, 1, 0, (Move("Client", "think", "ready", line=5),), 0, 4,
              (), {"Server": "idle", "Client": "ready", "Server.who": 0})
    s2 = Step(1, 2, 3, (Move("Client", "ready", "wait", "req!1", 6),
                        Move("Server", "idle", "work", "req?who", 12)), 3, 1,
              (("Server.who", 0, 1),), {"Server": "work", "Client": "wait", "Server.who": 1})
    s3 = Step(2, 0, 7, (Move("Server", "work", "idle"), Move("Client", "wait", "think")), 10, 9,
              (("Server.who", 1, 0),), {"Server": "idle", "Client": "think", "Server.who": 0})
    fields = dict(model="cs.dve", system="async", processes=("Server", "Client"), n_variables=1,
                  n_channels=1, kind="ratio", mode="max", cost="cost", resources=("cost",),
                  value=Fraction(13, 14), certified=True, n_states=3, n_transitions=3,
                  n_deadlocks=0, error_state_reached=False,
                  initial={"Server": "idle", "Client": "think", "Server.who": 0},
                  cycle=(s1, s2, s3), backend="cpu", iterations=2,
                  seconds={"parse": 0.01, "explore": 0.02, "scc": 0.0, "howard": 0.001,
                           "certify": 0.0})
    fields.update(over)
    return Analysis(**fields)


def test_value_line_exact_decimal_certified():
    text = render_text(rendezvous_analysis())
    assert "maximal cycle ratio of 'cost' = 13/14 = 0.9285714286 (certified)" in text


def test_integer_value_printed_once():
    text = render_text(rendezvous_analysis(value=Fraction(5), kind="mean"))
    assert "maximal cycle mean of 'cost' = 5 (certified)" in text


def test_min_mode_and_uncertified_are_said():
    text = render_text(rendezvous_analysis(mode="min", certified=False))
    assert "minimal cycle ratio" in text and "NOT certified" in text


def test_summary_lines():
    lines = render_text(rendezvous_analysis()).splitlines()
    assert lines[0] == "cs.dve: system async, 2 processes (Server, Client), 1 variable, 1 channel"
    assert lines[1] == ("state space: 3 states, 3 transitions, no deadlock, "
                        "error state not reached")


def test_rendezvous_step_takes_one_line_per_process():
    lines = render_steps(rendezvous_analysis().cycle)
    assert lines[0].split() == ["step", "process", "transition", "sync", "cost", "time",
                                "changes"]
    assert re.match(r"\s+2\s+Client\s+ready -> wait\s+req!1\s+3\s+1\s+Server.who: 0 -> 1$",
                    lines[2])
    assert re.match(r"\s+Server\s+idle -> work\s+req\?who$", lines[3])


def test_cycle_header_and_trace_hint():
    a = rendezvous_analysis()
    text = render_text(a)
    assert "critical cycle: 3 steps, cost 13, time 14, from state 0 (the initial state)" in text
    assert "--trace" not in text  # the cycle starts in the initial state: no prefix to show


def test_trace_shows_prefix_and_initial_state():
    pre = Step(0, 5, 2, (Move("Client", "think", "ready"),), 0, 4, (), {"Client": "ready"})
    cyc = tuple(Step(s.source + 5, s.target + 5, s.edge, s.moves, s.cost, s.time, s.changed,
                     s.state) for s in rendezvous_analysis().cycle)
    a = rendezvous_analysis(prefix=(pre,), cycle=cyc)
    assert "(--trace shows the 1-step run that reaches it)" in render_text(a)
    text = render_text(a, trace=True)
    assert "initial state: Server=idle, Client=think, Server.who=0" in text
    assert "run from the initial state to state 5 (1 step):" in text


def test_warnings_with_shortest_runs():
    dead = (Step(0, 4, 1, (Move("P", "a", "stuck"),), 0, 1, (), {"P": "stuck"}),)
    err = (Step(0, 9, 2, (Move("P", "a", "b"),), 0, 1, (), {}, error=True),)
    a = rendezvous_analysis(n_deadlocks=2, error_state_reached=True, deadlock_trace=dead,
                            error_trace=err)
    text = render_text(a)
    assert "warning: 2 deadlock states" in text
    assert "shortest run to a deadlock (1 step):" in text
    assert "warning: the error state is reachable" in text
    assert "shortest run to the error state (1 step):" in text
    assert "-> ERROR STATE" in text
    assert "2 deadlocks, error state reached" in text


def test_timings_line():
    last = render_text(rendezvous_analysis()).splitlines()[-1]
    assert last.startswith("timings: parse 0.010 s, explore 0.020 s, scc 0.000 s")
    assert last.endswith("backend cpu, 2 iterations")


def test_json_fields():
    d = json.loads(render_json(rendezvous_analysis()))
    assert JSON_KEYS <= d.keys()
    assert d["value"] == pytest.approx(13 / 14) and d["exact"] == "13/14"
    assert d["kind"] == "ratio" and d["mode"] == "max" and d["cost"] == "cost"
    assert d["cycle_cost"] == 13 and d["cycle_time"] == 14
    step = d["cycle"][1]
    assert step["process"] == "Client + Server"
    assert step["transition"] == "Client: ready -> wait; Server: idle -> work"
    assert step["cost"] == 3 and step["time"] == 1
    assert step["state"] == {"Server": "work", "Client": "wait", "Server.who": 1}
    assert step["changed"] == {"Server.who": [0, 1]}
    assert [m["sync"] for m in step["moves"]] == ["req!1", "req?who"]
    assert set(d["timings"]) == {"parse", "explore", "scc", "howard", "certify", "total"}


def test_json_integer_exact_has_no_slash():
    assert json.loads(render_json(rendezvous_analysis(value=Fraction(-4))))["exact"] == "-4"


def test_dot_cycle_and_prefix():
    pre = Step(0, 5, 2, (Move("Client", "think", "ready"),), 0, 4, (), {"Client": "ready"})
    a = rendezvous_analysis(prefix=(pre,))
    dot = render_dot(a)
    assert_dotish(dot)
    assert re.search(r's0 -> s5 \[.*color=blue', dot)
    assert re.search(r's1 -> s2 \[.*color=red', dot)
    assert 'Server.who=1' in dot  # states labelled with their variable values


def test_dot_escapes_quotes():
    a = rendezvous_analysis(model='we"ird.dve')
    assert 'we\\"ird.dve' in render_dot(a)


def test_markdown_and_html():
    a = rendezvous_analysis()
    md = a._repr_markdown_()
    assert "**maximal cycle ratio of 'cost'** = `13/14`" in md
    assert "| 2 | Client | ready -> wait | req!1 | 3 | 1 | Server.who: 0 -> 1 |" in md
    h = a._repr_html_()
    assert "<td>req?who</td>" in h and "13/14" in h
    assert str(a) == render_text(a)


def test_analysis_is_frozen():
    a = demo()
    with pytest.raises(Exception):
        a.value = Fraction(1)  # type: ignore[misc]


def test_value_only_report_keeps_the_warnings_without_runs():
    from dvecost import analyze
    from dvecost.examples import example_path

    text = render_text(analyze(example_path("deadlock"), backend="cpu", witness=False),
                       peak_memory=3 * 2**20)
    lines = text.splitlines()
    assert "critical cycle: not decoded (value only)" in lines
    assert "warning: 1 deadlock state: runs that reach one stop there and lie on no cycle" in lines
    assert "shortest run" not in text and "->" not in text
    assert lines[-1].endswith("; peak memory 3.0 MiB")
