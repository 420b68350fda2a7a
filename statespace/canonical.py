"""The canonical form of states under a model's symmetry: one representative per orbit.

:func:`statespace.symmetry.detect_symmetry` finds the groups of interchangeable processes;
this module maps states (columns of a slot-by-state matrix) to their representatives: within
each group the members' slot values are sorted, as one packed code per member where the values
fit in 64 bits (a sorting network for small groups, an argsort otherwise), and the permutation
that did it can be returned for the lifting of runs (:mod:`statespace.renaming`).
:func:`interchangeable` tells which members of a canonical state are equal (the renamings that
fix it).
"""

from __future__ import annotations

import functools

import numpy as np

from .symmetry import Symmetry, SymmetryGroup

__all__ = ["canonicalize", "code_dtype", "interchangeable", "member_order", "sort_codes_into",
           "sorting_network", "NETWORK_MAX"]


def member_order(group: SymmetryGroup, X: np.ndarray):
    """For states ``X`` (slots x rows): the members' sort codes ``(n, rows)`` as a list of
    columns for :func:`numpy.lexsort` (most significant last) and the reference mask
    ``(n, rows)`` (member referred to by a key-holding slot)."""
    M = np.asarray(group.member_slots)                       # (n, w)
    keys = np.asarray(group.keys, dtype=np.int64)
    cols = [X[M[:, j]] for j in range(M.shape[1] - 1, -1, -1)]   # least significant first
    ks = list(group.key_slots)
    if not ks:
        return cols, np.zeros((M.shape[0], X.shape[1]), bool)
    held = X[ks][:, None, :] == keys[None, :, None]           # (slots, n, rows)
    cols.extend(held[::-1])
    return cols, held.any(axis=0)


def _packed_sort_code(cols) -> np.ndarray | None:
    """The sort columns of :func:`member_order` (least significant first, each ``(n, rows)``)
    as one int64 per entry whose order is their lexicographic order: each column less its
    minimum, in as many bits as its range needs. ``None`` when they need more than 62 bits
    (or there are none)."""
    if not cols or cols[0].size == 0:
        return None
    parts, bits = [], 0
    for c in cols:
        lo = 0 if c.dtype == bool else int(c.min())
        width = 1 if c.dtype == bool else max(1, (int(c.max()) - lo).bit_length())
        parts.append((c, lo, bits))
        bits += width
        if bits > 62:
            return None
    code = np.zeros(cols[0].shape, np.int64)
    tmp = np.empty(cols[0].shape, np.int64)
    for c, lo, shift in parts:
        np.subtract(c, lo, out=tmp, dtype=np.int64)
        np.left_shift(tmp, shift, out=tmp)
        code |= tmp
    return code


def _slot_rows(slots) -> slice | np.ndarray:
    """Slots ``slots`` as a slice when they are evenly spaced (a view of the state matrix, no
    gather), else as an index array."""
    a = np.asarray(slots, np.int64)
    if a.shape[0] > 1:
        step = int(a[1] - a[0])
        if step > 0 and (np.diff(a) == step).all():
            return slice(int(a[0]), int(a[-1]) + 1, step)
    return a


@functools.lru_cache(maxsize=1024)
def _member_rows(member_slots: tuple) -> tuple:
    """Per column of a group's members' slots, those slots as :func:`_slot_rows` gives them
    (made once per group: a chunk of one state paid three NumPy calls a column for them)."""
    return tuple(_slot_rows([row[j] for row in member_slots])
                 for j in range(len(member_slots[0])))


@functools.lru_cache(maxsize=None)
def sorting_network(n: int) -> tuple[tuple[int, int], ...]:
    """Batcher's odd-even merge sorting network for ``n`` inputs: compare-exchanges ``(a, b)``,
    ``a < b``, after which ``x[a] <= x[b]``; made for the next power of two, less the
    comparators that reach past ``n`` (as if the missing inputs were larger than all).

    >>> sorting_network(3)
    ((0, 1), (0, 2), (1, 2))
    """
    N = 1
    while N < n:
        N *= 2
    out = []
    p = 1
    while p < N:
        k = p
        while k >= 1:
            for j in range(k % p, N - k, 2 * k):
                for i in range(min(k, N - j - k)):
                    a, b = i + j, i + j + k
                    if a // (2 * p) == b // (2 * p) and b < n:
                        out.append((a, b))
            k //= 2
        p *= 2
    return tuple(out)


#: Groups of at most this many members are sorted by :func:`sorting_network` (two array
#: passes per comparator over the rows), larger ones by NumPy's sort of each column; the
#: network was the faster one up to 26 members, measured on 300,000 rows of int16 codes.
NETWORK_MAX = 32


def _sort_columns(code: np.ndarray, tmp: np.ndarray) -> None:
    """Sort each column of ``code`` (members x rows) in place; ``tmp`` a row of scratch."""
    n = code.shape[0]
    if n > NETWORK_MAX:
        code.sort(axis=0)
        return
    for a, b in sorting_network(n):
        np.minimum(code[a], code[b], out=tmp)
        np.maximum(code[a], code[b], out=code[b])
        code[a] = tmp


def _sort_values(group: SymmetryGroup, Y: np.ndarray) -> bool:
    """Canonicalise group ``group`` of states ``Y`` (slots x rows) in place by sorting values.

    Each member's sort code (:func:`member_order`'s columns packed into one integer: which
    key-holding slots refer to it in the high bits, ``key_slots[0]`` highest, then its local
    vector, its first slot most significant) is sorted within its row, and the local vectors
    are decoded from the sorted codes, not gathered through an argsort's order. Members with
    equal codes are equal, so their order is immaterial. A slot whose values are the same in
    every member of every row takes no bits and is not rewritten; the code is an int16 or an
    int32 when it fits one (fewer bytes to sort and to decode).

    The referred members sort last, by their pattern of referring slots (two members never
    share a nonzero pattern: a slot refers to one member at most), so a key-holding slot's new
    key is that of position ``n - 1 - (referred members with a higher pattern)``, computed from
    the key-holding slots alone. Returns False, ``Y`` untouched, when the code needs more than
    62 bits.
    """
    n, w = len(group.member_slots), len(group.member_slots[0])
    k = Y.shape[1]
    if k == 0:
        return True
    where = _member_rows(tuple(map(tuple, group.member_slots)))
    fields, bits = [], 0
    for j in range(w - 1, -1, -1):     # the last slot least significant
        c = Y[where[j]]
        lo, hi = int(c.min()), int(c.max())
        if hi > lo:
            width = (hi - lo).bit_length()
            fields.append((j, lo, bits, width))
            bits += width
    K = len(group.key_slots)
    if bits + K > 62:
        return False
    dt = code_dtype(bits + K)
    code = np.zeros((n, k), dt)
    tmp = np.empty((n, k), dt)
    for j, lo, shift, _ in fields:
        # In the code's type, wrapping: the difference itself fits it (lo and the values
        # may not).
        np.subtract(Y[where[j]], np.int64(lo), out=tmp, dtype=dt, casting="unsafe")
        if shift:
            np.left_shift(tmp, shift, out=tmp)
        code |= tmp
    sort_codes_into(group, Y, code, fields, bits)
    return True


def code_dtype(bits: int):
    """The narrowest of int16, int32 and int64 that holds non-negative codes of ``bits`` bits
    (at most 62)."""
    return np.int16 if bits <= 15 else np.int32 if bits <= 31 else np.int64


def sort_codes_into(group: SymmetryGroup, Y: np.ndarray, code: np.ndarray, fields,
                    bits: int, constant=()) -> None:
    """Canonicalise group ``group`` of states ``Y`` in place from its members' codes ``code``
    (members x rows, the member's local vector in the low ``bits`` bits as ``fields``:
    ``(column, lo, shift, width)``; :func:`_sort_values`): the bits of the key-holding slots
    that refer to each member are added above them (from ``Y``'s key-holding slots), each row's
    codes sorted, the local vectors written back (``constant``: ``(column, value)`` of columns
    equal in every member, written too) and the keys held renamed. ``code`` is overwritten."""
    n, k = code.shape
    dt = code.dtype.type
    where = _member_rows(tuple(map(tuple, group.member_slots)))
    if k <= FEW_STATES:
        _sort_codes_few(group, Y, code.T.tolist(), where, fields, bits, constant)
        return
    ks = group.key_slots
    K = len(ks)
    keys = np.asarray(group.keys, np.int64)
    # Which member (index in the group) each key-holding slot refers to, or -1: (K, rows).
    ref = _referred(keys, Y[list(ks)].astype(np.int64)) if K else None
    cols = np.arange(k)
    for b in range(K):
        i = ref[b]
        hit = i >= 0
        code[i[hit], cols[hit]] |= dt(1 << (bits + K - 1 - b))
    tmp = np.empty((n, k), dt)
    _sort_columns(code, tmp[0])
    # (Arithmetic on the narrow codes: a table of every code's value, gathered, was three
    # times slower.)
    for j, lo, shift, width in fields:
        np.right_shift(code, shift, out=tmp)
        tmp &= (1 << width) - 1
        # Added in the states' type (lo may not fit the code's; the sum fits the states').
        Y[where[j]] = np.add(tmp, np.int64(lo), dtype=Y.dtype, casting="unsafe") if lo else tmp
    for j, v in constant:
        Y[where[j]] = v
    if K:
        new = renamed_keys(keys, ref, Y[list(ks)])
        for b, j in enumerate(ks):
            Y[j] = new[b]


#: At most this many states are canonicalised by :func:`_sort_codes_few`.
FEW_STATES = 4


def _sort_codes_few(group: SymmetryGroup, Y: np.ndarray, rows: list, where, fields,
                    bits: int, constant) -> None:
    """:func:`sort_codes_into` of a few states in Python: ``rows`` the members' codes of each
    state (lists); the same bits of the referring slots, the codes sorted, the same fields
    and keys written back (:func:`renamed_keys`, state by state)."""
    ks = list(group.key_slots)
    K = len(ks)
    keys = list(group.keys)
    n = len(keys)
    member = {key: i for i, key in enumerate(keys)}
    refs = []
    if K:
        for r, held in enumerate(zip(*Y[ks].tolist())):
            ref = [member.get(v, -1) for v in held]
            refs.append(ref)
            codes = rows[r]
            for b, i in enumerate(ref):
                if i >= 0:
                    codes[i] |= 1 << (bits + K - 1 - b)
    for codes in rows:
        codes.sort()
    for j, lo, shift, width in fields:
        mask = (1 << width) - 1
        Y[where[j]] = np.array([[((c[i] >> shift) & mask) + lo for c in rows]
                                for i in range(n)], np.int64)
    for j, v in constant:
        Y[where[j]] = v
    if K:
        old = Y[ks].tolist()
        new = [[0] * len(rows) for _ in range(K)]
        for r, ref in enumerate(refs):
            pattern = [0] * K
            for b, i in enumerate(ref):
                if i >= 0:
                    pattern[b] = sum(1 << (K - 1 - c) for c in range(K) if ref[c] == i)
            firsts = [c for c in range(K) if ref[c] >= 0 and ref[c] not in ref[:c]]
            for b, i in enumerate(ref):
                if i < 0:
                    new[b][r] = old[b][r]
                else:
                    above = sum(1 for c in firsts if pattern[c] > pattern[b])
                    new[b][r] = keys[n - 1 - above]
        for b, j in enumerate(ks):
            Y[j] = np.array(new[b], np.int64)


def _referred(keys: np.ndarray, V: np.ndarray) -> np.ndarray:
    """For key-holding slots' values ``V`` (slots x rows, int64) and a group's sorted
    ``keys``: the member (index in ``keys``) each value refers to, or -1."""
    i = np.minimum(np.searchsorted(keys, V), keys.shape[0] - 1)
    return np.where(keys[i] == V, i, -1)


#: Entries of the (slots x slots x rows) comparisons :func:`renamed_keys` makes at once.
_RENAME_BLOCK = 1 << 22


def renamed_keys(keys: np.ndarray, ref: np.ndarray, old: np.ndarray) -> np.ndarray:
    """The new values (int64, slots x rows) of a group's key-holding slots once its members
    are sorted, referred members last (:func:`sort_codes_into`).

    ``ref`` (slots x rows): the member each slot refers to, or -1 (a slot referring to
    none keeps its value from ``old``). Each referring slot's *pattern* is the set of slots
    referring to the same member (slot ``c`` the bit ``K - 1 - c``); referred members sort by
    pattern, so the member slot ``b`` refers to lands at position ``n - 1 - above``, with
    ``above`` the referred members (each counted once, at its first referring slot) of a
    higher pattern. All slots and rows at once: a few array passes per block of rows, not
    ``K**3`` passes (8 admission slots made that 600 microseconds a chunk).

    >>> keys = np.array([3, 5, 7])
    >>> ref = np.array([[0], [2], [-1]])        # slot 0 -> member 0, slot 1 -> member 2
    >>> renamed_keys(keys, ref, np.array([[3], [7], [9]])).ravel().tolist()
    [7, 5, 9]
    """
    K, k = ref.shape
    n = keys.shape[0]
    out = np.empty((K, k), np.int64)
    weight = (np.int64(1) << np.arange(K - 1, -1, -1, dtype=np.int64))[None, :, None]
    earlier = np.tri(K, K, -1, dtype=bool).T[:, :, None]    # [c0, c]: c0 < c
    step = max(1, _RENAME_BLOCK // max(K * K, 1))
    for a in range(0, k, step):
        R = ref[:, a:a + step]
        valid = R >= 0                                        # (K, rows)
        same = R[:, None, :] == R[None, :, :]                 # [b, c, rows]
        pat = ((same & valid[:, None, :]) * weight).sum(axis=1)
        first = valid & ~(same & earlier).any(axis=0)
        above = ((pat[None, :, :] > pat[:, None, :]) & first[None, :, :]).sum(axis=1)
        out[:, a:a + step] = np.where(valid, keys[n - 1 - above], old[:, a:a + step])
    return out


def canonicalize(sym: Symmetry, X: np.ndarray, return_perm: bool = False, *,
                 copy: bool = True):
    """The canonical representatives of states ``X`` (slots x rows, any integer dtype).

    Returns a new matrix (``X`` itself, rewritten, with ``copy=False``); with ``return_perm``
    also, per group, ``order`` of shape ``(n, rows)``: ``order[p, r]`` is the member (index in
    the group) whose local vector lands at position ``p`` of row ``r``.

    Without ``return_perm`` the members are sorted by value (:func:`_sort_values`) where their
    sort codes fit 62 bits; else by an argsort of the codes (or lexsort of their columns) and a
    gather. Both give the same states.
    """
    if not return_perm:
        Y = np.array(X, copy=True) if copy else X
        for g in sym.groups:
            if not _sort_values(g, Y):
                Y[...] = _canonical_by_order(sym, Y, [g], False)
        return Y
    return _canonical_by_order(sym, X, sym.groups, True)


def _canonical_by_order(sym: Symmetry, X: np.ndarray, groups, return_perm: bool):
    """:func:`canonicalize` of groups ``groups`` by the members' order (a new matrix)."""
    Y = np.array(X, copy=True)
    perms = []
    for g in groups:
        n = g.size
        M = np.asarray(g.member_slots)
        cols, _ = member_order(g, X)
        packed = _packed_sort_code(cols)
        if packed is not None:
            # One int64 per member: a stable argsort gives lexsort's order, faster.
            order = np.argsort(packed, axis=0, kind="stable")
        else:
            order = np.lexsort(cols, axis=0) if cols else np.tile(np.arange(n)[:, None],
                                                                  (1, X.shape[1]))
        rows = np.arange(X.shape[1])
        for j in range(M.shape[1]):
            Y[M[:, j]] = X[M[:, j]][order, rows[None, :]]
        if g.key_slots:
            # Old member order[p] now sits at p: key k_old becomes k_p.
            newpos = np.empty_like(order)
            newpos[order, rows[None, :]] = np.arange(n)[:, None]
            keys = np.asarray(g.keys, dtype=np.int64)
            lut = {k: i for i, k in enumerate(g.keys)}
            for j in g.key_slots:
                v = X[j].astype(np.int64)
                idx = np.full(v.shape, -1, np.int64)
                for k, i in lut.items():
                    idx[v == k] = i
                hit = idx >= 0
                if hit.any():
                    Y[j][hit] = keys[newpos[idx[hit], rows[hit]]]
        perms.append(order)
    return (Y, perms) if return_perm else Y


def interchangeable(sym: Symmetry, X: np.ndarray) -> dict[int, np.ndarray]:
    """For canonical states ``X``: process index -> mask of rows where that member equals the
    member before it in its group and neither is referred to (so the transposition of the two
    fixes the state, and the member's steps repeat its neighbour's up to that renaming)."""
    if X.shape[1] <= FEW_STATES:
        return _interchangeable_few(sym, X.T.tolist())
    out = {}
    for g in sym.groups:
        M = np.asarray(g.member_slots)
        L = X[M]                                                # (n, w, rows)
        same = np.all(L[1:] == L[:-1], axis=1)                  # (n-1, rows)
        _, ref = member_order(g, X)
        free = ~ref
        red = same & free[1:] & free[:-1]
        for i in range(1, g.size):
            out[g.processes[i]] = red[i - 1]
    return out


def _interchangeable_few(sym: Symmetry, rows: list) -> dict[int, np.ndarray]:
    """:func:`interchangeable` of a few states given as lists (one per state), in Python."""
    out = {}
    for g in sym.groups:
        masks = [[False] * len(rows) for _ in range(g.size)]
        for r, x in enumerate(rows):
            held = {x[j] for j in g.key_slots}
            free = [key not in held for key in g.keys]
            vec = [[x[s] for s in slots] for slots in g.member_slots]
            for i in range(1, g.size):
                masks[i][r] = vec[i] == vec[i - 1] and free[i] and free[i - 1]
        for i in range(1, g.size):
            out[g.processes[i]] = np.array(masks[i], bool)
    return out
