"""Text edge lists in the format of ``tools/ocmref`` (the Boost/LEMON reference driver).

Whitespace-separated integers: ``n m`` on the first line, then ``m`` lines ``u v cost time``
with 0-based vertex ids. :func:`read_edge_list` turns one into CSR arrays, keeping the order of
the lines within every source vertex, and remembers which line each CSR edge came from.

Every value must be held exactly: costs lie within ``±(2**63 - 1)`` (so that negating one, for
the minimum, cannot overflow), times within ``0 .. 2**63 - 1``, vertex ids within ``0 .. n - 1``.
Anything else is an :class:`~ocm.errors.InputError` naming the file, line and column, never a
value cast or clipped to fit.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass

import numpy as np

from .errors import InputError

__all__ = ["EdgeList", "read_edge_list", "parse_edge_list", "write_edge_list", "MAX_VERTICES"]

_I64_MAX = 2**63 - 1
#: The most vertices a graph may have: CSR offsets are int64 and every vertex costs the engine
#: a few int64 words, so more than 2**56 could never be allocated on any machine.
MAX_VERTICES = 2**56
_FIELDS = ("u", "v", "cost", "time")


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


def _check_sizes(name: str, n: int, m: int) -> None:
    if n < 0 or m < 0:
        raise InputError(f"{name}:1: 'n m' must be non-negative, got {n} {m}")
    if n > MAX_VERTICES:
        raise InputError(f"{name}:1: n = {n} vertices is more than any graph this tool can "
                         f"hold (at most 2**56)")
    need = 16 * (n + 1)
    try:
        import os as _os
        phys = _os.sysconf("SC_PAGE_SIZE") * _os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        phys = 0
    if phys and need > phys:
        raise MemoryError(f"{name}: a graph of {n:,} vertices needs at least {need:,} bytes; "
                          f"this machine has {phys:,}")


def parse_edge_list(values: np.ndarray, name: str = "<edge list>") -> EdgeList:
    """Build an :class:`EdgeList` from the file's integers (``n, m, u0, v0, c0, t0, ...``).

    Errors name edge lines by their index among the edges (1-based); :func:`read_edge_list`
    reports file lines and columns.

    >>> g = parse_edge_list(np.array([3, 3, 2, 0, 5, 1, 0, 1, 1, 1, 2, 1, 7, 2]))
    >>> g.indptr.tolist(), g.indices.tolist(), g.cost.tolist(), g.line.tolist()
    ([0, 1, 1, 3], [1, 0, 1], [1, 5, 7], [1, 0, 2])
    """
    if values.shape[0] < 2:
        raise InputError(f"{name}: expected 'n m' on the first line")
    n, m = int(values[0]), int(values[1])
    _check_sizes(name, n, m)
    if values.shape[0] != 2 + 4 * m:
        raise InputError(f"{name}: expected {m} edge lines of 4 integers "
                         f"(u v cost time), found {(values.shape[0] - 2) / 4:g}")
    e = values[2:].reshape(m, 4)
    u, v, cost, time = e[:, 0], e[:, 1], e[:, 2], e[:, 3]
    if m and (u.min() < 0 or v.min() < 0 or u.max() >= n or v.max() >= n):
        bad = int(np.flatnonzero((u < 0) | (v < 0) | (u >= n) | (v >= n))[0])
        raise InputError(f"{name}: edge line {bad + 1} has a vertex outside 0..{n - 1}")
    if m and (int(cost.min()) < -_I64_MAX or int(time.min()) < 0):
        bad = int(np.flatnonzero((cost < -_I64_MAX) | (time < 0))[0])
        raise InputError(f"{name}: edge line {bad + 1}: cost {int(cost[bad])} or time "
                         f"{int(time[bad])} out of range (costs within ±(2**63 - 1), "
                         "times 0 .. 2**63 - 1)")
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
        Unreadable file, non-integer tokens, wrong counts, vertex ids out of range, a value
        that does not fit (cost beyond ``±(2**63 - 1)``, negative time): the message names
        ``file:line:col``.
    MemoryError
        ``n`` is possible but larger than this machine's memory could hold.
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
    # Fast path: NumPy's C parser. It stops quietly (with a warning) at the first bad token
    # and clips values beyond int64 to its bounds, so a short count, a value at either bound
    # or any error goes through the line-by-line path for an exact check and message.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            values = np.fromstring(text, dtype=np.int64, sep=" ")
            if (values.shape[0] >= 2 and values.shape[0] == 2 + 4 * int(values[1])
                    and not (values == _I64_MAX).any() and not (values == -_I64_MAX - 1).any()):
                return parse_edge_list(values, name)
        except (ValueError, DeprecationWarning, InputError):
            pass
    return _read_lines(text, name)


def _show(tok: str) -> str:
    return tok if len(tok) <= 30 else f"{tok[:20]}... ({len(tok)} characters)"


def _read_lines(text: str, name: str) -> EdgeList:
    """The exact reader: Python ints per token, every problem named by line and column."""
    if not text.split():
        raise InputError(f"{name}: empty file, expected 'n m' on the first line")
    header: list[int] = []
    values: list[int] = []
    n = m = -1
    for lineno, line in enumerate(text.splitlines(), 1):
        for match in re.finditer(r"\S+", line):
            tok, col = match.group(), match.start() + 1
            where = f"{name}:{lineno}:{col}"
            if not re.fullmatch(r"[+-]?\d+", tok):
                raise InputError(f"{where}: expected integers, found '{tok[:20]}'")
            # More than 19 significant digits is beyond int64 whatever they are; the cap also
            # keeps int() from refusing (or slowly converting) a thousands-digit token.
            digits = tok.lstrip("+-").lstrip("0")
            x = int(tok) if len(digits) <= 19 else (-1 if tok[0] == "-" else 1) * 10**19
            if len(header) < 2:
                if not 0 <= x <= _I64_MAX:
                    raise InputError(f"{where}: '{'nm'[len(header)]}' must be a non-negative "
                                     f"64-bit integer, found {_show(tok)}")
                header.append(x)
                if len(header) == 2:
                    n, m = header
                    _check_sizes(name, n, m)
                continue
            k = len(values)
            if k >= 4 * m:
                raise InputError(f"{where}: more values than the {m} edges announced on "
                                 "line 1")
            field = _FIELDS[k % 4]
            if field in ("u", "v") and not 0 <= x < n:
                raise InputError(f"{where}: vertex {_show(tok)} outside 0..{n - 1}")
            if field == "cost" and not -_I64_MAX <= x <= _I64_MAX:
                raise InputError(f"{where}: cost {_show(tok)} does not fit: costs must lie "
                                 "within ±(2**63 - 1)")
            if field == "time" and not 0 <= x <= _I64_MAX:
                raise InputError(f"{where}: time {_show(tok)} out of range: times must be "
                                 "non-negative integers below 2**63")
            values.append(x)
    if len(header) < 2:
        raise InputError(f"{name}: expected 'n m' on the first line")
    if len(values) != 4 * m:
        raise InputError(f"{name}: expected {m} edge lines of 4 integers (u v cost time), "
                         f"found {len(values) / 4:g}")
    return parse_edge_list(np.array(header + values, dtype=np.int64), name)


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
