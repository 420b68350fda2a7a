"""tools/device/: every script there is listed in its README, every listed script exists, and
the shell scripts parse (``bash -n``; they run on the device only)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

DEVICE = Path(__file__).resolve().parents[2] / "tools" / "device"


def listed() -> set[str]:
    """The script names in the first column of the README's table."""
    text = (DEVICE / "README.md").read_text()
    return set(re.findall(r"^\| `([\w.]+)", text, flags=re.M))


def test_readme_lists_exactly_the_scripts():
    scripts = {p.name for p in DEVICE.iterdir() if p.suffix in (".sh", ".py")}
    assert scripts, "tools/device holds no script"
    assert listed() == scripts


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not found")
@pytest.mark.parametrize("script", sorted(p.name for p in DEVICE.glob("*.sh")))
def test_shell_script_parses(script):
    run = subprocess.run(["bash", "-n", str(DEVICE / script)], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def test_gpu_suite_runs_every_gpu_test():
    """The suite's tests step selects the gpu marker over the whole of tests/, not a part."""
    text = (DEVICE / "run_gpu_suite.sh").read_text()
    assert re.search(r"pytest -q -m gpu tests (?!/)", text)
