"""Howard's policy iteration on the GPU: the twin of :func:`ocm.howard.solve`.

Owned by the GPU engine (issue 5). :func:`howard_solve` runs the same multichain iteration,
the same sequence of policies and the same fixed point, with one iteration done as one replay
of a captured CUDA graph of ``2 * ceil(log2 n) + 6`` kernels and one 64-byte copy back to the
host (the convergence, overflow and zero-time flags). Every vertex keeps the record of its
policy edge (successor, cost, time), written once by ``p_gather`` and then by the improvement
where it switches:

1. ``p_cyc0``, ``p_cyc`` x (K + 1): cycle detection by pointer doubling with window minima
   on 8-byte records, which marks the representative (smallest vertex) of each policy cycle
   as in :func:`ocm.primitives.cycle_reps` and stops as soon as every vertex's path is known
   to reach a marked one (usually after ``log2`` of the longest tail plus cycle, not ``K``).
2. ``p_tree_init``, ``p_tsum`` x K: path sums of cost and time to the representative
   (:func:`ocm.primitives.tree_sums` on the forest cut open at the representatives); a record
   that has reached its root is final and is only copied.
3. ``p_class``: per policy cycle its sums and reduced value ``a/b``.
4. ``p_potential``: per vertex its root and scaled bias ``X = b*cs - a*ts``.
5. ``p_improve``: one pass over all edges, a block of rows at a time with their edges staged
   through shared memory (coalesced reads): the lexicographic best ``(a_w/b_w, b*cost -
   a*time + X_w)`` per row, lowest edge id on ties, switched to only on strict improvement.

Rounds ``K = ceil(log2 n)`` are launched; those after convergence return at once (a round
flag in device memory), so the graph is fixed while the work follows the policy graph.
Value classes are compared as exact fractions (128-bit cross products), which orders them
exactly as the dense ranks of :func:`ocm.primitives.rank_fractions` do, so no sort is needed.
Where a product could leave int64 (a conservative float bound, checked on the device; per
edge only when the iteration's largest class and bias do not already rule it out) the
iteration hands the policy it started from to the NumPy engine, which continues in Python-int
arithmetic: the answer is the same, only slower.

The kernels are those of :data:`ocm.kernels.SOURCE`; an emulating launcher runs them on the
host for tests (``tests/ocm/gpu_emulator.py``).
"""

from __future__ import annotations

import time as _time
from typing import Any

import numpy as np

from . import howard as H
from . import kernels as kern
from . import primitives as P
from .errors import ConvergenceError

__all__ = ["howard_solve"]


class _Buffers:
    """Device buffers of one solve, allocated once so that a captured graph can be replayed.

    Packed records are int64 arrays viewed by the kernels as structs: ``ja``/``jb`` hold
    (jump, minimum) pairs of int32 (in the first ``8 n`` bytes of ``ta``/``tb``); ``br`` (the policy edge of each vertex), ``ta`` and
    ``tb`` (tree doubling) hold (jump, cost, time) records of 16 bytes (32 when ``wide``);
    ``xr`` (bias, root) pairs. ``act`` holds the per-round flags of cycle detection (the
    first ``K + 3``) and of the tree doubling (the other ``K + 1``).
    """

    def __init__(self, xp: Any, n: int, K: int, wide: bool) -> None:
        e = lambda k=1: xp.empty(k * n, dtype=xp.int64)  # noqa: E731
        self.xp = xp
        self.wide = wide  # 32-byte records (TS) instead of 16 (TS16)
        w = 4 if wide else 2
        self.br, self.ta, self.tb = e(w), e(w), e(w)
        # (int32, int32) pairs of cycle detection, in the tree records' memory: an iteration
        # detects cycles before p_tree_init first writes ta, and reads them no more after.
        self.ja, self.jb = self.ta[:n], self.tb[:n]
        self.xr = e(2)
        self.ra, self.rb = xp.zeros(n, dtype=xp.int64), xp.ones(n, dtype=xp.int64)
        self.cand = xp.zeros(n, dtype=xp.int8)
        self.flags = xp.zeros(8, dtype=xp.int64)
        self.cmax = self.tmax = 2 ** 63 - 1  # set by howard_solve (bounds of |cost|, |time|)
        # The improvement's undo log: iterations run (iter[0]), and per switched vertex its
        # former edge and the iteration that switched it, in two slots (odd, even iterations).
        self.n = n
        self.iter = xp.zeros(1, dtype=xp.int64)
        self.old = e(2)
        self.stamp = xp.full(2 * n, -1, dtype=xp.int64)
        self.act = xp.zeros(2 * K + 4, dtype=xp.int64)
        self.cact, self.tact = self.act[:K + 3], self.act[K + 3:]

    def release(self, *names: str) -> None:
        """Drop the buffers ``names`` (their memory goes back to the array module's pool);
        only after the last iteration, which no launch reads any more."""
        for name in names:
            setattr(self, name, None)

    def start_policy(self, policy: Any, first: int) -> Any:
        """The policy iteration ``first`` (counted from 1) started from: ``policy`` with the
        switches of iterations ``iter[0]`` down to ``first`` undone (at most two)."""
        last = int(self.iter[0])
        assert first <= last <= first + 1, (first, last)
        for k in range(last, first - 1, -1):
            sl = slice((k % 2) * self.n, (k % 2 + 1) * self.n)
            policy = self.xp.where(self.stamp[sl] == k, self.old[sl], policy)
        return policy


def _issue_iteration(L: kern.Launcher, B: _Buffers, policy: Any, indices: Any,
                     ch: kern.Charges, indptr: Any, n: int, K: int) -> None:
    """Launch one complete iteration (value determination, then improvement) on fixed buffers.

    ``2 K + 6`` launches: cycle-detection rounds ``0 .. K + 1`` and tree-doubling rounds
    ``0 .. K - 1``, of which those after convergence return at once, then the classes, the
    biases and the improvement. Expects ``B.br`` to hold the records of ``policy`` (the
    improvement keeps them so). Once the stream has run them, ``B.flags`` holds the number of
    switched vertices, the overflow flag and the zero-time flag, ``policy`` the improved
    policy, and ``B.start_policy`` gives the policy the iteration started from.
    """
    launch = L.launch
    suf = "" if B.wide else "16"
    launch("p_cyc0" + suf, n, B.br, n, B.ja, B.cand, B.iter, B.flags, B.act, B.act.shape[0])
    j0, j1 = B.ja, B.jb
    for k in range(1, K + 2):
        launch("p_cyc", n, j0, n, j1, B.cand, B.cact, k)
        j0, j1 = j1, j0
    launch("p_tree_init" + suf, n, B.br, B.cand, n, B.ta, B.cact, K + 2, B.flags)
    t0, t1 = B.ta, B.tb
    for k in range(K):
        # Round k reads ta when k is even: the parity of flags[3] (rounds run) finds the result.
        launch("p_tsum" + suf, n, t0, n, t1, B.tact, k, B.flags)
        t0, t1 = t1, t0
    launch("p_class" + suf, n, B.cand, B.br, B.ta, B.tb, n, B.ra, B.rb, B.flags)
    launch("p_potential" + suf, n, B.ta, B.tb, B.ra, B.rb, n, B.xr, B.flags)
    launch("p_improve" + suf + ch.suffix, n, indptr, indices, ch.lab, ch.ctab, ch.ttab,
           ch.has_time, B.xr, B.ra, B.rb, n, B.cmax, B.tmax, B.iter, policy, B.old, B.stamp,
           B.br, B.flags)


def howard_solve(indptr: Any, indices: Any, cost: Any, time: Any | None, *, xp: Any,
                 policy: Any | None = None, max_iter: int | None = None,
                 exact_objects: bool = False, row: Any | None = None,
                 launcher: kern.Launcher | None = None) -> Any:
    """Same contract as :func:`ocm.howard.solve` on NumPy: the same policies, the same state.

    Parameters
    ----------
    indptr, indices, cost, time, policy, max_iter, exact_objects, row
        As for :func:`ocm.howard.solve` (``exact_objects=True`` runs the NumPy engine).
    xp : module
        ``cupy`` (or ``numpy`` with an emulating ``launcher``, for tests).
    launcher : Launcher, optional
        How kernels run; default: :func:`cupy_launcher`.

    Returns
    -------
    ocm.howard.HowardState
        Device arrays; ``potential`` is an object (NumPy) array only if the iteration had to
        continue in Python ints. ``timings`` holds ``iterate`` (the device loop) and ``value``
        (the final value determination), in seconds.

    Raises
    ------
    ZeroTimeCycleError, ConvergenceError
        As :func:`ocm.howard.solve` (raised by the same code).

    Notes
    -----
    An iteration is issued on fixed buffers; with CuPy it is captured once as a CUDA graph and
    replayed, so an iteration costs one graph launch and one 64-byte copy of ``flags`` (from
    the fifth iteration on, issued while the previous iteration still runs).
    """
    L = launcher or kern.launcher_for(xp)
    n = indptr.shape[0] - 1
    if exact_objects or n == 0 or n >= 2 ** 31:  # 32-bit vertex ids in the device loop
        return _host_solve(indptr, indices, cost, time, policy, max_iter, exact_objects, xp, 0)
    # The graph as the kernels read it: int64 offsets, int32 targets, and the charges as a
    # palette row per edge (or per-edge arrays): no int64 copy of the edges is made.
    indptr = xp.ascontiguousarray(indptr, dtype=xp.int64)
    indices = xp.ascontiguousarray(indices, dtype=xp.int32)
    ch = kern.Charges.of(cost, time, xp)
    if policy is None:
        policy = xp.empty(n, dtype=xp.int64)
        L.launch("charge_argmax" + ch.suffix, n, indptr, ch.lab, ch.ctab, n, policy)
    else:
        policy = xp.array(policy, dtype=xp.int64, copy=True)
    if max_iter is None:
        max_iter = max(1000, 10 * n)
    K = kern.doubling_rounds(n)
    # The extremes of cost and time (over the table: its rows no edge uses are 0, see
    # ocm.optimal_cycle), reduced on the device and read back at once.
    if indices.shape[0]:
        ext = [ch.ctab.max(), ch.ctab.min()] + ([ch.ttab.max(), ch.ttab.min()]
                                                if ch.has_time else [])
        ext = [int(x) for x in P.to_host(xp.stack(ext)).tolist()]
    else:
        ext = [0, 0, 0, 0]
    has_time = ch.has_time
    # 32-bit path time sums unless a path (at most n - 1 edges) could reach 2^31.
    tmax = ext[2] if has_time else 1
    B = _Buffers(xp, n, K, wide=n * max(tmax, 1) >= 2 ** 31)
    # Largest |cost| and |time|: with the iteration's largest |a|, b and |bias| they bound
    # every product of the improvement at once (see p_improve).
    B.cmax = min(max(ext[0], -ext[1]), 2 ** 63 - 1)
    B.tmax = min(max(ext[2], -ext[3]), 2 ** 63 - 1) if has_time else 1
    # The policy records; from here on the improvement keeps them up to date.
    L.launch("p_gather" + ("" if B.wide else "16") + ch.suffix, n, policy, indices, ch.lab,
             ch.ctab, ch.ttab, has_time, n, B.br)
    args = (indices, ch, indptr, n, K)
    S = _Stepper(L, B, policy, args)
    # Run one iteration ahead (queued behind the one whose flags the host waits for, so the
    # GPU does not idle through the host's round trip: 60 to 100 us an iteration measured on
    # an H100 host, more under load) from the fifth iteration on, while the last iteration
    # read still switched at least ahead_min vertices. An iteration after convergence changes
    # nothing, so this costs at most one iteration's work, at the end, and only when the last
    # improving iteration was not a small one; short solves never pay it. The undo log still
    # gives the starting policy of an iteration that must go to the host.
    ahead_from, ahead_min = 4, 64
    changed = 0
    t0 = _time.perf_counter()
    it = 0  # iterations whose flags were read
    while True:
        if S.pending == 0:
            if it >= max_iter:
                raise ConvergenceError(it, "Howard's iteration did not converge in "
                                           f"{it} iterations")
            S.launch()
        if (S.pending == 1 and S.can_run_ahead and it >= ahead_from and changed >= ahead_min
                and it + 1 < max_iter):
            S.launch()
        changed, overflow, zero = S.wait()
        it += 1
        if zero or overflow:
            # A zero-time policy cycle (raised by the NumPy engine with its message), or an
            # int64 bound failed: continue from the last complete policy on the host, exactly.
            S.finish()
            t_iter = _time.perf_counter() - t0
            return _host_solve(indptr, indices, cost, time, B.start_policy(policy, it),
                               max_iter - (it - 1), False, xp, it - 1, {"iterate": t_iter})
        if not changed:
            S.finish()  # an iteration run ahead of the fixed point changes nothing
            break
    t_iter = _time.perf_counter() - t0
    t1 = _time.perf_counter()
    st = _final_state(B, policy, indices, cost, time, xp)
    if st is None:  # int64 biases not proved safe by the NumPy engine's bound: its own path
        st = H.value_determination(indptr, indices, cost, time, policy, xp)
    st.iterations = it
    st.timings = {"iterate": t_iter, "value": _time.perf_counter() - t1}
    return st


def _final_state(B: _Buffers, policy: Any, indices: Any, cost: Any, time: Any | None,
                 xp: Any) -> Any:
    """The value determination of the fixed point, read from the last iteration's buffers.

    The last iteration run (and the one run ahead of it, if any) started from the final
    ``policy`` and switched nothing, so its buffers hold that policy's representatives
    (``cand``), path sums to the root (the tree records of the final doubling round, whose
    parity ``flags[3]`` gives), and roots and biases (``xr``), computed with the formulas of
    :func:`ocm.howard.value_determination` (classes reduced by the gcd, ``X = b*cs - a*ts``;
    the device checked every product). Only the dense ranks are left to compute, from the
    cycles' sums as there. Returns None where that function's own bound would keep the biases
    as Python ints (its caller then runs it), so the state is the one it would return.
    """
    n = B.n
    f3 = int(P.to_host(B.flags)[3])  # after the stream finished: the last iteration's
    R = (B.tb if f3 & 1 else B.ta).reshape(n, -1)
    if B.wide:  # TS {j, c, t, pad}
        cs, ts = R[:, 1], R[:, 2]
    else:  # TS16 {c; int j, int t}: t is the high (signed) half of the second word
        cs, ts = R[:, 0], R[:, 1] >> 32
    # The buffers not read below go back to the pool first, and those read once the vertex
    # arrays are out of them: the state is built in the memory the iteration used.
    B.release("br", "ja", "jb", "old", "stamp", "ra", "rb")
    cs, ts = xp.ascontiguousarray(cs), xp.ascontiguousarray(ts)
    del R
    B.release("ta", "tb")
    xr = B.xr.reshape(n, 2)
    pot, root = xp.ascontiguousarray(xr[:, 0]), xp.ascontiguousarray(xr[:, 1])
    del xr
    B.release("xr")
    succ = indices[policy].astype(xp.int64, copy=False)
    reps = xp.flatnonzero(B.cand).astype(xp.int64, copy=False)
    B.release("cand")
    # The policy edges of the representatives only (costs and times may be a palette).
    pe = policy[reps]
    wc = P.dense(P.subset(cost, pe))
    wt = P.dense(P.subset(time, pe)) if time is not None else xp.ones(reps.shape[0], xp.int64)
    cc = wc + cs[succ[reps]]
    tt = wt + ts[succ[reps]]
    rrank, rnum, rden = P.rank_fractions(cc, tt, xp)
    bd = P.to_host(xp.stack([xp.abs(x).max() for x in (rden, cs, rnum, ts)])).tolist()
    if not P.fits_int64(int(bd[0]) * int(bd[1]), int(bd[2]) * int(bd[3])):
        return None
    rank_of = xp.zeros(n, dtype=xp.int64)
    rank_of[reps] = rrank
    return H.HowardState(policy=policy, succ=succ, root=root, rank=rank_of[root],
                         rank_num=rnum, rank_den=rden, potential=pot, reps=reps,
                         rep_cost=cc, rep_time=tt)


class _Stepper:
    """Issues iterations and hands back their flags ``(changed, overflow, zero_time)``.

    With CuPy the launches are captured once as a CUDA graph on a stream of their own (plain
    launches where capture is refused), each followed by an asynchronous copy of the flags
    into pinned host memory (two slots) and an event, so that a second iteration can be
    queued before the first one's flags are read. Otherwise (an emulating launcher) each
    iteration runs at once. The improvement overwrites ``policy`` in place.
    """

    def __init__(self, L: kern.Launcher, B: _Buffers, policy: Any, args: tuple) -> None:
        self.B = B
        self.launched = self.read = 0
        self.graph = self.stream = None
        self.issue = lambda: _issue_iteration(L, B, policy, *args)
        self.can_run_ahead = bool(L.graphs)
        if not L.graphs:
            return
        import cupy

        # The buffers were filled on the default stream; the graph runs on its own stream.
        cupy.cuda.Device().synchronize()
        self.stream = cupy.cuda.Stream(non_blocking=True)
        try:
            with self.stream:
                self.stream.begin_capture()
                try:
                    self.issue()
                finally:
                    self.graph = self.stream.end_capture()
        except Exception:  # noqa: BLE001 - capture unsupported here: plain launches below
            self.graph = None
        L.captured = self.graph is not None
        self._mem = cupy.cuda.alloc_pinned_memory(2 * B.flags.nbytes)
        self.host = np.frombuffer(self._mem, dtype=np.int64,
                                  count=2 * B.flags.size).reshape(2, -1)
        self.events = [cupy.cuda.Event(disable_timing=True) for _ in range(2)]
        self._copy = cupy.cuda.runtime.memcpyAsync
        self._d2h = cupy.cuda.runtime.memcpyDeviceToHost

    @property
    def pending(self) -> int:
        """Iterations issued whose flags were not read yet (0, 1 or 2)."""
        return self.launched - self.read

    def launch(self) -> None:
        """Issue the next iteration (returns at once with CuPy)."""
        if self.stream is None:
            self.issue()
            self.flags = P.to_host(self.B.flags)[:3].copy()
        else:
            slot = self.launched % 2
            if self.graph is not None:
                self.graph.launch(self.stream)
            else:
                with self.stream:
                    self.issue()
            # The copy runs before the next iteration clears the flags (stream order).
            self._copy(self.host[slot].ctypes.data, self.B.flags.data.ptr, self.B.flags.nbytes,
                       self._d2h, self.stream.ptr)
            self.events[slot].record(self.stream)
        self.launched += 1

    def wait(self) -> tuple[int, int, int]:
        """The flags of the oldest pending iteration, once it has run."""
        if self.stream is None:
            f = self.flags
        else:
            slot = self.read % 2
            self.events[slot].synchronize()
            f = self.host[slot]
        self.read += 1
        return int(f[0]), int(f[1]), int(f[2])

    def finish(self) -> None:
        """Wait for every issued iteration (before the buffers are read or freed)."""
        if self.stream is not None:
            self.stream.synchronize()


def _host_solve(indptr: Any, indices: Any, cost: Any, time: Any | None, policy: Any | None,
                max_iter: int | None, exact_objects: bool, xp: Any, done: int,
                timings: dict | None = None) -> Any:
    """Continue with the NumPy engine from ``policy``; device arrays back in the state."""
    h = P.to_host
    t0 = _time.perf_counter()
    st = H.solve(h(indptr), h(indices), P.edges_to_host(cost), P.edges_to_host(time), xp=np,
                 policy=None if policy is None else h(policy), max_iter=max_iter,
                 exact_objects=exact_objects)
    back = lambda a: a if a.dtype == object else xp.asarray(a)  # noqa: E731
    for name in ("policy", "succ", "root", "rank", "rank_num", "rank_den", "potential", "reps",
                 "rep_cost", "rep_time"):
        setattr(st, name, back(getattr(st, name)))
    st.iterations += done
    st.timings = dict(timings or {}, host=_time.perf_counter() - t0)
    return st
