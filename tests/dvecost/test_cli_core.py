"""The CLI core: exit codes, -D parsing, version, and that no subcommand is missing."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from dve.errors import ConfigurationError
from dvecost.cli import COMMANDS, main, parse_defines


def test_version(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("dvecost ")


def test_no_command_is_usage_error(capsys):
    assert main([]) == 2
    assert "usage" in capsys.readouterr().err


def test_unknown_command_is_usage_error(capsys):
    assert main(["frobnicate"]) == 2
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("bad", ["N", "=3", "N=x", "1N=3", "N=3.5"])
def test_bad_define(bad):
    with pytest.raises(ConfigurationError, match="NAME=INTEGER"):
        parse_defines([bad])


def test_defines_accept_negative_and_hex():
    assert parse_defines(["a=-2", "b=0x10"]) == {"a": -2, "b": 16}


@pytest.mark.parametrize("name", COMMANDS)
def test_every_subcommand_exists(name):
    """Every command the CLI lists is built and registers itself."""
    module = importlib.import_module(f"dvecost.cli.{name}")
    assert callable(module.register)


def test_python_dash_m():
    proc = subprocess.run([sys.executable, "-m", "dvecost", "--version"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.startswith("dvecost ")
