"""dvecost: the worst load a DVE-modelled system can sustain forever."""

from ._version import __version__

__all__ = ["__version__"]
