"""Slow, obviously correct oracles for the cycle engine (small graphs, tests only).

- :func:`karp_cycle_mean`: Karp's theorem (1978), O(n m) with exact integers.
- :func:`brute_force_cycle`: every simple cycle (networkx ``simple_cycles``), every choice
  among parallel edges, exact :class:`fractions.Fraction` values; mean and ratio, max and min.

Both take CSR arrays like :func:`ocm.optimal_cycle` and return ``None`` for a graph without
cycles.
"""

from __future__ import annotations

import itertools
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = ["karp_cycle_mean", "brute_force_cycle", "edges_of"]


def edges_of(indptr: Any, indices: Any) -> list[tuple[int, int, int]]:
    """``(edge id, u, v)`` for every edge of a CSR graph.

    >>> edges_of(np.array([0, 1, 2]), np.array([1, 0]))
    [(0, 0, 1), (1, 1, 0)]
    """
    indptr = np.asarray(indptr).tolist()
    indices = np.asarray(indices).tolist()
    return [(e, u, indices[e]) for u in range(len(indptr) - 1)
            for e in range(indptr[u], indptr[u + 1])]


def karp_cycle_mean(indptr: Any, indices: Any, cost: Any, mode: str = "max") -> Fraction | None:
    """Optimal cycle mean by Karp's characterisation.

    With a new source ``s`` joined to every vertex by a 0-cost edge (``N = n + 1`` vertices)
    and ``D_k(v)`` the maximum cost of a walk of exactly ``k`` edges from ``s`` to ``v``:
    ``lambda* = max over v with D_N(v) finite of min over k < N of
    (D_N(v) - D_k(v)) / (N - k)``. Minimisation negates the costs.

    >>> karp_cycle_mean(np.array([0, 1, 3]), np.array([1, 0, 1]), np.array([1, 4, 2]))
    Fraction(5, 2)
    """
    sign = 1 if mode == "max" else -1
    edges = edges_of(indptr, indices)
    c = [sign * int(x) for x in np.asarray(cost).tolist()]
    n = len(indptr) - 1
    big_n = n + 1
    # D[k][v], None = -infinity; vertex n is the source.
    d = [[None] * big_n for _ in range(big_n + 1)]
    d[0][n] = 0
    for k in range(1, big_n + 1):
        prev, cur = d[k - 1], d[k]
        if prev[n] is not None:
            for v in range(n):
                cur[v] = 0 if cur[v] is None else max(cur[v], 0)
        for e, u, v in edges:
            if prev[u] is not None:
                val = prev[u] + c[e]
                if cur[v] is None or val > cur[v]:
                    cur[v] = val
    best = None
    for v in range(n):
        if d[big_n][v] is None:
            continue
        worst = None
        for k in range(big_n):
            if d[k][v] is None:
                continue
            q = Fraction(d[big_n][v] - d[k][v], big_n - k)
            worst = q if worst is None or q < worst else worst
        if worst is not None and (best is None or worst > best):
            best = worst
    return None if best is None else sign * best


def brute_force_cycle(indptr: Any, indices: Any, cost: Any, time: Any | None = None,
                      mode: str = "max") -> tuple[Fraction, list[tuple[int, ...]]] | None:
    """Optimal cycle mean (``time`` None) or ratio by enumerating all simple cycles.

    Returns
    -------
    (value, optimal) or None
        ``optimal`` lists the edge-id tuples of every optimal simple cycle (each a choice
        among parallel edges). ``None`` when there is no cycle.

    Raises
    ------
    ZeroDivisionError
        A cycle with total time 0 (ratio).

    >>> brute_force_cycle(np.array([0, 1, 3]), np.array([1, 0, 1]), np.array([1, 4, 2]))
    (Fraction(5, 2), [(0, 1)])
    """
    import networkx as nx

    edges = edges_of(indptr, indices)
    c = [int(x) for x in np.asarray(cost).tolist()]
    t = None if time is None else [int(x) for x in np.asarray(time).tolist()]
    between: dict[tuple[int, int], list[int]] = {}
    for e, u, v in edges:
        between.setdefault((u, v), []).append(e)
    g = nx.DiGraph()
    g.add_nodes_from(range(len(indptr) - 1))
    g.add_edges_from(between)
    best: Fraction | None = None
    optimal: list[tuple[int, ...]] = []
    for cyc in nx.simple_cycles(g):
        k = len(cyc)
        hops = [between[(cyc[i], cyc[(i + 1) % k])] for i in range(k)]
        for choice in itertools.product(*hops):
            sc = sum(c[e] for e in choice)
            st = k if t is None else sum(t[e] for e in choice)
            val = Fraction(sc, st)
            better = best is None or (val > best if mode == "max" else val < best)
            if better:
                best, optimal = val, []
            if val == best:
                optimal.append(tuple(choice))
    return None if best is None else (best, optimal)
