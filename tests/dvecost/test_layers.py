"""Imports run down the layers only: runtime -> dve -> statespace/ocm -> scenarios -> dvecost.

Every module of the five packages is parsed (never imported) and its imports, including those
inside functions and ``importlib.import_module`` of a constant name, are checked against three
rules:

- a package imports only the packages below it (``ocm`` imports none: it knows no model);
- no circle of imports between modules;
- no private name (``_x``) is imported from, or read off, another module.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]

#: What each package may import. ``statespace`` and ``ocm`` share a layer and ignore each other.
ALLOWED = {
    "runtime": set(),
    "dve": {"runtime"},
    "ocm": {"runtime"},
    "statespace": {"runtime", "dve"},
    "scenarios": {"runtime", "dve", "statespace", "ocm"},
    "dvecost": {"runtime", "dve", "statespace", "ocm", "scenarios"},
}
PACKAGES = tuple(ALLOWED)


def _modules(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """Dotted module name -> file, for every module of the packages below ``root``."""
    out = {}
    for pkg in PACKAGES:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _resolve(name: str, modules) -> str | None:
    """The project module that ``name`` denotes (itself, or the module defining it)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: pathlib.Path, modules):
    """``(target module, imported name or None, line)`` for every import in ``module``,
    and the private attributes read off names bound to project modules."""
    tree = ast.parse(path.read_text(), str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found, aliases = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                target = _resolve(a.name, modules)
                if target:
                    found.append((target, None, node.lineno))
                    if a.asname:
                        aliases[a.asname] = target
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            if _resolve(base, modules) is None:
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                if sub in modules:  # a submodule: the import is of the module, not a name
                    found.append((sub, None, node.lineno))
                    aliases[a.asname or a.name] = sub
                else:
                    found.append((_resolve(base, modules), a.name, node.lineno))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "import_module" and node.args
              and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            target = _resolve(node.args[0].value, modules)
            if target:
                found.append((target, None, node.lineno))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and _private(node.attr)):
            found.append((aliases[node.value.id], node.attr, node.lineno))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _top(module: str) -> str:
    return module.split(".")[0]


def _violations(root: pathlib.Path = ROOT) -> dict[str, list[str]]:
    """Each violation (stable text, no line numbers) with the places it occurs."""
    modules = _modules(root)
    out: dict[str, list[str]] = {}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for target, name, line in _imports(module, path, modules):
            where = f"{path.relative_to(root)}:{line}"
            src, dst = _top(module), _top(target)
            if src != dst and dst not in ALLOWED[src]:
                out.setdefault(f"{module} imports {target} (up or across the layers)",
                               []).append(where)
            if name is not None and _private(name) and target != module:
                out.setdefault(f"{module} uses private {target}.{name}", []).append(where)
            if src != dst and any(_private(p) for p in target.split(".")):
                out.setdefault(f"{module} imports private module {target}", []).append(where)
            if target != module:
                graph[module].add(target)
    for cycle in _cycles(graph):
        out["import cycle: " + " -> ".join(cycle + [cycle[0]])] = []
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(_one_cycle(graph, set(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def _one_cycle(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A shortest cycle through the smallest module of a strongly connected component."""
    start = min(comp)
    parent = {start: None}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    path = [v]
                    while parent[path[-1]] is not None:
                        path.append(parent[path[-1]])
                    return path[::-1]
                if w not in parent:
                    parent[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


def test_the_checker_sees_what_it_must(tmp_path):
    """A made-up tree with one violation of each kind, some hidden in functions or importlib."""
    files = {
        "dve/__init__.py": "",
        "dve/errors.py": "def _helper(): pass\n",
        "ocm/__init__.py": "def f():\n    from dve.errors import Error\n",
        "ocm/a.py": "import importlib\nK = importlib.import_module('ocm.b')\n",
        "ocm/b.py": "from . import a\nfrom ._kern import run\n",
        "ocm/_kern.py": "def run(): pass\n",
        "statespace/__init__.py": "from dve import errors as E\nE._helper()\n",
        "statespace/x.py": "from ocm._kern import run\nimport numpy\n",
        "scenarios/__init__.py": "import dvecost\n",
        "dvecost/__init__.py": "from dve.errors import __doc__\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    found = _violations(tmp_path)
    assert sorted(found) == [
        "import cycle: ocm.a -> ocm.b -> ocm.a",
        "ocm imports dve.errors (up or across the layers)",
        "scenarios imports dvecost (up or across the layers)",
        "statespace uses private dve.errors._helper",
        "statespace.x imports ocm._kern (up or across the layers)",
        "statespace.x imports private module ocm._kern",
    ]
    assert found["ocm imports dve.errors (up or across the layers)"] == ["ocm/__init__.py:2"]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    assert _private("_x") and not _private("__version__") and not _private("x")


def test_imports_run_down_the_layers():
    found = _violations()
    assert not found, "\n".join(f"{v} ({', '.join(found[v])})" for v in sorted(found))
