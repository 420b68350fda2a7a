"""The examples in the docstrings and in docs/scenarios.md run and say what they claim."""

from __future__ import annotations

import doctest
import importlib
import pathlib
import re

import pytest

from dvecost.saturation import saturate

#: The repository root (not imported from conftest: tests/statespace has a conftest too).
ROOT = pathlib.Path(__file__).resolve().parents[2]

MODULES = ["scenarios", "scenarios.dsl", "scenarios.templates", "scenarios.loader",
           "scenarios.saturation", "dvecost.saturation", "dvecost.cli.saturate",
           "dvecost.cli.scenarios"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0 and result.attempted > 0


def _block(text: str, first_line: str) -> str:
    for block in re.findall(r"```python\n(.*?)```", text, re.S):
        if block.startswith(first_line):
            return block
    raise AssertionError(f"no python block starting with {first_line!r}")


def _console(text: str, command: str) -> list[str]:
    """The output lines shown after ``$ command`` in a console block of the docs."""
    assert f"$ {command}\n" in text, f"no console block for {command!r}"
    block = text.split(f"$ {command}\n", 1)[1].split("```", 1)[0]
    return [ln for ln in block.splitlines() if not ln.startswith("$ ")]


def without_seconds(lines: list[str]) -> list[str]:
    """The report with its timing column blanked and its last line, the time and memory it
    took, left out (they vary from run to run; test_saturate_cli checks that line)."""
    return [re.sub(r"  \d+\.\d\d$", "  #", ln) for ln in lines if not ln.startswith("time: ")]


def test_tutorial_shop_example(tmp_path, monkeypatch):
    from dvecost.cli.saturate import render_report

    text = (ROOT / "docs" / "scenarios.md").read_text()
    (tmp_path / "shop.py").write_text(_block(text, "# shop.py"))
    monkeypatch.chdir(tmp_path)
    r = saturate("shop.py", backend="cpu", method="exact")
    assert r.saturating_clients == 6 and str(r.point(5).exact) == "11/6" and r.capacity == 2
    assert without_seconds(render_report(r).splitlines()) == \
        without_seconds(_console(text, "dvecost saturate shop.py --method exact"))


def test_tutorial_editor_code_matches_the_template():
    from scenarios.templates import editor
    text = (ROOT / "docs" / "scenarios.md").read_text()
    ns: dict = {}
    exec(_block(text, "from scenarios import"), ns)
    for n in (1, 4, 7):
        assert ns["system"](n).to_model() == editor(n).to_model()
