"""What the command line needs of a terminal: whether to colour, how to show a fraction.

Lower layers never print, so these live with the command line.

>>> from fractions import Fraction
>>> fraction_text(Fraction(7, 2)), fraction_text(Fraction(4))
('7/2', '4')
"""

from __future__ import annotations

import os
from fractions import Fraction

__all__ = ["use_color", "fraction_text"]


def use_color(stream: object) -> bool:
    """Colour only on a TTY and never when ``NO_COLOR`` is set.

    >>> import io
    >>> use_color(io.StringIO())
    False
    """
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ


def fraction_text(x: Fraction) -> str:
    """An exact value as the user reads it: ``p/q``, or ``p`` when it is an integer."""
    return str(x.numerator) if x.denominator == 1 else f"{x.numerator}/{x.denominator}"
