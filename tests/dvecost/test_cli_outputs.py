"""What the commands hand the user: output files (permissions, FIFOs), closed pipes, the JSON
shape every command shares, short printed results, the Python API beside the CLI, and the
errors of wrong input (a scenario file given as a model, non-ASCII digits, a scenario file whose
mapping fails)."""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import stat
import subprocess
import sys

import pytest

import dvecost
from dvecost.cli import main
from dvecost.cli.files import write_atomic
from dvecost.examples import example_path

MODEL = str(example_path("client_server.dve"))


def dvecost_run(*args, **kw):
    """The CLI in a fresh interpreter, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "dvecost", *args], capture_output=True,
                          text=True, timeout=120, **kw)


# ---------------------------------------------------------------- output files

@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_gets_the_umasks_permissions(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        path = write_atomic(str(tmp_path / "a.csv"), "x\n")
        drawn = write_atomic(str(tmp_path / "b.bin"), lambda p: open(p, "wb").write(b"y"))
    finally:
        os.umask(old)
    for p in (path, drawn):
        assert stat.S_IMODE(os.stat(p).st_mode) == mode
    # Replacing a file keeps that file's permissions, as writing into it would.
    os.chmod(path, 0o640)
    write_atomic(path, "z\n")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640 and open(path).read() == "z\n"


class FifoReader:
    """Read a FIFO while something writes into it: opened now without blocking (so a writer's
    open never waits), read until the writer has written and closed, for ``limit`` seconds
    at most (a FIFO replaced by a regular file is never written: then nothing is read)."""

    def __init__(self, path: str, limit: float = 60.0) -> None:
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.data = b""
        self.limit = limit

    def read(self) -> bytes:
        import time
        t0 = time.monotonic()
        try:
            while time.monotonic() - t0 < self.limit:
                try:
                    chunk = os.read(self.fd, 65536)
                except BlockingIOError:   # a writer holds it open: more may come
                    time.sleep(0.02)
                    continue
                if chunk:
                    self.data += chunk
                elif self.data:   # written and closed
                    break
                else:             # no writer yet
                    time.sleep(0.02)
        finally:
            os.close(self.fd)
        return self.data


def test_a_fifo_is_written_through_not_replaced(tmp_path):
    fifo = str(tmp_path / "out.csv")
    os.mkfifo(fifo)
    reader = FifoReader(fifo, limit=5)
    write_atomic(fifo, "a,b\n1,2\n")
    assert reader.read() == b"a,b\n1,2\n" and stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["out.csv"]   # no temporary file left beside it
    # A device: written through (no temporary file in /dev, which only root could make).
    assert write_atomic(os.devnull, "gone") == os.devnull
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_a_link_is_followed_and_kept(tmp_path):
    target = tmp_path / "real.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    write_atomic(str(link), "new\n")
    assert link.is_symlink() and target.read_text() == "new\n"


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_saturate_csv_into_a_fifo_and_plot_with_the_umask(tmp_path, umask):
    pytest.importorskip("matplotlib")
    fifo = str(tmp_path / "curve.csv")
    os.mkfifo(fifo)
    reader = FifoReader(fifo, limit=5)
    run = subprocess.run([sys.executable, "-m", "dvecost", "saturate", "paper-server", "-q",
                          "--backend", "cpu", "--csv", fifo, "--plot",
                          str(tmp_path / "p.png")], capture_output=True, text=True,
                         timeout=120, preexec_fn=lambda: os.umask(umask))
    got = reader.read()
    assert run.returncode == 0, run.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert got.decode().splitlines()[0].startswith("clients,mix,")
    png = tmp_path / "p.png"
    assert stat.S_IMODE(png.stat().st_mode) == 0o666 & ~umask
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "csv: written to" in run.stdout and "plot: written to" in run.stdout


def test_explore_save_refuses_a_fifo(tmp_path):
    fifo = tmp_path / "g.npz"
    os.mkfifo(fifo)
    assert main(["explore", MODEL, "--save", str(fifo), "-q"]) == 2
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_plot_format_that_needs_a_missing_program_is_refused_first(capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None)
    assert main(["saturate", "paper-server", "--plot", "p.pgf", "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert "p.pgf" in err and "xelatex" in err and "N = 1" not in err   # before any search


def test_a_plot_that_fails_after_the_search_keeps_the_printed_result(tmp_path, capsys,
                                                                      monkeypatch):
    """A format's backend failing (a program it runs missing, say) once the search is done:
    the result is printed, then the error, exit 2; no file is left behind."""
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    import dvecost.cli.saturate as sat

    def broken(*a, **k):
        raise RuntimeError("the backend fell over")

    fig = Figure()
    monkeypatch.setattr(fig, "savefig", broken)
    monkeypatch.setattr(sat, "build_figure", lambda result: fig)
    plot = str(tmp_path / "p.png")
    code = main(["saturate", "paper-server", "--plot", plot, "--backend", "cpu", "-q"])
    out, err = capsys.readouterr()
    assert code == 2 and "saturation: 3 clients" in out and "plot: written" not in out
    assert f"dvecost: error: cannot write the plot '{plot}': the backend fell over" in err
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------- closed pipes

@pytest.mark.parametrize("argv", [
    ["saturate", "paper-server", "-q"],
    ["headroom", "paper-server", "--clients", "client=2"],
    ["workers", "paper-server", "--clients", "client=3", "--jobs", "1", "-q"],
    ["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max", "1,1", "-q"],
    ["explore", MODEL],
    ["analyze", MODEL],
])
def test_a_closed_pipe_ends_quietly(argv):
    """``dvecost ... | head``: the reader has gone before the output is written (its end
    of the pipe closed at once, so the first write fails whatever the output's size)."""
    read, write = os.pipe()
    os.close(read)
    try:
        run = subprocess.run([sys.executable, "-m", "dvecost", *argv, "--backend", "cpu"],
                             stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert "Exception ignored" not in run.stderr


# ---------------------------------------------------------------- JSON

def _json_lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def _shared_shape(d: dict) -> None:
    assert list(d)[0] == "status" and list(d)[-1] == "peak_memory_bytes"
    assert isinstance(d["timings"], dict) and all(
        isinstance(v, (int, float)) and v >= 0 for v in d["timings"].values())
    assert isinstance(d["peak_memory_bytes"], int) and d["peak_memory_bytes"] > 0


@pytest.mark.parametrize("argv", [
    ["check", MODEL, str(example_path("rings_sync.dve"))],
    ["explore", MODEL],
    ["analyze", MODEL],
    ["saturate", "paper-server"],
    ["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max", "1,1"],
    ["workers", "paper-server", "--clients", "client=3", "--jobs", "1"],
    ["headroom", "paper-server", "--clients", "client=2"],
])
def test_every_commands_json_has_status_timings_and_peak(argv, capsys):
    extra = [] if argv[0] == "check" else ["--backend", "cpu"]
    assert main([*argv, "--json", "-q", *extra]) == 0
    objects = _json_lines(capsys.readouterr().out)
    assert len(objects) == (2 if argv[0] == "check" else 1)
    for d in objects:
        _shared_shape(d)
        assert d["status"] == "ok"


def test_cycle_json_has_the_shared_shape(tmp_path, capsys):
    graph = str(tmp_path / "g.npz")
    assert main(["explore", MODEL, "--save", graph, "-q"]) == 0
    capsys.readouterr()
    assert main(["cycle", graph, "--json"]) == 0
    _shared_shape(json.loads(capsys.readouterr().out))


def test_bench_json_has_the_shared_shape(capsys):
    from dvecost.benchmarks import Report
    from dvecost.cli import bench

    class Suite:
        @staticmethod
        def run(args, progress):
            return Report("t", ("a",), ((1,),), (), {})

    assert bench._run(argparse.Namespace(json=True, quiet=True, _module=Suite)) == 0
    d = json.loads(capsys.readouterr().out)
    _shared_shape(d)
    assert d["rows"] == [{"a": 1}]


def test_check_json_says_error_for_a_broken_file(tmp_path, capsys):
    bad = tmp_path / "bad.dve"
    bad.write_text("process P { state a; init b; }\nsystem async;\n")
    assert main(["check", str(bad), "--json"]) == 2
    d = json.loads(capsys.readouterr().out)
    _shared_shape(d)
    assert d["status"] == "error" and d["ok"] is False


def test_headroom_timeout_prints_a_json_object():
    """The clock of --timeout 0.01 runs out while the command is still loading."""
    run = dvecost_run("headroom", "paper-server", "--clients", "client=2", "--timeout", "0.01",
                      "--json", "--backend", "cpu")
    assert run.returncode == 3, run.stderr
    d = json.loads(run.stdout)
    assert d["status"] == "timeout" and d["limit"] == {"name": "--timeout", "value": "0.01"}
    _shared_shape(d)


# ---------------------------------------------------------------- printed results, the API

def test_printed_results_are_short_and_say_the_answer():
    from dvecost.capacity_report import (frontier_markdown, frontier_text, headroom_markdown,
                                         headroom_text, saturation_markdown, saturation_text,
                                         workers_markdown, workers_text)

    r = dvecost.saturate("paper-server", backend="cpu")
    h = dvecost.headroom("paper-server", {"client": 2}, backend="cpu")
    w = dvecost.workers("paper-server", {"client": 4}, backend="cpu", jobs=1)
    f = dvecost.frontier("editor", "reader", "exporter", max_clients=(1, 1), backend="cpu",
                         jobs=1)
    for result in (r, h, w, f):
        text = repr(result)
        assert "\n" not in text and len(text) < 200
        assert text.startswith(type(result).__name__ + "(spec=")
    texts = [saturation_text(r), headroom_text(h), workers_text(w), frontier_text(f)]
    marks = (saturation_markdown(r), headroom_markdown(h), workers_markdown(w),
             frontier_markdown(f))
    assert all(0 < len(t) < 2000 for t in texts) and all(marks)
    assert "saturating_clients=3" in repr(r) and "exact=2/3" in repr(h)
    assert "workers=2" in repr(w)
    lines = texts[0].splitlines()
    assert lines[1].split() == ["clients", "mix", "load", "decided"]
    assert [ln.split()[0] for ln in lines[2:-1]] == [str(p.clients) for p in r.curve]
    assert lines[-1] == "saturation: 3 clients reach the capacity 1"
    assert "2/3 (0.6667)" in texts[1].splitlines()[1]
    assert "| clients | mix | load | decided |" in marks[0]


def test_the_api_is_the_commands():
    from dvecost.capacity import frontier, headroom, workers_needed
    from dvecost.cli import _build_parser
    from dvecost.saturation import saturate

    assert dvecost.saturate is saturate and dvecost.headroom is headroom
    assert dvecost.workers is dvecost.workers_needed is workers_needed
    assert dvecost.frontier is frontier
    assert set(dvecost.__all__) <= set(dir(dvecost))
    cli = _build_parser("saturate").parse_args(["saturate", "x"])
    assert inspect.signature(saturate).parameters["method"].default == cli.method == "auto"


def test_import_dvecost_loads_nothing_heavy():
    run = subprocess.run([sys.executable, "-c", "import sys, dvecost; "
                          "print(sorted(m for m in ('numpy', 'dve', 'dvecost.analysis') "
                          "if m in sys.modules))"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "[]", run.stderr


# ---------------------------------------------------------------- wrong input

@pytest.mark.parametrize("command", ["analyze", "explore", "check"])
def test_a_scenario_file_where_a_model_is_expected(tmp_path, capsys, command):
    spec = tmp_path / "shop.py"
    spec.write_text("# a scenario file\ndef system(n):\n    return {}\n")
    assert main([command, str(spec)]) == 2
    err = capsys.readouterr().err
    assert "is a Python scenario file" in err and "reads a DVE model" in err
    assert f"dvecost headroom {spec}" in err and f"dvecost scenarios render {spec}" in err
    assert "unexpected character" not in err


@pytest.mark.parametrize("argv", [
    ["headroom", "paper-server", "--clients", "client=²"],
    ["workers", "paper-server", "--clients", "client=٣"],
    ["saturate", "editor", "--frontier", "reader,exporter", "--fixed", "writer=²"],
    ["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max", "²"],
    ["saturate", "editor", "--frontier", "reader,exporter", "--frontier-max", "2,³"],
])
def test_counts_in_other_digits_are_an_error(argv, capsys):
    assert main([*argv, "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("dvecost: error: bad ") and "Traceback" not in err


MAPPING_RAISES = """\
from scenarios import Scenario, Server, Think, Request

u = Scenario("u", [Think(1), Request("r", service=1)])
server = Server()


class Counts(dict):
    def items(self):
        raise ValueError("no items here")


def system(n):
    return Counts({u: n})
"""


def test_a_mapping_that_fails_when_read_is_a_positioned_error(tmp_path, capsys):
    spec = tmp_path / "odd.py"
    spec.write_text(MAPPING_RAISES)
    assert main(["saturate", str(spec), "--backend", "cpu"]) == 2
    err = capsys.readouterr().err
    assert f"{spec}:9:9: error[scenario-error]: reading what system(1) returned: " \
           "ValueError: no items here" in err
    assert "Traceback" not in err


# ---------------------------------------------------------------- what the docs say

def test_large_sync_models_are_explored_until_a_state_limit(tmp_path, capsys):
    """docs/scenarios.md, "Limits": 20 editor clients, once refused for the numbering of
    their steps, are explored until --max-states stops them."""
    model = str(tmp_path / "e20.dve")
    assert main(["scenarios", "render", "editor", "20", "-o", model]) == 0
    assert main(["explore", model, "--max-states", "2000", "--json", "--backend", "cpu"]) == 3
    d = json.loads(capsys.readouterr().out)
    assert d["status"] == "limit" and d["limit"] == {"name": "--max-states", "value": "2000"}
    assert d["n_states"] > 2000


# ---------------------------------------------------------------- smaller things the user reads

def test_one_of_a_kind_is_singular(tmp_path, capsys):
    one = tmp_path / "one.dve"
    one.write_text("process P { state a; init a; trans a -> a { cost 2; }; }\nsystem async;\n")
    assert main(["analyze", str(one), "--backend", "cpu"]) == 0
    assert "state space: 1 state, 1 transition, no deadlock" in capsys.readouterr().out
    edges = tmp_path / "g.txt"
    edges.write_text("1 1\n0 0 2 1\n")
    assert main(["cycle", str(edges), "--backend", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "maximal cycle mean: 2 (certified)" in out             # not "2 = 2"
    assert "graph: 1 vertex, 1 edge, 1 cyclic SCC; 1 Howard iteration," in out


def test_the_state_limit_says_why_it_was_passed(capsys):
    assert main(["explore", MODEL, "--max-states", "10", "--backend", "cpu"]) == 3
    err = capsys.readouterr().err
    assert "limit --max-states 10 reached (checked after each batch of states expanded, " \
           "hence more found); 13 states" in err


def test_the_progress_says_what_is_done_first(capsys):
    assert main(["saturate", "paper-server", "--backend", "cpu", "--json"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0] == ("N = 1 (1 client): checking the bounds (exact analysis if they do not "
                      "decide) ...")
    assert main(["saturate", "paper-server", "--backend", "cpu", "--json", "--method",
                 "bounds"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == "N = 1 (1 client): checking the bounds ..."


def test_help_texts(capsys):
    assert main(["bench", "--help"]) == 0
    text = capsys.readouterr().out
    assert "issue" not in text and "each search." in text   # whole first sentences
    assert main(["cycle", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    backend = text[text.rindex("--backend {auto,cpu,gpu}"):text.rindex("--max-memory SIZE")]
    assert "cycle engine" in backend and "explor" not in backend
