"""Graph files: ``explore --save`` checks its path first and writes atomically; every loader
behind ``cycle`` refuses what it cannot hold exactly (exit 2 naming the file, and the line for
edge lists), and an impossible size is an error, not a traceback."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
import zipfile

import numpy as np
import pytest

from dve.errors import ConfigurationError
from runtime.errors import Interrupted
from dvecost.cli import main

LADDER = """
byte x;
process P { state a; init a;
  trans a -> a { guard x < 20; effect x = x + 1; cost 0; },
        a -> a { cost x; }; }
system async;
"""

#: Never ends: a --save check that came after exploring would hang the test.
ENDLESS = """
int x;
process P { state a; init a; trans a -> a { guard x < 2147483000; effect x = x + 1; }; }
system async;
"""


@pytest.fixture
def model(tmp_path):
    def write(text, name="m.dve"):
        p = tmp_path / name
        p.write_text(text)
        return str(p)
    return write


def run_cli(*args, timeout=60):
    p = subprocess.run([sys.executable, "-m", "dvecost", *args], capture_output=True,
                       text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


# ---------------------------------------------------------------- saving

def test_save_into_a_missing_directory_fails_before_exploring(model, tmp_path):
    code, out, err = run_cli("explore", model(ENDLESS), "--save",
                             str(tmp_path / "nonexistent" / "d" / "g.npz"), timeout=30)
    assert code == 2 and "does not exist" in err and out == ""
    assert "Traceback" not in err


def test_save_to_a_directory_is_refused_and_writes_nothing_beside_it(model, tmp_path, capsys):
    d = tmp_path / "out"
    d.mkdir()
    assert main(["explore", model(LADDER), "--save", str(d)]) == 2
    assert "is a directory" in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path)) == ["m.dve", "out"] and os.listdir(d) == []


def test_save_uses_the_name_as_given(model, tmp_path, capsys):
    target = tmp_path / "graph"
    assert main(["explore", model(LADDER), "-q", "--save", str(target)]) == 0
    assert target.is_file() and not (tmp_path / "graph.npz").exists()
    umask = os.umask(0)
    os.umask(umask)
    assert target.stat().st_mode & 0o777 == 0o666 & ~umask   # as for any file written
    capsys.readouterr()
    assert main(["cycle", str(target)]) == 0          # recognised by content, not by name
    assert "maximal cycle mean: 20 (certified)" in capsys.readouterr().out


def test_interrupted_save_leaves_the_old_file_and_no_temporary(model, tmp_path, monkeypatch):
    from dve import load_model
    from statespace import build_state_graph, graphfile as graph_mod, load_graph, save_graph
    g = build_state_graph(load_model(LADDER))
    target = tmp_path / "g.npz"
    save_graph(g, target)
    before = target.read_bytes()

    def savez_then_signal(f, **arrays):
        f.write(b"PK\x03\x04 half a file")
        raise Interrupted(15, "SIGTERM")

    monkeypatch.setattr(graph_mod.np, "savez", savez_then_signal)
    with pytest.raises(Interrupted):
        save_graph(g, target)
    monkeypatch.undo()
    assert target.read_bytes() == before and load_graph(target).n_states == 21
    assert sorted(os.listdir(tmp_path)) == ["g.npz"]


# ---------------------------------------------------------------- edge lists

@pytest.mark.parametrize("text, where, words", [
    ("1 1\n0 0 99999999999999999999 1\n", ":2:5:", "cost 99999999999999999999"),
    ("1 1\n0 0 -9223372036854775808 1\n", ":2:5:", "cost -9223372036854775808"),
    ("1 1\n0 0 9223372036854775808 1\n", ":2:5:", "does not fit"),
    ("2 2\n0 1 1 1\n1 0 1 -1\n", ":3:7:", "time -1"),
    ("2 2\n0 1 1 1\n\n1 x 1 1\n", ":4:3:", "expected integers"),
    ("2 1\n0 5 1 1\n", ":2:3:", "vertex 5 outside 0..1"),
    ("9223372036854775807 1\n0 0 1 1\n", ":1:", "more than any graph"),
])
def test_edge_list_values_that_do_not_fit_are_errors_naming_the_line(
        tmp_path, capsys, text, where, words):
    p = tmp_path / "g.txt"
    p.write_text(text)
    assert main(["cycle", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"{p}{where}" in err and words in err and "Traceback" not in err
    assert "certified" not in err


def test_edge_list_values_at_the_int64_bounds_are_read_exactly(tmp_path, capsys):
    import ocm
    p = tmp_path / "g.txt"
    p.write_text("2 2\n0 1 9223372036854775807 9223372036854775807\n"
                 "1 0 -9223372036854775807 0\n")
    e = ocm.read_edge_list(p)
    assert e.cost.tolist() == [2**63 - 1, -(2**63 - 1)]
    assert e.time.tolist() == [2**63 - 1, 0]
    # Whatever the engine then makes of such costs, it is never a wrapped value.
    code = main(["cycle", str(p)])
    cap = capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in cap.err
    if code == 0:
        assert "maximal cycle mean: 0 (certified)" in cap.out


def test_edge_list_with_a_huge_vertex_count_is_out_of_memory_not_a_crash(tmp_path):
    p = tmp_path / "g.txt"
    p.write_text("1000000000000 1\n0 0 1 1\n")
    code, out, err = run_cli("cycle", str(p))
    assert code == 3 and "out of memory" in err and str(p) in err
    assert "Traceback" not in err


def test_cost_option_on_an_edge_list_is_an_error(tmp_path, capsys):
    p = tmp_path / "g.txt"
    p.write_text("1 1\n0 0 5 1\n")
    assert main(["cycle", str(p), "--cost", "energy"]) == 2
    assert "--cost energy" in capsys.readouterr().err


# ---------------------------------------------------------------- .npz files

def _npz(path, **arrays):
    np.savez(path, **arrays)
    return str(path)


@pytest.mark.parametrize("cost, words", [
    (np.array([2**63 + 5], np.uint64), "cost[0] = 9223372036854775813"),
    (np.array([-2**63], np.int64), "cost[0] = -9223372036854775808"),
    (np.array([1.5]), "must hold integers"),
])
def test_npz_costs_that_do_not_fit_are_refused(tmp_path, capsys, cost, words):
    p = _npz(tmp_path / "g.npz", indptr=np.array([0, 1]), indices=np.array([0]), cost=cost,
             time=np.array([1]))
    assert main(["cycle", p]) == 2
    err = capsys.readouterr().err
    assert p in err and words in err and "Traceback" not in err


def test_uint64_costs_within_range_are_read_exactly(tmp_path, capsys):
    p = _npz(tmp_path / "g.npz", indptr=np.array([0, 1, 2]), indices=np.array([1, 0]),
             cost=np.array([2**40, 2**40 + 2], np.uint64), time=np.array([1, 1]))
    assert main(["cycle", p, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == str(2**40 + 1)


def test_empty_and_truncated_npz_are_errors(model, tmp_path, capsys):
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    assert main(["cycle", str(empty)]) == 2
    assert "empty" in capsys.readouterr().err
    good = tmp_path / "good.npz"
    assert main(["explore", model(LADDER), "-q", "--save", str(good)]) == 0
    capsys.readouterr()
    data = good.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 30):
        bad = tmp_path / f"cut{cut}.npz"
        bad.write_bytes(data[:cut])
        assert main(["cycle", str(bad)]) == 2
        err = capsys.readouterr().err
        assert str(bad) in err and "Traceback" not in err


def test_npz_header_claiming_a_huge_array_is_refused_without_allocating(tmp_path, capsys):
    p = tmp_path / "huge.npz"
    with zipfile.ZipFile(p, "w") as z:
        for name, shape in (("indptr", (10**12,)), ("indices", (1,)), ("cost", (1,)),
                            ("time", (1,))):
            buf = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                buf, {"descr": "<i8", "fortran_order": False, "shape": shape})
            buf.write(np.zeros(1, np.int64).tobytes())
            z.writestr(f"{name}.npy", buf.getvalue())
    assert main(["cycle", str(p)]) == 2
    err = capsys.readouterr().err
    assert "truncated or corrupt" in err and "indptr" in err


def test_saved_graph_with_inconsistent_arrays_is_refused(model, tmp_path, capsys):
    from statespace import load_graph
    good = tmp_path / "good.npz"
    assert main(["explore", model(LADDER), "-q", "--save", str(good)]) == 0
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["indices"] = arrays["indices"].copy()
    arrays["indices"][0] = 999
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(ConfigurationError, match=r"indices\[0\] = 999"):
        load_graph(tmp_path / "bad.npz")
    arrays["indices"][0] = 1
    arrays["cost_0"] = np.full(arrays["cost_0"].shape, 2**63 + 1, np.uint64)
    np.savez(tmp_path / "bad2.npz", **arrays)
    assert main(["cycle", str(tmp_path / "bad2.npz")]) == 2
    assert "9223372036854775809" in capsys.readouterr().err


def test_cycle_json_without_an_answer_is_still_one_object(tmp_path, capsys):
    p = tmp_path / "g.txt"
    p.write_text("2 1\n0 1 1 1\n")
    assert main(["cycle", str(p), "--json"]) == 3
    cap = capsys.readouterr()
    j = json.loads(cap.out)
    assert j["status"] == "no-answer" and j["error"] == "no-cycle" and "timings" in j
    assert "no cycle" in cap.err


def test_cycle_max_memory_refuses_a_graph_that_would_not_fit(tmp_path, capsys):
    # 200 000 vertices in one cycle: the engine needs tens of MiB beyond what is loaded.
    n = 200_000
    p = _npz(tmp_path / "ring.npz", indptr=np.arange(n + 1), indices=(np.arange(n) + 1) % n,
             cost=np.ones(n, np.int64), time=np.ones(n, np.int64))
    assert main(["cycle", p, "--max-memory", "80M", "--json"]) == 3
    cap = capsys.readouterr()
    j = json.loads(cap.out)
    assert j["status"] == "limit" and j["limit"] == {"name": "--max-memory", "value": "80M"}
    assert "--max-memory 80M reached" in cap.err and "200,000 vertices" in cap.err
    assert main(["cycle", p, "--max-memory", "2G", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exact"] == "1"


def test_cycle_timeout_stops_with_one_json_object(tmp_path):
    n = 500_000
    p = _npz(tmp_path / "ring.npz", indptr=np.arange(n + 1), indices=(np.arange(n) + 7) % n,
             cost=np.arange(n) % 5, time=np.ones(n, np.int64))
    t0 = time.monotonic()
    code, out, err = run_cli("cycle", p, "--timeout", "0.2", "--json", "--backend", "cpu")
    assert code == 3, err
    j = json.loads(out)
    assert j["status"] == "timeout" and j["limit"] == {"name": "--timeout", "value": "0.2"}
    assert j["stopped_in"] in ("load", "cycle") and "time limit" in err
    assert "Traceback" not in err and time.monotonic() - t0 < 30


def test_edge_list_thousands_of_digits_are_an_error_not_a_crash(tmp_path, capsys):
    p = tmp_path / "g.txt"
    p.write_text("1 1\n0 0 " + "9" * 5000 + " 1\n")
    assert main(["cycle", str(p)]) == 2
    err = capsys.readouterr().err
    assert f"{p}:2:5: cost 99999999999999999999... (5000 characters)" in err
    p.write_text("1 1\n0 0 " + "0" * 5000 + "7 1\n")    # leading zeros: just 7
    assert main(["cycle", str(p)]) == 0
    assert "maximal cycle mean: 7 (certified)" in capsys.readouterr().out
