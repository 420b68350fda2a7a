"""dvecost: the worst load a DVE-modelled system can sustain forever.

The Python API matches the command line, one function per command:

- :func:`analyze` (``dvecost analyze``): the maximal cycle mean or ratio of a model;
- :func:`saturate` (``dvecost saturate``): the smallest number of clients that saturates
  a server, with the same defaults as the command (``method='auto'``);
- :func:`headroom` (``dvecost headroom``): how much of the server a population uses;
- :func:`workers` (``dvecost workers``; also named :func:`workers_needed`): how many
  workers a population needs;
- :func:`frontier` (``dvecost saturate --frontier``): the saturation frontier over two
  scenario counts.

The names are loaded on first use: ``import dvecost`` itself imports nothing heavy, so the
``dvecost`` program starts (and heeds a Ctrl-C) at once.

>>> import dvecost
>>> dvecost.saturate("paper-server", backend="cpu").saturating_clients
3
>>> dvecost.workers is dvecost.workers_needed
True
"""

from __future__ import annotations

import importlib
from typing import Any

from ._version import __version__

__all__ = ["__version__", "analyze", "Analysis", "Step", "Move", "saturate", "headroom",
           "workers", "workers_needed", "frontier"]

#: Where each public name lives (module, name there), imported when first asked for.
_LAZY = {"analyze": (".analysis", "analyze"), "Analysis": (".analysis", "Analysis"),
         "Step": (".analysis", "Step"), "Move": (".analysis", "Move"),
         "saturate": (".saturation", "saturate"), "headroom": (".capacity", "headroom"),
         "workers": (".capacity", "workers_needed"),
         "workers_needed": (".capacity", "workers_needed"),
         "frontier": (".capacity", "frontier")}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'dvecost' has no attribute '{name}'")
    module, attr = _LAZY[name]
    value = getattr(importlib.import_module(module, __name__), attr)
    globals()[name] = value   # the next look-up finds it at once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
