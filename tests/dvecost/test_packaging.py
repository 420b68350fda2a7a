"""What ``pip install .`` ships: every package of the project is named in pyproject.toml.

setuptools installs only the packages listed under ``[tool.setuptools] packages``; a new
subpackage left out works in an editable install and in these tests, then fails with
ModuleNotFoundError after a plain install (README's first command).
"""

from __future__ import annotations

import pathlib

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_every_package_is_shipped():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
                 ["packages"])
    found = set()
    for init in ROOT.rglob("__init__.py"):
        rel = init.parent.relative_to(ROOT)
        if rel.parts and rel.parts[0] not in ("tests", "tools", "build", "dist") \
                and not any(p.startswith(".") for p in rel.parts):
            found.add(".".join(rel.parts))
    assert found == listed
