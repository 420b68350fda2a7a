"""Packing states into integer keys, and the exact visited set with stable numbering.

Packing
-------
Each slot stores ``value - lo`` in ``bits`` bits. Slots are laid out in order into 64-bit words
(a slot never straddles two words), so a state is ``W`` unsigned 64-bit words; most models with
a few processes and variables fit in one word. Keys of one model compare equal iff the states
are equal: packing is injective because every value lies within its slot's bounds (an assignment
out of range goes to the error state before it is packed).

Visited set
-----------
The set maps keys to state ids and never loses a state. It is a log-structured set of sorted
runs of 64-bit *tags* with their ids (a new run per batch, runs merged when a newer one grows to
half the size of the one before, so there are O(log n) runs). For ``W == 1`` the tag is the key
itself. For ``W > 1`` the tag is a 64-bit mix of the words and every tag match is confirmed by
comparing the full keys (kept per id); equal tags of different states (collisions) are resolved
exactly by a slow path, so hashing only speeds the search up and never merges two states.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from runtime.arrays import any_true, module_of, scatter_min
from runtime.device import to_host

from .model import CompiledModel

__all__ = ["KeyLayout", "VisitedSet"]

_U = np.uint64


@dataclass(frozen=True)
class KeyLayout:
    """Where each slot lives in the packed key: ``word[j]``, ``shift[j]``, ``bits[j]``,
    ``lo[j]``; ``n_words`` 64-bit words in all.

    Examples
    --------
    >>> import numpy as np
    >>> lay = KeyLayout.from_bounds([0, -32768, 0], [3, 32767, 255])
    >>> lay.n_words, lay.shift
    (1, (0, 2, 18))
    >>> X = np.array([[1, 3], [-1, 5], [200, 0]], dtype=np.int32)   # slots x rows
    >>> keys = lay.pack(X, np)
    >>> lay.unpack(keys, np).tolist() == X.tolist()
    True
    """

    word: tuple[int, ...]
    shift: tuple[int, ...]
    bits: tuple[int, ...]
    lo: tuple[int, ...]
    n_words: int

    @classmethod
    def from_bounds(cls, lo, hi) -> KeyLayout:
        word, shift, bits = [], [], []
        w, used = 0, 0
        for a, b in zip(lo, hi):
            n = max(1, int(b - a).bit_length())
            if used + n > 64:
                w, used = w + 1, 0
            word.append(w)
            shift.append(used)
            bits.append(n)
            used += n
        return cls(tuple(word), tuple(shift), tuple(bits), tuple(int(x) for x in lo),
                   (w + 1) if lo else 1)

    @classmethod
    def for_model(cls, cm: CompiledModel) -> KeyLayout:
        return cls.from_bounds([s.lo for s in cm.slots], [s.hi for s in cm.slots])

    def pack(self, X, xp):
        """Keys ``(rows, n_words)`` uint64 of the states in the column-major matrix ``X``."""
        n = X.shape[1]
        if n <= FEW_KEYS and X.shape[0] <= SLOT_AT_A_TIME and xp is np:
            return self.pack_few(X)
        if X.shape[0] <= SLOT_AT_A_TIME and xp is np:
            # Slot by slot into the words as rows (contiguous passes), transposed once.
            words = xp.zeros((self.n_words, n), dtype=_U)
            tmp = xp.empty(n, np.int64)
            tu = tmp.view(_U)
            for j, (w, s, lo) in enumerate(zip(self.word, self.shift, self.lo)):
                xp.subtract(X[j], np.int64(lo), out=tmp, dtype=np.int64)
                if s:
                    xp.left_shift(tu, _U(s), out=tu)
                words[w] |= tu
            return xp.ascontiguousarray(words.T)
        out = xp.zeros((n, self.n_words), dtype=_U)
        _, shift, _, lo = self.arrays(xp)
        # Slots a block at a time (one pass per block, not per slot: states of 65,536 slots);
        # the fields of a word are disjoint, so their sum is their bitwise or.
        step = max(1, (1 << 22) // max(n, 1))
        for a in range(0, X.shape[0], step):
            b = min(a + step, X.shape[0])
            # Two passes: the difference made as int64 and shifted in place as uint64 (the
            # same bits; casts and shifts as new arrays took twice the passes).
            v = xp.subtract(X[a:b], lo[a:b, None], dtype=np.int64).view(_U)
            xp.left_shift(v, shift[a:b, None], out=v)
            w, sums = self._word_sums(a, b, v, xp)
            out[:, w:w + sums.shape[0]] += sums.T
        return out

    def pack_few(self, X) -> np.ndarray:
        """:meth:`pack` of a few states on the host, in Python integers: the same words as
        the slot-by-slot passes (each slot's value less its lowest, shifted into place modulo
        2**64 and or-ed into its word), without three NumPy calls per slot and state
        (a chunk of one state of a 50-slot model paid 80 microseconds for them).

        >>> lay = KeyLayout.from_bounds([0, -1, 0], [3, 1, 2**40])
        >>> X = np.array([[1, 3], [-1, 1], [5, 2**40]])
        >>> bool((lay.pack_few(X) == lay.pack(X[:, [0, 1, 0, 1, 0]], np)[:2]).all())
        True
        """
        fields = self.__dict__.get("_fields")
        if fields is None:
            fields = tuple(zip(self.word, self.shift, self.lo))
            object.__setattr__(self, "_fields", fields)  # a cache: the layout stays immutable
        full = (1 << 64) - 1
        W = self.n_words
        out = []
        for row in X.T.tolist():
            words = [0] * W
            for v, (w, s, lo) in zip(row, fields):
                words[w] |= ((v - lo) << s) & full
            out.append(words)
        return np.array(out, dtype=_U).reshape(len(out), W)

    def block_change(self, base: int, new, old, xp):
        """The change of the words of slots ``base .. base + len(new) - 1`` when they go from
        ``old`` to ``new`` (both ``(slots, rows)``): ``(first word, changes (rows, words))``,
        uint64 (wrapping arithmetic makes ``key + change`` exact). One pass per block of slots:
        an array written through a computed index changes all its cells at once.

        >>> lay = KeyLayout.from_bounds([0] * 40, [255] * 40)   # 8 slots a word, 5 words
        >>> old = np.zeros((40, 1), np.int32); new = old.copy(); new[9] = 3; new[39] = 1
        >>> w, d = lay.block_change(0, new, old, np)
        >>> keys = lay.pack(old, np); keys[:, w:w + d.shape[1]] += d
        >>> lay.unpack(keys, np).tolist() == new.tolist()
        True
        """
        n, rows = new.shape
        word, shift, _, _ = self.arrays(xp)
        out = xp.zeros((rows, self.word[base + n - 1] - self.word[base] + 1), dtype=_U)
        if xp is np:
            # On the host, only the cells that change (one per row, typically) are added up.
            ch = np.flatnonzero((new != old).any(axis=1))
            d = ((new[ch].astype(np.int64) - old[ch].astype(np.int64)).astype(_U)
                 << shift[base + ch, None])
            np.add.at(out.T, word[base + ch] - self.word[base], d)  # modular uint64 sums
            return self.word[base], out
        step = max(1, (1 << 22) // max(rows, 1))
        for a in range(0, n, step):
            b = min(a + step, n)
            d = ((new[a:b].astype(np.int64) - old[a:b].astype(np.int64)).astype(_U)
                 << shift[base + a:base + b, None])
            w, sums = self._word_sums(base + a, base + b, d, xp)
            w -= self.word[base]
            out[:, w:w + sums.shape[0]] += sums.T
        return self.word[base], out

    def _word_sums(self, a: int, b: int, v, xp):
        """``(first word, sums (words, rows))``: the rows of ``v`` (slots ``a .. b - 1`` x
        rows) added up per word, modulo 2**64: a sum per word when they are few, else
        differences of running sums (the slots of one word are consecutive; no scatter, so
        the same code runs on a device)."""
        words = self.__dict__.get("_word_np")
        if words is None:
            words = np.asarray(self.word, dtype=np.intp)
            object.__setattr__(self, "_word_np", words)  # a cache: the layout stays immutable
        w = words[a:b]
        cut = np.flatnonzero(w[1:] != w[:-1]) + 1
        if cut.shape[0] < 16:
            # Few words: each one's slots added up on their own (reads only; the running
            # sums below write the whole block once more, three times slower).
            bounds = [0, *cut.tolist(), b - a]
            return int(w[0]), xp.stack([v[lo:hi].sum(axis=0, dtype=_U)
                                        for lo, hi in zip(bounds[:-1], bounds[1:])])
        ends = xp.asarray(np.append(cut, b - a))
        starts = xp.asarray(np.insert(cut, 0, 0))
        run = xp.zeros((b - a + 1, v.shape[1]), dtype=_U)
        xp.cumsum(v, axis=0, dtype=_U, out=run[1:])
        return int(w[0]), run[ends] - run[starts]

    def arrays(self, xp):
        """``word``, ``shift``, ``mask`` (all uint64 but ``word``) and ``lo`` (int64) as arrays
        of ``xp``, one entry per slot; built once per layout and array module.

        >>> lay = KeyLayout.from_bounds([0, -1], [3, 1])
        >>> [a.tolist() for a in lay.arrays(np)]
        [[0, 0], [0, 2], [3, 3], [0, -1]]
        """
        cached = self.__dict__.get("_arrays")
        if cached is None or cached[0] is not xp:
            arrays = (xp.asarray(self.word, dtype=np.intp), xp.asarray(self.shift, dtype=_U),
                      xp.asarray([(1 << b) - 1 for b in self.bits], dtype=_U),
                      xp.asarray(self.lo, dtype=np.int64))
            cached = (xp, arrays)
            object.__setattr__(self, "_arrays", cached)  # a cache: the layout stays immutable
        return cached[1]

    def unpack(self, keys, xp, dtype=np.int32):
        """The column-major state matrix ``(n_slots, rows)`` of keys ``(rows, n_words)``."""
        n = keys.shape[0]
        n_slots = len(self.word)
        if n <= FEW_KEYS and n_slots <= SLOT_AT_A_TIME and xp is np:
            return self.unpack_few(keys, dtype)
        X = xp.empty((n_slots, n), dtype=dtype)
        if n_slots <= SLOT_AT_A_TIME and xp is np:
            # The words as rows (one transpose), then a slot at a time in contiguous passes
            # (the block form below writes X through a transpose: ten times slower here).
            words = xp.ascontiguousarray(keys.T)
            tmp = xp.empty(n, _U)
            for j, (w, s, b, lo) in enumerate(zip(self.word, self.shift, self.bits, self.lo)):
                xp.right_shift(words[w], _U(s), out=tmp)
                tmp &= _U((1 << b) - 1)
                X[j] = tmp.view(np.int64) + lo if lo else tmp
            return X
        word, shift, mask, lo = self.arrays(xp)
        # Slots in blocks of a few million values, one NumPy pass per block: a pass per slot
        # made a state of 16,000 slots cost 16,000 passes at every level of the search.
        step = max(1, (1 << 22) // max(n, 1))
        for a in range(0, n_slots, step):
            b = min(a + step, n_slots)
            v = (keys[:, word[a:b]] >> shift[a:b]) & mask[a:b]
            X[a:b] = (v.astype(np.int64) + lo[a:b]).T
        return X

    def unpack_few(self, keys, dtype=np.int32) -> np.ndarray:
        """:meth:`unpack` of a few keys on the host, in Python integers (see
        :meth:`pack_few`): each field shifted down and masked, its lowest value added (as
        an int64), then the values cast to ``dtype``.

        >>> lay = KeyLayout.from_bounds([0, -1, 0], [3, 1, 2**40])
        >>> keys = lay.pack(np.array([[1, 3], [-1, 1], [5, 2**40]]), np)
        >>> lay.unpack_few(keys, np.int64).tolist()
        [[1, 3], [-1, 1], [5, 1099511627776]]
        """
        fields = self.__dict__.get("_unfields")
        if fields is None:
            fields = tuple((w, s, (1 << b) - 1, lo)
                           for w, s, b, lo in zip(self.word, self.shift, self.bits, self.lo))
            object.__setattr__(self, "_unfields", fields)  # a cache: the layout stays immutable
        cols = [[((row[w] >> s) & m) + lo for w, s, m, lo in fields]
                for row in keys.tolist()]
        # (A field holds at most 33 bits: its value plus its lowest fits an int64.)
        out = np.array(cols, np.int64).reshape(len(cols), len(fields))
        return out.T.astype(dtype, order="C")

    def delta(self, j: int, new, old, xp):
        """The change of word ``word[j]`` when slot ``j`` goes from ``old`` to ``new``, as
        uint64 (wrapping arithmetic makes ``key + delta`` exact)."""
        d = (xp.asarray(new).astype(np.int64) - old.astype(np.int64)).astype(_U)
        if self.shift[j]:
            d = d << _U(self.shift[j])
        return d


#: States of at most this many slots are packed and unpacked a slot at a time on the host (a
#: NumPy pass per slot, each over contiguous rows); larger ones, and all on a device (where
#: the block form was measured), a block of slots at a time.
SLOT_AT_A_TIME = 512
#: At most this many keys are added to a visited set by :meth:`VisitedSet.add_few`.
FEW_ADDED = 16
#: At most this many tags are kept aside by :meth:`VisitedSet.add_few` before they form a run.
RECENT_MAX = 4096
#: At most this many states are packed and unpacked in Python integers on the host
#: (:meth:`KeyLayout.pack_few`): a thin level's chunks of one or two states.
FEW_KEYS = 4


def _mix(keys) -> np.ndarray:
    """A 64-bit tag of multi-word keys (splitmix-style; collisions are checked, see above)."""
    xp = module_of(keys)
    h = xp.zeros(keys.shape[0], dtype=_U)
    if keys.shape[1] > 16:
        return _mix_wide(keys, h, xp)
    with _wrapping(xp):
        for w in range(keys.shape[1]):
            h ^= keys[:, w]
            h *= _U(0x9E3779B97F4A7C15)
            h ^= h >> _U(31)
            h *= _U(0xBF58476D1CE4E5B9)
            h ^= h >> _U(29)
    return h


def _wrapping(xp):
    """NumPy's silence over uint64 wrap-around (intended here); CuPy never warns."""
    import contextlib
    return np.errstate(over="ignore") if xp is np else contextlib.nullcontext()


def mix_row(words: list) -> int:
    """:func:`_mix` of one key given as a list of ints, in Python integers (modulo 2**64, as
    the uint64 arithmetic there).

    >>> k = [[3, 2**64 - 1], [0, 5]]
    >>> [mix_row(r) for r in k] == _mix(np.array(k, np.uint64)).tolist()
    True
    """
    if len(words) > 16:
        return int(_mix(np.array([words], _U))[0])
    full = (1 << 64) - 1
    h = 0
    for w in words:
        h ^= w
        h = (h * 0x9E3779B97F4A7C15) & full
        h ^= h >> 31
        h = (h * 0xBF58476D1CE4E5B9) & full
        h ^= h >> 29
    return h


def _mix_wide(keys, h, xp=np) -> np.ndarray:
    """:func:`_mix` for keys of many words: each word salted by its place and mixed on its own,
    the results xor-ed, a block of words per NumPy pass (a chain of passes per word made states
    of thousands of words slow: 2,000 words took 30 ms a level)."""
    n, n_words = keys.shape
    salt = xp.arange(1, n_words + 1, dtype=_U) * _U(0x9E3779B97F4A7C15)
    step = max(1, (1 << 22) // max(n, 1))
    with _wrapping(xp):
        for a in range(0, n_words, step):
            x = keys[:, a:a + step] ^ salt[a:a + step]
            x *= _U(0xBF58476D1CE4E5B9)
            x ^= x >> _U(31)
            x *= _U(0x94D049BB133111EB)
            x ^= x >> _U(29)
            if xp is np:
                h ^= np.bitwise_xor.reduce(x, axis=1)
            else:
                for c in range(x.shape[1]):   # xor is associative: same value as reduce
                    h ^= x[:, c]
    return h


#: The kernel of :func:`look_up_runs`: per tag (a grid-stride loop, no shared memory), a
#: binary search of each run in turn, oldest first, until one holds it.
LOOK_UP_SOURCE = r"""
typedef unsigned long long u64;
extern "C" __global__ void look_up_runs(const u64* table, long long runs, const u64* tags,
                                        long long m, long long* gid) {
    // table: the runs' tag arrays' addresses, then their id arrays' addresses, then lengths.
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < m; i += step) {
        const u64 q = tags[i];
        long long got = -1;
        for (long long r = 0; r < runs && got < 0; ++r) {
            const u64* t = (const u64*)table[r];
            const long long n = (long long)table[2 * runs + r];
            long long lo = 0, hi = n;
            while (lo < hi) {
                const long long mid = lo + ((hi - lo) >> 1);
                if (t[mid] < q) lo = mid + 1; else hi = mid;
            }
            if (lo < n && t[lo] == q) got = ((const long long*)table[runs + r])[lo];
        }
        gid[i] = got;
    }
}
"""

_LOOK_UP: dict = {}


def look_up_runs(xp, runs, tags, gid) -> bool:
    """Writes ``gid[i]``, the id of ``tags[i]`` in the sorted ``runs`` (``(tags, ids)`` pairs
    of module ``xp``, ids int64; each tag is in one run at most), or -1 where no run holds it:
    one kernel of the module's ``RawModule`` (CuPy's, or a stand-in's for the host) whatever
    the number of runs. ``gid``: int64, contiguous, as many as ``tags``. False (and nothing
    written) where the module cannot compile the kernel: the caller searches the runs
    itself.
    """
    entry = _LOOK_UP.get(id(xp))
    if entry is None or entry[0] is not xp:
        try:
            kernel = xp.RawModule(code=LOOK_UP_SOURCE).get_function("look_up_runs")
        except Exception:   # noqa: BLE001 - any compiler's failure: the array calls serve
            kernel = None
        entry = _LOOK_UP[id(xp)] = (xp, kernel)
    kernel = entry[1]
    if kernel is None:
        return False
    m = tags.shape[0]
    if m == 0:
        return True
    table = np.array([_address(h) for h, _ in runs] + [_address(i) for _, i in runs]
                     + [h.shape[0] for h, _ in runs], dtype=_U)
    threads = 256
    kernel((min(-(-m // threads), 65536),), (threads,),
           (xp.asarray(table), np.int64(len(runs)), tags, np.int64(m), gid))
    return True


def _address(a) -> int:
    """Where array ``a`` (contiguous; CuPy's or NumPy's) starts in its memory."""
    ptr = getattr(getattr(a, "data", None), "ptr", None)
    return int(a.ctypes.data if ptr is None else ptr)


def _merge(ah, ai, bh, bi):
    """Two sorted runs of tags (with their ids) as one, ``a`` before ``b`` among equal tags.

    Each element of ``b`` goes after the elements of ``a`` not greater than it; the output is
    written in place, so the merge holds the two runs, the result and the positions of ``b``
    (about 37 bytes per element at the peak, where concatenating and sorting took 56).

    >>> import numpy as np
    >>> h, i = _merge(np.array([1, 5, 9], np.uint64), np.array([0, 1, 2]),
    ...               np.array([2, 5], np.uint64), np.array([3, 4]))
    >>> h.tolist(), i.tolist()
    ([1, 2, 5, 5, 9], [0, 3, 1, 4, 2])
    """
    xp = module_of(ah)
    if xp is not np:
        return _merge_by_positions(ah, ai, bh, bi)
    pos = xp.searchsorted(ah, bh, side="right")
    pos += xp.arange(bh.shape[0])
    out_h = xp.empty(ah.shape[0] + bh.shape[0], dtype=ah.dtype)
    out_i = xp.empty(out_h.shape[0], dtype=np.result_type(ai.dtype, bi.dtype))
    from_a = xp.ones(out_h.shape[0], dtype=bool)
    from_a[pos] = False
    out_h[pos] = bh
    out_i[pos] = bi
    out_h[from_a] = ah
    out_i[from_a] = ai
    return out_h, out_i


def _merge_by_positions(ah, ai, bh, bi):
    """:func:`_merge` with every element's place computed, none found by a mask: ``a[i]``
    goes to ``i`` plus the number of ``b`` below it, ``b[j]`` to ``j`` plus the number of
    ``a`` not above it. On a device this needs no synchronisation (a boolean mask's
    assignment waits for its count), one more search than :func:`_merge`; on the host that
    search over the larger run costs more than the masks, so the host keeps :func:`_merge`'s.

    >>> import numpy as np
    >>> h, i = _merge_by_positions(np.array([1, 5, 9], np.uint64), np.array([0, 1, 2]),
    ...                            np.array([2, 5], np.uint64), np.array([3, 4]))
    >>> h.tolist(), i.tolist()
    ([1, 2, 5, 5, 9], [0, 3, 1, 4, 2])
    """
    xp = module_of(ah)
    pos_b = xp.searchsorted(ah, bh, side="right")
    pos_b += xp.arange(bh.shape[0])
    pos_a = xp.searchsorted(bh, ah, side="left")
    pos_a += xp.arange(ah.shape[0])
    out_h = xp.empty(ah.shape[0] + bh.shape[0], dtype=ah.dtype)
    out_i = xp.empty(out_h.shape[0], dtype=np.result_type(ai.dtype, bi.dtype))
    out_h[pos_a] = ah
    out_i[pos_a] = ai
    out_h[pos_b] = bh
    out_i[pos_b] = bi
    return out_h, out_i


class VisitedSet:
    """The exact set of states seen so far, numbering new states in discovery order.

    Examples
    --------
    >>> import numpy as np
    >>> vs = VisitedSet(n_words=1)
    >>> ids, rank, new = vs.add(np.array([[7], [3], [7]], dtype=np.uint64))
    >>> ids.tolist(), rank.tolist(), new.ravel().tolist()   # 7 is seen first: id 0
    ([0, 1, 0], [0, 1], [7, 3])
    >>> ids, rank, new = vs.add(np.array([[3], [9]], dtype=np.uint64))
    >>> ids.tolist(), rank.tolist(), new.ravel().tolist()
    ([1, 2], [1], [9])
    """

    def __init__(self, n_words: int, key_bits: int = 64, xp=np) -> None:
        self.n_words = n_words
        # The array module of the runs, the ids and the keys (NumPy, or CuPy on a GPU).
        self.xp = xp
        # Bits used by single-word keys: when they leave room, the batch index is packed
        # below the key and one sort of values replaces an argsort (about twice as fast).
        self.key_bits = key_bits if n_words == 1 else 64
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []
        # Tags added by add_few, not yet in a run (tag -> id): a thin level adds one or two
        # states a chunk, and a run per insertion kept a dozen runs to search each time.
        # Moved into a run when they are RECENT_MAX, or before anything reads the runs.
        self.recent: dict[int, int] = {}
        self.n = 0
        # W > 1: the full key of every id, to confirm tag matches (grown by doubling).
        self._keys = xp.zeros((1024, n_words), dtype=_U) if n_words > 1 else None

    @property
    def nbytes(self) -> int:
        b = sum(h.nbytes + i.nbytes for h, i in self.runs) + 100 * len(self.recent)
        return b + (self._keys.nbytes if self._keys is not None else 0)

    def tags(self, keys) -> np.ndarray:
        return keys[:, 0] if self.n_words == 1 else _mix(keys)

    def merge_bytes(self, new_states: int) -> int:
        """The bytes of the key table's next growth when ``new_states`` more are added (the
        grown table beside the old one), 0 when it need not grow."""
        if self._keys is not None and self.n + new_states > self._keys.shape[0]:
            return 2 * self._keys.nbytes
        return 0

    def to(self, xp) -> None:
        """Move the runs and the keys to array module ``xp`` (NumPy: back to the host)."""
        move = to_host if xp is np else xp.asarray
        self.flush()
        self.xp = xp
        self.runs = [(move(h), move(i)) for h, i in self.runs]
        if self._keys is not None:
            self._keys = move(self._keys)

    def snapshot(self):
        """The set as it is (an insertion replaces runs and never writes below ``n``), for
        :meth:`restore`."""
        self.flush()
        return list(self.runs), self.n, self._keys

    def restore(self, snap) -> None:
        """Back to :meth:`snapshot`'s set (after a batch that failed half way)."""
        self.runs, self.n, self._keys = snap
        self.recent = {}   # (empty at the snapshot)

    def add(self, keys: np.ndarray, rank: np.ndarray | None = None):
        """Look up a batch of keys ``(m, n_words)``, insert the new ones, number them.

        Parameters
        ----------
        keys : ndarray of uint64, shape (m, n_words)
        rank : ndarray of int64, shape (m,), optional
            Distinct values giving the discovery order of the batch's elements (default: the
            batch order). A key first seen in this batch gets the next free id in the order of
            the smallest rank among its occurrences.

        Returns
        -------
        ids : ndarray of int64, shape (m,)
            The id of each key.
        new_rank : ndarray of int64
            For each new id, in id order, the smallest rank of its occurrences.
        new_keys : ndarray of uint64, shape (n_new, n_words)
            The keys of the new ids, in id order.
        """
        xp = self.xp
        m = keys.shape[0]
        if rank is None:
            rank = xp.arange(m, dtype=np.int64)
        if m == 0:
            return (xp.zeros(0, np.int64), xp.zeros(0, np.int64),
                    xp.zeros((0, self.n_words), _U))
        if m <= FEW_ADDED and xp is np:
            return self.add_few(keys, rank)
        self.flush()
        h = self.tags(keys)
        idx_bits = max(1, (m - 1).bit_length())
        if self.key_bits + idx_bits <= 64:
            # In place where it can be (each temporary of a large chunk is fresh pages the
            # kernel zeroes): the index below the tag, sorted, then split again.
            comb = h << _U(idx_bits)
            comb |= xp.arange(m, dtype=_U)
            comb.sort()
            perm = (comb & _U((1 << idx_bits) - 1)).view(np.int64)   # (below 2**63)
            comb >>= _U(idx_bits)
            hs = comb
        else:
            # Ties are equal keys (confirmed below), so any order among them gives one result.
            # On a device, tags of at most 63 bits sort as int64 (the order is the same), the
            # sort the explorer's other argsorts already compiled.
            perm = xp.argsort(h.view(np.int64) if xp is not np and self.key_bits <= 63 else h)
            hs = h[perm]
        flag = xp.empty(m, dtype=bool)
        flag[0] = True
        xp.not_equal(hs[1:], hs[:-1], out=flag[1:])
        starts = xp.flatnonzero(flag)
        uh = hs[starts]
        rep = perm[starts]                    # one element of each group
        group = xp.cumsum(flag) - 1
        if xp is np:
            min_rank = np.minimum.reduceat(rank[perm], starts)
        else:
            min_rank = xp.full(starts.shape[0], np.iinfo(np.int64).max, np.int64)
            scatter_min(xp, min_rank, group, rank[perm])
        inv = xp.empty(m, dtype=np.int64)
        inv[perm] = group
        del group
        if self.n_words > 1 and not bool(xp.array_equal(keys, keys[rep[inv]])):
            return self._add_slow(keys, h, rank)
        # Each distinct tag is one distinct state here (W == 1, or confirmed above).
        gid = xp.full(uh.shape[0], -1, dtype=np.int64)
        # On a device every run is searched by one kernel (each array call of the loop below
        # costs microseconds whatever its size, several a run, and there are O(log n) runs).
        fused = self.n_words == 1 and bool(self.runs) and hasattr(xp, "RawModule") and \
            all(i.dtype == np.int64 for _, i in self.runs) and \
            look_up_runs(xp, self.runs, uh, gid)
        for rh, rid in () if fused else self.runs:
            pos = xp.searchsorted(rh, uh)
            xp.minimum(pos, rh.shape[0] - 1, out=pos)
            hit = (rh[pos] == uh) & (gid < 0)
            if self.n_words == 1:
                # A tag is the key: a hit is the state. Taken without a mask, so that the
                # device waits for no count (a chunk's look-up runs through every run).
                gid = xp.where(hit, rid[pos], gid)
                continue
            if not any_true(xp, hit):
                continue
            # Several words: a tag match is confirmed against the stored key.
            cand = rid[pos[hit]]
            ok = (self._keys[cand] == keys[rep[hit]]).all(axis=1)
            if not bool(ok.all()):
                return self._add_slow(keys, h, rank)
            gid[hit] = cand
        new = xp.flatnonzero(gid < 0)
        new_sorted = new[xp.argsort(min_rank[new])]
        gid[new_sorted] = self.n + xp.arange(new.shape[0], dtype=np.int64)
        new_keys = keys[rep[new_sorted]]
        self._insert(uh[new], gid[new], keys[rep[new]])
        return gid[inv], min_rank[new_sorted], new_keys

    def add_few(self, keys: np.ndarray, rank: np.ndarray):
        """:meth:`add` of a few keys on the host (a thin level's successors), the batch's
        grouping done in Python rather than by a sort and a dozen array passes: the same ids,
        ranks and keys. Tags are looked up among those kept aside (:attr:`recent`), then in
        the runs; new ones are kept aside (not a run of one or two tags each).

        >>> vs = VisitedSet(n_words=1)
        >>> ids, rank, new = vs.add_few(np.array([[7], [3], [7]], np.uint64), np.array([4, 1, 2]))
        >>> ids.tolist(), rank.tolist(), new.ravel().tolist(), vs.recent, vs.runs
        ([1, 0, 1], [1, 2], [3, 7], {3: 0, 7: 1}, [])
        """
        m = keys.shape[0]
        W = self.n_words
        rows = keys.tolist()
        tags = [r[0] for r in rows] if W == 1 else [mix_row(r) for r in rows]
        ranks = rank.tolist()
        first: dict[int, int] = {}   # tag -> its first element
        low: dict[int, int] = {}     # tag -> the smallest rank of its elements
        for i, (t, r) in enumerate(zip(tags, ranks)):
            if t not in first:
                first[t] = i
                low[t] = r
            elif r < low[t]:
                low[t] = r
        if W > 1 and any(rows[i] != rows[first[t]] for i, t in enumerate(tags)):
            return self._add_slow(keys, self.tags(keys), rank)   # two keys share a tag
        uniq = sorted(first)
        gid = [-1] * len(uniq)
        recent = self.recent
        for j, t in enumerate(uniq):
            c = recent.get(t, -1)
            if c >= 0:
                if W > 1 and self._keys[c].tolist() != rows[first[t]]:
                    return self._add_slow(keys, self.tags(keys), rank)
                gid[j] = c
        ut = np.array(uniq, dtype=_U)
        for rh, rid in self.runs if -1 in gid else ():
            pos = np.searchsorted(rh, ut).tolist()
            top = rh.shape[0]
            for j, p in enumerate(pos):
                if gid[j] >= 0 or p >= top or int(rh[p]) != uniq[j]:
                    continue
                c = int(rid[p])
                if W > 1 and self._keys[c].tolist() != rows[first[uniq[j]]]:
                    return self._add_slow(keys, self.tags(keys), rank)
                gid[j] = c
        new = [j for j in range(len(uniq)) if gid[j] < 0]        # in tag order
        new_sorted = sorted(new, key=lambda j: low[uniq[j]])      # ranks are distinct
        for k, j in enumerate(new_sorted):
            gid[j] = self.n + k
        at = {t: j for j, t in enumerate(uniq)}
        ids = np.array([gid[at[t]] for t in tags], np.int64)
        new_keys = keys[[first[uniq[j]] for j in new_sorted]]
        if new_sorted:
            self.store_keys(np.array([gid[j] for j in new_sorted], np.int64), new_keys)
            self.n += len(new_sorted)
            for j in new_sorted:
                recent[uniq[j]] = gid[j]
            if len(recent) >= RECENT_MAX:
                self.flush()
        return (ids, np.array([low[uniq[j]] for j in new_sorted], np.int64),
                new_keys.reshape(len(new_sorted), W))

    def flush(self) -> None:
        """The tags :meth:`add_few` keeps aside moved into a run of their own (the set is
        unchanged)."""
        if not self.recent:
            return
        tags = sorted(self.recent)
        ids = [self.recent[t] for t in tags]
        self.recent = {}
        self.add_run(self.xp.asarray(np.array(tags, dtype=_U)),
                     self.xp.asarray(np.array(ids, np.int64)))

    def store_keys(self, ids, keys) -> None:
        """Several words: the keys of new ids ``ids`` (all at or above ``n``) into the table
        of full keys, grown by doubling."""
        if self._keys is not None:
            need = int(ids.max()) + 1
            if need > self._keys.shape[0]:
                grown = self.xp.zeros((max(need, 2 * self._keys.shape[0]), self.n_words),
                                      dtype=_U)
                grown[:self.n] = self._keys[:self.n]
                self._keys = grown
            self._keys[ids] = keys

    def _insert(self, tags_sorted, ids, keys) -> None:
        k = ids.shape[0]
        if k == 0:
            return
        self.store_keys(ids, keys)
        self.n += k
        self.add_run(tags_sorted, ids)

    def add_run(self, tags_sorted, ids) -> None:
        """A run of sorted tags and their ids joins the runs, merged as below."""
        self.runs.append((tags_sorted, ids))
        # Merge while the newest run is at least half the size of the one before: O(log n)
        # runs, each key merged O(log n) times.
        while len(self.runs) >= 2 and 2 * self.runs[-1][0].shape[0] >= self.runs[-2][0].shape[0]:
            (ah, ai), (bh, bi) = self.runs[-2], self.runs[-1]
            self.runs[-2:] = [_merge(ah, ai, bh, bi)]

    def _add_slow(self, keys, h, rank):
        """Exact path for tag collisions (never expected in practice; correct regardless).
        Works on host copies; what it stores and returns is of the set's array module."""
        xp = self.xp
        self.flush()
        keys_d = keys
        keys, h, rank = (np.asarray(to_host(a)) for a in (keys, h, rank))
        runs = [(to_host(rh), to_host(rid)) for rh, rid in self.runs]
        stored = to_host(self._keys[:self.n])
        m = keys.shape[0]
        ids = np.empty(m, dtype=np.int64)
        seen: dict[bytes, int] = {}
        new_first: list[int] = []
        new_tags, new_ids = [], []
        for i in np.argsort(rank, kind="stable").tolist():   # discovery order
            kb = keys[i].tobytes()
            if kb in seen:
                ids[i] = seen[kb]
                continue
            found = -1
            for rh, rid in runs:
                p = int(np.searchsorted(rh, h[i]))
                while p < rh.shape[0] and rh[p] == h[i]:
                    c = int(rid[p])
                    if np.array_equal(stored[c], keys[i]):
                        found = c
                        break
                    p += 1
                if found >= 0:
                    break
            if found < 0:
                found = self.n + len(new_first)
                new_first.append(i)
                new_tags.append(h[i])
                new_ids.append(found)
            seen[kb] = found
            ids[i] = found
        first = np.array(new_first, dtype=np.int64)
        if new_first:
            t = np.array(new_tags, dtype=_U)
            order = np.argsort(t, kind="stable")
            self._insert(xp.asarray(t[order]), xp.asarray(np.array(new_ids, np.int64)[order]),
                         keys_d[xp.asarray(first[order])])
        return xp.asarray(ids), xp.asarray(rank[first]), keys_d[xp.asarray(first)]
