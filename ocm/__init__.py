"""Optimal cycle mean and cycle ratio of directed graphs in CSR form, exact and certified.

A graph is given as CSR arrays: ``indptr`` (length ``n + 1``) and ``indices`` (length ``m``),
edge ``e`` going from the row ``u`` with ``indptr[u] <= e < indptr[u + 1]`` to ``indices[e]``,
with integer ``cost[e]`` and non-negative integer ``time[e]``. Parallel edges, self-loops,
vertices without successors and graphs that are not strongly connected are all allowed.

For a cycle ``C`` (a closed walk ``e_1 ... e_k`` of edges):

- its **mean** is ``(cost(e_1) + ... + cost(e_k)) / k``;
- its **ratio** is ``(cost(e_1) + ... + cost(e_k)) / (time(e_1) + ... + time(e_k))``,
  defined when that time is positive.

The **maximal (minimal) cycle mean / ratio** of the graph is the maximum (minimum) over all its
cycles; it is attained by a simple cycle, and since every cycle lies inside one strongly
connected component (SCC) it is the best of the per-SCC optima. For a graph of reachable states
it is the best long-run average cost per step (per unit of time) over all infinite runs
(Karp 1978; Dasdan 2004). Costs and times are integers, so the optimum is an exact fraction
``p/q``, read off a critical cycle's sums.

Conventions: times must be non-negative integers; in ratio mode a cycle of total time 0 makes
the problem undefined and is an error naming the cycle; a graph without any cycle is an error.
Minimisation is maximisation of the negated costs.

The engine (:mod:`ocm.howard`) is multichain Howard policy iteration in exact integer
arithmetic over NumPy or CuPy arrays; its fixed point is checked by an independent exact
certificate on every edge (:mod:`ocm.certify`) before the result is called certified.

References
----------
.. [1] J. Cochet-Terrasson, G. Cohen, S. Gaubert, M. McGettrick and J.-P. Quadrat, "Numerical
   computation of spectral elements in max-plus algebra", IFAC Conference on System Structure
   and Control, Nantes, 1998.
.. [2] A. Dasdan, "Experimental analysis of the fastest optimum cycle ratio and mean
   algorithms", ACM Transactions on Design Automation of Electronic Systems 9(4), 385-418,
   2004.
.. [3] R. M. Karp, "A characterization of the minimum cycle mean in a digraph", Discrete
   Mathematics 23(3), 309-311, 1978.
.. [4] J. Barnat, P. Bauch, L. Brim and M. Češka, "Computing Optimal Cycle Mean in Parallel on
   CUDA", PDMC 2011, EPTCS 72, 2011 (arXiv:1111.0627).

Examples
--------
A triangle 0 -> 1 -> 2 -> 0 of costs 1, 2, 6 and a self-loop of cost 2 at vertex 1:

>>> import numpy as np
>>> indptr = np.array([0, 1, 3, 4]); indices = np.array([1, 1, 2, 0])
>>> cost = np.array([1, 2, 2, 6])
>>> r = max_cycle_mean(indptr, indices, cost)
>>> r.value, r.cycle, r.cycle_edges, r.certified
(Fraction(3, 1), (0, 1, 2), (0, 2, 3), True)
>>> min_cycle_mean(indptr, indices, cost).value
Fraction(2, 1)
>>> max_cycle_ratio(indptr, indices, cost, np.array([1, 2, 1, 2])).exact
'9/4'
"""

from __future__ import annotations

import time as _time
from fractions import Fraction
from typing import Any

import numpy as np

from .errors import InputError, NoCycleError, ZeroTimeCycleError

from . import certify as _certify
from . import howard as _howard
from . import primitives as P
from . import scc as _scc
from .edgelist import EdgeList, read_edge_list
from .on_device import device_bytes
from .primitives import Palette
from .result import CycleResult, SccOptimum

__all__ = [
    "optimal_cycle",
    "max_cycle_mean",
    "min_cycle_mean",
    "max_cycle_ratio",
    "min_cycle_ratio",
    "CycleResult",
    "SccOptimum",
    "EdgeList",
    "Palette",
    "device_bytes",
    "read_edge_list",
    "KINDS",
    "MODES",
]

KINDS = ("mean", "ratio")
MODES = ("max", "min")


def _is_cupy(a: Any) -> bool:
    if isinstance(a, Palette):
        a = a.label
    return a is not None and type(a).__module__.split(".")[0] == "cupy"


def _host(a: Any) -> Any:
    """``a`` on the host: an array (:func:`runtime.device.to_host`), a Palette's two arrays, or
    None."""
    if a is None:
        return None
    if isinstance(a, Palette):
        return Palette(P.to_host(a.label), P.to_host(a.values))
    return P.to_host(a)


def _as_palette(p: Palette, name: str, xp: Any) -> Palette:
    """A :class:`Palette` checked (rows of integers, every edge's row in the table) with int64
    values in ``xp``; on NumPy the rows no edge uses are set to 0, so that every bound the
    engine takes of the values is one of the edges' values."""
    label = xp.asarray(p.label)
    values = _as_int64(p.values, name, xp)
    if label.ndim != 1 or label.dtype.kind not in "iu":
        raise InputError(f"the rows of '{name}' must be a one-dimensional integer array, got "
                         f"{label.dtype} of shape {label.shape}")
    k = values.shape[0]
    if label.shape[0]:
        lo, hi = P.to_host(xp.stack([label.min().astype(xp.int64),
                                     label.max().astype(xp.int64)])).tolist()
        if lo < 0 or hi >= k:
            raise InputError(f"the rows of '{name}' must lie in 0..{k - 1}, found {lo}..{hi}")
        if P.is_numpy(xp):
            used = np.zeros(k, dtype=bool)
            used[label] = True   # (no index copy, unlike a bincount of a narrow array)
        else:
            used = _rows_in_use(label, k, xp)
        if not bool(used.all()):
            values = xp.where(used, values, 0)
    return Palette(label, values)


def _rows_in_use(label: Any, k: int, xp: Any) -> Any:
    """On a device: which of the ``k`` rows some edge of ``label`` uses (a kernel reading the
    rows as they are, no index array)."""
    from . import kernels as K

    used = xp.zeros(k, dtype=xp.int8)
    suffix = K.LABEL_SUFFIX.get(label.dtype.name)
    if suffix is None:
        used[label.astype(xp.int64)] = 1
    else:
        K.launcher_for(xp).launch("mark_rows" + suffix, label.shape[0],
                                  xp.ascontiguousarray(label), label.shape[0], used)
    return used.astype(bool)


def _resolve_xp(backend: str, arrays: list, n_edges: int, xp: Any) -> Any:
    if xp is not None:
        return xp
    from runtime.device import array_module

    from .backend import resolve_backend

    on_gpu = any(_is_cupy(a) for a in arrays)
    if backend == "auto" and on_gpu:
        return array_module("gpu")
    return array_module(resolve_backend(backend, n_edges))


def _as_int64(a: Any, name: str, xp: Any) -> Any:
    a = xp.asarray(a)
    if a.ndim != 1:
        raise InputError(f"'{name}' must be one-dimensional, got shape {a.shape}")
    if a.dtype.kind in "iub":
        # uint64 beyond 2**63 - 1 would wrap to a negative int64: refused, never cast.
        if a.dtype.kind == "u" and a.dtype.itemsize == 8 and a.shape[0] and \
                int(a.max()) > 2**63 - 1:
            e = int(xp.flatnonzero(a > xp.uint64(2**63 - 1))[0])
            raise InputError(f"'{name}'[{e}] = {int(a[e])} does not fit in int64")
        return a.astype(xp.int64, copy=False)
    if a.dtype.kind == "f":
        if a.shape[0] and not bool(xp.all(xp.isfinite(a) & (a == xp.floor(a)))):
            raise InputError(f"'{name}' must hold integers, found non-integer values")
        if a.shape[0] and float(xp.abs(a).max()) >= 2.0 ** 53:
            raise InputError(f"'{name}' has values too large to be exact integers")
        return a.astype(xp.int64)
    raise InputError(f"'{name}' must hold integers, found dtype {a.dtype}")


def _validate(indptr, indices, cost, time, kind, mode, xp):
    if kind not in KINDS:
        raise InputError(f"unknown kind '{kind}': expected one of {', '.join(KINDS)}")
    if mode not in MODES:
        raise InputError(f"unknown mode '{mode}': expected one of {', '.join(MODES)}")
    indptr = _as_int64(indptr, "indptr", xp)
    # Targets in int32 stay so (every step on the host indexes with them as they are, and the
    # device's kernels read int32).
    keep32 = getattr(indices, "dtype", None) == np.int32
    indices = xp.asarray(indices) if keep32 else _as_int64(indices, "indices", xp)
    if keep32 and indices.ndim != 1:
        raise InputError(f"'indices' must be one-dimensional, got shape {indices.shape}")
    cost = _as_palette(cost, "cost", xp) if isinstance(cost, Palette) else \
        _as_int64(cost, "cost", xp)
    n = indptr.shape[0] - 1
    m = indices.shape[0]
    bad_indptr = InputError("'indptr' must start at 0, never decrease and end at "
                                    f"len(indices) = {m}")
    if n < 0:
        raise bad_indptr
    # Every scalar the checks need, reduced where the arrays live and read back at once: one
    # host synchronisation on CuPy instead of one per check.
    probes = [indptr[0], indptr[-1]]
    if n > 0:
        probes.append(xp.diff(indptr).min())
    if m:
        probes += [indices.min(), indices.max()]
    got = P.to_host(xp.stack(probes)).tolist()
    if got[0] != 0 or got[1] != m or (n > 0 and got[2] < 0):
        raise bad_indptr
    if m and (got[-2] < 0 or got[-1] >= n):
        raise InputError(f"'indices' must lie in 0..{n - 1}")
    if cost.shape[0] != m:
        raise InputError(f"'cost' has {cost.shape[0]} entries, expected one per edge ({m})")
    # The bounds of a Palette are those of its table (of the rows in use, on NumPy).
    cv = cost.values if isinstance(cost, Palette) else cost
    if m and int(cv.min()) == -2**63:   # its negation (for the minimum) does not exist
        e = int(xp.flatnonzero(P.dense(cost) == -2**63)[0])
        raise InputError(f"'cost'[{e}] = -2**63 is out of range: costs must lie within "
                         "±(2**63 - 1)")
    tv = None
    if time is not None:
        time = _as_palette(time, "time", xp) if isinstance(time, Palette) else \
            _as_int64(time, "time", xp)
        tv = time.values if isinstance(time, Palette) else time
        if time.shape[0] != m:
            raise InputError(
                f"'time' has {time.shape[0]} entries, expected one per edge ({m})")
        if m and int(tv.min()) < 0:
            e = int(xp.flatnonzero(P.dense(time) < 0)[0])
            raise InputError(f"times must be non-negative integers: edge {e} has time "
                                     f"{int(time[e])}")
    if kind == "ratio" and time is None:
        raise InputError("the cycle ratio needs a 'time' array")
    if m:
        # Howard sums costs and times along policy paths of up to n edges in int64 (the value
        # determination and the certificate guard their own products): magnitudes whose path
        # sums could pass 2**62 are refused here rather than left to wrap.
        cmax = max(int(cv.max()), -int(cv.min()))
        tmax = int(tv.max()) if time is not None else 1
        if not P.fits_int64((n + 1) * cmax, (n + 1) * tmax):
            raise InputError(f"costs up to {cmax} (times up to {tmax}) on {n} vertices: sums "
                             "along a path could pass 2**62, beyond the engine's exact int64 "
                             "arithmetic")
    return indptr, indices, cost, time


def optimal_cycle(indptr: Any, indices: Any, cost: Any, time: Any | None = None, *,
                  kind: str = "mean", mode: str = "max", backend: str = "auto",
                  xp: Any | None = None, per_scc: bool | None = None,
                  max_iter: int | None = None) -> CycleResult:
    """The maximal or minimal cycle mean or ratio of a graph, exact, with a critical cycle.

    Parameters
    ----------
    indptr : int array, shape (n + 1,)
    indices : int array, shape (m,)
        The graph in CSR form (see the module docstring); NumPy or CuPy arrays.
    cost : int array, shape (m,), or Palette
        Integer costs (floats holding integers are accepted), or a :class:`Palette` (a
        table and one row per edge, as a compact state graph holds them): the engine then
        reads the table through the rows, and expands them per edge only where it must (on
        the GPU, and the first policy's choice, each for the duration of a step).
    time : int array, shape (m,), or Palette, optional
        Non-negative integer times; needed for ``kind='ratio'``, ignored for ``'mean'``.
    kind : {'mean', 'ratio'}
    mode : {'max', 'min'}
    backend : {'auto', 'cpu', 'gpu'}
        Where to compute (see :func:`ocm.backend.resolve_backend`); ``auto`` follows CuPy
        inputs. Ignored when ``xp`` is given.
    xp : module, optional
        ``numpy`` or ``cupy``, overriding ``backend``.
    per_scc : bool, optional
        Decompose into SCCs first (gives :attr:`CycleResult.scc_optima`). Default: on for
        NumPy, off for CuPy (which trims sinks instead).
    max_iter : int, optional
        Howard's iteration budget.

    Returns
    -------
    CycleResult
        With ``certified=True`` unless the exact check failed even after resuming the
        iteration in Python-int arithmetic (never observed; the flag is then False and the
        value is that of the returned cycle, a lower bound for max and upper bound for min).

    Raises
    ------
    NoCycleError
        The graph has no cycle.
    ZeroTimeCycleError
        ``kind='ratio'`` and some cycle has total time 0 (``exc.cycle``, ``exc.edges``).
    InputError
        Malformed arrays, non-integer costs or times, negative times, unknown kind or mode.
    BackendUnavailableError
        ``backend='gpu'`` without CuPy or a device.
    ConvergenceError
        The iteration budget ran out.

    Examples
    --------
    >>> import numpy as np
    >>> r = optimal_cycle(np.array([0, 2, 3]), np.array([0, 1, 0]), np.array([1, 4, 0]),
    ...                   np.array([1, 1, 3]), kind="ratio", mode="max")
    >>> r.value, r.cycle, r.scc_optima[0].value
    (Fraction(1, 1), (0, 1), Fraction(1, 1))
    """
    t_start = _time.perf_counter()
    arrays = [indptr, indices, cost, time]
    n_edges = int(getattr(indices, "shape", (len(indices),))[0])
    xp = _resolve_xp(backend, arrays, n_edges, xp)
    if not P.is_numpy(xp):  # out of GPU memory: a warning, then the CPU engine (ocm.backend)
        from .backend import call_with_cpu_fallback
        return call_with_cpu_fallback(
            lambda x: _optimal_cycle(arrays, kind, mode, x, per_scc, max_iter, t_start), xp,
            n_edges)
    return _optimal_cycle(arrays, kind, mode, xp, per_scc, max_iter, t_start)


def _optimal_cycle(arrays: list, kind: str, mode: str, xp: Any, per_scc: bool | None,
                   max_iter: int | None, t_start: float) -> CycleResult:
    on_numpy = P.is_numpy(xp)
    if on_numpy:
        arrays = [_host(a) for a in arrays]
    if not on_numpy and (per_scc or int(getattr(arrays[0], "shape", (0,))[0]) > 2**31):
        # Per-SCC optima (SciPy) and graphs past 32-bit vertex ids: the host engine.
        return _optimal_cycle([_host(a) for a in arrays], kind, mode, np, per_scc, max_iter,
                              t_start)
    indptr, indices, cost, time = _validate(*arrays, kind, mode, xp)
    if kind == "mean":
        time = None
    if not on_numpy:
        # The device engine reads the compact graph as it is (ocm.on_device).
        from .on_device import solve_on_device
        return solve_on_device(indptr, indices, cost, time, kind, mode, xp, max_iter, t_start)
    n = indptr.shape[0] - 1
    m = indices.shape[0]
    timings: dict[str, float] = {}
    t0 = _time.perf_counter()
    if time is not None:
        h = P.to_host
        z = _scc.find_zero_time_cycle(h(indptr), h(indices), _host(time))
        if z is not None:
            verts, edges = z
            shown = " -> ".join(str(v) for v in verts[:12]) + (" ..." if len(verts) > 12 else "")
            raise ZeroTimeCycleError(
                f"the cycle ratio is undefined: the cycle {shown} -> {verts[0]} has total "
                f"time 0", cycle=verts, edges=edges)
    timings["zero_time_check"] = _time.perf_counter() - t0
    work_cost = -cost if mode == "min" else cost
    if per_scc is None:
        per_scc = True
    t0 = _time.perf_counter()
    # No array of the edges' sources (``row``) is made: every pass over the edges goes a
    # block of rows at a time (ocm.primitives.row_blocks).
    row = None
    if per_scc:
        restr = _scc.restrict_to_sccs(indptr, indices)
    else:
        restr = _scc.restrict_by_trimming(indptr, indices, xp)
    timings["restrict"] = _time.perf_counter() - t0
    k = restr.vertices.shape[0]
    if k == 0:
        raise NoCycleError(f"the graph has no cycle ({n} vertices, {m} edge"
                           f"{'s' * (m != 1)}): every path ends in a vertex without successors")
    if restr.edges is None or (restr.edges.shape[0] == m and k == n):
        # The identity restriction (``edges`` is an ascending subset of 0..m-1, so all m of
        # them is arange(m), and then every vertex is kept): no gathers, and the edge rows
        # already computed are the subgraph's.
        s_cost, s_time, s_row = work_cost, time, row
    else:
        s_cost = P.subset(work_cost, restr.edges)
        if isinstance(time, Palette) and isinstance(s_cost, Palette) and \
                time.label is work_cost.label:   # one palette's rows: taken once, shared
            s_time = Palette(s_cost.label, time.values)
        else:
            s_time = P.subset(time, restr.edges)
        s_row = None
    t0 = _time.perf_counter()
    solve = _howard.solve
    st = solve(restr.indptr, restr.indices, s_cost, s_time, xp=xp, max_iter=max_iter, row=s_row)
    iterations = st.iterations
    timings["howard"] = _time.perf_counter() - t0
    timings.update({f"howard_{k2}": v for k2, v in st.timings.items()})
    t0 = _time.perf_counter()
    cert = _certify.check_potentials(restr.indptr, restr.indices, s_cost, s_time, st.rank,
                                     st.rank_num, st.rank_den, st.potential, xp, s_row)
    if not cert.ok:
        # Never report an unproved value: resume from this policy in Python-int arithmetic.
        st = solve(restr.indptr, restr.indices, s_cost, s_time, xp=xp,
                   policy=st.policy, max_iter=max_iter, exact_objects=True, row=s_row)
        iterations += st.iterations
        cert = _certify.check_potentials(restr.indptr, restr.indices, s_cost, s_time, st.rank,
                                         st.rank_num, st.rank_den, st.potential, xp, s_row)
    # The critical cycle: the policy cycle of the top class with the smallest representative.
    top = st.rank_num.shape[0] - 1
    h = P.to_host
    reps = h(st.reps)
    rep_rank = h(st.rank[st.reps])
    r = int(reps[np.flatnonzero(rep_rank == top)[0]])
    # Walked without tolist(): only the cycle is visited.
    succ, pol = st.succ, st.policy
    verts_l, edges_l = [r], [int(pol[r])]
    v = int(succ[r])
    while v != r:
        verts_l.append(v)
        edges_l.append(int(pol[v]))
        v = int(succ[v])
    cyc = tuple(int(x) for x in restr.vertices[verts_l])
    cyc_edges = tuple(int(x) for x in restr.edge_ids(edges_l))
    c_sum, t_sum = _certify.cycle_sums(indptr, indices, cost, time, cyc, cyc_edges)
    value = Fraction(c_sum, t_sum)
    top_value = Fraction(int(h(st.rank_num)[top]), int(h(st.rank_den)[top]))
    certified = cert.ok and value == (-top_value if mode == "min" else top_value)
    timings["certify"] = _time.perf_counter() - t0
    scc_optima = None
    if per_scc:
        vmap = h(restr.vertices)
        label = h(restr.label)
        _, first, size = np.unique(label, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        first, size = first[order], size[order]
        rk = h(st.rank)[first]
        nums, dens = h(st.rank_num)[rk].tolist(), h(st.rank_den)[rk].tolist()
        sign = -1 if mode == "min" else 1
        scc_optima = tuple(SccOptimum(int(vmap[f]), int(s), sign * Fraction(a, b))
                           for f, s, a, b in zip(first.tolist(), size.tolist(), nums, dens))
    timings["total"] = _time.perf_counter() - t_start
    return CycleResult(value=value, cycle=cyc, cycle_edges=cyc_edges, kind=kind, mode=mode,
                       certified=bool(certified), iterations=iterations,
                       backend="cpu", timings=timings,
                       scc_optima=scc_optima, n_vertices=n, n_edges=m)


def max_cycle_mean(indptr: Any, indices: Any, cost: Any, **kwargs: Any) -> CycleResult:
    """Maximal cycle mean; see :func:`optimal_cycle` (``kind='mean', mode='max'``).

    >>> import numpy as np
    >>> max_cycle_mean(np.array([0, 1, 2]), np.array([1, 0]), np.array([3, 4])).value
    Fraction(7, 2)
    """
    return optimal_cycle(indptr, indices, cost, None, kind="mean", mode="max", **kwargs)


def min_cycle_mean(indptr: Any, indices: Any, cost: Any, **kwargs: Any) -> CycleResult:
    """Minimal cycle mean; see :func:`optimal_cycle` (``kind='mean', mode='min'``).

    >>> import numpy as np
    >>> min_cycle_mean(np.array([0, 2, 3]), np.array([0, 1, 0]), np.array([5, 1, 2])).value
    Fraction(3, 2)
    """
    return optimal_cycle(indptr, indices, cost, None, kind="mean", mode="min", **kwargs)


def max_cycle_ratio(indptr: Any, indices: Any, cost: Any, time: Any,
                    **kwargs: Any) -> CycleResult:
    """Maximal cycle ratio; see :func:`optimal_cycle` (``kind='ratio', mode='max'``).

    >>> import numpy as np
    >>> max_cycle_ratio(np.array([0, 1, 2]), np.array([1, 0]), np.array([3, 4]),
    ...                 np.array([2, 5])).exact
    '1'
    """
    return optimal_cycle(indptr, indices, cost, time, kind="ratio", mode="max", **kwargs)


def min_cycle_ratio(indptr: Any, indices: Any, cost: Any, time: Any,
                    **kwargs: Any) -> CycleResult:
    """Minimal cycle ratio; see :func:`optimal_cycle` (``kind='ratio', mode='min'``).

    >>> import numpy as np
    >>> min_cycle_ratio(np.array([0, 2, 3]), np.array([0, 1, 0]), np.array([5, 1, 2]),
    ...                 np.array([2, 1, 1])).value
    Fraction(3, 2)
    """
    return optimal_cycle(indptr, indices, cost, time, kind="ratio", mode="min", **kwargs)
