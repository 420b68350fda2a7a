"""The README promises exactly two set-up commands; both must name things that exist."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]

README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```sh\n(.*?)```", README, re.S)


def test_exactly_two_setup_commands():
    setup = README.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert len(re.findall(r"```sh\n", setup)) == 2


def test_main_command_names_a_bundled_example():
    paths = re.findall(r"dvecost analyze (\S+\.dve)", BLOCKS[0])
    assert paths and all((ROOT / p).is_file() for p in paths)


def test_test_command_is_ci():
    assert BLOCKS[1].strip() == "bash .ci/run"
    assert (ROOT / ".ci" / "run").is_file()
