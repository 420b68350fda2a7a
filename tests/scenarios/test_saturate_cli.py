"""The ``dvecost saturate`` and ``dvecost scenarios`` contract: exit codes, text, JSON, plot."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

import dve
from dvecost.cli import main

#: The repository root (not imported from conftest: tests/statespace has a conftest too).
ROOT = pathlib.Path(__file__).resolve().parents[2]

CURVE_KEYS = {"clients", "exact", "value", "n_states"}


def run(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_list(capsys):
    code, out, err = run(capsys, "saturate", "--list")
    assert code == 0 and err == ""
    names = [line.split()[0] for line in out.splitlines()]
    assert names == ["paper-no-server", "paper-server", "editor"]
    assert all(len(line.split(None, 1)[1]) > 20 for line in out.splitlines())
    code, out2, _ = run(capsys, "scenarios", "list")
    assert code == 0 and out2 == out


def test_text_report(capsys):
    code, out, err = run(capsys, "saturate", "paper-server", "--backend", "cpu")
    assert code == 0 and err == ""  # no progress when stderr is not a terminal
    lines = out.splitlines()
    assert lines[1].split() == ["clients", "states", "load", "(exact)", "load", "seconds"]
    assert [ln.split()[:4] for ln in lines[2:6]] == [
        ["1", "21", "1/3", "0.3333"], ["2", "200", "2/3", "0.6667"], ["3", "644", "1", "1.0000"],
        ["4", "6314", "1", "1.0000"]]
    assert "saturation: 3 clients bring the load of the server to 1, reaching the capacity 1; " \
           "2 give 2/3 (0.6667)" in out


def test_json(capsys):
    code, out, err = run(capsys, "saturate", "paper-server", "--json", "--capacity", "2/3")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert d["saturating_clients"] == 2 and d["capacity"] == pytest.approx(2 / 3)
    assert d["capacity_exact"] == "2/3" and d["monotone"] is True
    assert [c["clients"] for c in d["curve"]] == [1, 2]
    assert all(CURVE_KEYS <= c.keys() for c in d["curve"])
    assert (d["curve"][0]["exact"], d["curve"][0]["value"]) == ("1/3", pytest.approx(1 / 3))


def test_json_without_saturation(capsys):
    code, out, _ = run(capsys, "saturate", "paper-server", "--json", "--max-clients", "2")
    assert code == 0
    d = json.loads(out)
    assert d["saturating_clients"] is None and [c["clients"] for c in d["curve"]] == [1, 2]


def test_capacity_above_the_bound(capsys):
    code, out, _ = run(capsys, "saturate", "paper-server", "--capacity", "1.5")
    assert code == 0 and "no saturation" in out and "at most 1" in out


def test_one_scenario(capsys):
    code, out, _ = run(capsys, "saturate", "editor", "--scenario", "exporter", "--json")
    d = json.loads(out)
    assert code == 0 and d["saturating_clients"] == 3 and d["scenario"] == "exporter"


def test_state_limit_exits_3(capsys):
    code, out, err = run(capsys, "saturate", "editor", "--max-states", "500", "--json")
    assert code == 3
    d = json.loads(out)
    assert d["saturating_clients"] is None and d["stopped"].startswith("N=4: state limit")


@pytest.mark.parametrize("argv, words", [
    (["saturate"], "needs a SPEC"),
    (["saturate", "no-such-template"], "unknown template or scenario file 'no-such-template'"),
    (["saturate", "paper-server", "--capacity", "-1"], "bad capacity"),
    (["saturate", "paper-server", "--scenario", "nobody"], "no scenario 'nobody'"),
    (["saturate", "paper-server", "--max-clients", "0"], "max_clients"),
    (["scenarios", "render", "paper-server", "0"], "N must be at least 1"),
    (["scenarios", "render", "nope", "2"], "unknown template"),
])
def test_invalid_input_exits_2(capsys, argv, words):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and words in err


def test_bad_option_is_usage_error(capsys):
    code, _, err = run(capsys, "saturate", "paper-server", "--max-clients", "x")
    assert code == 2 and "invalid int value" in err


def test_plot_without_matplotlib(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails
    code, out, err = run(capsys, "saturate", "paper-server", "--plot", tmp_path / "c.png")
    assert code == 2 and out == ""
    assert "--plot needs matplotlib" in err and "dvecost[plot]" in err
    assert not (tmp_path / "c.png").exists()


def test_plot(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    code, _, _ = run(capsys, "saturate", "paper-server", "--plot", tmp_path / "c.png")
    assert code == 0 and (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_render(capsys, tmp_path):
    code, out, err = run(capsys, "scenarios", "render", "paper-server", "2")
    assert code == 0 and err == ""
    assert out.startswith("// dvecost scenarios render paper-server 2\n")
    model = dve.parse_model(out, "rendered.dve")
    assert [p.name for p in model.processes] == ["server", "client_1", "client_2"]
    path = tmp_path / "m.dve"
    assert run(capsys, "scenarios", "render", "editor", "3", "-o", path)[:2] == (0, "")
    assert dve.load_model(str(path)).system.kind == "sync"
    code, out, _ = run(capsys, "scenarios", "render", "editor", "2", "--scenario", "writer")
    assert code == 0 and "process writer_2" in out and "reader" not in out


def test_python_m_dvecost(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "dvecost", "saturate", "--list"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "editor" in proc.stdout


def test_progress_on_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, out, err = run(capsys, "saturate", "paper-server", "--json")
    assert code == 0 and json.loads(out)["saturating_clients"] == 3
    assert [ln.split(":")[0].strip() for ln in err.splitlines()] == ["N=1", "N=2", "N=4", "N=3"]
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    code, out, err = run(capsys, "saturate", "paper-server", "--json", "-q")
    assert code == 0 and err == ""
