"""Golden diagnostics: every broken model of tests/data/errors gives its code at its position.

Each ``NAME.dve`` starts with a comment ``// expect: CODE LINE:COL``; files that cannot hold a
comment (empty, binary, not UTF-8) are listed in :data:`NO_COMMENT`. For each file the test runs
``dvecost check tests/data/errors/NAME.dve`` from the repository root and asserts

- the expected code is reported at the expected line and column (errors make the exit code 2
  with nothing on stdout; a file whose expected code is a warning must pass with exit code 0);
- stderr equals the golden file ``NAME.stderr`` byte for byte (colour off).

To regenerate the golden files after a deliberate change of wording, run::

    DVECOST_REGEN=1 python -m pytest tests/dve/test_diagnostics.py

and review the diff before committing it.
"""

from __future__ import annotations

import os
import pathlib
import re

import pytest

from dve.check import CODES, WARNING_CODES
from dvecost.cli import main
from dvecost.cli.check import check_file

#: The repository root (not imported from conftest: tests/statespace has a conftest too).
ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

ERRORS = DATA / "errors"
REGEN = os.environ.get("DVECOST_REGEN") == "1"

#: Files without an ``// expect:`` line: code, line, column (0, 0 when the file has no position).
NO_COMMENT = {
    "empty_file": ("empty-file", 0, 0),
    "binary_input": ("binary-input", 0, 0),
    "not_utf8": ("not-utf8", 1, 7),
}

#: Codes the parser and loader report (helper A's), which the corpus must cover too.
SYNTAX_CODES = ("syntax-error", "unexpected-character", "unexpected-eof", "missing-semicolon",
                "assign-in-guard", "unclosed-brace", "empty-file", "binary-input", "not-utf8",
                "unsupported", "literal-too-large")

_EXPECT = re.compile(r"//\s*expect:\s*([a-z0-9-]+)\s+(\d+):(\d+)")

CASES = sorted(p.stem for p in ERRORS.glob("*.dve"))


def expectation(name: str) -> tuple[str, int, int]:
    if name in NO_COMMENT:
        return NO_COMMENT[name]
    first = (ERRORS / f"{name}.dve").read_text().splitlines()[0]
    m = _EXPECT.match(first)
    assert m, f"{name}.dve: first line must be '// expect: CODE LINE:COL'"
    return m.group(1), int(m.group(2)), int(m.group(3))


def test_corpus_is_large_enough():
    assert len(CASES) >= 45


def test_error_and_warning_codes_are_disjoint():
    assert not set(CODES) & set(WARNING_CODES)


def test_corpus_covers_every_code():
    seen = {expectation(n)[0] for n in CASES}
    missing = (set(CODES) | set(WARNING_CODES) | set(SYNTAX_CODES)) - seen
    assert not missing, f"no broken model for {sorted(missing)}"


@pytest.mark.parametrize("name", CASES)
def test_diagnostic(name, monkeypatch, capsys):
    code, line, column = expectation(name)
    monkeypatch.chdir(ROOT)
    monkeypatch.setenv("NO_COLOR", "1")
    rel = f"tests/data/errors/{name}.dve"

    summary, warnings, exc = check_file(rel, {})
    found = list(getattr(exc, "errors", [exc] if exc is not None else [])) + list(warnings)
    where = [(d.code, d.pos.line if d.pos else 0, d.pos.column if d.pos else 0) for d in found]
    assert (code, line, column) in where, f"{name}: expected {code} at {line}:{column}, got {where}"

    rc = main(["check", rel])
    out, err = capsys.readouterr()
    if code in WARNING_CODES:
        assert rc == 0 and out.startswith(f"{rel}: ok: ")
    else:
        assert rc == 2 and out == ""
    assert "Traceback" not in err

    golden = ERRORS / f"{name}.stderr"
    if REGEN:
        golden.write_text(err)
    assert golden.is_file(), f"no golden file {golden.name}: run with DVECOST_REGEN=1"
    assert err == golden.read_text()
