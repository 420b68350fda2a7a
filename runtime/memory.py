"""The memory of this process: what a ``--max-memory`` check and a benchmark read.

Examples
--------
>>> 0 <= current_rss() <= peak_rss() < 2**40
True
"""

from __future__ import annotations

import os

__all__ = ["current_rss", "peak_rss"]


def current_rss() -> int:
    """The resident memory of this process now, in bytes (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def peak_rss() -> int:
    """The peak resident memory of this process so far, in bytes.

    On Linux the high-water mark of this process's own memory (``VmHWM``), not
    ``getrusage``'s ``ru_maxrss``, which a process started by fork and exec inherits from its
    parent: run from a Python holding 2 GB, a fresh process reads 2 GB there, and a
    ``--max-memory`` check built on it stopped exploring at once.

    >>> 0 < peak_rss() < 2**40
    True
    """
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    import resource
    import sys
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024
