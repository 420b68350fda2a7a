"""Imports run down the layers only: runtime -> dve -> statespace/ocm -> scenarios -> dvecost.

Every module of the five packages is parsed (never imported) and its imports, including those
inside functions and ``importlib.import_module`` of a constant name, are checked against three
rules:

- a package imports only the packages below it (``ocm`` imports none: it knows no model);
- no circle of imports between modules;
- no private name (``_x``) is imported from, or read off, another module.

Two more checks: ``runtime`` imports nothing of the project, and no private attribute of
another module's object is read (``obj._x``, see :func:`_object_violations`).
"""

from __future__ import annotations

import ast
import functools
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
    tree = _tree(path)
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
            base = _from_base(node, package)
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


@functools.lru_cache(maxsize=None)
def _tree(path: pathlib.Path) -> ast.Module:
    """The syntax tree of a module, parsed once for all the checks."""
    return ast.parse(path.read_text(), str(path))


def _from_base(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a ``from ... import`` reads from, relative levels resolved."""
    base = node.module or ""
    if node.level:
        parts = package.split(".")
        parts = parts[:len(parts) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    return base


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


def test_runtime_imports_nothing_of_the_project():
    """``runtime`` is the floor: every package may import it, so it imports none of them
    (checked on its own, whatever ALLOWED says, so that loosening the table cannot undo it)."""
    modules = _modules(ROOT)
    assert any(m.startswith("runtime.") for m in modules)
    for module, path in modules.items():
        if _top(module) != "runtime":
            continue
        for target, _, line in _imports(module, path, modules):
            assert _top(target) == "runtime", f"{path.relative_to(ROOT)}:{line} imports {target}"


# --- private attributes read through an object -------------------------------------------
#
# ``obj._name`` where ``obj`` is not ``self``/``cls`` (nor a module: the import check above sees
# those) reaches into another module's object when ``_name`` is defined by another module of
# the packages and not by this one. "Defined" is what an attribute can come from: a function
# or class, a name assigned at any level (class bodies, dataclass fields), an attribute
# assigned (``x._name = ...``), a ``__slots__`` entry. ``getattr``/``hasattr`` of a constant
# private name count as reads. A name that no module of the packages defines (a library's own,
# e.g. a named tuple's ``_replace``) is not the project's business here.


def _definitions(tree: ast.AST) -> set[str]:
    """The private names a module defines as attributes, in any of the ways listed above (a
    module-level function or variable is read off the module, which the import check sees)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    out.add(item.name)
                elif isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    out.update(t.id for t in targets if isinstance(t, ast.Name))
                    if any(isinstance(t, ast.Name) and t.id == "__slots__" for t in targets):
                        out.update(c.value for c in ast.walk(item.value)
                                   if isinstance(c, ast.Constant) and isinstance(c.value, str))
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "setattr" and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            out.add(node.args[1].value)
    return {n for n in out if _private(n)}


def _imported_objects(module: str, path: pathlib.Path, tree: ast.AST, modules) -> set[str]:
    """The names ``module`` imports from other modules of the packages that are not modules
    (classes, functions): a private attribute read off one of them is always another
    module's, whatever this module defines (``Explorer._successors_sync(self, ...)`` in a
    subclass that overrides it)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = _from_base(node, package)
            if _resolve(base, modules) in (None, module):
                continue
            out.update(a.asname or a.name for a in node.names
                       if f"{base}.{a.name}" not in modules)
    return out


def _module_names(module: str, path: pathlib.Path, tree: ast.AST, modules) -> set[str]:
    """The names that ``module`` binds to modules by its imports (``import x.y``, ``import x
    as y``, ``from pkg import submodule``): a private read off them is the import check's."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.asname or a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, package)
            out.update(a.asname or a.name for a in node.names if f"{base}.{a.name}" in modules)
    return out


def _object_reads(tree: ast.AST, module_names: set[str]) -> list[tuple[str, str | None, int]]:
    """``(name, owner, line)`` of every private attribute read off something that is not ``self``,
    ``cls``, ``super()``, ``type(...)`` or a module (``module_names``); a class imported from
    another module is an object like any other (``Explorer._step(self, ...)``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Store):
            name, owner = node.attr, node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)):
            name, owner = node.args[1].value, node.args[0]
        else:
            continue
        if not _private(name):
            continue
        if isinstance(owner, ast.Name) and owner.id in ({"self", "cls"} | module_names):
            continue
        if (isinstance(owner, ast.Call) and isinstance(owner.func, ast.Name)
                and owner.func.id in ("super", "type")):
            continue
        found.append((name, owner.id if isinstance(owner, ast.Name) else None, node.lineno))
    return found


def _object_violations(root: pathlib.Path = ROOT) -> dict[str, list[str]]:
    """``'MODULE reads ._NAME of another module's object'`` with the places it occurs."""
    modules = _modules(root)
    trees = {m: _tree(p) for m, p in modules.items()}
    defined = {m: _definitions(t) for m, t in trees.items()}
    anywhere = set().union(*defined.values()) if defined else set()
    out: dict[str, list[str]] = {}
    for module, tree in trees.items():
        names = _module_names(module, modules[module], tree, modules)
        imported = _imported_objects(module, modules[module], tree, modules)
        for name, owner, line in _object_reads(tree, names):
            if name not in anywhere or (name in defined[module] and owner not in imported):
                continue
            out.setdefault(f"{module} reads .{name} of another module's object", []).append(
                f"{modules[module].relative_to(root)}:{line}")
    return out


#: Reads through an object of another module's private names that are known and being removed
#: (issue 25 emptied the list: the simulator and the quotient use the public next-state
#: interface). A new entry needs a reason and an issue; the test fails on any read not listed.
KNOWN_OBJECT_READS: set[str] = set()


def test_the_object_check_sees_what_it_must(tmp_path):
    files = {
        "dve/__init__.py": "",
        "dve/a.py": ("class A:\n    __slots__ = ('_s',)\n    def __init__(self):\n"
                     "        self._x = 1\n    def _m(self):\n        return self._x\n"
                     "_CACHE = {}\n"),
        "dve/b.py": ("from . import a\nfrom .a import A\nimport sys\n"
                     "def f(o, p):\n"
                     "    o._x, o._m(), getattr(p, '_s'), a._CACHE\n"       # 3 reads + module
                     "    o._replace(), o._own, super()._m, sys._getframe\n"   # none of these
                     "    q = o\n    q._own = 2\n"
                     "    A._m(o), self_like._x\n"),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    found = _object_violations(tmp_path)
    assert sorted(found) == [
        "dve.b reads ._m of another module's object",
        "dve.b reads ._s of another module's object",
        "dve.b reads ._x of another module's object",
    ]
    assert found["dve.b reads ._x of another module's object"] == ["dve/b.py:5", "dve/b.py:9"]
    assert found["dve.b reads ._m of another module's object"] == ["dve/b.py:5", "dve/b.py:9"]


def test_no_private_attribute_is_read_through_another_modules_object():
    found = _object_violations()
    new = {v: found[v] for v in found if v not in KNOWN_OBJECT_READS}
    assert not new, "\n".join(f"{v} ({', '.join(new[v])})" for v in sorted(new))
