"""dvecost: the worst load a DVE-modelled system can sustain forever.

The package's names are loaded on first use (:pep:`562`), so that the program's entry point
(:mod:`dvecost.launch`) can start the device before the analysis modules are imported.

>>> import dvecost
>>> dvecost.analyze.__module__
'dvecost.analysis'
"""

from ._version import __version__

__all__ = ["__version__", "analyze", "Analysis", "Step", "Move"]

_LAZY = ("analyze", "Analysis", "Step", "Move")


def __getattr__(name: str):
    if name in _LAZY:
        from . import analysis
        return getattr(analysis, name)
    raise AttributeError(f"module 'dvecost' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
