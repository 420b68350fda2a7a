"""What the command line needs of a terminal. Lower layers never print, so this lives here.

An exact value is shown as ``str(fraction)``: ``'7/2'``, or ``'4'`` for an integer.
"""

from __future__ import annotations

import os

__all__ = ["use_color"]


def use_color(stream: object) -> bool:
    """Colour only on a TTY and never when ``NO_COLOR`` is set.

    >>> import io
    >>> use_color(io.StringIO())
    False
    """
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ
