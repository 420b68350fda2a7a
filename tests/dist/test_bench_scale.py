"""``dvecost bench scale``: every row explores the one-process graph (same counts), the
bytes sent are measured (none with one process; with two, at most every transition's key,
rank and id crossing, at least some), and speed-ups are ratios of the row's own seconds."""

from __future__ import annotations

import json

import pytest

from dvecost.cli import main
from statespace import build_state_graph, compile_model
from statespace.store import KeyLayout

import dve
from mpirun import ALLOW_ROOT, ROOT, mpiexec

MODEL = ROOT / "dvecost" / "examples" / "client_server.dve"


def test_rows_are_the_one_process_graph_and_bytes_sent_are_measured(capsys, monkeypatch):
    mpiexec()
    for k, v in ALLOW_ROOT.items():
        monkeypatch.setenv(k, v)
    assert main(["bench", "scale", "--model", str(MODEL), "--procs", "1,2", "--repeat", "1",
                 "--json", "-q"]) == 0
    rows = {r["run"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    cm = compile_model(dve.load_model(str(MODEL)))
    g = build_state_graph(cm)
    assert set(rows) == {"build_state_graph", "P = 1", "P = 2"}
    for r in rows.values():
        assert (r["states"], r["transitions"]) == (g.n_states, g.n_edges)
    assert rows["P = 1"]["sent B/transition"] == 0
    words = KeyLayout.for_model(cm).n_words
    # A successor whose owner is another process: its key and rank out (8 bytes a word and
    # 8 for the rank), its id back (int32 here).
    assert 0 < rows["P = 2"]["sent B/transition"] <= 8 * (words + 1) + 4
    p2 = rows["P = 2"]
    assert p2["speed-up search"] == pytest.approx(rows["P = 1"]["search s"] / p2["search s"],
                                                  rel=1e-3)
