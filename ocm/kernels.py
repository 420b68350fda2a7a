"""CuPy raw kernels: the GPU twins of :mod:`ocm.primitives` and Howard's iteration in CUDA.

Owned by the GPU engine (issue 5). Every twin here has **the same name, arguments and
contract** as its generic version in :mod:`ocm.primitives`; :func:`ocm.ops.ops` picks it when
``xp`` is CuPy. All arithmetic is on int64 and every tie goes to the lowest index, so the
results are bit-identical to the NumPy engine, whatever the thread order. :data:`SOURCE` also
holds the kernels of one iteration of Howard's algorithm (``p_*``), which
:mod:`ocm.howard_gpu` runs.

The kernels use grid-stride loops, read only buffers that the same launch does not write
(double buffering; the one exception, the representatives' marks, only ever gains true
representatives, so any interleaving gives the same result), use shared memory only within a
block's own loop (barriers uniform over the block) and atomics only for flags, counts and
maxima. So running every kernel sequentially on the host (one "thread", ``gridDim = blockDim
= 1``) computes exactly what the GPU computes: ``tests/ocm/test_gpu_emulated.py`` compiles
:data:`SOURCE` with a C++ compiler and checks the whole engine against the NumPy engine on
machines without a GPU.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

from . import primitives as P

#: The twins of :mod:`ocm.primitives` (same names and contracts; :mod:`ocm.ops` maps them).
TWINS = ("edge_rows", "segment_sum", "segment_max", "segment_argmax", "best_edges",
         "cycle_reps", "tree_sums", "trim_sinks")

__all__ = ["SOURCE", "KERNEL_NAMES", "LABEL_SUFFIX", "TWINS", *TWINS, "Charges", "Launcher",
           "cupy_launcher", "launcher_for", "doubling_rounds"]

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

// Block-level versions for kernels where every thread of the block calls them after its
// grid-stride loop (barriers inside): one word access per block instead of one per warp.
__device__ __forceinline__ void block_set_flag(bool pred, i64* flag) {
    if (__syncthreads_or(pred) && threadIdx.x == 0 && *(volatile i64*)flag == 0) *flag = 1;
}
// out[0] = max(out[0], max of x over the block), out[1] likewise with y (one call per kernel).
__device__ __forceinline__ void block_max2(u64 x, u64 y, u64* out) {
    __shared__ u64 sm[2][32];
    for (int o = 16; o > 0; o >>= 1) {
        u64 x2 = __shfl_xor_sync(0xffffffffu, x, o), y2 = __shfl_xor_sync(0xffffffffu, y, o);
        x = x > x2 ? x : x2; y = y > y2 ? y : y2;
    }
    if ((threadIdx.x & 31) == 0) { sm[0][threadIdx.x >> 5] = x; sm[1][threadIdx.x >> 5] = y; }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (unsigned w = 1; w < (blockDim.x + 31) / 32; ++w) {
            x = x > sm[0][w] ? x : sm[0][w]; y = y > sm[1][w] ? y : sm[1][w];
        }
        if (x > *(volatile u64*)&out[0]) atomicMax(&out[0], x);
        if (y > *(volatile u64*)&out[1]) atomicMax(&out[1], y);
    }
}
__device__ __forceinline__ u64 abs64(i64 x) { return x < 0 ? (u64)0 - (u64)x : (u64)x; }

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
// howard_solve requires n < 2^31: vertex ids are 32-bit inside records.
//   JL: (jump, window minimum) of cycle detection, 8 bytes.
//   T (TS16, 16 bytes, when every path's time sum is below 2^31; else TS, 32 bytes): a
//     (jump, cost, time) record, used twice: as the policy edge of a vertex (br: successor,
//     cost, time; time 1 for means), kept up to date by p_improve, and as the state of the
//     tree doubling, where jump >= 0 is a vertex that is not a root and jump = ~r < 0 says
//     that the root r is reached (the sums are then complete). A root r reads {~r, 0, 0}.
//   XR: (bias, root), 16 bytes: what the improvement reads per edge target (the classes of
//     the roots, few and read by many edges, come from ra, rb through the L1 cache; packing
//     them into a 32-byte record doubled the bytes per edge from L2 and was slower).
struct __align__(8) JL { int j, l; };
struct __align__(16) TS { i64 j, c, t, pad; };
struct __align__(16) TS16 { i64 c; int j; int t; };
struct __align__(16) XR { i64 x, r; };

__device__ __forceinline__ i64 min64(i64 a, i64 b) { return a < b ? a : b; }
__device__ __forceinline__ i64 max64(i64 a, i64 b) { return a > b ? a : b; }

// The charges of an edge: a row of a palette (cost ctab[r], time ttab[r]), the row read from
// the edge's label (1, 2 or 4 bytes), or, for per-edge arrays (label kind Id, no label), the
// edge id itself. Targets are int32 throughout (the device loop has n < 2^31).
struct Id { };
template <class L> struct Rows {
    static __device__ __forceinline__ i64 at(const L* lab, i64 e) { return (i64)lab[e]; }
    static __device__ __forceinline__ i64 stream(const L* lab, i64 e) {
        return (i64)__ldcs(lab + e);
    }
};
template <> struct Rows<Id> {
    static __device__ __forceinline__ i64 at(const Id*, i64 e) { return e; }
    static __device__ __forceinline__ i64 stream(const Id*, i64 e) { return e; }
};

// Policy edge of every vertex as a record (run once per solve; p_improve keeps it current).
template <class T, class L>
__device__ __forceinline__ void gather_t(const i64* policy, const int* indices, const L* lab,
                                         const i64* ctab, const i64* ttab, i64 has_time, i64 n,
                                         T* br) {
    GRID_LOOP(v, n) {
        i64 e = policy[v], r = Rows<L>::at(lab, e);
        T x; x.j = indices[e]; x.c = ctab[r]; x.t = has_time ? ttab[r] : 1;
        br[v] = x;
    }
}

// Cycle detection by pointer doubling with window minima, stopped as soon as it is exact.
// State k: J_k = succ^(2^k), L_k(v) = min of the 2^k vertices v, ..., succ^(2^k - 1)(v).
// cand(v) := L_k(v) == v and L_k(J_k(v)) == v: v then occurs again within 2^(k+1) steps and
// is the least vertex of the window of 2^(k+1) steps, which covers its cycle: so v is the
// smallest vertex of its cycle (a representative, as in ocm.primitives.cycle_reps), and a
// representative of a cycle of length <= 2^k always satisfies it. cand only ever gains true
// representatives, so the order in which threads see each other's marks does not matter.
// A vertex v is settled when the minimum of the window at J_k(v) (a vertex of v's path) is
// marked: its path reaches a marked representative. When every vertex is settled, every
// cycle has its representative marked (a cycle vertex's path is its cycle), so cand is
// exactly the set of representatives. That holds once 2^k >= n, one round later at worst
// (marks of the previous round); earlier in practice (2^k >= longest tail and cycle).
// Round 0 reads the policy records, counts the iteration (iter[0], for the undo log of the
// improvement) and clears the flags; flags[0]: vertices that improved; [1]: an int64
// bound failed (or a check that cannot fail did); [2]: a zero-time cycle; [3]: tree rounds;
// [4], [5]: the largest |a| and b of the classes a/b; [6]: the largest |bias| (as u64).
template <class T>
__device__ __forceinline__ void cyc0_t(const T* br, i64 n, JL* out, signed char* cand,
                                       i64* iter, i64* flags, i64* act, i64 nact) {
    GRID_LOOP(v, n) {
        i64 s = br[v].j, s2 = br[s].j;
        JL o; o.j = (int)s2; o.l = (int)min64(v, s);
        out[v] = o;
        cand[v] = s == v;  // a self-loop: L_0(v) = v = L_0(succ(v))
        if (v == 0) {
            iter[0] += 1;
            for (int i = 0; i < 8; ++i) flags[i] = 0;
            for (i64 i = 0; i < nact; ++i) act[i] = 0;
        }
    }
}

// Round k >= 1 (reads state k, writes state k + 1). Runs if k == 1 or round k - 1 left an
// unsettled vertex (act[k]); sets act[k + 1] likewise.
extern "C" __global__ void p_cyc(const JL* in, i64 n, JL* out, signed char* cand, i64* act,
                                 i64 k) {
    if (k > 1 && act[k] == 0) return;  // the same for the whole grid
    bool unsettled = false;
    GRID_LOOP(v, n) {
        JL p = in[v], q = in[p.j], o;
        o.j = q.j; o.l = p.l < q.l ? p.l : q.l;
        out[v] = o;
        if (p.l == v && q.l == v) cand[v] = 1;
        unsettled |= cand[q.l] == 0;
    }
    block_set_flag(unsettled, &act[k + 1]);
}

// Tree records of the forest cut open at the representatives. kfail: the flag the last
// cycle round would set (never, see above); if set, the iteration goes to the host.
template <class T>
__device__ __forceinline__ void tree_init_t(const T* br, const signed char* cand, i64 n, T* ta,
                                            const i64* cact, i64 kfail, i64* flags) {
    GRID_LOOP(v, n) {
        T b = br[v], x;
        if (cand[v]) { x.j = ~v; x.c = 0; x.t = 0; }
        else { x.j = cand[b.j] ? ~(i64)b.j : (i64)b.j; x.c = b.c; x.t = b.t; }
        ta[v] = x;
        if (v == 0 && cact[kfail]) flags[1] = 1;
    }
}

// Tree-doubling round k: a record not yet at its root takes its jump's record (invariant:
// its sums are those of the path from v to its jump, 2^(k+1) steps or up to the root).
// Runs if k == 0 or round k - 1 left a vertex short of its root (act[k]); sets act[k + 1]
// likewise and flags[3] = k + 1, so flags[3] counts the rounds run and its parity says
// which buffer holds the result.
template <class T>
__device__ __forceinline__ void tsum_t(const T* in, i64 n, T* out, i64* act, i64 k,
                                       i64* flags) {
    if (k > 0 && act[k] == 0) return;  // the same for the whole grid
    bool short_ = false;
    GRID_LOOP(v, n) {
        T p = in[v];
        if (p.j >= 0) { T q = in[p.j]; p.j = q.j; p.c += q.c; p.t += q.t; }
        out[v] = p;
        short_ |= p.j >= 0;
        if (v == 0) flags[3] = k + 1;
    }
    block_set_flag(short_, &act[k + 1]);
}

// Per representative: its cycle's sums and reduced value ra/rb (as vd_class).
template <class T>
__device__ __forceinline__ void class_t(const signed char* cand, const T* br, const T* ta,
                                        const T* tb, i64 n, i64* ra, i64* rb, i64* flags) {
    const T* R = (flags[3] & 1) ? tb : ta;
    u64 ma = 0, mb = 0;
    GRID_LOOP(r, n) {
        if (!cand[r]) continue;
        T b = br[r], s = R[b.j];
        if (~(i64)s.j != r) flags[1] = 1;  // succ(r) must lead back to r (cannot fail)
        i64 cc = b.c + s.c, tt = (i64)b.t + (i64)s.t;
        if (tt <= 0) { flags[2] = 1; ra[r] = 0; rb[r] = 1; continue; }
        i64 g = gcd64(cc, tt), a = cc / g, d = tt / g;
        ra[r] = a; rb[r] = d;
        ma = ma > abs64(a) ? ma : abs64(a); mb = mb > (u64)d ? mb : (u64)d;
    }
    block_max2(ma, mb, (u64*)&flags[4]);
}

// Per vertex: root and scaled bias X = b * cs - a * ts, (a, b) the value of its root's cycle.
template <class T>
__device__ __forceinline__ void potential_t(const T* ta, const T* tb, const i64* ra,
                                            const i64* rb, i64 n, XR* xr, i64* flags) {
    const T* R = (flags[3] & 1) ? tb : ta;
    u64 mx = 0;
    GRID_LOOP(v, n) {
        T t = R[v];
        XR o; o.r = ~(i64)t.j; o.x = 0;
        if (t.j >= 0) { flags[1] = 1; o.r = 0; xr[v] = o; continue; }  // cannot happen
        i64 a = ra[o.r], b = rb[o.r], ts = t.t;
        if (!(small_prod(b, t.c) && small_prod(a, ts))) { flags[1] = 1; xr[v] = o; continue; }
        o.x = b * t.c - a * ts;
        if (!small_val(o.x)) flags[1] = 1;
        xr[v] = o;
        mx = mx > abs64(o.x) ? mx : abs64(o.x);
    }
    block_max2(mx, 0, (u64*)&flags[6]);
}

// Improvement: per row, edges in increasing id, the best class (exact fraction order; same
// root means same cycle, same value), within it the largest b*cost - a*time + X(w), lowest
// id on ties. A vertex switches only on strict improvement over its own class and bias;
// switches are counted in flags[0] and update the policy record br; a switched vertex keeps
// its former edge and the iteration's number in the undo log (slot iter % 2 of old, stamp),
// from which the host rebuilds the policy an iteration started from (its fall-back).
// A block takes blockDim consecutive rows; their edges (a contiguous range) pass through
// shared memory in chunks of up to 4 * blockDim, loaded coalesced (targets and palette
// rows streamed past the cache, the rows' costs and times read from the small tables) with the bias, root and class (a, b) of each target; then each
// thread scans its own row's part of the chunk, in edge order, exactly as one thread per row
// would. The int64 bounds are checked per edge only where the iteration's global bounds
// (largest |a|, b, |bias| of this iteration, cmax = max |cost|, tmax = max time) do not
// already guarantee them: per-edge checks would then all pass, so the result is the same.
// Launched with 256 threads per block, at least 4 blocks per SM (64 registers at most).
#define IMP_CHUNK 1024
template <class T, class L>
__device__ __forceinline__ void improve_t(const i64* __restrict__ indptr,
                                          const int* __restrict__ indices,
                                          const L* __restrict__ lab,
                                          const i64* __restrict__ ctab,
                                          const i64* __restrict__ ttab, i64 has_time,
                                          const XR* __restrict__ xr, const i64* ra,
                                          const i64* rb, i64 n, i64 cmax, i64 tmax,
                                          const i64* iter, i64* policy, i64* old, i64* stamp,
                                          T* br, i64* flags) {
    __shared__ i64 sx[IMP_CHUNK];  // bias of the edge's target
    __shared__ i64 sa[IMP_CHUNK];  // class a/b of the target's root
    __shared__ i64 sb[IMP_CHUNK];
    __shared__ i64 sc[IMP_CHUNK];  // cost of the edge
    __shared__ i64 st[IMP_CHUNK];  // time of the edge (ratios)
    __shared__ int sr[IMP_CHUNK];  // root of the edge's target (n < 2^31)
    const i64 B = blockDim.x, CH = 4 * B < IMP_CHUNK ? 4 * B : IMP_CHUNK;
    const u64* bound = (const u64*)flags + 4;
    const i64 it = iter[0];
    const bool check = !(small_prod((i64)bound[1], cmax) && small_prod((i64)bound[0], tmax)
                         && small_val((i64)bound[2]));
    // The loop bound is the same for all threads of a block (barriers inside).
    for (i64 r0 = (i64)blockIdx.x * B; r0 < n; r0 += B * gridDim.x) {
        i64 u = r0 + threadIdx.x;
        bool row = u < n;
        i64 s = row ? indptr[u] : 0, t = row ? indptr[u + 1] : 0;
        i64 E0 = indptr[r0], E1 = indptr[min64(r0 + B, n)];
        i64 br_ = -1, ba = 0, bb = 1, bv = 0, be = -1;
        bool ok = true;
        for (i64 c0 = E0; c0 < E1; c0 += CH) {
            i64 cn = min64(CH, E1 - c0);
            __syncthreads();  // the previous chunk is consumed
            i64 w[4], ce[4];  // target and palette row of the edge
#pragma unroll
            for (int h = 0; h < 4; ++h) {
                i64 i = threadIdx.x + h * B;
                w[h] = i < cn ? (i64)__ldcs(indices + c0 + i) : 0;
                ce[h] = i < cn ? Rows<L>::stream(lab, c0 + i) : 0;
            }
            // Targets' records two at a time (registers: 64 per thread at most).
#pragma unroll
            for (int h0 = 0; h0 < 4; h0 += 2) {
                XR q[2];
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    i64 i = threadIdx.x + (h0 + h) * B;
                    if (i < cn) q[h] = xr[w[h0 + h]];
                }
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    i64 i = threadIdx.x + (h0 + h) * B;
                    if (i < cn) {
                        sx[i] = q[h].x; sr[i] = (int)q[h].r;
                        sa[i] = ra[q[h].r]; sb[i] = rb[q[h].r];
                        sc[i] = ctab[ce[h0 + h]];
                        st[i] = has_time ? ttab[ce[h0 + h]] : 1;
                    }
                }
            }
            __syncthreads();
            i64 a1 = min64(t, c0 + cn);
            for (i64 e = max64(s, c0); e < a1 && ok; ++e) {
                i64 i = e - c0, qr = sr[i], qx = sx[i], a = sa[i], b = sb[i];
                int c = be < 0 ? 1 : qr == br_ ? 0 : cmp_frac(a, b, ba, bb);
                if (c < 0) continue;
                i64 tm = st[i], c_e = sc[i];
                if (check && !(small_prod(b, c_e) && small_prod(a, tm) && small_val(qx))) {
                    ok = false; break;
                }
                i64 val = b * c_e - a * tm + qx;
                if (c > 0 || val > bv) { br_ = qr; ba = a; bb = b; bv = val; be = e; }
            }
        }
        bool imp = false;
        if (row) {
            if (ok) {
                XR o = xr[u];
                int c = o.r == br_ ? 0 : cmp_frac(ba, bb, ra[o.r], rb[o.r]);
                imp = c > 0 || (c == 0 && bv > o.x);
                if (imp) {
                    // The undo log, slot it % 2 (the host runs at most one iteration ahead).
                    i64 sl = (it & 1) * n;
                    old[sl + u] = policy[u]; stamp[sl + u] = it;
                    policy[u] = be;
                    i64 rr = Rows<L>::at(lab, be);
                    T x; x.j = indices[be]; x.c = ctab[rr]; x.t = has_time ? ttab[rr] : 1;
                    br[u] = x;
                }
            } else {
                flags[1] = 1;  // rare: the iteration is abandoned
            }
        }
        int cnt = __syncthreads_count(imp);
        if (threadIdx.x == 0 && cnt) atomicAdd((unsigned long long*)&flags[0], (u64)cnt);
    }
}

// ---- the engine's passes over the edges of a compact graph (any label kind) ---------------

// Per row, the lowest edge of largest cost: Howard's first policy (as segment_argmax of the
// costs). Non-empty rows.
template <class L>
__device__ __forceinline__ void charge_argmax_t(const i64* indptr, const L* lab, const i64* ctab,
                                                i64 n, i64* edge) {
    GRID_LOOP(u, n) {
        i64 s = indptr[u], t = indptr[u + 1];
        i64 b = ctab[Rows<L>::at(lab, s)], be = s;
        for (i64 e = s + 1; e < t; ++e) {
            i64 k = ctab[Rows<L>::at(lab, e)];
            if (k > b) { b = k; be = e; }
        }
        edge[u] = be;
    }
}

// One round of sink trimming in place (as trim_round), on int32 targets; with zero_only only
// the edges of time 0 count (the zero-time subgraph: a cycle survives iff one of time 0 exists).
template <class L>
__device__ __forceinline__ void trim_t(const i64* indptr, const int* indices, const L* lab,
                                       const i64* ttab, i64 zero_only, signed char* alive, i64 n,
                                       i64* changed) {
    GRID_LOOP(u, n) {
        if (!alive[u]) continue;
        bool live = false;
        for (i64 e = indptr[u]; e < indptr[u + 1] && !live; ++e)
            live = alive[indices[e]] != 0 && (!zero_only || ttab[Rows<L>::at(lab, e)] == 0);
        if (!live) alive[u] = 0;
        warp_set_flag(!live, changed);
    }
}

// The certificate's conditions on every edge of the rows (ocm.certify): count[0] += the edges
// with rank(w) > rank(u), or with equal ranks and b*cost - a*time + X(w) > X(u). int64 only
// where ocm.certify's bound proved that no intermediate overflows.
template <class L>
__device__ __forceinline__ void certify_t(const i64* indptr, const int* indices, const L* lab,
                                          const i64* ctab, const i64* ttab, i64 has_time,
                                          const i64* rank, const i64* pot, const i64* rnum,
                                          const i64* rden, i64 n, i64* count) {
    GRID_LOOP(u, n) {
        i64 ru = rank[u], pu = pot[u], a = rnum[ru], b = rden[ru], bad = 0;
        for (i64 e = indptr[u]; e < indptr[u + 1]; ++e) {
            i64 w = indices[e], rw = rank[w];
            if (rw > ru) { ++bad; continue; }
            if (rw < ru) continue;
            i64 r = Rows<L>::at(lab, e), tm = has_time ? ttab[r] : 1;
            if (b * ctab[r] - a * tm + pot[w] > pu) ++bad;
        }
        if (bad) atomicAdd((unsigned long long*)count, (unsigned long long)bad);
    }
}

#define ITER_KERNELS(SUF, T) \
extern "C" __global__ void p_cyc0##SUF(const T* br, i64 n, JL* out, signed char* cand, \
        i64* iter, i64* flags, i64* act, i64 nact) { \
    cyc0_t<T>(br, n, out, cand, iter, flags, act, nact); } \
extern "C" __global__ void p_tree_init##SUF(const T* br, const signed char* cand, i64 n, \
        T* ta, const i64* cact, i64 kfail, i64* flags) { \
    tree_init_t<T>(br, cand, n, ta, cact, kfail, flags); } \
extern "C" __global__ void p_tsum##SUF(const T* in, i64 n, T* out, i64* act, i64 k, \
        i64* flags) { tsum_t<T>(in, n, out, act, k, flags); } \
extern "C" __global__ void p_class##SUF(const signed char* cand, const T* br, const T* ta, \
        const T* tb, i64 n, i64* ra, i64* rb, i64* flags) { \
    class_t<T>(cand, br, ta, tb, n, ra, rb, flags); } \
extern "C" __global__ void p_potential##SUF(const T* ta, const T* tb, const i64* ra, \
        const i64* rb, i64 n, XR* xr, i64* flags) { \
    potential_t<T>(ta, tb, ra, rb, n, xr, flags); }

#define EDGE_KERNELS(SUF, T, LS, L) \
extern "C" __global__ void p_gather##SUF##LS(const i64* policy, const int* indices, \
        const L* lab, const i64* ctab, const i64* ttab, i64 has_time, i64 n, T* br) { \
    gather_t<T, L>(policy, indices, lab, ctab, ttab, has_time, n, br); } \
extern "C" __global__ void __launch_bounds__(256, 4) p_improve##SUF##LS(const i64* indptr, \
        const int* indices, const L* lab, const i64* ctab, const i64* ttab, i64 has_time, \
        const XR* xr, const i64* ra, const i64* rb, i64 n, i64 cmax, i64 tmax, \
        const i64* iter, i64* policy, i64* old, i64* stamp, T* br, i64* flags) { \
    improve_t<T, L>(indptr, indices, lab, ctab, ttab, has_time, xr, ra, rb, n, cmax, tmax, \
                    iter, policy, old, stamp, br, flags); }

#define LABEL_KERNELS(LS, L) \
EDGE_KERNELS(, TS, LS, L) \
EDGE_KERNELS(16, TS16, LS, L) \
extern "C" __global__ void charge_argmax##LS(const i64* indptr, const L* lab, const i64* ctab, \
        i64 n, i64* edge) { charge_argmax_t<L>(indptr, lab, ctab, n, edge); } \
extern "C" __global__ void trim##LS(const i64* indptr, const int* indices, const L* lab, \
        const i64* ttab, i64 zero_only, signed char* alive, i64 n, i64* changed) { \
    trim_t<L>(indptr, indices, lab, ttab, zero_only, alive, n, changed); } \
extern "C" __global__ void certify##LS(const i64* indptr, const int* indices, const L* lab, \
        const i64* ctab, const i64* ttab, i64 has_time, const i64* rank, const i64* pot, \
        const i64* rnum, const i64* rden, i64 n, i64* count) { \
    certify_t<L>(indptr, indices, lab, ctab, ttab, has_time, rank, pot, rnum, rden, n, count); }

// Labels proper (not Id): the rows in use, and the restriction to the live vertices (each
// live row keeps its edges to live vertices, in order, renumbered by newid).
#define ROW_KERNELS(LS, L) \
extern "C" __global__ void mark_rows##LS(const L* lab, i64 m, signed char* used) { \
    GRID_LOOP(e, m) { i64 r = lab[e]; if (!used[r]) used[r] = 1; } } \
extern "C" __global__ void compact##LS(const i64* indptr, const int* indices, const L* lab, \
        const int* newid, i64 n, const i64* sub_indptr, int* sub_indices, L* sub_lab) { \
    GRID_LOOP(u, n) { \
        int nu = newid[u]; if (nu < 0) continue; \
        i64 p = sub_indptr[nu]; \
        for (i64 e = indptr[u]; e < indptr[u + 1]; ++e) { \
            int nw = newid[indices[e]]; \
            if (nw >= 0) { sub_indices[p] = nw; sub_lab[p] = lab[e]; ++p; } \
        } } }

ITER_KERNELS(, TS)
ITER_KERNELS(16, TS16)
LABEL_KERNELS(_u8, unsigned char)
LABEL_KERNELS(_u16, unsigned short)
LABEL_KERNELS(_i32, int)
LABEL_KERNELS(_id, Id)
ROW_KERNELS(_u8, unsigned char)
ROW_KERNELS(_u16, unsigned short)
ROW_KERNELS(_i32, int)

// The restriction's row lengths: per live vertex u (newid[u] >= 0), its edges to live vertices.
extern "C" __global__ void live_degree(const i64* indptr, const int* indices, const int* newid,
                                       i64 n, i64* deg) {
    GRID_LOOP(u, n) {
        int nu = newid[u]; if (nu < 0) continue;
        i64 d = 0;
        for (i64 e = indptr[u]; e < indptr[u + 1]; ++e) d += newid[indices[e]] >= 0;
        deg[nu] = d;
    }
}

// The restriction of per-edge arrays (label kind Id): the original id of every kept edge.
extern "C" __global__ void compact_ids(const i64* indptr, const int* indices, const int* newid,
                                       i64 n, const i64* sub_indptr, int* sub_indices,
                                       i64* ids) {
    GRID_LOOP(u, n) {
        int nu = newid[u]; if (nu < 0) continue;
        i64 p = sub_indptr[nu];
        for (i64 e = indptr[u]; e < indptr[u + 1]; ++e) {
            int nw = newid[indices[e]];
            if (nw >= 0) { sub_indices[p] = nw; ids[p] = e; ++p; }
        }
    }
}

// The original id of kept edges given as (original source v, position p among the row's
// edges to live vertices): the inverse of compact, for the few edges of a critical cycle.
extern "C" __global__ void edges_back(const i64* indptr, const int* indices,
                                      const signed char* alive, const i64* verts,
                                      const i64* pos, i64 k, i64* out) {
    GRID_LOOP(i, k) {
        i64 v = verts[i], p = pos[i];
        out[i] = -1;
        for (i64 e = indptr[v]; e < indptr[v + 1]; ++e) {
            if (!alive[indices[e]]) continue;
            if (p == 0) { out[i] = e; break; }
            --p;
        }
    }
}

// One thread walks the policy cycle through start[0]: out[0] its length, or 0 when longer
// than cap (the caller retries with a larger cap); out[1 + k], out[1 + cap + k] its k-th
// vertex and policy edge.
extern "C" __global__ void policy_walk(const i64* succ, const i64* pol, const i64* start,
                                       i64 cap, i64* out) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const i64 r = start[0];
    i64 v = r, k = 0;
    do {
        if (k == cap) { out[0] = 0; return; }
        out[1 + k] = v;
        out[1 + cap + k] = pol[v];
        v = succ[v];
        ++k;
    } while (v != r);
    out[0] = k;
}
"""

#: Kernels defined in :data:`SOURCE` (what a launcher must provide).
#: The label kinds of the engine's edge kernels: the suffix of each label dtype (``_id``:
#: per-edge arrays, no label).
LABEL_SUFFIX = {"uint8": "_u8", "uint16": "_u16", "int32": "_i32"}

KERNEL_NAMES = ("edge_rows_k", "segment_sum_k", "segment_argmax_i64", "segment_argmax_f64",
                "best_edges_k", "trim_round", "dbl_min", "mark_image", "reps_out", "dbl_sum2",
                "dbl_sum1", "tree_init2", "tree_init1", "p_cyc", "live_degree", "compact_ids",
                "edges_back",
                "policy_walk") + tuple(
    k + suf for suf in ("", "16") for k in ("p_cyc0", "p_tree_init", "p_tsum", "p_class",
                                            "p_potential")) + tuple(
    k + suf + ls for ls in ("_u8", "_u16", "_i32", "_id") for suf in ("", "16")
    for k in ("p_gather", "p_improve")) + tuple(
    k + ls for ls in ("_u8", "_u16", "_i32", "_id") for k in ("charge_argmax", "trim",
                                                             "certify")) + tuple(
    k + ls for ls in ("_u8", "_u16", "_i32") for k in ("mark_rows", "compact"))

class Charges:
    """The costs and times of a graph's edges as the engine's edge kernels read them.

    Either a palette (``lab``: the row of every edge, of 1, 2 or 4 bytes; ``ctab``, ``ttab``:
    int64 tables, one entry per row) or per-edge int64 arrays (``ctab``, ``ttab`` of one
    entry per edge, ``lab`` a placeholder the kernels do not read; suffix ``_id``).
    ``suffix`` names the kernels' variant; ``ttab`` is ``ctab`` (unread) without times.

    Examples
    --------
    >>> ch = Charges.of(P.Palette(np.array([1, 0], np.uint16), np.array([4, 5])), None, np)
    >>> ch.suffix, ch.has_time, ch.ctab.tolist(), ch.edge_bytes
    ('_u16', 0, [4, 5], 2)
    >>> Charges.of(np.array([3, 1]), np.array([1, 1]), np).suffix
    '_id'
    """

    __slots__ = ("suffix", "lab", "ctab", "ttab", "has_time")

    def __init__(self, suffix: str, lab: Any, ctab: Any, ttab: Any, has_time: int) -> None:
        self.suffix, self.lab, self.ctab, self.ttab = suffix, lab, ctab, ttab
        self.has_time = has_time

    @classmethod
    def of(cls, cost: Any, time: Any | None, xp: Any) -> "Charges":
        """The charges of ``cost`` and ``time`` (arrays or :class:`ocm.primitives.Palette`):
        a palette when both are palettes over one label array (as a compact state graph
        gives them), its label kept as it is when it is 1, 2 or 4 bytes wide (else made
        int32); per-edge int64 arrays otherwise."""
        c64 = lambda a: xp.ascontiguousarray(a, dtype=xp.int64)  # noqa: E731
        has_time = int(time is not None)
        if isinstance(cost, P.Palette) and (time is None or (
                isinstance(time, P.Palette) and time.label is cost.label)):
            lab = xp.ascontiguousarray(cost.label)
            suffix = LABEL_SUFFIX.get(lab.dtype.name)
            if suffix is None:   # other widths: rows as int32 (ocm.optimal_cycle checked them)
                lab, suffix = lab.astype(xp.int32), "_i32"
            ctab = c64(cost.values)
            return cls(suffix, lab, ctab, c64(time.values) if has_time else ctab, has_time)
        ctab = c64(P.dense(cost))
        ttab = c64(P.dense(time)) if has_time else ctab
        return cls("_id", ctab, ctab, ttab, has_time)

    @property
    def edge_bytes(self) -> int:
        """Bytes per edge these charges take (the label, or the per-edge arrays)."""
        if self.suffix != "_id":
            return int(self.lab.dtype.itemsize)
        return 8 * (1 + self.has_time)


_BLOCK = 256
#: Grids are capped at one full wave (the blocks all SMs hold at once, at most 2048 threads
#: per SM): grid-stride loops cover the rest, and a round that returns at once (converged)
#: costs little more than its launch.
_BLOCKS_PER_SM = 8


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

        module = cupy.RawModule(code=SOURCE, options=("--std=c++17",))
        # Compile and load every kernel now: never inside a stream capture.
        funcs: dict[str, Any] = {name: module.get_function(name) for name in KERNEL_NAMES}
        props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
        sms = int(props["multiProcessorCount"])
        cap = {name: sms * _resident(f, props) for name, f in funcs.items()}

        def launch(name: str, n: int, *args: Any) -> None:
            f = funcs[name]
            blocks = max(1, min(cap[name], -(-int(n) // _BLOCK)))
            f((blocks,), (_BLOCK,),
              tuple(np.int64(a) if isinstance(a, (int, np.integer)) else a for a in args))

        _CUPY_LAUNCHER = Launcher(cupy, launch, graphs=True)
    return _CUPY_LAUNCHER


def _resident(f: Any, props: dict) -> int:
    """Blocks of ``_BLOCK`` threads of kernel ``f`` that one SM holds at once (at most
    ``_BLOCKS_PER_SM``), from its registers and shared memory."""
    try:
        regs = -(-int(f.num_regs) // 8) * 8  # allocated per thread in units of 8
        smem = int(f.shared_size_bytes)
        by_regs = int(props["regsPerMultiprocessor"]) // max(1, regs * _BLOCK)
        by_smem = (int(props["sharedMemPerMultiprocessor"]) // (smem + 1024) if smem
                   else _BLOCKS_PER_SM)  # 1 KB per block is reserved
    except (AttributeError, KeyError, TypeError, ValueError):
        return _BLOCKS_PER_SM
    return max(1, min(_BLOCKS_PER_SM, by_regs, by_smem))


def launcher_for(xp: Any) -> Launcher:
    """The launcher of ``xp``'s device (CuPy's; tests pass an emulating one explicitly)."""
    return cupy_launcher()


def doubling_rounds(n: int) -> int:
    """Doubling rounds: ``2**K >= n`` (as in ocm.primitives.cycle_reps), at least one."""
    return max(1, math.ceil(math.log2(n))) if n > 1 else 1


# ---- twins of ocm.primitives ---------------------------------------------------------------

def edge_rows(indptr: Any, xp: Any, *, launcher: Launcher | None = None) -> Any:
    """Same contract as ``ocm.primitives.edge_rows`` on NumPy."""
    L = launcher or launcher_for(xp)
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
    L = launcher or launcher_for(xp)
    indptr = xp.ascontiguousarray(indptr, dtype=xp.int64)
    n = indptr.shape[0] - 1
    out = xp.zeros(max(n, 0), dtype=xp.int64)
    if n > 0:
        L.launch("segment_sum_k", n, xp.ascontiguousarray(values), indptr, n, out)
    return out


def segment_argmax(key: Any, indptr: Any, row: Any, xp: Any, *,
                   launcher: Launcher | None = None) -> tuple[Any, Any]:
    """Same contract as ``ocm.primitives.segment_argmax`` on NumPy (int64 or float64 keys)."""
    L = launcher or launcher_for(xp)
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
        h = P.to_host
        r, v, e = P.best_edges(h(indptr), h(indices), h(cost), None if time is None else h(time),
                               h(row), h(rank), h(potential), h(rank_num), h(rank_den), np)
        return xp.asarray(r), v, xp.asarray(e)
    L = launcher or launcher_for(xp)
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
    L = launcher or launcher_for(xp)
    n = succ.shape[0]
    if n == 0:
        return xp.zeros(0, dtype=xp.int64)
    j0 = xp.array(succ, dtype=xp.int64, copy=True)
    l0 = xp.arange(n, dtype=xp.int64)
    j1, l1 = xp.empty_like(j0), xp.empty_like(l0)
    for _ in range(doubling_rounds(n)):
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
        h = P.to_host
        root, sums = P.tree_sums(h(parent), [h(w) for w in weights], np)
        return xp.asarray(root), [s if s.dtype == object else xp.asarray(s) for s in sums]
    L = launcher or launcher_for(xp)
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
        for _ in range(doubling_rounds(n)):
            L.launch("dbl_sum2", n, j0, s0[0], s0[1], n, j1, s1[0], s1[1])
            j0, j1, s0, s1 = j1, j0, s1, s0
    else:
        L.launch("tree_init1", n, parent, ws[0], n, j0, s0[0])
        for _ in range(doubling_rounds(n)):
            L.launch("dbl_sum1", n, j0, s0[0], n, j1, s1[0])
            j0, j1, s0, s1 = j1, j0, s1, s0
    return j0, s0


def trim_sinks(indptr: Any, indices: Any, alive: Any, xp: Any, *,
               launcher: Launcher | None = None) -> Any:
    """Same contract as ``ocm.primitives.trim_sinks`` on NumPy (rounds until nothing dies)."""
    L = launcher or launcher_for(xp)
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
