"""The ``dvecost check`` contract: exit codes, streams, positions, --json, many files, bad input."""

from __future__ import annotations

import json
import pathlib
import re
import subprocess
import sys

import pytest

from dve.errors import ModelErrors
from dvecost.cli import main

#: The repository root (not imported from conftest: tests/statespace has a conftest too).
ROOT = pathlib.Path(__file__).resolve().parents[2]

GOOD = (ROOT / "tests" / "data" / "clean_rendezvous.dve").read_text()

BAD = """\
byte token;
process P {
 state a;
 init a;
 trans a -> a { guard tokn > 0; effect count = 1; };
}
system async;
"""

WARN = """\
process P {
 state a, b, lost;
 init a;
 trans a -> b {}, b -> a {};
}
system async;
"""

INPUT = """\
input byte N = 2;
byte cell[N];
process P {
 state a;
 init a;
 trans a -> a { effect cell[0] = 1; };
}
system async;
"""

SUMMARY_KEYS = {"n_processes", "n_states", "n_transitions", "n_variables", "n_channels",
                "n_slots"}
DIAG_KEYS = {"code", "severity", "line", "column", "end_line", "end_column", "message", "hint"}


@pytest.fixture
def files(tmp_path, monkeypatch):
    """Write models into tmp_path (the working directory) and return their relative names."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")

    def write(name: str, content: str | bytes) -> str:
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        return name
    return write


def test_ok_file(files, capsys):
    good = files("good.dve", GOOD)
    assert main(["check", good]) == 0
    out, err = capsys.readouterr()
    assert out == ("good.dve: ok: 2 processes, 3 states, 3 transitions, 2 variables, "
                   "1 channel, 4 slots\n")
    assert err == ""


def test_broken_file(files, capsys):
    bad = files("bad.dve", BAD)
    assert main(["check", bad]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "bad.dve:5:23: error[undefined-name]: unknown variable 'tokn'" in err
    assert "bad.dve:5:40: error[undefined-name]: unknown variable 'count'" in err
    assert "hint: did you mean 'token'?" in err
    assert "     |                       ^^^^" in err
    assert err.rstrip().endswith("2 errors")
    assert "Traceback" not in err


def test_debug_shows_the_traceback(files):
    bad = files("bad.dve", BAD)
    with pytest.raises(ModelErrors):
        main(["check", "--debug", bad])


def test_warnings_do_not_fail(files, capsys):
    warn = files("warn.dve", WARN)
    assert main(["check", warn]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("warn.dve: ok: 1 process, 3 states, 2 transitions")
    assert "warn.dve:2:14: warning[unreachable-state]" in err


def test_quiet_prints_errors_only(files, capsys):
    warn, bad = files("warn.dve", WARN), files("bad.dve", BAD)
    assert main(["check", "-q", warn, bad]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "unreachable-state" not in err and "undefined-name" in err


def test_many_files_in_one_call(files, capsys):
    names = [files("a.dve", GOOD), files("b.dve", BAD), files("c.dve", WARN)]
    assert main(["check", *names]) == 2
    out, err = capsys.readouterr()
    assert [line.split(":")[0] for line in out.splitlines()] == ["a.dve", "c.dve"]
    assert "b.dve:5:23" in err and "c.dve:2:14" in err


def test_all_good_files_exit_0(files, capsys):
    names = [files(f"m{i}.dve", GOOD) for i in range(5)]
    assert main(["check", *names]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 5


def _validate_record(rec: dict) -> None:
    assert set(rec) == ({"status", "path", "ok", "diagnostics", "timings", "peak_memory_bytes"}
                        | SUMMARY_KEYS)
    assert list(rec)[0] == "status" and list(rec)[-1] == "peak_memory_bytes"
    assert rec["status"] == ("ok" if rec["ok"] else "error")
    assert isinstance(rec["path"], str) and isinstance(rec["ok"], bool)
    for key in SUMMARY_KEYS:
        assert (isinstance(rec[key], int) and rec[key] >= 0) if rec["ok"] else rec[key] is None
    for d in rec["diagnostics"]:
        assert set(d) == DIAG_KEYS
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", d["code"])
        assert d["severity"] in ("error", "warning")
        for key in ("line", "column", "end_line", "end_column"):
            assert d[key] is None or (isinstance(d[key], int) and d[key] >= 1)
        # (Two asserts: `A and B or C` let any message pass whenever the hint was a string.)
        assert isinstance(d["message"], str) and d["message"]
        assert d["hint"] is None or (isinstance(d["hint"], str) and d["hint"])
    if not rec["ok"]:
        assert any(d["severity"] == "error" for d in rec["diagnostics"])


def test_json(files, capsys):
    names = [files("a.dve", GOOD), files("b.dve", BAD), files("c.dve", WARN)]
    assert main(["check", "--json", *names]) == 2
    out, err = capsys.readouterr()
    assert err == ""
    records = [json.loads(line) for line in out.splitlines()]
    for rec in records:
        _validate_record(rec)
    assert [r["path"] for r in records] == names
    assert [r["ok"] for r in records] == [True, False, True]
    assert records[0]["n_slots"] == 4 and records[0]["diagnostics"] == []
    spans = [(d["code"], d["line"], d["column"], d["end_column"])
             for d in records[1]["diagnostics"]]
    assert spans == [("undefined-name", 5, 23, 27), ("undefined-name", 5, 40, 45)]
    assert records[1]["diagnostics"][0]["hint"] == "did you mean 'token'?"
    assert [d["code"] for d in records[2]["diagnostics"]] == ["unreachable-state"]


def test_json_for_unreadable_file(files, capsys):
    assert main(["check", "--json", "missing.dve"]) == 2
    (rec,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    _validate_record(rec)
    assert rec["ok"] is False


def test_defines_override_inputs(files, capsys):
    model = files("input.dve", INPUT)
    assert main(["check", model]) == 0
    assert "3 slots" in capsys.readouterr().out  # 1 control slot + N = 2 cells
    assert main(["check", "-D", "N=5", model]) == 0
    assert "6 slots" in capsys.readouterr().out
    assert main(["check", "-D", "N=0", model]) == 2
    assert "array-size-invalid" in capsys.readouterr().err


def test_defines_with_several_files(files, capsys):
    """Each file gets the defines it declares; one that no file declares is an error."""
    model, good = files("input.dve", INPUT), files("good.dve", GOOD)
    assert main(["check", "-D", "N=5", model, good]) == 0
    out = capsys.readouterr().out
    assert "input.dve: ok" in out and "6 slots" in out and "good.dve: ok" in out
    assert main(["check", "-D", "M=5", model, good]) == 2
    out, err = capsys.readouterr()
    assert len(out.splitlines()) == 2 and "-D 'M'" in err


def test_defines_between_file_names(files, capsys):
    """`-D` may stand anywhere among the file names; an unknown option stays an error."""
    model, good = files("input.dve", INPUT), files("good.dve", GOOD)
    assert main(["check", good, "-D", "N=5", model]) == 0
    out = capsys.readouterr().out
    assert out.index("good.dve: ok") < out.index("input.dve: ok") and "6 slots" in out
    assert main(["check", good, "-D", "N=5", model, "--frobnicate"]) == 2
    assert "unrecognized arguments: --frobnicate" in capsys.readouterr().err


def test_unknown_define_with_one_file(files, capsys):
    good = files("good.dve", GOOD)
    assert main(["check", "-D", "N=5", good]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "error[unknown-define]" in err


def test_bad_define_is_a_usage_error(files, capsys):
    model = files("input.dve", INPUT)
    assert main(["check", "-D", "N", model]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "NAME=INTEGER" in err


def test_missing_file(files, capsys):
    good = files("good.dve", GOOD)
    assert main(["check", "nope.dve", good]) == 2
    out, err = capsys.readouterr()
    assert out.startswith("good.dve: ok")
    assert "nope.dve" in err and "Traceback" not in err


@pytest.mark.parametrize("content, code", [
    (b"", "empty-file"),
    (b"  \n// only a comment\n", "empty-file"),
    (bytes(range(256)), "binary-input"),
    (b"\x7fELF\x02\x01\x01\x00\x00\x00", "binary-input"),
    ("// caf\xe9\nprocess P { state a; init a; }\nsystem async;\n".encode("latin-1"), "not-utf8"),
    (GOOD[: len(GOOD) // 2].encode(), "unexpected-eof"),
    (GOOD[: GOOD.index("system")].encode(), "unexpected-eof"),
    (GOOD[:-10].encode(), "syntax-error"),
])
def test_bad_input(files, capsys, content, code):
    name = files("in.dve", content)
    assert main(["check", name]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"error[{code}]" in err
    assert "in.dve" in err  # in the position, or in the message of a file-level error
    assert "Traceback" not in err


def test_colour_only_on_a_tty(files, capsys, monkeypatch):
    bad = files("bad.dve", BAD)

    class Tty:
        def __init__(self):
            self.parts = []

        def write(self, s):
            self.parts.append(s)

        def flush(self):
            pass

        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR")
    tty = Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    main(["check", bad])
    assert "\x1b[" in "".join(tty.parts)
    monkeypatch.setenv("NO_COLOR", "1")
    tty.parts.clear()
    main(["check", bad])
    assert "\x1b[" not in "".join(tty.parts)


def test_python_dash_m(tmp_path):
    (tmp_path / "good.dve").write_text(GOOD)
    (tmp_path / "bad.dve").write_text(BAD)
    env = {"PYTHONPATH": str(ROOT), "NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, "-m", "dvecost", "check", "good.dve", "bad.dve"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2
    assert proc.stdout.startswith("good.dve: ok: 2 processes")
    assert "bad.dve:5:23: error[undefined-name]" in proc.stderr
    assert "Traceback" not in proc.stderr


# ------------------------------------------------------------------ issue 11 point 5, issue 12

BYTE_INPUT = """\
input byte N = 3;
byte count;
process Client(key i) {
    byte mine;
    state idle, busy;
    init idle;
    trans idle -> busy { guard count < N; effect count = count + 1, mine = N; },
          busy -> idle { effect count = count - 1, mine = N; };
}
for (k : 1 .. 20) { process Client(k); }
system async;
"""


def test_define_out_of_range_is_one_diagnostic(files, capsys):
    name = files("m.dve", BYTE_INPUT)
    assert main(["check", "-D", "N=300", name]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("error[") == 1 and "warning[" not in err
    assert err.startswith("m.dve:1:12: error[init-out-of-range]: value 300 of byte input 'N' "
                          "is out of range: expected 0..255\n")
    assert "hint: set it with -D N=VALUE within 0..255, or declare it 'input int'" in err
    assert main(["check", "-D", "N=255", name]) == 0


def test_json_positions_of_front_end_limits(files, capsys):
    big = files("big.dve", "byte x = " + "9" * 5000 + ";\nprocess P { state s; init s; }\n"
                           "system async;\n")
    flat = files("flat.dve", "byte x;\nprocess P { state s; init s;\n trans s -> s { guard "
                             + " + ".join(["x"] * 1000) + " > 0; }; }\nsystem async;\n")
    assert main(["check", "--json", big, flat]) == 2
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["path"], r["ok"]) for r in records] == [("big.dve", False), ("flat.dve", True)]
    (d,) = records[0]["diagnostics"]
    assert (d["code"], d["line"], d["column"], d["end_column"]) == (
        "literal-too-large", 1, 10, 5010)
    assert records[1]["n_transitions"] == 1 and records[1]["diagnostics"] == []
