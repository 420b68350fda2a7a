"""Routing a level's successors to the processes owning their keys.

Every state is owned by one process, ``owner_of(key) = mix(key) mod P``. A level's successors
travel to their owners by one exchange whose rows are grouped by destination: :func:`routed`
gives the grouping (a stable order: successors for one process keep their order), the counts
per destination on the host, and the rows to send (key words, then the successor's rank).

On the host the grouping is one pass per process for a few processes, else a stable sort of
the owners. On a device it is two kernels (:data:`PARTITION_SOURCE`) that hash each key where
it lies, so that no owner, permutation or gathered copy of a level is ever materialised but
the order itself and the rows sent: the first counts, per block of successors, how many go to
each process; an exclusive sum of those counts (destination-major) gives every block its first
place in each destination's run; the second walks each block's successors in order, places
them by a warp's ballot and the block's running counts, and writes the order and the rows.
The result equals the host's, element for element: a stable partition is unique.
"""

from __future__ import annotations

import contextlib

import numpy as np

from runtime.arrays import count_values, module_of, stable_argsort
from runtime.device import to_host

__all__ = ["owner_of", "routed", "by_owner", "host_counts", "FEW_BINS", "FEW_OWNERS"]

_U = np.uint64
#: The mix of :func:`owner_of` (the finaliser of SplitMix64), its multipliers and shifts.
_MIX = (0xBF58476D1CE4E5B9, 31, 0x94D049BB133111EB, 29)


def owner_of(keys, size: int):
    """The process owning each packed key (rows of uint64 words, NumPy or CuPy): a 64-bit
    mix of the words modulo ``size``, so that owners are balanced whatever the keys'
    structure (int64, of the keys' module).

    >>> keys = np.arange(1000, dtype=np.uint64).reshape(-1, 1)
    >>> counts = np.bincount(owner_of(keys, 4), minlength=4)
    >>> int(counts.sum()), bool(counts.min() > 200)
    (1000, True)
    """
    xp = module_of(keys)
    h = None
    # Wrapping uint64 products are meant; NumPy warns of them, CuPy never does.
    with np.errstate(over="ignore") if xp is np else contextlib.nullcontext():
        for w in range(keys.shape[1]):
            # (The first word is mixed as it is: the chain starts from zero.)
            x = keys[:, w] if h is None else keys[:, w] ^ h
            x = x * _U(_MIX[0])
            x ^= x >> _U(_MIX[1])
            x *= _U(_MIX[2])
            x ^= x >> _U(_MIX[3])
            h = x
    if h is None:   # keys of no word: one state, owned by process 0
        return xp.zeros(keys.shape[0], np.int64)
    # A power of two takes the low bits: the same value as the modulo, a fifth of its time.
    h = h & _U(size - 1) if size & (size - 1) == 0 else h % _U(size)
    return h.astype(np.int64)


def routed(xp, keys, rank, P: int):
    """A level's successors grouped by owner: ``(order, counts, send)``.

    ``order`` is the stable permutation grouping the successors by ``owner_of(keys, P)``;
    ``counts`` how many go to each process (host, int64); ``send`` the rows to exchange, row
    ``i`` the key words of successor ``order[i]`` then its ``rank`` (int64 viewed as uint64).

    Parameters
    ----------
    xp : module
        NumPy or CuPy (the arrays' module).
    keys : array of uint64, shape (n, W)
    rank : array of int64, shape (n,)
    P : int
        The number of processes (at least 1).

    Examples
    --------
    >>> keys = np.arange(6, dtype=np.uint64).reshape(-1, 1)
    >>> order, counts, send = routed(np, keys, np.arange(6) * 10, 2)
    >>> own = owner_of(keys, 2)
    >>> bool((np.diff(own[order]) >= 0).all()), counts.tolist() == np.bincount(own).tolist()
    (True, True)
    >>> send[:, 1].view(np.int64).tolist() == (order * 10).tolist()
    True
    """
    W = keys.shape[1]
    # (CuPy itself: the kernels use warp ballots and shared memory, which a stand-in of the
    # device module in tests, compiling kernels for the host, does not have.)
    if getattr(xp, "__name__", "") == "cupy" and W >= 1 and 1 < P <= MAX_DEVICE_P:
        return _routed_device(xp, keys, rank, P)
    order, counts = by_owner(xp, owner_of(keys, P), P)
    send = xp.empty((keys.shape[0], W + 1), _U)
    send[:, :W] = keys[order]
    send[:, W] = rank[order].view(_U)
    return order, counts, send


#: Up to this many processes an exchange's counts are taken by one reduction per destination
#: on a device, not by atomic additions (see :func:`host_counts`).
FEW_BINS = 16


def host_counts(xp, values, n: int) -> np.ndarray:
    """How many of ``values`` (in ``[0, n)``, of module ``xp``) equal each of ``0 .. n - 1``,
    on the host (int64): the counts of an exchange, the only per-level data that leaves a
    device. No kernel for an empty array.

    >>> host_counts(np, np.array([1, 1, 0]), 3).tolist()
    [1, 2, 0]
    >>> host_counts(np, np.zeros(0, np.int64), 2).tolist()
    [0, 0]
    """
    if values.shape[0] == 0:
        return np.zeros(n, np.int64)
    if xp is not np and n <= FEW_BINS:
        # One reduction per bin: the atomic additions of count_values serialise on so few
        # counters (two bins of 50 M values: 2 ms a call on an H200, a quarter of a level).
        return to_host(xp.stack([xp.count_nonzero(values == b) for b in range(n)])
                       ).astype(np.int64, copy=False)
    return to_host(count_values(xp, values, n)).astype(np.int64, copy=False)


def by_owner(xp, owner, P: int):
    """The order grouping successors by their ``owner`` (stable), and how many go to each
    process (on the host, int64). On the host for a few processes one pass per process picks
    its positions (about a quarter of a radix sort and its count); otherwise a stable sort of
    small integers (a radix sort: linear, on a device every sort is one).

    >>> order, counts = by_owner(np, np.array([1, 0, 1, 0, 0]), 2)
    >>> order.tolist(), counts.tolist()
    ([1, 3, 4, 0, 2], [3, 2])
    >>> order, counts = by_owner(np, np.array([2, 0, 2, 1]), 3)
    >>> order.tolist(), counts.tolist()
    ([1, 3, 0, 2], [1, 1, 2])
    """
    if xp is np and P <= FEW_OWNERS:
        parts = [np.flatnonzero(owner == q) for q in range(P)]
        return np.concatenate(parts), np.array([p.shape[0] for p in parts], np.int64)
    return stable_argsort(xp, owner.astype(np.int16)), host_counts(xp, owner, P)


#: Up to this many processes :func:`by_owner` picks each one's positions on the host.
FEW_OWNERS = 4

#: The device partition's block: threads, and successors per thread (a block's tile is
#: their product, walked a row of THREADS at a time).
THREADS, ITEMS = 256, 16
#: Up to this many processes the device partition counts in a block's shared memory.
MAX_DEVICE_P = 64

PARTITION_SOURCE = r"""
typedef unsigned long long u64;

__device__ __forceinline__ int owner_of(const u64* keys, long long e, int W, u64 P, int pow2) {
    u64 h = 0;
    for (int w = 0; w < W; ++w) {
        u64 x = keys[e * W + w];
        if (w > 0) x ^= h;
        x *= %(M1)sULL;
        x ^= x >> %(S1)d;
        x *= %(M2)sULL;
        x ^= x >> %(S2)d;
        h = x;
    }
    return (int)(pow2 ? (h & (P - 1)) : (h %% P));
}

// Per block of THREADS * ITEMS successors, how many go to each process:
// counts[q * blocks + b].
extern "C" __global__ void route_count(const u64* keys, long long n, int W, int P, int pow2,
                                       long long* counts) {
    __shared__ unsigned int c[%(MAXP)d];
    const int lane = threadIdx.x & 31;
    for (int q = threadIdx.x; q < P; q += blockDim.x) c[q] = 0;
    __syncthreads();
    const long long start = (long long)blockIdx.x * %(TILE)d;
    for (int i = 0; i < %(ITEMS)d; ++i) {
        long long e = start + (long long)i * %(THREADS)d + threadIdx.x;
        int o = e < n ? owner_of(keys, e, W, (u64)P, pow2) : -1;
        for (int q = 0; q < P; ++q) {
            unsigned int m = __ballot_sync(0xffffffffu, o == q);
            if (lane == 0 && m) atomicAdd(&c[q], (unsigned int)__popc(m));
        }
    }
    __syncthreads();
    for (int q = threadIdx.x; q < P; q += blockDim.x)
        counts[(long long)q * gridDim.x + blockIdx.x] = c[q];
}

// Each block's successors placed in order: first[q * blocks + b] is block b's first place in
// process q's run. Writes order[place] = e and the row send[place] = (key words, rank).
extern "C" __global__ void route_place(const u64* keys, const u64* rank, long long n, int W,
                                       int P, int pow2, const long long* first,
                                       long long* order, u64* send) {
    __shared__ unsigned int warp_count[%(THREADS)d / 32][%(MAXP)d];
    __shared__ long long base[%(MAXP)d];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    for (int q = threadIdx.x; q < P; q += blockDim.x)
        base[q] = first[(long long)q * gridDim.x + blockIdx.x];
    const long long start = (long long)blockIdx.x * %(TILE)d;
    for (int i = 0; i < %(ITEMS)d; ++i) {
        long long e = start + (long long)i * %(THREADS)d + threadIdx.x;
        int o = e < n ? owner_of(keys, e, W, (u64)P, pow2) : -1;
        unsigned int before = 0;
        for (int q = 0; q < P; ++q) {
            unsigned int m = __ballot_sync(0xffffffffu, o == q);
            if (o == q) before = __popc(m & ((1u << lane) - 1u));
            if (lane == 0) warp_count[warp][q] = __popc(m);
        }
        __syncthreads();
        if (o >= 0) {
            long long place = base[o] + before;
            for (int w = 0; w < warp; ++w) place += warp_count[w][o];
            order[place] = e;
            for (int w = 0; w < W; ++w) send[place * (W + 1) + w] = keys[e * W + w];
            send[place * (W + 1) + W] = rank[e];
        }
        __syncthreads();
        for (int q = threadIdx.x; q < P; q += blockDim.x) {
            unsigned int s = 0;
            for (int w = 0; w < %(THREADS)d / 32; ++w) s += warp_count[w][q];
            base[q] += s;
        }
        __syncthreads();
    }
}
""" % {"M1": hex(_MIX[0]), "S1": _MIX[1], "M2": hex(_MIX[2]), "S2": _MIX[3],
       "MAXP": MAX_DEVICE_P, "THREADS": THREADS, "ITEMS": ITEMS, "TILE": THREADS * ITEMS}

_MODULES: dict = {}


def _partition_module(xp):
    """The compiled partition kernels for device module ``xp`` (compiled once)."""
    entry = _MODULES.get(id(xp))
    if entry is None or entry[0] is not xp:
        entry = _MODULES[id(xp)] = (xp, xp.RawModule(code=PARTITION_SOURCE))
    return entry[1]


def _routed_device(xp, keys, rank, P: int):
    n, W = keys.shape
    order = xp.empty(n, np.int64)
    send = xp.empty((n, W + 1), _U)
    if n == 0:
        return order, np.zeros(P, np.int64), send
    keys = xp.ascontiguousarray(keys)
    rank = xp.ascontiguousarray(rank)
    blocks = -(-n // (THREADS * ITEMS))
    module = _partition_module(xp)
    pow2 = np.int32(P & (P - 1) == 0)
    counts = xp.empty(P * blocks, np.int64)
    module.get_function("route_count")(
        (blocks,), (THREADS,), (keys, np.int64(n), np.int32(W), np.int32(P), pow2, counts))
    # Each (process, block) pair's first place: the exclusive sum, process-major.
    first = xp.cumsum(counts) - counts
    module.get_function("route_place")(
        (blocks,), (THREADS,), (keys, rank.view(_U), np.int64(n), np.int32(W), np.int32(P),
                                pow2, first, order, send))
    per = to_host(counts.reshape(P, blocks).sum(axis=1)).astype(np.int64, copy=False)
    return order, per, send
