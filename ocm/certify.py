"""Exact optimality certificate for the maximal cycle mean / ratio.

Let every vertex ``u`` carry a value class ``r(u)`` (an integer rank) whose value is the
reduced fraction ``a_r / b_r`` (``b_r > 0``, strictly increasing in ``r``), and an integer
potential ``X(u)``. The certificate holds when, for **every** edge ``e = (u, w)``:

1. ``r(w) <= r(u)``, and
2. if ``r(w) == r(u) == r``: ``b_r * cost(e) - a_r * time(e) + X(w) <= X(u)``.

Then every cycle ``C`` has value at most the value of its vertices' class: by (1) ranks cannot
increase along ``C`` and so are constant on it; summing (2) around ``C`` the potentials cancel
and ``b_r * sum cost(C) <= a_r * sum time(C)``, i.e. ``cost(C)/time(C) <= a_r/b_r`` (time
positive on every cycle; 1 per edge for means). A cycle whose exact sums equal the top class's
value is therefore optimal. All checks are exact integer arithmetic: int64 where a bound proves
that no intermediate can overflow, Python ints (object arrays, on the host) otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from . import primitives as P

__all__ = ["Certificate", "check_potentials", "cycle_sums"]


@dataclass(frozen=True)
class Certificate:
    """Outcome of :func:`check_potentials`.

    Attributes
    ----------
    ok : bool
        Every condition held.
    n_violations : int
        Edges violating (1) or (2), plus 1 if the class values are not strictly increasing.
    exact_path : str
        ``'int64'`` or ``'python-int'``: the arithmetic used.
    """

    ok: bool
    n_violations: int
    exact_path: str


def _absmax(a: Any) -> int:
    if a.shape[0] == 0:
        return 0
    if a.dtype == object:
        return max(abs(int(a.max())), abs(int(a.min())))
    return int(abs(a).max())  # on the array's own device: no copy of a CuPy array to the host


def check_potentials(indptr: Any, indices: Any, cost: Any, time: Any | None, rank: Any,
                     rank_num: Any, rank_den: Any, potential: Any, xp: Any,
                     row: Any | None = None, launcher: Any = None) -> Certificate:
    """Check conditions (1) and (2) of the module docstring on every edge, exactly.

    Parameters
    ----------
    indptr, indices, cost, time
        The graph (``time`` None: 1 per edge).
    rank : int array, shape (n,)
    rank_num, rank_den : int arrays, shape (n_ranks,)
        Class values; they must be strictly increasing (checked here too).
    potential : int64 or object array, shape (n,)
    xp : module
    row : int64 array, optional
        The source of every edge (host only; computed when needed).
    launcher : ocm.kernels.Launcher, optional
        How the device's kernel runs (CuPy's by default; tests pass an emulating one).

    Returns
    -------
    Certificate

    Examples
    --------
    A 2-cycle of mean 3/2 (costs 1 and 2) with potentials 0 and 1:

    >>> import numpy as np
    >>> c = check_potentials(np.array([0, 1, 2]), np.array([1, 0]), np.array([1, 2]), None,
    ...                      np.array([0, 0]), np.array([3]), np.array([2]), np.array([0, 1]), np)
    >>> c.ok
    True
    """
    violations = 0
    # Class values strictly increasing, exactly (few classes: Python ints on the host).
    a = P.to_host(rank_num).astype(object)
    b = P.to_host(rank_den).astype(object)
    if a.shape[0] > 1:
        violations += int(np.count_nonzero(~(a[:-1] * b[1:] < a[1:] * b[:-1])))
    if np.any(b <= 0):
        violations += 1
    if not P.is_numpy(xp):
        from . import kernels as K

        # On the device: one pass per row over int32 targets and the palette's rows (no
        # per-edge array), in int64 where the bounds (read back at once) allow it.
        ch = K.Charges.of(cost, time, xp)
        if potential.dtype != object:
            n = rank.shape[0]
            probes = [xp.abs(ch.ctab).max(), xp.abs(potential).max() if n else
                      xp.zeros((), xp.int64)]
            if time is not None:
                probes.append(xp.abs(ch.ttab).max())
            got = P.to_host(xp.stack([p.astype(xp.int64) for p in probes])).tolist()
            tmax = got[2] if time is not None else 1
            if P.fits_int64(_absmax(b) * got[0], _absmax(a) * tmax, 2 * got[1]):
                L = launcher or K.launcher_for(xp)
                c = lambda v: xp.ascontiguousarray(v, dtype=xp.int64)  # noqa: E731
                count = xp.zeros(1, dtype=xp.int64)
                if n:
                    L.launch("certify" + ch.suffix, n, c(indptr),
                             xp.ascontiguousarray(indices, dtype=xp.int32), ch.lab, ch.ctab,
                             ch.ttab, ch.has_time, c(rank), c(potential), c(rank_num),
                             c(rank_den), n, count)
                violations += int(P.to_host(count)[0])
                return Certificate(violations == 0, violations, "int64")
        # Python ints: on host copies, a block of edges at a time (the class values are
        # checked there again: its count is the whole count).
        h = P.to_host
        pot = potential if potential.dtype == object else h(potential)
        host = check_potentials(h(indptr), h(indices), P.edges_to_host(cost),
                                P.edges_to_host(time), h(rank), h(rank_num), h(rank_den), pot,
                                np)
        return host
    # On the host a block of rows at a time: the temporaries (sources, ranks at both ends,
    # the condition's terms) are those of a block, not eight bytes per edge each.
    path = "int64"
    for r0, r1 in P.row_blocks(indptr, CERTIFY_BLOCK):
        lo, hi = int(indptr[r0]), int(indptr[r1])
        blk = slice(lo, hi)
        src = row[blk] if row is not None else np.repeat(
            np.arange(r0, r1, dtype=np.int64), np.diff(indptr[r0:r1 + 1]))
        bad, p = _edge_violations(src, indices[blk], P.subset(cost, blk), P.subset(time, blk),
                                  rank, rank_num, rank_den, potential, xp, a, b)
        violations += bad
        path = p if p != "int64" else path
    return Certificate(violations == 0, violations, path)


#: Edges checked per block by the host's certificate (:func:`check_potentials`).
CERTIFY_BLOCK = 1 << 21


def _edge_violations(row, indices, cost, time, rank, rank_num, rank_den, potential, xp, a, b):
    """Violations of conditions (1) and (2) on the edges given (``row`` their sources), and
    the arithmetic used; ``a``, ``b`` are the class values as Python ints."""
    cost, time = P.dense(cost), P.dense(time)
    violations = 0
    ru = rank[row]
    rw = rank[indices]
    violations += int((rw > ru).sum())
    same = rw == ru
    tmax = _absmax(time) if time is not None else 1
    if P.fits_int64(_absmax(rank_den) * _absmax(cost), _absmax(rank_num) * tmax,
                    2 * _absmax(potential)) and potential.dtype != object:
        path = "int64"
        r = ru
        lhs = rank_den[r] * cost - rank_num[r] * (time if time is not None else 1)
        lhs = lhs + potential[indices]
        bad = same & (lhs > potential[row])
        violations += int(bad.sum())
    else:
        path = "python-int"
        h = P.to_host
        r = h(ru)
        t = h(time).astype(object) if time is not None else 1
        pot = h(potential).astype(object)
        lhs = b[r] * h(cost).astype(object) - a[r] * t + pot[h(indices)]
        bad = h(same) & (lhs > pot[h(row)]).astype(bool)
        violations += int(np.count_nonzero(bad))
    return violations, path


def cycle_sums(indptr: Any, indices: Any, cost: Any, time: Any | None,
               vertices: Sequence[int], edges: Sequence[int]) -> tuple[int, int]:
    """Exact (sum of costs, sum of times) of a cycle, after checking it is one.

    Raises ``ValueError`` when ``edges[i]`` does not go from ``vertices[i]`` to
    ``vertices[i + 1]`` (cyclically) or the lists are empty or of different lengths.

    >>> cycle_sums(np.array([0, 1, 2]), np.array([1, 0]), np.array([1, 2]), None, [0, 1], [0, 1])
    (3, 2)
    """
    h = P.to_host
    if not vertices or len(vertices) != len(edges):
        raise ValueError("a cycle needs as many edges as vertices, at least one")
    k = len(vertices)
    vs, es = [int(v) for v in vertices], [int(e) for e in edges]
    # Gather the cycle's entries where the arrays live (CuPy too), then copy only those.
    xp = np if isinstance(indptr, np.ndarray) else __import__(type(indptr).__module__
                                                              .split(".")[0])
    iv = xp.asarray(np.array(vs, dtype=np.int64))
    ie = xp.asarray(np.array(es, dtype=np.int64))
    lo, hi = h(indptr[iv]).tolist(), h(indptr[iv + 1]).tolist()
    ix = h(indices[ie]).tolist()
    for i, (v, e) in enumerate(zip(vs, es)):
        if not (lo[i] <= e < hi[i]) or ix[i] != vs[(i + 1) % k]:
            raise ValueError(f"edge {e} does not go from vertex {v} to {vs[(i + 1) % k]}")
    c = sum(int(x) for x in h(P.dense(P.subset(cost, ie))).tolist())
    t = k if time is None else sum(int(x) for x in h(P.dense(P.subset(time, ie))).tolist())
    return c, t
