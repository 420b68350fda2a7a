"""The memory of this process: what a ``--max-memory`` check and a benchmark read, and how
glibc's allocator reuses it.

Examples
--------
>>> 0 <= current_rss() <= peak_rss() < 2**40
True
"""

from __future__ import annotations

import os

__all__ = ["current_rss", "peak_rss", "keep_freed_memory"]

#: glibc's ``mallopt`` parameters (malloc.h): ``M_TRIM_THRESHOLD`` and ``M_MMAP_THRESHOLD``.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
#: Allocations up to this many bytes come from the heap once :func:`keep_freed_memory` ran
#: (glibc's largest allowed threshold on 64 bits); larger ones are mapped and unmapped.
KEPT_ALLOCATION = 32 << 20
#: Free memory at the heap's top kept for reuse, once :func:`keep_freed_memory` ran.
KEPT_FREE = 256 << 20


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


_kept: list[bool] = []


def keep_freed_memory() -> bool:
    """Have glibc's allocator keep freed memory for reuse (process-wide, once): allocations
    of up to :data:`KEPT_ALLOCATION` bytes from the heap, and up to :data:`KEPT_FREE` bytes
    of free heap kept rather than given back to the system. True where it took effect
    (glibc); elsewhere nothing changes.

    Why: a loop that allocates and frees arrays of a few megabytes each round (a distributed
    search's temporaries, level after level) otherwise gets fresh pages each time. glibc maps
    an allocation above its threshold and unmaps it when freed; it raises that threshold as
    it goes, but gives the heap's free top back beyond twice the threshold; every fresh page
    then costs a fault and the kernel's zeroing of it. Measured: 6,000 to 8,500 faults in an
    exploration of cs_10 by two processes, under 700 with this. The price: memory freed stays
    in the process (up to :data:`KEPT_FREE` of it beyond what is in use), and a
    ``--max-memory`` check, which reads the resident memory, counts it.

    >>> KEPT_ALLOCATION // 2**20, KEPT_FREE // 2**20   # megabytes
    (32, 256)
    """
    if _kept:
        return _kept[0]
    ok = False
    try:
        import ctypes
        mallopt = ctypes.CDLL(None).mallopt
        # (Setting either fixes both thresholds: glibc stops adjusting the mapping threshold.)
        ok = bool(mallopt(_M_MMAP_THRESHOLD, KEPT_ALLOCATION)) and \
            bool(mallopt(_M_TRIM_THRESHOLD, KEPT_FREE))
    except (OSError, AttributeError):   # not glibc: nothing to set
        ok = False
    _kept.append(ok)
    return ok
