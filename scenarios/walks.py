"""The walks over the number of clients: plain functions of an outcome ``found(n)``.

:func:`linear` and :func:`bisect` walk ``N`` for :class:`scenarios.search.SaturationSearch`
and the DVE sweep (:mod:`dvecost.sweep`); :func:`staircase` walks the frontier's grid of two
client counts (:mod:`scenarios.capacity`). They ask, never decide: what ``found(n)`` means is
the caller's.
"""

from __future__ import annotations

from typing import Callable

__all__ = ["linear", "bisect", "staircase"]


def linear(found: Callable[[int], bool], start: int, stop: int) -> int | None:
    """The first ``n`` in ``start .. stop`` with ``found(n)``, every one before it asked.

    >>> asked = []
    >>> linear(lambda n: asked.append(n) or n >= 3, 1, 9), asked
    (3, [1, 2, 3])
    """
    return next((n for n in range(start, stop + 1) if found(n)), None)


def bisect(found: Callable[[int], bool], start: int, stop: int, *,
           floor: Callable[[int], int] | None = None) -> int | None:
    """Exponential steps from ``start`` (``start``, ``+1``, ``+3``, ``+7``, ...: from 1, the
    powers of two) up to the first ``n`` with ``found(n)`` (``stop`` at the most), then
    bisection below it.

    Invariant of the bisection: ``lo`` was asked and not found (or is ``start - 1``, or
    below ``floor``), ``hi`` found; ``hi`` is always the smallest asked value found.

    ``floor(n)``, where given, is the smallest ``m >= n`` that may be found, every value in
    ``n .. m - 1`` being known not found without asking (for the search: the upper bound is
    below the capacity there). When the exponential steps have found ``hi`` and the floor
    above ``lo`` jumps over values, the bisection starts at the floor instead: it asks the
    floor, then ``+1``, ``+3``, ... below ``hi``, before bisecting what is left (the answer
    tends to lie just above where the bound lets it). Without a jump, the walk is the plain
    one.

    >>> asked = []
    >>> bisect(lambda n: asked.append(n) or n * n >= 50, 1, 64), asked
    (8, [1, 2, 4, 8, 6, 7])
    >>> asked = []
    >>> bisect(lambda n: asked.append(n) or n >= 6, 1, 64), asked
    (6, [1, 2, 4, 8, 6, 5])
    >>> bisect(lambda n: False, 3, 5)

    A floor at 37 (nothing below it can be found): after 32 and 64, it asks 37 first.

    >>> asked = []
    >>> bisect(lambda n: asked.append(n) or n >= 37, 1, 64,
    ...        floor=lambda n: max(n, 37)), asked
    (37, [1, 2, 4, 8, 16, 32, 64, 37])
    >>> asked = []
    >>> bisect(lambda n: asked.append(n) or n >= 41, 1, 64,
    ...        floor=lambda n: max(n, 37)), asked
    (41, [1, 2, 4, 8, 16, 32, 64, 37, 38, 40, 44, 42, 41])
    """
    lo, step, n = start - 1, 1, start
    while not found(n):
        lo = n
        if n >= stop:
            return None
        n = min(n + step, stop)
        step *= 2
    hi = n
    first = lo + 1 if floor is None else floor(lo + 1)
    if first > lo + 1 and first < hi:
        # Every value below the floor is known not found: gallop up from it.
        lo, step, n = first - 1, 1, first
        while n < hi:
            if found(n):
                hi = n
                break
            lo = n
            n += step
            step *= 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if found(mid):
            hi = mid
        else:
            lo = mid
    return hi


def staircase(max_a: int, max_b: int) -> Callable[[Callable[[tuple[int, int]], bool], list],
                                                     None]:
    """The frontier's walk over ``0..max_a x 0..max_b`` (for :class:`PointWalk`): appends
    ``(n_a, largest n_b below capacity or None)`` for each ``n_a``.

    Column 0 is found by exponential then binary search from ``n_b = 0`` up. Then, at each
    level ``n_b`` of the stair, the last column still below capacity is found by galloping
    right (``n_a + 1, n_a + 3, n_a + 7, ...``) and binary search: with a monotone load, a
    point below capacity puts every point left of it below too, so a flat stretch of the
    stair costs a logarithm of its length, not its length. In the next column the level steps
    down one at a time until a point is below capacity.

    >>> out, asked = [], []
    >>> def saturated(k):
    ...     asked.append(k)
    ...     return 2 * k[0] + k[1] >= 4
    >>> staircase(3, 4)(saturated, out)
    >>> out
    [(0, 3), (1, 1), (2, None), (3, None)]

    A flat stair (the load does not depend on ``n_a``): 10 analyses for 31 columns, 5 of
    them in column 0.

    >>> out, asked = [], []
    >>> staircase(30, 4)(lambda k: asked.append(k) or k[1] >= 3, out)
    >>> out == [(n, 2) for n in range(31)], asked
    (True, [(0, 0), (0, 1), (0, 2), (0, 4), (0, 3), (1, 2), (3, 2), (7, 2), (15, 2), (30, 2)])
    """
    def walk(saturated: Callable[[tuple[int, int]], bool], out: list) -> None:
        # Column 0 by exponential then binary search from n_b = 0 up (small models first, as
        # saturate does): hi is the smallest evaluated saturating n_b, lo the largest below.
        lo, hi, n = -1, None, 0
        while True:
            if saturated((0, n)):
                hi = n
                break
            lo = n
            if n >= max_b:
                break
            n = min(max(1, 2 * n), max_b)
        while hi is not None and hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if saturated((0, mid)) else (mid, hi)
        if hi is not None and lo < 0:
            out.extend((k, None) for k in range(max_a + 1))
            return
        # Invariant: (na, nb) is below capacity (evaluated, or left of an evaluated point
        # below), and every column after na has its answer at most nb ((na, nb + 1), or a
        # point left of it, saturates; none does when nb = max_b).
        na, nb = 0, (lo if hi is not None else max_b)
        out.append((0, nb))
        while na < max_a:
            # Gallop along level nb: left is below, right (if any) the first known to saturate.
            left, right, step = na, None, 1
            while left < max_a:
                probe = min(left + step, max_a)
                if saturated((probe, nb)):
                    right = probe
                    break
                left, step = probe, 2 * step
            while right is not None and right - left > 1:
                mid = (left + right) // 2
                left, right = (left, mid) if saturated((mid, nb)) else (mid, right)
            out.extend((k, nb) for k in range(na + 1, left + 1))
            if right is None:
                return
            # Column `right` saturates at nb: step the level down until a point is below.
            na, nb = right, nb - 1
            while nb >= 0 and saturated((na, nb)):
                nb -= 1
            if nb < 0:
                out.extend((k, None) for k in range(na, max_a + 1))
                return
            out.append((na, nb))

    return walk
