"""The program's entry point: the ``dvecost`` command and ``python -m dvecost``.

It starts the device (:func:`ocm.backend.warm_up`: CuPy's import, the CUDA driver and
context, in background threads) before anything else is imported when the command line asks
for it (``analyze``, ``explore`` or ``cycle`` with ``--backend gpu``), so that the device's
start overlaps the import of the analysis modules as well as the parsing and the first
breadth-first chunks; then it runs :func:`dvecost.cli.main`. This module imports nothing
heavy itself.

Examples
--------
>>> wants_device(["analyze", "m.dve", "--backend", "gpu"]), wants_device(["check", "m.dve"])
(True, False)
"""

from __future__ import annotations

import sys
from typing import Sequence

__all__ = ["DEVICE_COMMANDS", "main", "wants_device", "wants_gpu"]

#: The commands whose ``--backend gpu`` starts the device early and whose process ends
#: without tearing CUDA down (:func:`dvecost.cli.main`).
DEVICE_COMMANDS = ("analyze", "explore", "cycle")


def wants_gpu(words: Sequence[str]) -> bool:
    """True when the command line asks for ``--backend gpu`` (either spelling).

    >>> wants_gpu(["analyze", "m.dve", "--backend", "gpu"]), wants_gpu(["x", "--backend=cpu"])
    (True, False)
    """
    words = list(words)
    return "--backend=gpu" in words or any(
        w == "--backend" and words[i + 1:i + 2] == ["gpu"] for i, w in enumerate(words))


def wants_device(words: Sequence[str]) -> bool:
    """True when the command line runs a command of :data:`DEVICE_COMMANDS` with
    ``--backend gpu``."""
    return bool(words) and words[0] in DEVICE_COMMANDS and wants_gpu(words)


def main() -> int:
    """Run the program on ``sys.argv``; returns the exit code."""
    if wants_device(sys.argv[1:]):
        from ocm.backend import warm_up
        warm_up()
    from .cli import main as cli_main
    return cli_main()
