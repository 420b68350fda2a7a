"""Text edge lists in the format of ``tools/ocmref`` (the Boost/LEMON reference driver).

Whitespace-separated integers: ``n m`` on the first line, then ``m`` lines ``u v cost time``
with 0-based vertex ids. :func:`read_edge_list` turns one into CSR arrays, keeping the order of
the lines within every source vertex, and remembers which line each CSR edge came from.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass

import numpy as np

from .errors import InputError

__all__ = ["EdgeList", "read_edge_list", "parse_edge_list", "write_edge_list"]


@dataclass(frozen=True)
class EdgeList:
    """A graph read from an edge list, in CSR form (NumPy arrays).

    Attributes
    ----------
    indptr : int64 array, shape (n + 1,)
    indices, cost, time : int64 arrays, shape (m,)
    line : int64 array, shape (m,)
        ``line[e]``: 0-based index, among the edge lines of the file, of CSR edge ``e``.
    """

    indptr: np.ndarray
    indices: np.ndarray
    cost: np.ndarray
    time: np.ndarray
    line: np.ndarray

    @property
    def n_vertices(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def n_edges(self) -> int:
        return int(self.indices.shape[0])


def parse_edge_list(values: np.ndarray, name: str = "<edge list>") -> EdgeList:
    """Build an :class:`EdgeList` from the file's integers (``n, m, u0, v0, c0, t0, ...``).

    >>> g = parse_edge_list(np.array([3, 3, 2, 0, 5, 1, 0, 1, 1, 1, 2, 1, 7, 2]))
    >>> g.indptr.tolist(), g.indices.tolist(), g.cost.tolist(), g.line.tolist()
    ([0, 1, 1, 3], [1, 0, 1], [1, 5, 7], [1, 0, 2])
    """
    if values.shape[0] < 2:
        raise InputError(f"{name}: expected 'n m' on the first line")
    n, m = int(values[0]), int(values[1])
    if n < 0 or m < 0:
        raise InputError(f"{name}: 'n m' must be non-negative, got {n} {m}")
    if values.shape[0] != 2 + 4 * m:
        raise InputError(f"{name}: expected {m} edge lines of 4 integers "
                                 f"(u v cost time), found {(values.shape[0] - 2) / 4:g}")
    e = values[2:].reshape(m, 4)
    u, v, cost, time = e[:, 0], e[:, 1], e[:, 2], e[:, 3]
    if m and (u.min() < 0 or v.min() < 0 or u.max() >= n or v.max() >= n):
        bad = int(np.flatnonzero((u < 0) | (v < 0) | (u >= n) | (v >= n))[0])
        raise InputError(f"{name}: edge line {bad + 1} has a vertex outside 0..{n - 1}")
    order = np.argsort(u, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    return EdgeList(indptr, v[order].astype(np.int64), cost[order].astype(np.int64),
                    time[order].astype(np.int64), order.astype(np.int64))


def read_edge_list(path: str | os.PathLike) -> EdgeList:
    """Read an ocmref-format text file (``n m``, then ``u v cost time`` lines).

    Raises
    ------
    InputError
        Unreadable file, non-integer tokens, wrong counts, vertex ids out of range.
    """
    name = os.fspath(path)
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise InputError(f"cannot read '{name}': {exc.strerror or exc}") from None
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise InputError(f"{name}: not a text edge list") from None
    # Fast path: NumPy's C parser. It stops quietly (with a warning) at the first bad token,
    # so anything short of the exact count goes through the slow path for a precise message.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            values = np.fromstring(text, dtype=np.int64, sep=" ")
            if values.shape[0] >= 2 and values.shape[0] == 2 + 4 * int(values[1]):
                return parse_edge_list(values, name)
        except (ValueError, DeprecationWarning):
            pass
    tokens = text.split()
    if not tokens:
        raise InputError(f"{name}: empty file")
    try:
        values = np.array(tokens, dtype=np.int64)
    except (ValueError, OverflowError):
        bad = next((t for t in tokens if not t.lstrip("+-").isdigit()), tokens[0])
        raise InputError(f"{name}: expected integers, found '{bad[:20]}'") from None
    return parse_edge_list(values, name)


def write_edge_list(path: str | os.PathLike, indptr: np.ndarray, indices: np.ndarray,
                    cost: np.ndarray, time: np.ndarray | None = None) -> None:
    """Write CSR arrays as an ocmref-format edge list (time 1 when ``time`` is None)."""
    indptr = np.asarray(indptr)
    n = indptr.shape[0] - 1
    m = len(indices)
    u = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    t = np.ones(m, dtype=np.int64) if time is None else np.asarray(time, dtype=np.int64)
    body = np.column_stack([u, np.asarray(indices), np.asarray(cost), t])
    with open(path, "w") as f:
        f.write(f"{n} {m}\n")
        np.savetxt(f, body, fmt="%d")
