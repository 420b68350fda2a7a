"""``byte a[2000000000];`` and its kind: every command refuses the model at once with exit 2,
the position, a caret under the size and a hint; no traceback, nothing allocated."""

from __future__ import annotations

import pytest

from dvecost.cli import main

MODEL = """byte ok[4];
byte a[2000000000];
process P { state s; init s; trans s -> s { effect ok[0] = 1; }; }
system async;
"""


@pytest.mark.parametrize("command", ["check", "explore", "analyze"])
def test_every_command_refuses_it(command, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NO_COLOR", "1")
    path = tmp_path / "huge.dve"
    path.write_text(MODEL)
    assert main([command, str(path)]) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err and out == ""
    lines = err.splitlines()
    assert lines[0] == (f"{path}:2:8: error[declaration-too-large]: impossible declaration: "
                        "array 'a' of 2,000,000,000 cells takes the state vector to "
                        "2,000,000,004 slots (about 7.45 GiB per state); the explorer holds "
                        "at most 1,048,576")
    assert lines[1:3] == ["    2 | byte a[2000000000];", "      |        ^^^^^^^^^^"]
    assert lines[3].startswith("  hint: every state is stored whole")
