"""dvecost: the worst load a DVE-modelled system can sustain forever."""

from ._version import __version__
from .analysis import Analysis, Move, Step, analyze

__all__ = ["__version__", "analyze", "Analysis", "Step", "Move"]
