"""CuPy raw kernels for Howard's policy iteration: the GPU twins of :mod:`ocm.primitives`.

Owned by the GPU engine (issue 5). Every public function here has **the same name, arguments
and contract** as its NumPy twin in :mod:`ocm.primitives`, which dispatches to it when ``xp``
is CuPy (see ``ocm.primitives._kernel``). All arithmetic is on int64 and every tie goes to the
lowest index, so the results are bit-identical to the NumPy engine, whatever the thread order.

:func:`howard_solve` is the twin of :func:`ocm.howard.solve`: the same multichain iteration,
the same sequence of policies and the same fixed point, with one iteration done as one replay
of a captured CUDA graph of ``2 * ceil(log2 n) + 7`` small kernels (a thread per vertex or row)
and a single 32-byte copy back to the host (the convergence, overflow and zero-time flags):

1. ``p_gather``: ``succ``, ``cost`` and ``time`` of every vertex's policy edge.
2. ``p_dbl_min`` x K: pointer doubling with window minima (cycle detection, as in
   :func:`ocm.primitives.cycle_reps`); ``p_mark`` flags the vertices on policy cycles.
3. ``p_tree_init``, ``p_dbl_sum`` x K: path sums of cost and time to the cycle's
   representative (:func:`ocm.primitives.tree_sums` on the forest cut open at every
   representative); rounds after every vertex has reached its root return at once.
4. ``p_class``: per policy cycle its sums and reduced value ``a/b``.
5. ``p_potential``: per vertex its root and scaled bias ``X = b*cs - a*ts``.
6. ``p_improve``: one pass over all edges: the lexicographic best ``(a_w/b_w, b*cost - a*time
   + X_w)`` per row, lowest edge id on ties, switched to only on strict improvement.

Value classes are compared as exact fractions (128-bit cross products), which orders them
exactly as the dense ranks of :func:`ocm.primitives.rank_fractions` do, so no sort is needed.
Where a product could leave int64 (a conservative float bound, checked on the device) the
iteration hands the policy of the last complete iteration to the NumPy engine, which continues
in Python-int arithmetic: the answer is the same, only slower.

The kernels use one thread per vertex or row in grid-stride loops, no shared memory, and read
only buffers that the same launch does not write (double buffering); the few atomics only set
flags. So running every kernel sequentially on the host (one "thread", ``gridDim = blockDim =
1``) computes exactly what the GPU computes: ``tests/ocm/test_gpu_emulated.py`` compiles
:data:`SOURCE` with a C++ compiler and checks the whole engine against the NumPy engine on
machines without a GPU.
"""

from __future__ import annotations

import math
import time as _time
from typing import Any, Callable, Sequence

import numpy as np

__all__ = [
    "SOURCE",
    "KERNEL_NAMES",
    "edge_rows",
    "segment_sum",
    "segment_max",
    "segment_argmax",
    "best_edges",
    "cycle_reps",
    "tree_sums",
    "trim_sinks",
    "howard_solve",
    "Launcher",
    "cupy_launcher",
]

#: The CUDA C source of every kernel (int64 throughout, ``i64`` = ``long long``).
SOURCE = r"""
typedef long long i64;
typedef unsigned long long u64;
#define I64_MIN (-9223372036854775807LL - 1)
#define GRID_LOOP(i, n) \
    for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (i64)blockDim.x * gridDim.x)

// |x| < 2^61 for a product or term, judged on doubles with a wide margin (relative error of
// the double product < 2^-52): a true magnitude >= 2^61 always fails the test.
__device__ __forceinline__ bool small_prod(i64 x, i64 y) {
    return fabs((double)x) * fabs((double)y) < 2.0e18;  // 2.0e18 < 2^61 = 2.305e18
}
__device__ __forceinline__ bool small_val(i64 x) {
    return fabs((double)x) < 2.0e18;
}

// Sign of a1/b1 - a2/b2 for b1, b2 > 0, exactly: compare the 128-bit products a1*b2, a2*b1.
__device__ __forceinline__ int cmp_frac(i64 a1, i64 b1, i64 a2, i64 b2) {
    if (a1 == a2 && b1 == b2) return 0;
    i64 ph = __mul64hi(a1, b2), qh = __mul64hi(a2, b1);
    if (ph != qh) return ph < qh ? -1 : 1;
    u64 pl = (u64)a1 * (u64)b2, ql = (u64)a2 * (u64)b1;
    if (pl != ql) return pl < ql ? -1 : 1;
    return 0;
}

// Many threads setting one flag, or counting into one word, serialise on that address: one
// lane per (converged part of a) warp writes, and only while the flag still reads 0.
__device__ __forceinline__ void warp_set_flag(bool pred, i64* flag) {
    unsigned m = __activemask();
    if (__any_sync(m, pred) && (int)(threadIdx.x & 31) == __ffs(m) - 1
            && *(volatile i64*)flag == 0)
        *flag = 1;
}
__device__ __forceinline__ void warp_count(bool pred, i64* counter) {
    unsigned m = __activemask();
    unsigned b = __ballot_sync(m, pred);
    if (b && (int)(threadIdx.x & 31) == __ffs(m) - 1)
        atomicAdd((unsigned long long*)counter, (unsigned long long)__popc(b));
}

__device__ __forceinline__ i64 gcd64(i64 a, i64 b) {
    u64 x = a < 0 ? (u64)0 - (u64)a : (u64)a, y = b < 0 ? (u64)0 - (u64)b : (u64)b;
    while (y) { u64 t = x % y; x = y; y = t; }
    return (i64)x;
}

// ---- primitives (contracts: ocm.primitives) ------------------------------------------------

// Same contract as ocm.primitives.edge_rows on NumPy.
extern "C" __global__ void edge_rows_k(const i64* indptr, i64 n, i64* row) {
    GRID_LOOP(u, n) {
        for (i64 e = indptr[u]; e < indptr[u + 1]; ++e) row[e] = u;
    }
}

// Same contract as ocm.primitives.segment_sum on NumPy (int64; empty rows give 0).
extern "C" __global__ void segment_sum_k(const i64* values, const i64* indptr, i64 n,
                                         i64* out) {
    GRID_LOOP(u, n) {
        i64 s = 0;
        for (i64 e = indptr[u]; e < indptr[u + 1]; ++e) s += values[e];
        out[u] = s;
    }
}

// Same contract as ocm.primitives.segment_argmax on NumPy (int64 keys, non-empty rows):
// strict '>' while scanning edges upwards keeps the lowest edge id among the maxima.
extern "C" __global__ void segment_argmax_i64(const i64* key, const i64* indptr, i64 n,
                                              i64* best, i64* edge) {
    GRID_LOOP(u, n) {
        i64 s = indptr[u], t = indptr[u + 1];
        i64 b = key[s], be = s;
        for (i64 e = s + 1; e < t; ++e) { i64 k = key[e]; if (k > b) { b = k; be = e; } }
        best[u] = b; edge[u] = be;
    }
}

// The same for float64 keys without NaN (exact comparisons only, no arithmetic).
extern "C" __global__ void segment_argmax_f64(const double* key, const i64* indptr, i64 n,
                                              double* best, i64* edge) {
    GRID_LOOP(u, n) {
        i64 s = indptr[u], t = indptr[u + 1];
        double b = key[s]; i64 be = s;
        for (i64 e = s + 1; e < t; ++e) { double k = key[e]; if (k > b) { b = k; be = e; } }
        best[u] = b; edge[u] = be;
    }
}

// Same contract as ocm.primitives.best_edges on NumPy (int64 potentials, non-empty rows).
// One pass per row: a higher rank restarts the row's best; within the best rank a strictly
// larger value wins, so the lowest edge id wins ties.
extern "C" __global__ void best_edges_k(const i64* indptr, const i64* indices, const i64* cost,
                                        const i64* time, i64 has_time, const i64* rank,
                                        const i64* pot, const i64* rnum, const i64* rden, i64 n,
                                        i64* best_rank, i64* best_val, i64* best_edge) {
    GRID_LOOP(u, n) {
        i64 br = I64_MIN, bv = 0, be = -1;
        for (i64 e = indptr[u]; e < indptr[u + 1]; ++e) {
            i64 w = indices[e], rk = rank[w];
            if (rk < br) continue;
            i64 tm = has_time ? time[e] : 1;
            i64 val = rden[rk] * cost[e] - rnum[rk] * tm + pot[w];
            if (rk > br || val > bv) { br = rk; bv = val; be = e; }
        }
        best_rank[u] = br; best_val[u] = bv; best_edge[u] = be;
    }
}

// One round of sink trimming, in place (the fixed point is unique, so the order of updates
// does not matter): a live vertex with no live successor dies and sets *changed.
extern "C" __global__ void trim_round(const i64* indptr, const i64* indices, signed char* alive,
                                      i64 n, i64* changed) {
    GRID_LOOP(u, n) {
        if (!alive[u]) continue;
        bool live = false;
        for (i64 e = indptr[u]; e < indptr[u + 1] && !live; ++e) live = alive[indices[e]] != 0;
        if (!live) alive[u] = 0;
        warp_set_flag(!live, changed);
    }
}

// ---- pointer doubling (cycle_reps, tree_sums) ----------------------------------------------

// Invariant after k rounds: jout = succ^(2^k), lout(v) = min of the 2^k vertices
// v, succ(v), ..., succ^(2^k - 1)(v). Reads only the 'in' buffers.
extern "C" __global__ void dbl_min(const i64* jin, const i64* lin, i64 n, i64* jout, i64* lout) {
    GRID_LOOP(v, n) {
        i64 j = jin[v], a = lin[v], b = lin[j];
        lout[v] = a < b ? a : b;
        jout[v] = jin[j];
    }
}

// on[jfin[v]] = 1: after K rounds with 2^K >= n, jfin(v) lies on a cycle, and every vertex of
// a cycle is some jfin(v) (a cycle is a permutation of itself).
extern "C" __global__ void mark_image(const i64* jfin, i64 n, signed char* on) {
    // Most vertices land on few cycle vertices: test before writing (no store storm).
    GRID_LOOP(v, n) { i64 j = jfin[v]; if (!on[j]) on[j] = 1; }
}

extern "C" __global__ void reps_out(const signed char* on, const i64* low, i64 n, i64* rep) {
    GRID_LOOP(v, n) { rep[v] = on[v] ? low[v] : -1; }
}

// Invariant after k rounds: jout = parent^(2^k) (stopping at the root), sout(v) = sum of the
// weights of the first 2^k steps of v's path (0 at a root, so adding s[root] changes nothing).
extern "C" __global__ void dbl_sum2(const i64* jin, const i64* ain, const i64* bin, i64 n,
                                    i64* jout, i64* aout, i64* bout) {
    GRID_LOOP(v, n) {
        i64 j = jin[v];
        aout[v] = ain[v] + ain[j];
        bout[v] = bin[v] + bin[j];
        jout[v] = jin[j];
    }
}

extern "C" __global__ void dbl_sum1(const i64* jin, const i64* ain, i64 n, i64* jout, i64* aout) {
    GRID_LOOP(v, n) {
        i64 j = jin[v];
        aout[v] = ain[v] + ain[j];
        jout[v] = jin[j];
    }
}

// Forest of tree_sums: roots are parent[v] == v, their weights read as 0.
extern "C" __global__ void tree_init2(const i64* parent, const i64* wa, const i64* wb, i64 n,
                                      i64* j, i64* a, i64* b) {
    GRID_LOOP(v, n) {
        i64 p = parent[v];
        j[v] = p;
        a[v] = p == v ? 0 : wa[v];
        b[v] = p == v ? 0 : wb[v];
    }
}

extern "C" __global__ void tree_init1(const i64* parent, const i64* wa, i64 n, i64* j, i64* a) {
    GRID_LOOP(v, n) {
        i64 p = parent[v];
        j[v] = p;
        a[v] = p == v ? 0 : wa[v];
    }
}

// ---- Howard's iteration, packed (what howard_solve runs) ---------------------------------
// Per-vertex records are packed so that every random access reads one 32-byte sector:
// JL = (jump, window minimum) as 32-bit ids (howard_solve requires n < 2^31), TS = (jump,
// path cost, path time), XR = (bias, root).
struct __align__(8) JL { int j, l; };
struct __align__(16) TS { i64 j, c, t, pad; };
struct __align__(16) XR { i64 x, r; };

// Policy edge of every vertex; cycle-detection state J_0 = succ, M_0(v) = v; flags and the
// per-round activity flags act[0..K] cleared. flags[0]: vertices that improved; [1]: an int64
// bound failed; [2]: a zero-time cycle; [3]: tree-doubling rounds executed.
extern "C" __global__ void p_gather(const i64* policy, const i64* indices, const i64* cost,
                                    const i64* time, i64 has_time, i64 n, i64 K, i64* succ,
                                    i64* wc, i64* wt, JL* ja, signed char* on, i64* flags,
                                    i64* act) {
    GRID_LOOP(v, n) {
        i64 e = policy[v], s = indices[e];
        succ[v] = s; wc[v] = cost[e]; wt[v] = has_time ? time[e] : 1;
        JL x; x.j = (int)s; x.l = (int)v; ja[v] = x;
        on[v] = 0;
        if (v == 0) {
            flags[0] = 0; flags[1] = 0; flags[2] = 0; flags[3] = 0;
            for (i64 i = 0; i <= K; ++i) act[i] = 0;
        }
    }
}

// Round of cycle detection (invariants of dbl_min), one random record read per vertex.
extern "C" __global__ void p_dbl_min(const JL* in, i64 n, JL* out) {
    GRID_LOOP(v, n) {
        JL p = in[v], q = in[p.j], o;
        o.j = q.j; o.l = p.l < q.l ? p.l : q.l;
        out[v] = o;
    }
}

extern "C" __global__ void p_mark(const JL* fin, i64 n, signed char* on) {
    GRID_LOOP(v, n) { int j = fin[v].j; if (!on[j]) on[j] = 1; }  // as mark_image
}

// Tree records: TS16 (16 bytes: cost sum, 32-bit jump and time sum) when every path's time
// sum is below 2^31 (howard_solve checks n * max(time) < 2^31; for means it is the path
// length), else TS (32 bytes). Two buffers of TS16 for 2^20 vertices fit in the L2 cache.
struct __align__(16) TS16 { i64 c; int j; int t; };

// Forest cut open at the representatives (on a cycle and its smallest vertex): roots keep
// themselves with weights 0. act[0] = 1 lets round 0 run.
template <class T>
__device__ __forceinline__ void tree_init_t(const signed char* on, const JL* fin, const i64* succ,
                                            const i64* wc, const i64* wt, i64 n, T* ta,
                                            signed char* isrep, i64* act) {
    GRID_LOOP(v, n) {
        bool rep = on[v] && fin[v].l == v;
        isrep[v] = rep;
        T x;
        if (rep) { x.j = v; x.c = 0; x.t = 0; } else { x.j = succ[v]; x.c = wc[v]; x.t = wt[v]; }
        ta[v] = x;
        if (v == 0) act[0] = 1;
    }
}

// Tree-doubling round k (invariants of dbl_sum2). Runs only if round k - 1 left a vertex
// whose jump is not yet a root (act[k]); sets act[k + 1] likewise and flags[3] = k + 1, so
// flags[3] counts the rounds run and its parity says which buffer holds the result.
template <class T>
__device__ __forceinline__ void dbl_sum_t(const T* in, i64 n, T* out, const signed char* isrep,
                                          i64* act, i64 k, i64* flags) {
    if (act[k] == 0) return;  // every vertex reached its root before round k
    GRID_LOOP(v, n) {
        T p = in[v], q = in[p.j], o;
        o.j = q.j; o.c = p.c + q.c; o.t = p.t + q.t;
        out[v] = o;
        warp_set_flag(!isrep[o.j], &act[k + 1]);
        if (v == 0) flags[3] = k + 1;
    }
}

// Per representative: its cycle's sums and reduced value ra/rb (as vd_class).
template <class T>
__device__ __forceinline__ void class_t(const signed char* isrep, const i64* succ, const i64* wc,
                                        const i64* wt, const T* ta, const T* tb, i64 n, i64* ra,
                                        i64* rb, i64* flags) {
    const T* R = (flags[3] & 1) ? tb : ta;
    GRID_LOOP(r, n) {
        if (!isrep[r]) continue;
        T s = R[succ[r]];
        i64 cc = wc[r] + s.c, tt = wt[r] + (i64)s.t;
        if (tt <= 0) { flags[2] = 1; ra[r] = 0; rb[r] = 1; continue; }
        i64 g = gcd64(cc, tt);
        ra[r] = cc / g; rb[r] = tt / g;
    }
}

// Per vertex: root and scaled bias X = b * cs - a * ts, (a, b) the value of its root's cycle.
template <class T>
__device__ __forceinline__ void potential_t(const T* ta, const T* tb, const i64* ra,
                                            const i64* rb, i64 n, XR* xr, i64* flags) {
    const T* R = (flags[3] & 1) ? tb : ta;
    GRID_LOOP(v, n) {
        T t = R[v];
        i64 a = ra[t.j], b = rb[t.j], ts = t.t;
        XR o; o.r = t.j; o.x = 0;
        if (!(small_prod(b, t.c) && small_prod(a, ts))) { flags[1] = 1; xr[v] = o; continue; }
        o.x = b * t.c - a * ts;
        if (!small_val(o.x)) flags[1] = 1;
        xr[v] = o;
    }
}

#define TREE_KERNELS(SUF, T) \
extern "C" __global__ void p_tree_init##SUF(const signed char* on, const JL* fin, \
        const i64* succ, const i64* wc, const i64* wt, i64 n, T* ta, signed char* isrep, \
        i64* act) { tree_init_t<T>(on, fin, succ, wc, wt, n, ta, isrep, act); } \
extern "C" __global__ void p_dbl_sum##SUF(const T* in, i64 n, T* out, \
        const signed char* isrep, i64* act, i64 k, i64* flags) { \
    dbl_sum_t<T>(in, n, out, isrep, act, k, flags); } \
extern "C" __global__ void p_class##SUF(const signed char* isrep, const i64* succ, \
        const i64* wc, const i64* wt, const T* ta, const T* tb, i64 n, i64* ra, i64* rb, \
        i64* flags) { class_t<T>(isrep, succ, wc, wt, ta, tb, n, ra, rb, flags); } \
extern "C" __global__ void p_potential##SUF(const T* ta, const T* tb, const i64* ra, \
        const i64* rb, i64 n, XR* xr, i64* flags) { \
    potential_t<T>(ta, tb, ra, rb, n, xr, flags); }

TREE_KERNELS(, TS)
TREE_KERNELS(16, TS16)

// Improvement, one thread per row, edges in increasing id: the best class (exact fraction
// order; same root means same cycle, same value), within it the largest b*cost - a*time +
// X(w), lowest id on ties. A vertex switches only on strict improvement over its own class
// and bias; switches are counted in flags[0]. One 16-byte record read per edge target.
extern "C" __global__ void p_improve(const i64* indptr, const i64* indices, const i64* cost,
                                     const i64* time, i64 has_time, const XR* xr, const i64* ra,
                                     const i64* rb, i64 n, i64* policy, i64* flags) {
    GRID_LOOP(u, n) {
        i64 br = -1, ba = 0, bb = 1, bv = 0, be = -1;
        bool ok = true;
        for (i64 e = indptr[u]; e < indptr[u + 1]; ++e) {
            XR q = xr[indices[e]];
            int c; i64 a, b;
            if (be < 0) { c = 1; a = ra[q.r]; b = rb[q.r]; }
            else if (q.r == br) { c = 0; a = ba; b = bb; }
            else { a = ra[q.r]; b = rb[q.r]; c = cmp_frac(a, b, ba, bb); }
            if (c < 0) continue;
            i64 tm = has_time ? time[e] : 1, c_e = cost[e];
            if (!(small_prod(b, c_e) && small_prod(a, tm) && small_val(q.x))) { ok = false; break; }
            i64 val = b * c_e - a * tm + q.x;
            if (c > 0 || val > bv) { br = q.r; ba = a; bb = b; bv = val; be = e; }
        }
        bool imp = false;
        if (ok) {
            XR o = xr[u];
            int c = o.r == br ? 0 : cmp_frac(ba, bb, ra[o.r], rb[o.r]);
            imp = c > 0 || (c == 0 && bv > o.x);
            if (imp) policy[u] = be;
        } else {
            flags[1] = 1;  // rare: the iteration is abandoned
        }
        warp_count(imp, &flags[0]);
    }
}
"""

#: Kernels defined in :data:`SOURCE` (what a launcher must provide).
KERNEL_NAMES = ("edge_rows_k", "segment_sum_k", "segment_argmax_i64", "segment_argmax_f64",
                "best_edges_k", "trim_round", "dbl_min", "mark_image", "reps_out", "dbl_sum2",
                "dbl_sum1", "tree_init2", "tree_init1", "p_gather", "p_dbl_min", "p_mark",
                "p_tree_init", "p_dbl_sum", "p_class", "p_potential", "p_improve",
                "p_tree_init16", "p_dbl_sum16", "p_class16", "p_potential16")

_BLOCK = 256
_MAX_BLOCKS = 1 << 16  # grid-stride loops cover the rest


class Launcher:
    """Runs the kernels of :data:`SOURCE` on arrays of one array module.

    Attributes
    ----------
    xp : module
        The array module the buffers live in.
    launch : callable
        ``launch(name, n, *args)``: run kernel ``name`` over ``n`` items (vertices or rows);
        ``args`` are arrays of ``xp`` and Python ints (passed as int64).
    graphs : bool
        Whether an iteration may be captured as a CUDA graph and replayed.
    """

    def __init__(self, xp: Any, launch: Callable[..., None], graphs: bool = False) -> None:
        self.xp = xp
        self.launch = launch
        self.graphs = graphs
        #: Set by the last solve: whether its iteration ran as a captured CUDA graph.
        self.captured = False


_CUPY_LAUNCHER: Launcher | None = None


def cupy_launcher() -> Launcher:
    """The launcher for CuPy: :data:`SOURCE` compiled once per process (NVRTC, cached by CuPy).

    Raises
    ------
    ImportError
        CuPy is not installed.
    """
    global _CUPY_LAUNCHER
    if _CUPY_LAUNCHER is None:
        import cupy

        module = cupy.RawModule(code=SOURCE, options=("--std=c++14",))
        # Compile and load every kernel now: never inside a stream capture.
        funcs: dict[str, Any] = {name: module.get_function(name) for name in KERNEL_NAMES}

        def launch(name: str, n: int, *args: Any) -> None:
            f = funcs[name]
            blocks = max(1, min(_MAX_BLOCKS, -(-int(n) // _BLOCK)))
            f((blocks,), (_BLOCK,),
              tuple(np.int64(a) if isinstance(a, (int, np.integer)) else a for a in args))

        _CUPY_LAUNCHER = Launcher(cupy, launch, graphs=True)
    return _CUPY_LAUNCHER


def _launcher_for(xp: Any) -> Launcher:
    return cupy_launcher()


def _rounds(n: int) -> int:
    """Doubling rounds: ``2**K >= n`` (as in ocm.primitives.cycle_reps), at least one."""
    return max(1, math.ceil(math.log2(n))) if n > 1 else 1


# ---- twins of ocm.primitives ---------------------------------------------------------------

def edge_rows(indptr: Any, xp: Any, *, launcher: Launcher | None = None) -> Any:
    """Same contract as ``ocm.primitives.edge_rows`` on NumPy."""
    L = launcher or _launcher_for(xp)
    indptr = xp.ascontiguousarray(indptr, dtype=xp.int64)
    n = indptr.shape[0] - 1
    m = int(indptr[-1]) if n >= 0 else 0
    row = xp.empty(m, dtype=xp.int64)
    if n > 0 and m > 0:
        L.launch("edge_rows_k", n, indptr, n, row)
    return row


def segment_sum(values: Any, indptr: Any, xp: Any, *, launcher: Launcher | None = None) -> Any:
    """Same contract as ``ocm.primitives.segment_sum`` on NumPy (kernel for int64 values)."""
    if values.dtype != xp.int64:
        cs = xp.concatenate([xp.zeros(1, dtype=values.dtype), xp.cumsum(values)])
        return cs[indptr[1:]] - cs[indptr[:-1]]
    L = launcher or _launcher_for(xp)
    indptr = xp.ascontiguousarray(indptr, dtype=xp.int64)
    n = indptr.shape[0] - 1
    out = xp.zeros(max(n, 0), dtype=xp.int64)
    if n > 0:
        L.launch("segment_sum_k", n, xp.ascontiguousarray(values), indptr, n, out)
    return out


def segment_argmax(key: Any, indptr: Any, row: Any, xp: Any, *,
                   launcher: Launcher | None = None) -> tuple[Any, Any]:
    """Same contract as ``ocm.primitives.segment_argmax`` on NumPy (int64 or float64 keys)."""
    L = launcher or _launcher_for(xp)
    indptr = xp.ascontiguousarray(indptr, dtype=xp.int64)
    n = indptr.shape[0] - 1
    if key.dtype.kind in "iub":
        key = xp.ascontiguousarray(key, dtype=xp.int64)
        name = "segment_argmax_i64"
    else:
        key = xp.ascontiguousarray(key, dtype=xp.float64)
        name = "segment_argmax_f64"
    best = xp.empty(n, dtype=key.dtype)
    edge = xp.empty(n, dtype=xp.int64)
    if n > 0:
        L.launch(name, n, key, indptr, n, best, edge)
    return best, edge


def segment_max(key: Any, indptr: Any, xp: Any, *, launcher: Launcher | None = None) -> Any:
    """Same contract as ``ocm.primitives.segment_max`` on NumPy."""
    return segment_argmax(key, indptr, None, xp, launcher=launcher)[0]


def best_edges(indptr: Any, indices: Any, cost: Any, time: Any | None, row: Any, rank: Any,
               potential: Any, rank_num: Any, rank_den: Any, xp: Any, *,
               launcher: Launcher | None = None) -> tuple[Any, Any, Any]:
    """Same contract as ``ocm.primitives.best_edges`` on NumPy.

    Python-int (object) potentials cannot live on the GPU: those are computed by the NumPy
    version on host copies, and the results come back as device arrays except ``best_val``.
    """
    if getattr(potential, "dtype", None) == object or getattr(rank_num, "dtype", None) == object:
        from . import primitives as P
        h = P._to_numpy
        r, v, e = P.best_edges(h(indptr), h(indices), h(cost), None if time is None else h(time),
                               h(row), h(rank), h(potential), h(rank_num), h(rank_den), np)
        return xp.asarray(r), v, xp.asarray(e)
    L = launcher or _launcher_for(xp)
    c = lambda a: xp.ascontiguousarray(a, dtype=xp.int64)  # noqa: E731
    indptr, indices, cost, rank, potential = map(c, (indptr, indices, cost, rank, potential))
    rank_num, rank_den = c(rank_num), c(rank_den)
    n = indptr.shape[0] - 1
    br = xp.empty(n, dtype=xp.int64)
    bv = xp.empty(n, dtype=xp.int64)
    be = xp.empty(n, dtype=xp.int64)
    if n > 0:
        t = c(time) if time is not None else cost
        L.launch("best_edges_k", n, indptr, indices, cost, t, int(time is not None), rank,
                 potential, rank_num, rank_den, n, br, bv, be)
    return br, bv, be


def cycle_reps(succ: Any, xp: Any, *, launcher: Launcher | None = None) -> Any:
    """Same contract as ``ocm.primitives.cycle_reps`` on NumPy (pointer doubling, K rounds)."""
    L = launcher or _launcher_for(xp)
    n = succ.shape[0]
    if n == 0:
        return xp.zeros(0, dtype=xp.int64)
    j0 = xp.array(succ, dtype=xp.int64, copy=True)
    l0 = xp.arange(n, dtype=xp.int64)
    j1, l1 = xp.empty_like(j0), xp.empty_like(l0)
    for _ in range(_rounds(n)):
        L.launch("dbl_min", n, j0, l0, n, j1, l1)
        j0, j1, l0, l1 = j1, j0, l1, l0
    on = xp.zeros(n, dtype=xp.int8)
    L.launch("mark_image", n, j0, n, on)
    rep = xp.empty(n, dtype=xp.int64)
    L.launch("reps_out", n, on, l0, n, rep)
    return rep


def tree_sums(parent: Any, weights: Sequence[Any], xp: Any, *,
              launcher: Launcher | None = None) -> tuple[Any, list[Any]]:
    """Same contract as ``ocm.primitives.tree_sums`` on NumPy (int64 weights; K rounds)."""
    weights = list(weights)
    if any(w.dtype == object for w in weights) or not 1 <= len(weights) <= 2:
        from . import primitives as P
        h = P._to_numpy
        root, sums = P.tree_sums(h(parent), [h(w) for w in weights], np)
        return xp.asarray(root), [s if s.dtype == object else xp.asarray(s) for s in sums]
    L = launcher or _launcher_for(xp)
    n = parent.shape[0]
    parent = xp.ascontiguousarray(parent, dtype=xp.int64)
    ws = [xp.ascontiguousarray(w, dtype=xp.int64) for w in weights]
    if n == 0:
        return xp.zeros(0, dtype=xp.int64), [xp.zeros(0, dtype=xp.int64) for _ in ws]
    j0 = xp.empty(n, dtype=xp.int64)
    j1 = xp.empty_like(j0)
    s0 = [xp.empty(n, dtype=xp.int64) for _ in ws]
    s1 = [xp.empty(n, dtype=xp.int64) for _ in ws]
    if len(ws) == 2:
        L.launch("tree_init2", n, parent, ws[0], ws[1], n, j0, s0[0], s0[1])
        for _ in range(_rounds(n)):
            L.launch("dbl_sum2", n, j0, s0[0], s0[1], n, j1, s1[0], s1[1])
            j0, j1, s0, s1 = j1, j0, s1, s0
    else:
        L.launch("tree_init1", n, parent, ws[0], n, j0, s0[0])
        for _ in range(_rounds(n)):
            L.launch("dbl_sum1", n, j0, s0[0], n, j1, s1[0])
            j0, j1, s0, s1 = j1, j0, s1, s0
    return j0, s0


def trim_sinks(indptr: Any, indices: Any, alive: Any, xp: Any, *,
               launcher: Launcher | None = None) -> Any:
    """Same contract as ``ocm.primitives.trim_sinks`` on NumPy (rounds until nothing dies)."""
    L = launcher or _launcher_for(xp)
    indptr = xp.ascontiguousarray(indptr, dtype=xp.int64)
    indices = xp.ascontiguousarray(indices, dtype=xp.int64)
    n = indptr.shape[0] - 1
    a = xp.array(alive, dtype=xp.int8, copy=True)
    changed = xp.zeros(1, dtype=xp.int64)
    while n > 0:
        changed[...] = 0
        L.launch("trim_round", n, indptr, indices, a, n, changed)
        if not int(changed[0]):
            break
    return a.astype(bool)


# ---- Howard's iteration --------------------------------------------------------------------

class _Buffers:
    """Device buffers of one solve, allocated once so that a captured graph can be replayed.

    Packed records are int64 arrays viewed by the kernels as structs: ``ja``/``jb`` hold
    (jump, minimum) pairs of int32, ``ta``/``tb`` (cost, jump, time) records of 16 bytes (or
    32 when ``wide``), ``xr`` (bias, root) pairs.
    """

    def __init__(self, xp: Any, n: int, K: int, wide: bool) -> None:
        e = lambda k=1: xp.empty(k * n, dtype=xp.int64)  # noqa: E731
        self.succ, self.wc, self.wt = e(), e(), e()
        self.ja, self.jb = e(), e()  # (int32, int32) pairs
        self.wide = wide  # 32-byte tree records (TS) instead of 16 (TS16)
        self.ta, self.tb = (e(4), e(4)) if wide else (e(2), e(2))
        self.xr = e(2)
        self.ra, self.rb = xp.zeros(n, dtype=xp.int64), xp.ones(n, dtype=xp.int64)
        self.on = xp.zeros(n, dtype=xp.int8)
        self.isrep = xp.zeros(n, dtype=xp.int8)
        self.flags = xp.zeros(4, dtype=xp.int64)
        self.act = xp.zeros(K + 2, dtype=xp.int64)


def _issue_iteration(L: Launcher, B: _Buffers, policy: Any, indices: Any, cost: Any,
                     time: Any, has_time: int, indptr: Any, n: int, K: int) -> None:
    """Launch one complete iteration (value determination, then improvement) on fixed buffers.

    ``2 K + 7`` launches; tree-doubling rounds after convergence return at once. Once the
    stream has run them, ``B.flags`` holds the number of switched vertices, the overflow flag
    and the zero-time flag, and ``policy`` the improved policy.
    """
    launch = L.launch
    launch("p_gather", n, policy, indices, cost, time, has_time, n, K, B.succ, B.wc, B.wt,
           B.ja, B.on, B.flags, B.act)
    j0, j1 = B.ja, B.jb
    for _ in range(K):
        launch("p_dbl_min", n, j0, n, j1)
        j0, j1 = j1, j0
    launch("p_mark", n, j0, n, B.on)
    suf = "" if B.wide else "16"
    launch("p_tree_init" + suf, n, B.on, j0, B.succ, B.wc, B.wt, n, B.ta, B.isrep, B.act)
    t0, t1 = B.ta, B.tb
    for k in range(K):
        # Round k reads ta when k is even: the parity of flags[3] (rounds run) finds the result.
        launch("p_dbl_sum" + suf, n, t0, n, t1, B.isrep, B.act, k, B.flags)
        t0, t1 = t1, t0
    launch("p_class" + suf, n, B.isrep, B.succ, B.wc, B.wt, B.ta, B.tb, n, B.ra, B.rb, B.flags)
    launch("p_potential" + suf, n, B.ta, B.tb, B.ra, B.rb, n, B.xr, B.flags)
    launch("p_improve", n, indptr, indices, cost, time, has_time, B.xr, B.ra, B.rb, n, policy,
           B.flags)


def howard_solve(indptr: Any, indices: Any, cost: Any, time: Any | None, *, xp: Any,
                 policy: Any | None = None, max_iter: int | None = None,
                 exact_objects: bool = False, row: Any | None = None,
                 launcher: Launcher | None = None) -> Any:
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
    replayed, so an iteration costs one graph launch and one 32-byte copy of ``flags``.
    """
    from dve.errors import ConvergenceError

    from . import howard as H

    L = launcher or _launcher_for(xp)
    n = indptr.shape[0] - 1
    if exact_objects or n == 0 or n >= 2 ** 31:  # 32-bit vertex ids in the device loop
        return _host_solve(indptr, indices, cost, time, policy, max_iter, exact_objects, xp, 0)
    c = lambda a: xp.ascontiguousarray(a, dtype=xp.int64)  # noqa: E731
    indptr, indices, cost = c(indptr), c(indices), c(cost)
    has_time = int(time is not None)
    tarr = c(time) if time is not None else cost
    if policy is None:
        _, policy = segment_argmax(cost, indptr, None, xp, launcher=L)
    policy = xp.array(policy, dtype=xp.int64, copy=True)
    if max_iter is None:
        max_iter = max(1000, 10 * n)
    K = _rounds(n)
    # 32-bit path time sums unless a path (at most n - 1 edges) could reach 2^31.
    tmax = int(tarr.max()) if has_time and tarr.shape[0] else 1
    B = _Buffers(xp, n, K, wide=n * max(tmax, 1) >= 2 ** 31)
    prev = xp.empty_like(policy)
    args = (indices, cost, tarr, has_time, indptr, n, K)
    step = _make_step(L, B, policy, prev, args)
    t0 = _time.perf_counter()
    it = 0
    while True:
        if it >= max_iter:
            raise ConvergenceError(it, f"Howard's iteration did not converge in {it} iterations")
        changed, overflow, zero = step()
        it += 1
        if zero or overflow:
            # A zero-time policy cycle (raised by the NumPy engine with its message), or an
            # int64 bound failed: continue from the last complete policy on the host, exactly.
            t_iter = _time.perf_counter() - t0
            return _host_solve(indptr, indices, cost, time, prev, max_iter - (it - 1), False,
                               xp, it - 1, {"iterate": t_iter})
        if not changed:
            break
    t_iter = _time.perf_counter() - t0
    t1 = _time.perf_counter()
    st = H.value_determination(indptr, indices, cost, time, policy, xp)
    st.iterations = it
    st.timings = {"iterate": t_iter, "value": _time.perf_counter() - t1}
    return st


def _make_step(L: Launcher, B: _Buffers, policy: Any, prev: Any, args: tuple):
    """A function running one iteration and returning ``(changed, overflow, zero_time)``.

    ``prev`` receives the policy the iteration starts from (the improvement overwrites
    ``policy`` in place). With CuPy the launches are captured once as a CUDA graph, falling
    back to plain launches where capture is refused.
    """
    def issue() -> None:
        prev[...] = policy
        _issue_iteration(L, B, policy, *args)

    def flags() -> tuple[int, int, int]:
        f = _to_numpy(B.flags)
        return int(f[0]), int(f[1]), int(f[2])

    if not L.graphs:
        def step_plain() -> tuple[int, int, int]:
            issue()
            return flags()
        return step_plain

    import cupy

    prev[...] = policy  # compile and load the copy kernel before any capture
    # The buffers were filled on the default stream; the graph runs on its own stream.
    cupy.cuda.Device().synchronize()
    stream = cupy.cuda.Stream(non_blocking=True)
    graph = None
    try:
        with stream:
            stream.begin_capture()
            try:
                issue()
            finally:
                graph = stream.end_capture()
    except Exception:  # noqa: BLE001 - capture unsupported here: plain launches below
        graph = None
    L.captured = graph is not None

    def step() -> tuple[int, int, int]:
        with stream:
            if graph is not None:
                graph.launch(stream)
            else:
                issue()
            f = B.flags.get(stream=stream)
        return int(f[0]), int(f[1]), int(f[2])
    return step


def _to_numpy(a: Any) -> np.ndarray:
    get = getattr(a, "get", None)
    return get() if get is not None and not isinstance(a, np.ndarray) else np.asarray(a)


def _host_solve(indptr: Any, indices: Any, cost: Any, time: Any | None, policy: Any | None,
                max_iter: int | None, exact_objects: bool, xp: Any, done: int,
                timings: dict | None = None) -> Any:
    """Continue with the NumPy engine from ``policy``; device arrays back in the state."""
    from . import howard as H

    h = _to_numpy
    t0 = _time.perf_counter()
    st = H.solve(h(indptr), h(indices), h(cost), None if time is None else h(time), xp=np,
                 policy=None if policy is None else h(policy), max_iter=max_iter,
                 exact_objects=exact_objects)
    back = lambda a: a if a.dtype == object else xp.asarray(a)  # noqa: E731
    for name in ("policy", "succ", "root", "rank", "rank_num", "rank_den", "potential", "reps",
                 "rep_cost", "rep_time"):
        setattr(st, name, back(getattr(st, name)))
    st.iterations += done
    st.timings = dict(timings or {}, host=_time.perf_counter() - t0)
    return st
