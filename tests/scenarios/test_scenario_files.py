"""Scenario files: loading, and errors positioned at the user's file and line."""

from __future__ import annotations

import textwrap

import pytest

from dve.errors import ConfigurationError, ModelError
from dvecost.cli import main
from dvecost.saturation import saturate
from scenarios import System, load_spec

HEADER = "from scenarios import Scenario, Think, Request, Server, System, apportion\n"

GOOD_SYSTEM = HEADER + textwrap.dedent("""\
    user = Scenario("user", [Think(10), Request("job", service=6)])

    def system(n):
        return System({user: n}, server=Server())
    """)

GOOD_DICT = HEADER + textwrap.dedent("""\
    reader = Scenario("reader", [Think(6), Request("open", service=2)])
    writer = Scenario("writer", [Think(3), Request("save", service=3)])
    server = Server(workers=1)

    def system(n):
        return apportion({reader: 2, writer: 1}, n)
    """)


def write(tmp_path, text, name="spec.py"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_file_returning_a_system(tmp_path):
    fam = load_spec(write(tmp_path, GOOD_SYSTEM))
    assert isinstance(fam(3), System) and fam(3).n_clients == 3
    assert saturate(str(tmp_path / "spec.py"), backend="cpu").saturating_clients == 3


def test_file_returning_counts_with_a_module_level_server(tmp_path):
    system = load_spec(write(tmp_path, GOOD_DICT))(3)
    assert system.server is not None and system.describe().startswith("3 clients (reader: 2")
    assert system.name == "spec"


def test_dict_without_server_and_async_composition(tmp_path):
    text = GOOD_DICT.replace("server = Server(workers=1)\n", "composition = 'async'\n")
    system = load_spec(write(tmp_path, text))(2)
    assert system.server is None and system.composition == "async"


ERRORS = [
    # (file body after the header, line, column or None, words in the message)
    ("user = Scenario('user', [Think(2)\n", 2, None, "python syntax error"),
    ("x = 1\ny = 1 / 0\n", 3, 5, "while running the file: ZeroDivisionError: division by zero"),
    ("u = Scenario('u', [Think(-1)])\n", 2, None, "Think(ticks) must be 0..256, not -1"),
    ("import no_such_module_here\n", 2, 1, "ModuleNotFoundError"),
    ("def helper():\n    raise ValueError('bad idea')\n\nu = helper()\n", 3, None,
     "ValueError: bad idea"),
    ("def sys(n):\n    return None\n", 1, 1, "defines no function 'system'"),
    ("def system(n):\n    return [n]\n", 2, None, "system(1): system(n) must return a System"),
    ("def system(n):\n    return {}\n", 2, None, "system(1): a System needs at least one client"),
    ("u = Scenario('u', Request('r', 1))\n\ndef system(n):\n    return System({u: n // 0})\n",
     5, None, "in system(1): ZeroDivisionError"),
    ("u = Scenario('u', Request('r', 1))\nserver = 3\n\ndef system(n):\n    return {u: n}\n", 5,
     None, "module-level 'server' must be a Server"),
]


@pytest.mark.parametrize("body, line, column, words", ERRORS)
def test_errors_point_at_the_users_file_and_line(tmp_path, body, line, column, words):
    path = write(tmp_path, HEADER + body)
    with pytest.raises(ModelError) as info:
        load_spec(path)(1)
    exc = info.value
    assert exc.code == "scenario-error"
    assert exc.pos.source.name == str(path)
    assert exc.pos.line == line, exc.render()
    if column is not None:
        assert exc.pos.column == column, exc.render()
    assert words in exc.message
    assert exc.render().splitlines()[1].strip().startswith(str(line))  # the snippet is shown


def test_unreadable_file(tmp_path):
    with pytest.raises(ConfigurationError, match="cannot read scenario file"):
        load_spec(tmp_path / "missing.py")


def test_cli_reports_file_errors_without_traceback(tmp_path, capsys):
    path = write(tmp_path, HEADER + "x = 1\ny = 1 / 0\n")
    assert main(["saturate", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err
    assert err.startswith(f"{path}:3:5: error[scenario-error]: while running the file: "
                          "ZeroDivisionError")
    assert "y = 1 / 0" in err and "^^^^^" in err
    assert main(["scenarios", "render", str(path), "2"]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_debug_shows_the_python_traceback(tmp_path):
    path = write(tmp_path, HEADER + "x = 1\ny = 1 / 0\n")
    with pytest.raises(ModelError) as info:
        main(["saturate", str(path), "--debug"])
    assert isinstance(info.value.__cause__, ZeroDivisionError)
