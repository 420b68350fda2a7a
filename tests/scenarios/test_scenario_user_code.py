"""A scenario file is user code: whatever it does, dvecost reports it and goes on (issue 12).

``sys.exit()``, any ``BaseException`` and ``print()`` in a scenario file, and a number of
clients too large to build.
"""

from __future__ import annotations

import textwrap
import time

import pytest

import dve
from dve.errors import ConfigurationError, ModelError
from runtime.errors import Interrupted
from dvecost.cli import main
from scenarios import load_spec
from scenarios.loader import MAX_CLIENTS

HEADER = "import sys\nfrom scenarios import Scenario, Think, Request, Server\n"
CLIENT = 'u = Scenario("u", [Think(2), Request("r", service=1)])\nserver = Server(workers=1)\n'


def write(tmp_path, body: str):
    path = tmp_path / "spec.py"
    path.write_text(HEADER + textwrap.dedent(body))
    return path


def render(path, n, capsys):
    rc = main(["scenarios", "render", str(path), str(n)])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize("body, line, what", [
    ("sys.exit(0)\n", 3, "while running the file: the file called exit(0)"),
    ("def system(n):\n    raise SystemExit(3)\n", 4, "in system(2): the file called exit(3)"),
    ("class Boom(BaseException):\n    pass\nraise Boom('no')\n", 5,
     "while running the file: Boom: no"),
    ("class Boom(BaseException):\n    pass\ndef system(n):\n    raise Boom('late')\n", 6,
     "in system(2): Boom: late"),
])
def test_exits_and_base_exceptions_are_errors_of_the_file(tmp_path, capsys, monkeypatch, body,
                                                          line, what):
    monkeypatch.setenv("NO_COLOR", "1")
    path = write(tmp_path, body)
    rc, out, err = render(path, 2, capsys)
    assert (rc, out) == (2, "")
    assert err.startswith(f"{path}:{line}:")
    assert f"error[scenario-error]: {what}\n" in err
    assert "Traceback" not in err


def test_ctrl_c_and_signals_are_not_swallowed(tmp_path):
    path = write(tmp_path, "def system(n):\n    raise KeyboardInterrupt\n")
    with pytest.raises(KeyboardInterrupt):
        load_spec(path)(2)
    path = write(tmp_path, "from runtime.errors import Interrupted\n"
                           "raise Interrupted(15, 'SIGTERM')\n")
    with pytest.raises(Interrupted):
        load_spec(path)


def test_prints_go_to_stderr_and_the_model_stays_clean(tmp_path, capsys):
    path = write(tmp_path, CLIENT + 'print("loading")\n'
                           "def system(n):\n    print('building', n)\n    return {u: n}\n")
    rc, out, err = render(path, 2, capsys)
    assert rc == 0
    assert err == "loading\nbuilding 2\n"
    assert "loading" not in out and "building" not in out
    model = dve.load_model(out, name="rendered")  # stdout is exactly a model
    assert len(model.processes) == 3  # two clients and the server


@pytest.mark.parametrize("n", ["100000000000000000000", str(MAX_CLIENTS + 1), "0"])
def test_render_refuses_an_impossible_number_of_clients_at_once(capsys, n):
    t0 = time.perf_counter()
    rc = main(["scenarios", "render", "editor", n])
    out, err = capsys.readouterr()
    assert time.perf_counter() - t0 < 5  # 10^20 hung
    assert (rc, out) == (2, "")
    assert err == f"dvecost: error: N must be between 1 and {MAX_CLIENTS:,}, got {int(n):,}\n"


def test_a_family_refuses_too_many_clients(tmp_path):
    family = load_spec(write(tmp_path, CLIENT + "def system(n):\n    return {u: n}\n"))
    assert family(3).n_clients == 3
    with pytest.raises(ConfigurationError, match="at most 10,000"):
        family(10**20)


def test_errors_still_point_into_the_file(tmp_path):
    with pytest.raises(ModelError) as info:
        load_spec(write(tmp_path, "x = 1 / 0\n"))
    assert (info.value.pos.line, info.value.message) == (
        3, "while running the file: ZeroDivisionError: division by zero")
