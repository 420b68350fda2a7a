"""Every ``from <project module> import name`` in the project and its tests names something
that exists, including imports inside functions that only a GPU run reaches.

A moved function leaves such imports behind on paths the CPU tests never execute (the device's
code paths); parsing every file and looking each name up catches them here.
"""

from __future__ import annotations

import ast
import importlib
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROJECT = ("runtime", "dve", "statespace", "ocm", "scenarios", "dvecost")


def _imports():
    for top in (*PROJECT, "tests", "tools"):
        for path in sorted((ROOT / top).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            package = module if path.name == "__init__.py" else module.rpartition(".")[0]
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not isinstance(node, ast.ImportFrom):
                    continue
                base = node.module or ""
                if node.level:
                    up = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(up + ([node.module] if node.module else []))
                if base.split(".")[0] in PROJECT:
                    yield f"{path.relative_to(ROOT)}:{node.lineno}", base, node.names


def test_every_imported_name_exists():
    missing = []
    for where, base, names in _imports():
        try:
            module = importlib.import_module(base)
        except ImportError as exc:
            missing.append(f"{where}: {base} ({exc})")
            continue
        for alias in names:
            if alias.name == "*" or hasattr(module, alias.name):
                continue
            try:
                importlib.import_module(f"{base}.{alias.name}")
            except ImportError:
                missing.append(f"{where}: {base} has no {alias.name}")
    assert not missing, "\n".join(missing)
