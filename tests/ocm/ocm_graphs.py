"""Graphs shared by the GPU tests (emulated and on a device): random multigraphs, products of
rings like the models', and one whose biases leave int64."""

from __future__ import annotations

import numpy as np

from ocm import scc


def random_graph(rng, n, m, *, sinks=0.0, cost=(-50, 50), time=(0, 4), loops=True):
    """CSR arrays of a random multigraph; a fraction ``sinks`` of vertices has no out-edge."""
    src_ok = np.flatnonzero(rng.random(n) >= sinks)
    if src_ok.size == 0:
        src_ok = np.arange(1)
    u = np.sort(rng.choice(src_ok, size=m))
    v = rng.integers(0, n, size=m)
    if not loops:
        v = np.where(u == v, (v + 1) % n, v)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    return (indptr, v.astype(np.int64), rng.integers(cost[0], cost[1] + 1, size=m),
            rng.integers(time[0], time[1] + 1, size=m))


def model_graph(rng, k, length, chords=1, cost=(0, 9)):
    """Interleaving product of ``k`` rings of ``length`` states with chords (as ocmref gen.py)."""
    locs = []
    for _ in range(k):
        src = list(range(length)) + rng.integers(0, length, size=chords * length).tolist()
        dst = [(i + 1) % length for i in range(length)]
        dst += [(s + int(d)) % length for s, d in
                zip(src[length:], rng.integers(1, length, size=chords * length))]
        locs.append((np.array(src), np.array(dst), rng.integers(cost[0], cost[1] + 1,
                                                                size=len(src))))
    n = length ** k
    states = np.arange(n)
    us, vs, cs = [], [], []
    for i, (src, dst, c) in enumerate(locs):
        radix = length ** i
        digit = (states // radix) % length
        for a, b, w in zip(src.tolist(), dst.tolist(), c.tolist()):
            s = states[digit == a]
            us.append(s)
            vs.append(s + (b - a) * radix)
            cs.append(np.full(s.size, w))
    u, v, c = np.concatenate(us), np.concatenate(vs), np.concatenate(cs)
    p = rng.permutation(n)
    u, v = p[u], p[v]
    order = np.argsort(u, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    t = rng.integers(1, 4, size=u.size)
    return indptr, v[order].astype(np.int64), c[order].astype(np.int64), t[order]


def trimmed(g):
    """The graph restricted to vertices that reach a cycle (Howard's precondition)."""
    indptr, indices, cost, time = g
    r = scc.restrict_by_trimming(indptr, indices, np)
    e = slice(None) if r.edges is None else r.edges   # None: every edge kept
    return r.indptr, r.indices, cost[e], time[e]


def overflow_graph():
    """A ring of 3000 vertices, two parallel edges per step, costs near +-2**50, times 1..3:
    the scaled biases (cycle time times path cost) pass 2**61."""
    rng = np.random.default_rng(3)
    n = 3000
    ring = (np.arange(n) + 1) % n
    indptr = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    indices = np.stack([ring, ring], axis=1).ravel()
    c1 = np.where(np.arange(n) % 2 == 0, 2 ** 50, -(2 ** 50) + 1)
    cost = np.stack([c1, c1 + rng.integers(-2, 3, size=n)], axis=1).ravel()
    time = rng.integers(1, 4, size=2 * n)
    return indptr, indices, cost, time
