"""The ``dvecost analyze`` contract: exit codes 0/2/3, JSON fields, DOT output, no tracebacks."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

from dvecost.cli import main
from dvecost.examples import example_path
from report_shapes import JSON_KEYS, assert_dotish

ROOT = pathlib.Path(__file__).resolve().parents[2]


def run(capsys, *argv):
    code = main(["analyze", *map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return code, out, err


def test_text_report(capsys):
    code, out, err = run(capsys, example_path("rings_async"), "--backend", "cpu")
    assert code == 0
    assert "maximal cycle mean of 'cost' = 3 (certified)" in out
    assert "critical cycle: 2 steps, cost 6, time 2" in out
    assert "state space: 6 states, 12 transitions, no deadlock, error state not reached" in out
    assert re.search(r"timings: parse [\d.]+ s, explore [\d.]+ s", out)
    assert err == ""  # no progress display when stderr is not a terminal


def test_json(capsys):
    code, out, err = run(capsys, example_path("rings_sync"), "--json", "--ratio")
    assert code == 0 and err == ""
    d = json.loads(out)
    assert JSON_KEYS <= d.keys()
    assert (d["exact"], d["value"], d["kind"], d["mode"]) == ("15/4", 3.75, "ratio", "max")
    assert (d["n_states"], d["n_transitions"], d["n_deadlocks"]) == (6, 6, 0)
    assert d["error_state_reached"] is False and d["certified"] is True
    assert len(d["cycle"]) == 6
    for step in d["cycle"]:
        assert {"process", "transition", "cost", "time", "state"} <= step.keys()
        assert step["process"] == "A + B"
    assert d["backend"] in ("cpu", "gpu")
    assert {"parse", "explore", "scc", "howard", "certify"} <= d["timings"].keys()


def test_min(capsys):
    code, out, _ = run(capsys, example_path("rings_async"), "--min", "--json")
    assert code == 0 and json.loads(out)["exact"] == "2"


def test_cost_option(capsys):
    code, out, _ = run(capsys, example_path("resources"), "--cost", "net")
    assert code == 0 and "maximal cycle mean of 'net' = 7/3" in out


def test_several_resources_need_cost(capsys):
    code, out, err = run(capsys, example_path("resources"))
    assert code == 2 and out == ""
    assert "cpu, net" in err and "--cost" in err


def test_unknown_resource(capsys):
    code, out, err = run(capsys, example_path("resources"), "--cost", "disk")
    assert code == 2 and out == "" and "'disk'" in err


def test_zero_time_cycle_exits_3_with_the_cycle(capsys):
    code, out, err = run(capsys, example_path("zero_time"), "--ratio")
    assert code == 3 and out == ""
    assert "takes no time" in err
    assert "zero-time cycle (2 steps):" in err
    assert "send -> retry" in err and "retry -> send" in err


def test_zero_time_cycle_json(capsys):
    code, out, _ = run(capsys, example_path("zero_time"), "--ratio", "--json")
    assert code == 3
    d = json.loads(out)
    assert d["status"] == "no-answer" and d["error"] == "zero-time-cycle"
    assert len(d["trace"]) == 2


def test_no_cycle_exits_3_with_a_run(capsys, tmp_path):
    p = tmp_path / "stops.dve"
    p.write_text("process P { state a, b; init a; trans a -> b {}; } system async;\n")
    code, out, err = run(capsys, p)
    assert code == 3 and out == ""
    assert "no reachable cycle" in err
    assert "shortest run to a deadlock (1 step):" in err


def test_broken_model_exits_2_with_a_position(capsys, tmp_path):
    p = tmp_path / "broken.dve"
    p.write_text("process P { state a; init a; trans a -> b {}; } system async;\n")
    code, out, err = run(capsys, p)
    assert code == 2 and out == ""
    assert re.search(r"broken\.dve:1:\d+: error\[", err)


def test_missing_file_exits_2(capsys, tmp_path):
    code, out, err = run(capsys, tmp_path / "nope.dve")
    assert code == 2 and out == "" and "nope.dve" in err


def test_state_limit_exits_3(capsys):
    code, out, err = run(capsys, example_path("client_server"), "--max-states", "10")
    assert code == 3 and "limit --max-states 10 reached" in err
    # What was found so far is printed on stdout (docs/cli.md), with no value.
    head, states, transitions = out.splitlines()
    assert head.endswith("client_server.dve: no value (a limit stopped it before the answer)")
    n = int(states.split()[4])
    assert n > 10 and f"{n} states" in err and transitions.split()[-1] in err


def test_bad_max_states_exits_2(capsys):
    code, _, err = run(capsys, example_path("rings_async"), "--max-states", "0")
    assert code == 2 and "--max-states" in err


def test_defines(capsys, tmp_path):
    p = tmp_path / "k.dve"
    p.write_text("input byte K = 2; byte x;\n"
                 "process P { state s; init s; trans\n"
                 "  s -> s { guard x < K; effect x = x + 1; cost 1; },\n"
                 "  s -> s { guard x == K; effect x = 0; cost 0; }; }\n"
                 "system async;\n")
    code, out, _ = run(capsys, p, "-D", "K=4", "--json")
    assert code == 0 and json.loads(out)["exact"] == "4/5"
    code, _, err = run(capsys, p, "-D", "K")
    assert code == 2 and "NAME=INTEGER" in err


def test_trace_shows_the_prefix(capsys):
    code, out, _ = run(capsys, example_path("error_state"), "--trace")
    assert code == 0
    assert "initial state: Stack=run" in out
    assert "warning: the error state is reachable" in out
    assert "shortest run to the error state (4 steps):" in out


def test_dot_file(capsys, tmp_path):
    dot = tmp_path / "cycle.dot"
    code, out, _ = run(capsys, example_path("deadlock"), "--dot", dot)
    assert code == 0 and "critical cycle" in out
    text = dot.read_text()
    assert_dotish(text)
    assert "color=red" in text and "fork=[0,1]" in text
    assert text.count(" -> ") >= 8  # the whole graph is small enough to be drawn


def test_dot_stdout(capsys):
    code, out, _ = run(capsys, example_path("rings_async"), "--dot", "-")
    assert code == 0
    assert_dotish(out)


def test_gpu_backend_unavailable_exits_2(capsys):
    from runtime.device import gpu_available
    if gpu_available():
        pytest.skip("a GPU is present")
    code, out, err = run(capsys, example_path("rings_async"), "--backend", "gpu")
    assert code == 2 and out == "" and "--backend cpu" in err


def test_debug_shows_the_exception():
    from dve.errors import ConfigurationError
    with pytest.raises(ConfigurationError):
        main(["analyze", str(example_path("resources")), "--debug"])


def test_readme_command_in_a_subprocess():
    """What the README's first command runs, after installation, as ``python -m dvecost``."""
    proc = subprocess.run([sys.executable, "-m", "dvecost", "analyze",
                           "dvecost/examples/client_server.dve"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "maximal cycle mean of 'cost' = 13/5 = 2.6 (certified)" in proc.stdout


def test_progress_on_a_terminal(capsys, monkeypatch):
    """With stderr a terminal, the long phases are shown on one line that is erased at the end."""
    import dvecost.cli.analyze as cli_analyze

    monkeypatch.setattr(cli_analyze, "_interactive", lambda stream, quiet: not quiet)
    original = cli_analyze.ProgressLine.__init__
    monkeypatch.setattr(cli_analyze.ProgressLine, "__init__",
                        lambda self, stream: original(self, stream, interval=0, delay=0))
    code, out, err = run(capsys, example_path("rings_async"))
    assert code == 0 and "critical cycle" in out
    for phase in ("parse", "explore", "howard"):
        assert f"\x1b[K{phase}" in err
    assert err.endswith("\r\x1b[K")  # the line is erased before the report is printed
    code, out, err = run(capsys, example_path("rings_async"), "-q")
    assert code == 0 and err == ""


def test_no_progress_when_not_a_terminal():
    import io

    from dvecost.cli.analyze import _interactive
    assert not _interactive(io.StringIO(), quiet=False)


def _subparsers(parser):
    import argparse
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            yield from action.choices.items()


def test_cli_reference_documents_every_option():
    """docs/cli.md names every option of every subcommand, in that command's section."""
    from dvecost.cli import _build_parser

    doc = (ROOT / "docs" / "cli.md").read_text()
    common = {"--help", "--debug", "--quiet"}  # documented once, under "Conventions"
    conventions = doc.split("\n## Conventions\n", 1)[1].split("\n## ", 1)[0]
    assert "`--debug`" in conventions and "`--quiet`" in conventions
    missing = []
    for name, sub in _subparsers(_build_parser()):
        head = f"\n## dvecost {name}\n"
        assert head in doc, f"docs/cli.md has no section for 'dvecost {name}'"
        section = doc.split(head, 1)[1].split("\n## ", 1)[0]
        parsers = [(name, sub)] + [(f"{name} {n}", p) for n, p in _subparsers(sub)]
        for label, p in parsers:
            for action in p._actions:
                for opt in action.option_strings:
                    if opt.startswith("--") and opt not in common and f"`{opt}" not in section \
                            and f" {opt}" not in section:
                        missing.append(f"{label} {opt}")
    assert not missing, f"options missing from docs/cli.md: {', '.join(missing)}"


def test_bench_analyze_smoke(capsys):
    """``dvecost bench analyze`` on a tiny model: one row per kind, the ratio column filled."""
    code = main(["bench", "analyze", "--model", str(example_path("rings_async")),
                 "--repeat", "1", "--json", "-q"])
    out, err = capsys.readouterr()
    assert code == 0 and err == ""
    rows = json.loads(out)["rows"]
    assert [r["kind"] for r in rows] == ["mean", "ratio"]
    assert rows[0]["optimum"] == "3" and rows[0]["states"] == 6
    assert all(r["ratio"] > 0 for r in rows)


def test_dot_marks_the_error_state(capsys):
    code, out, _ = run(capsys, example_path("error_state"), "--dot", "-")
    assert code == 0
    assert_dotish(out)
    assert re.search(r's\d+ \[label="#\d+\\nERROR".*fillcolor=mistyrose', out)


def test_bench_analyze_template_reports_the_report_share(capsys):
    """``--template NAME:N``: a scenario template's row, with the report phase as a share of
    exploration."""
    code = main(["bench", "analyze", "--template", "editor:2", "--repeat", "1", "--json", "-q"])
    out, _ = capsys.readouterr()
    assert code == 0
    (row,) = json.loads(out)["rows"]
    assert row["model"] == "editor 2" and row["kind"] == "mean" and row["states"] == 88
    assert row["report_pct"] == pytest.approx(100 * row["report_s"] / row["explore_s"], rel=0.5)
    assert 0 < row["report_s"]


def test_json_is_one_line_with_status_timings_and_peak_memory(capsys):
    code, out, _ = run(capsys, example_path("rings_async"), "--json", "--backend", "cpu")
    assert code == 0 and out.count("\n") == 1
    d = json.loads(out)
    assert list(d)[0] == "status" and d["status"] == "ok" and "seconds" not in d
    assert list(d)[-1] == "peak_memory_bytes" and d["peak_memory_bytes"] > 2**20
    assert d["timings"]["total"] == pytest.approx(
        sum(v for k, v in d["timings"].items() if k != "total"), abs=1e-5)


def test_text_summary_shows_peak_memory(capsys):
    code, out, _ = run(capsys, example_path("rings_async"), "--backend", "cpu")
    last = out.rstrip().splitlines()[-1]
    assert code == 0 and re.search(r"; peak memory \d+\.\d MiB$", last)


def test_no_witness_prints_the_value_only(capsys):
    code, out, _ = run(capsys, example_path("rings_sync"), "--no-witness", "--json")
    d = json.loads(out)
    assert code == 0 and d["exact"] == "5" and d["witness"] is False and d["cycle"] == []
    code, out, _ = run(capsys, example_path("rings_sync"), "--no-witness")
    assert code == 0 and "critical cycle: not decoded" in out and "a0 -> a1" not in out
    code, _, err = run(capsys, example_path("rings_sync"), "--no-witness", "--dot", "-")
    assert code == 2 and "--no-witness" in err


def test_state_limit_json_says_what_was_found(capsys):
    code, out, err = run(capsys, example_path("client_server"), "--max-states", "10", "--json")
    d = json.loads(out)
    assert code == 3 and d["status"] == "limit" and d["limit"]["name"] == "--max-states"
    assert d["counts"]["states"] >= 10 and "found so far" in err
