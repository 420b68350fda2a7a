"""``dvecost check`` on a file that ends too early: the position stays inside the file.

The span of ``unexpected-eof`` is zero-width at the end of the text (``end_column ==
column``, never one past the last character), and the text report still draws a caret there.
"""

from __future__ import annotations

import json

import pytest

from dvecost.cli import main

CASES = [
    # text, expected (line, column) of the end of the file
    ("process P { state s; init s; trans s -> s {", (1, 44)),
    ("process P { state s; init s; trans s -> s {\n", (2, 1)),
    ("byte x;\nprocess P { state s; init s; trans s -> s { effect x = x +", (2, 59)),
    ("byte x;\r\nprocess P {\tstate s;", (2, 21)),
    ("process P { state s; init s; } system", (1, 38)),
]


def _lines(text: str) -> list[str]:
    return [ln.removesuffix("\r") for ln in text.split("\n")]


@pytest.mark.parametrize("text, where", CASES)
def test_unexpected_end_has_a_zero_width_span_inside_the_file(tmp_path, capsys, monkeypatch,
                                                              text, where):
    monkeypatch.setenv("NO_COLOR", "1")
    path = tmp_path / "m.dve"
    path.write_bytes(text.encode())
    assert main(["check", "--json", str(path)]) == 2
    record = json.loads(capsys.readouterr().out)
    (d,) = record["diagnostics"]
    assert d["code"] == "unexpected-eof"
    assert (d["line"], d["column"]) == where
    assert (d["end_line"], d["end_column"]) == where        # zero-width
    lines = _lines(text)
    assert 1 <= d["line"] <= len(lines)
    assert d["end_column"] <= len(lines[d["line"] - 1]) + 1  # at most just after the last char

    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{path}:{where[0]}:{where[1]}: error[unexpected-eof]")
    gutter, shown = err[1].split(" | ", 1)
    assert int(gutter) == where[0] and shown == lines[where[0] - 1].expandtabs(4)
    caret = err[2].split(" | ", 1)[1]
    col = len(lines[where[0] - 1][:where[1] - 1].expandtabs(4))
    assert caret == " " * col + "^"
