"""``dvecost cycle``: output, JSON, exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dvecost.cli import main


@pytest.fixture
def triangle(tmp_path):
    p = tmp_path / "tri.txt"
    p.write_text("3 4\n0 1 1 1\n1 2 2 1\n2 0 6 2\n1 1 2 2\n")
    return str(p)


def test_text_output(triangle, capsys):
    assert main(["cycle", triangle]) == 0
    out = capsys.readouterr().out
    assert "maximal cycle mean: 3 (certified)" in out
    assert "0 -> 1 -> 2 -> 0" in out


def test_json(triangle, capsys):
    assert main(["cycle", triangle, "--ratio", "--json"]) == 0
    j = json.loads(capsys.readouterr().out)
    assert j["exact"] == "9/4" and j["value"] == 2.25 and j["certified"] is True
    assert j["cycle"] == [0, 1, 2] and j["cycle_edge_lines"] == [2, 3, 4]
    assert j["iterations"] >= 1 and j["timings"]["cycle"] >= 0 and j["status"] == "ok"
    assert main(["cycle", triangle, "--min", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == "2"


def test_npz_arrays(tmp_path, capsys):
    p = tmp_path / "g.npz"
    np.savez(p, indptr=np.array([0, 1, 2]), indices=np.array([1, 0]), cost=np.array([1, 2]),
             time=np.array([1, 3]))
    assert main(["cycle", str(p), "--ratio", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == "3/4"


@pytest.mark.parametrize("text, args, code, msg", [
    ("2 1\n0 1 1 1\n", [], 3, "no cycle"),
    ("2 2\n0 1 1 0\n1 0 1 0\n", ["--ratio"], 3, "total time 0"),
    ("2 1\n0 1 1.5 1\n", [], 2, "expected integers"),
    ("2 2\n0 1 1 -1\n1 0 1 1\n", ["--ratio"], 2, "non-negative"),
])
def test_exit_codes(tmp_path, capsys, text, args, code, msg):
    p = tmp_path / "g.txt"
    p.write_text(text)
    assert main(["cycle", str(p), *args]) == code
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err


def test_missing_file(capsys):
    assert main(["cycle", "/nonexistent/graph.txt"]) == 2
    assert "no such file" in capsys.readouterr().err


def test_gpu_backend_unavailable(triangle, capsys, monkeypatch):
    from runtime import device
    monkeypatch.setattr(device, "gpu_unavailable_reason", lambda: "CuPy is not installed")
    assert main(["cycle", triangle, "--backend", "gpu"]) == 2
    err = capsys.readouterr().err
    assert "pip install dvecost[gpu]" in err and "--backend cpu" in err
