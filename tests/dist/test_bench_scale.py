"""``dvecost bench scale``: every row explores the one-process graph (same counts), the
bytes sent are measured (none with one process; with two, at most every transition's key,
rank and id crossing, at least some), the rows kept are compact, speed-ups and efficiencies
are ratios of the rows' own figures, and each row is also a JSON line."""

from __future__ import annotations

import json

import pytest

from dvecost.cli import main
from statespace import build_state_graph, compile_model
from statespace.store import KeyLayout

import dve
from mpirun import ALLOW_ROOT, ROOT, mpiexec

MODEL = ROOT / "dvecost" / "examples" / "client_server.dve"
TEMPLATE = ROOT / "dvecost" / "examples" / "client_server_template.dve"


def test_rows_are_the_one_process_graph_and_bytes_sent_are_measured(capsys, monkeypatch):
    mpiexec()
    for k, v in ALLOW_ROOT.items():
        monkeypatch.setenv(k, v)
    assert main(["bench", "scale", "--model", str(MODEL), "--procs", "1,2", "--repeat", "1",
                 "--json", "-q"]) == 0
    report = json.loads(capsys.readouterr().out)
    rows = {r["run"]: r for r in report["rows"]}
    assert {r["scaling"] for r in rows.values()} == {"strong"}
    cm = compile_model(dve.load_model(str(MODEL)))
    g = build_state_graph(cm)
    assert set(rows) == {"build_state_graph", "P = 1", "P = 2"}
    for r in rows.values():
        assert (r["states"], r["transitions"]) == (g.n_states, g.n_edges)
    assert rows["P = 1"]["sent B/transition"] == 0
    words = KeyLayout.for_model(cm).n_words
    # A successor whose owner is another process: its key and rank out (8 bytes a word and
    # 8 for the rank), its id back (int32 here); a new state numbered by another process than
    # its key's owner: its key and rank there, its id back (int64).
    per_state = (8 * (words + 1) + 8) * g.n_states / g.n_edges
    assert 0 < rows["P = 2"]["sent B/transition"] <= 8 * (words + 1) + 4 + per_state
    p2 = rows["P = 2"]
    assert p2["speed-up search"] == pytest.approx(rows["P = 1"]["search s"] / p2["search s"],
                                                  rel=1e-3)
    assert p2["efficiency"] == pytest.approx(p2["speed-up search"] / 2, rel=1e-3)
    # Against the one-process explorer of the same run: its total over P's, its CPU over
    # the busiest process's, both also in words below the table.
    one = rows["build_state_graph"]
    assert p2["vs one process"] == pytest.approx(one["total s"] / p2["total s"], rel=1e-3)
    assert p2["CPU vs one process"] == pytest.approx(one["CPU s"] / p2["CPU s"], rel=1e-3)
    said = [n for n in report["notes"] if n.startswith("P = 2 explores")]
    assert len(said) == 1 and f"{p2['vs one process']:.2f}x" in said[0]
    assert f"{p2['CPU vs one process']:.2f}x)" in said[0]
    # Targets and actions as int32: 8 bytes a transition kept while searching.
    assert rows["P = 2"]["rows B/transition"] == 8
    # The cycle engine's seconds: one process's for the reference, across P otherwise.
    assert all(r["engine s"] > 0 for r in rows.values())
    # The profile by phase of each distributed row: every phase of a level, CPU seconds.
    phases = report["meta"]["phases"]
    assert set(phases) == {"strong P = 1", "strong P = 2"}
    names = {"expand", "route", "keys out", "visited", "agree", "number", "targets back",
             "rows", "owned", "hand-over (wall)"}
    assert set(phases["strong P = 2"]) == names
    assert all(v >= 0 for v in phases["strong P = 2"].values())
    assert phases["strong P = 2"]["expand"] > 0
    assert any(n.startswith("strong P = 2: CPU s by phase") for n in report["notes"])
    # What a level costs: one entry a level of the search (the graph's depth plus one), the
    # smallest third's mean no more than the largest, no level longer than the search.
    for label, row in (("strong P = 1", "P = 1"), ("strong P = 2", "P = 2")):
        lv = report["meta"]["levels"][label]
        assert lv["levels"] == g.depth + 1
        assert 0 < lv["smallest third ms"] <= lv["largest ms"] <= 1000 * rows[row]["search s"]
        said = [n for n in report["notes"] if n.startswith(f"{label}: {g.depth + 1} levels")]
        assert len(said) == 1 and f"{lv['smallest third ms']:.2f} ms" in said[0]


def test_weak_rows_explore_the_family_at_each_size_and_write_json_lines(tmp_path, capsys,
                                                                         monkeypatch):
    mpiexec()
    for k, v in ALLOW_ROOT.items():
        monkeypatch.setenv(k, v)
    lines = tmp_path / "rows.jsonl"
    assert main(["bench", "scale", "--procs", "1,2", "--weak", "2,3", "--no-strong",
                 "--no-engine", "--repeat", "1", "--jsonl", str(lines), "--json", "-q"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(r["scaling"], r["P"]) for r in rows] == [("weak", 1), ("weak", 2)]
    assert [json.loads(x) for x in lines.read_text().splitlines()] == rows
    for r, n in zip(rows, (2, 3)):
        g = build_state_graph(compile_model(dve.load_model(str(TEMPLATE), defines={"N": n})))
        assert (r["states"], r["transitions"]) == (g.n_states, g.n_edges)
        assert r["model"] == f"client_server_template.dve N={n}"
    one, two = rows
    per = (two["transitions"] / two["search s"] / 2) / (one["transitions"] / one["search s"])
    assert two["efficiency"] == pytest.approx(per, rel=1e-3)
    assert two["speed-up search"] is None and one["efficiency"] == 1
    # --no-engine: the exploration alone, no engine's seconds.
    assert [r["engine s"] for r in rows] == [None, None]


def test_no_gather_counts_the_spread_graph_without_gathering_it(capsys, monkeypatch):
    """--no-gather: the search alone, the graph left spread over the processes; its counts are
    still the one-process graph's, and nothing is gathered or measured per gathered byte."""
    mpiexec()
    for k, v in ALLOW_ROOT.items():
        monkeypatch.setenv(k, v)
    assert main(["bench", "scale", "--procs", "1,2", "--weak", "3,4", "--no-strong",
                 "--no-engine", "--no-gather", "--repeat", "1", "--json", "-q"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    for r, n in zip(rows, (3, 4)):
        g = build_state_graph(compile_model(dve.load_model(str(TEMPLATE), defines={"N": n})))
        assert (r["states"], r["transitions"]) == (g.n_states, g.n_edges)
        assert r["gather s"] is None and r["B/transition"] is None
        assert r["search s"] > 0 and r["rows B/transition"] > 0
    assert rows[1]["sent B/transition"] > 0 == rows[0]["sent B/transition"]


@pytest.mark.parametrize("argv, message", [
    (["--procs", "1,2", "--weak", "5"], "one per P"),
    (["--gpus", "0,2"], "expected positive integers"),
    (["--no-strong"], "give --weak")])
def test_bad_counts_are_a_clear_error(argv, message, capsys):
    assert main(["bench", "scale", *argv]) == 2
    assert message in capsys.readouterr().err


def test_a_run_that_fails_is_said_in_one_line_with_its_reason(tmp_path, capsys, monkeypatch):
    """A timed run that fails (here the family's model, read only by the run's processes)
    ends the bench with exit 3 and one line naming the run and why: no traceback."""
    mpiexec()
    for k, v in ALLOW_ROOT.items():
        monkeypatch.setenv(k, v)
    bad = tmp_path / "bad.dve"
    bad.write_text("input int N;\nprocess P { state a; init a; "
                   "trans a -> a { effect x = 1; }; }\nsystem async;\n")
    assert main(["bench", "scale", "--procs", "1", "--weak", "4", "--no-strong",
                 "--no-engine", "--repeat", "1", "--family", str(bad), "-q"]) == 3
    err = capsys.readouterr().err
    assert "the run P = 1 (bad.dve N=4) failed" in err and "unknown variable 'x'" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
