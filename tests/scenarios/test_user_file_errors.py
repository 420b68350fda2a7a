"""A user's scenario file: a misspelt scenario name, an empty scenario and a helper module
beside the file (issue 28)."""

from __future__ import annotations

import sys

import pytest

from dve.errors import ModelError
from dvecost.cli import main
from scenarios.loader import load_spec

SHOP = """
from scenarios import Scenario, Think, Request, Server, apportion

browser = Scenario("browser", [Think(3), Request("page", service=1)])
buyer = Scenario("buyer", [Think(2), Request("page", service=1), Think(4),
                           Request("checkout", service=2, cost=3)])
server = Server(workers=2)

def system(n):
    return apportion({browser: 3, buyer: 1}, n)
"""


def _run(capsys, *argv):
    code = main([*map(str, argv)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err
    return code, out, err


@pytest.mark.parametrize("argv", [
    ["headroom", "{f}", "--clients", "browsr=20,buyer=5"],
    ["workers", "{f}", "--clients", "browsr=2"],
    ["saturate", "{f}", "--frontier", "browsr,buyer"],
    ["saturate", "{f}", "--frontier", "browser,buyer", "--fixed", "browsr=2"],
])
def test_a_misspelt_scenario_name_is_named(capsys, tmp_path, argv):
    # As for the bundled templates: the name and the file's scenarios, not the server's limit
    # of clients met while looking for it in ever larger systems.
    f = tmp_path / "shop.py"
    f.write_text(SHOP)
    code, out, err = _run(capsys, *(a.format(f=f) for a in argv))
    assert code == 2 and out == ""
    assert f"no scenario 'browsr' in {f}; its scenarios: browser, buyer" in err
    assert "255" not in err.replace(str(f), "FILE")


EMPTY = """from scenarios import Scenario, Think, Request, Server

a = Scenario("a", [Think(1), Request("r", service=1)])
e = Scenario("e", [])
server = Server()

def system(n):
    return {a: n, e: 1}
"""


def test_an_empty_scenario_is_refused_at_the_call(capsys, tmp_path):
    f = tmp_path / "empty.py"
    f.write_text(EMPTY)
    with pytest.raises(ModelError) as info:
        load_spec(f)
    pos = info.value.pos
    assert (pos.line, pos.column) == (4, 5) and "scenario 'e' has no steps" in str(info.value)
    code, out, err = _run(capsys, "saturate", f)
    assert code == 2 and out == ""
    assert err.startswith(f"{f}:4:5: error[scenario-error]: ") and "has no steps" in err
    assert 'e = Scenario("e", [])' in err


HELPER = """from scenarios import Scenario, Think, Request

def shopper(name, think):
    return Scenario(name, [Think(think), Request("page", service=1)])
"""

USES_HELPER = """from scenarios import Server
import {mod}

browser = {mod}.shopper("browser", 3)
server = Server()

def system(n):
    import {mod}_late                     # imported by system(n) itself
    return {{browser: n, {mod}_late.extra: 1}}
"""

LATE = """from scenarios import Scenario, Think, Request
extra = Scenario("extra", [Think(5), Request("page", service=1)])
"""


def test_a_scenario_file_imports_a_helper_beside_it(capsys, tmp_path, monkeypatch):
    # A module name no other test uses (imports are cached in sys.modules).
    mod = f"shop_helper_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{mod}.py").write_text(HELPER)
    (tmp_path / f"{mod}_late.py").write_text(LATE)
    (tmp_path / "shop.py").write_text(USES_HELPER.format(mod=mod))
    monkeypatch.chdir(tmp_path.parent)       # not the file's folder: sys.path must bring it
    before = list(sys.path)
    try:
        family = load_spec(tmp_path / "shop.py")
        assert sys.path == before
        system = family(2)
        assert sys.path == before
        assert sorted(sc.name for sc in system.scenarios) == ["browser", "extra"]
        code, out, err = _run(capsys, "scenarios", "render", tmp_path / "shop.py", "2")
        assert code == 0 and "process browser_1 {" in out and "process extra_1 {" in out
        assert sys.path == before
    finally:
        for m in (mod, f"{mod}_late"):
            sys.modules.pop(m, None)


def test_sys_path_is_restored_when_the_file_fails(tmp_path):
    (tmp_path / "bad.py").write_text("import no_such_module_anywhere_xyz\n")
    before = list(sys.path)
    with pytest.raises(ModelError, match="no_such_module_anywhere_xyz"):
        load_spec(tmp_path / "bad.py")
    assert sys.path == before
