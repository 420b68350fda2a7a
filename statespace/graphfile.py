"""State graphs on disk: ``.npz`` files written and read back, and the checks a graph read
from a file (or built from arrays) must pass before anything trusts it.

A file holds the graph's arrays (:mod:`statespace.graph`: CSR rows, targets, per-edge costs and
time, actions, the state vectors and the breadth-first tree) and the names needed to decode a
state. Writing is atomic (a temporary file renamed over the target); reading refuses, by name,
whatever a damaged or hostile file may hold: a member of the wrong shape or type, values out of
range, compression methods :mod:`zipfile` does not read, pickled objects.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dve.errors import ConfigurationError
from runtime.errors import StateSpaceError

from .graph import StateGraph, charge_dtype, decode_state

__all__ = ["check_int_range", "graph_from_arrays", "load_graph", "read_npz", "save_graph",
           "validate_graph"]


def _meta(graph: StateGraph) -> dict[str, Any]:
    if graph.model is not None:
        cm = graph.model
        return {"slot_names": tuple(s.name for s in cm.slots),
                "slot_kinds": tuple(s.kind for s in cm.slots),
                "process_states": {p.name: p.states for p in cm.processes},
                "action_names": tuple(graph.describe_action(a) for a in range(
                    cm.n_actions if graph.action_codes is None else len(graph.action_codes)))}
    return {"slot_names": graph.slot_names, "slot_kinds": graph.slot_kinds,
            "process_states": graph.process_states, "action_names": graph.action_names}


def save_graph(graph: StateGraph, path) -> None:
    """Write ``graph`` to ``path`` as ``.npz`` (arrays, plus the names needed for decoding).

    The file gets exactly the name given (NumPy's habit of appending ``.npz`` does not apply).
    It is written to a temporary file in the same directory and renamed over ``path`` once
    complete, so an interruption (a signal, a full disk) leaves either the old file or the new
    one, never a truncated file.

    Raises
    ------
    dve.errors.ConfigurationError
        When the file cannot be written (the message names it).

    Examples
    --------
    >>> import tempfile, os
    >>> from dve import load_model
    >>> from statespace import build_state_graph
    >>> g = build_state_graph(load_model("process P { state a, b; init a; "
    ...                                  "trans a -> b {}; } system async;"))
    >>> d = tempfile.mkdtemp(); save_graph(g, os.path.join(d, "g.npz"))
    >>> h = load_graph(os.path.join(d, "g.npz"))
    >>> h.n_states, h.n_edges, decode_state(h, 1)
    (2, 1, {'P': 'b'})
    """
    import json
    import os
    import tempfile
    meta = _meta(graph)
    info = {"error_state": graph.error_state, "depth": graph.depth,
            "complete": graph.complete, "n_expanded": graph.n_expanded,
            "error_successors": graph.error_successors,
            "initial": graph.initial, "name": graph.name, "seconds": graph.seconds,
            "resources": list(graph.costs), "slot_names": list(meta["slot_names"]),
            "slot_kinds": list(meta["slot_kinds"]),
            "process_states": {k: list(v) for k, v in meta["process_states"].items()},
            "action_names": list(meta["action_names"]), "format": 1}
    arrays = {"indptr": graph.indptr, "indices": graph.indices, "time": graph.time,
              "action": graph.action, "states": graph.states, "parent": graph.parent,
              "parent_action": graph.parent_action, "deadlocks": graph.deadlocks}
    for k, (res, arr) in enumerate(graph.costs.items()):
        arrays[f"cost_{k}"] = arr
    if graph.action_codes is not None:
        arrays["action_codes"] = _codes_to_limbs(graph.action_codes)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix="." + os.path.basename(path) + ".",
                                   suffix=".tmp")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)   # the permissions of a file opened for writing
        with os.fdopen(fd, "wb") as f:
            np.savez(f, meta=np.array(json.dumps(info)), **arrays)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise ConfigurationError(f"cannot write '{path}': {exc.strerror or exc}") from None
    finally:
        if tmp is not None:   # interrupted or failed: no half-written file is left behind
            try:
                os.unlink(tmp)
            except OSError:
                pass


_INT64_MAX = 2**63 - 1

#: The zip compression methods an ``.npz`` member may use: stored and deflated (what NumPy
#: writes), bzip2 and LZMA (what :mod:`zipfile` also reads). Anything else is refused by name.
_METHODS = {0: "stored", 8: "deflated", 12: "bzip2", 14: "lzma"}


def _read_failures() -> tuple[type[BaseException], ...]:
    """Every exception reading an archive member can raise on a damaged or hostile file: the
    zip layer (bad headers, CRC mismatch, encryption, unsupported methods), the decompressors,
    and NumPy's ``.npy`` header parser. Each is the file's fault, never the program's."""
    import pickle
    import struct
    import zipfile
    import zlib
    errors: list[type[BaseException]] = [
        OSError, EOFError, ValueError, RuntimeError, NotImplementedError, OverflowError,
        KeyError, SyntaxError, zipfile.BadZipFile, zipfile.LargeZipFile, zlib.error,
        struct.error, pickle.UnpicklingError]
    try:
        import lzma
        errors.append(lzma.LZMAError)
    except ImportError:   # a Python built without lzma: zipfile then raises RuntimeError
        pass
    return tuple(errors)


def _check_member(name: str, info) -> None:
    """Refuse a member the reader cannot open as plain data, before opening it."""
    if info.flag_bits & 0x1:
        raise ConfigurationError(f"{name}: member '{info.filename}' is encrypted; a graph file "
                                 "is a plain .npz (as numpy.savez writes it)")
    if info.compress_type not in _METHODS:
        raise ConfigurationError(f"{name}: member '{info.filename}' uses zip compression method "
                                 f"{info.compress_type}, which is not read (only "
                                 + ", ".join(_METHODS.values()) + ")")


def read_npz(path) -> dict[str, np.ndarray]:
    """All arrays of an ``.npz`` file, refusing malformed files before allocating anything.

    Each member's header (shape, dtype) is read first and checked against the member's stored
    size, so a truncated file, or a header claiming 10**12 elements, is an error and not a
    huge allocation. Object arrays (pickles), encrypted members and unknown compression methods
    are refused; each member is read to its end, so its CRC is checked.

    Raises
    ------
    dve.errors.ConfigurationError
        Naming the file and what is wrong: missing, empty, not a zip of ``.npy`` members,
        encrypted, compressed by an unknown method, truncated, failing its CRC, or an array
        larger than its stored data. Whatever the zip, decompression or ``.npy`` layers raise
        on a damaged file becomes this error.

    Examples
    --------
    >>> import io, os, tempfile, zipfile
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "g.npz")
    >>> np.savez(p, cost=np.arange(3))
    >>> read_npz(p)["cost"].tolist()
    [0, 1, 2]
    >>> data = bytearray(open(p, "rb").read())
    >>> data[6] |= 1            # the local header's "encrypted" flag bit
    >>> c = data.rindex(b"PK\\x01\\x02"); data[c + 8] |= 1   # and the central directory's
    >>> _ = open(p, "wb").write(data)
    >>> read_npz(p)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: ...g.npz: member 'cost.npy' is encrypted; ...
    """
    import os
    import zipfile
    name = os.fspath(path)
    try:
        if os.path.getsize(name) == 0:
            raise ConfigurationError(f"{name}: empty file, not a saved graph")
        out: dict[str, np.ndarray] = {}
        with zipfile.ZipFile(name) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    continue
                key = info.filename[:-4]
                _check_member(name, info)
                with zf.open(info) as f:
                    fmt = np.lib.format
                    version = fmt.read_magic(f)
                    read_header = (fmt.read_array_header_1_0 if version == (1, 0)
                                   else fmt.read_array_header_2_0)
                    shape, fortran, dtype = read_header(f)
                    header_len = f.tell()
                if dtype.hasobject:
                    raise ConfigurationError(f"{name}: array '{key}' holds Python objects; "
                                             "only plain numeric arrays are read")
                count = 1
                for d in shape:
                    count *= int(d)
                if count * dtype.itemsize != info.file_size - header_len:
                    raise ConfigurationError(
                        f"{name}: array '{key}' claims shape {tuple(shape)} ({dtype}), "
                        f"{count * dtype.itemsize} bytes, but its member holds "
                        f"{info.file_size - header_len}: the file is truncated or corrupt")
                with zf.open(info) as f:
                    out[key] = np.lib.format.read_array(f, allow_pickle=False)
                    f.read(1)   # at the member's end: zipfile checks its CRC here
        return out
    except ConfigurationError:
        raise
    except FileNotFoundError:
        raise ConfigurationError(f"no such file: '{name}'") from None
    except IsADirectoryError:
        raise ConfigurationError(f"'{name}' is a directory, not a graph file") from None
    except MemoryError:
        raise ConfigurationError(f"{name}: an array is too large to load") from None
    except _read_failures() as exc:
        raise ConfigurationError(f"{name}: not a readable .npz file ({_why(exc)})") from None


def _why(exc: BaseException) -> str:
    """A short reason for a read failure: the message, or the exception's name if it has none.
    (zipfile names members by their ``ZipInfo`` repr, which is long; it is cut.)"""
    text = str(exc).strip() or type(exc).__name__
    if len(text) > 200:
        text = text[:197] + "..."
    return text


def check_int_range(name: str, what: str, a: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """``a`` as int64 if it is an integer array within ``[lo, hi]``, else a ConfigurationError
    naming the file, the array, the first offending index and its value (never a wrapped
    value: a uint64 above 2**63 - 1 is refused, not cast).

    >>> check_int_range("g.npz", "cost", np.array([1, 2**63 + 5], np.uint64), -2**63 + 1,
    ...                 2**63 - 1)
    Traceback (most recent call last):
    ...
    dve.errors.ConfigurationError: g.npz: cost[1] = 9223372036854775813 is outside -9223372036854775807..9223372036854775807
    """
    if a.dtype.kind not in "iub":
        raise ConfigurationError(f"{name}: '{what}' must hold integers, found dtype {a.dtype}")
    if a.ndim != 1:
        raise ConfigurationError(f"{name}: '{what}' must be one-dimensional, got shape "
                                 f"{a.shape}")
    if a.shape[0]:
        lo_a, hi_a = int(a.min()), int(a.max())   # Python ints: exact for uint64 too
        if lo_a < lo or hi_a > hi:
            bad = int(np.flatnonzero((a < lo) if lo_a < lo else (a > np.uint64(hi)
                                     if a.dtype.kind == "u" else a > hi))[0])
            raise ConfigurationError(f"{name}: {what}[{bad}] = {int(a[bad])} is outside "
                                     f"{lo}..{hi}")
    return a.astype(np.int64, copy=False)


def load_graph(path) -> StateGraph:
    """Read a graph written by :func:`save_graph` (decoding works; ``model`` is ``None``).

    The arrays are checked before use: shapes agree, ``indptr`` runs from 0 to the number of
    edges without decreasing, targets are states, times are non-negative and costs lie within
    ``±(2**63 - 1)`` (so a negated cost never overflows); values that do not fit are refused,
    never cast.

    Raises
    ------
    dve.errors.ConfigurationError
        When the file is not a saved state graph, or is inconsistent (the message names the
        file and the array).
    """
    import os
    name = os.fspath(path)
    return graph_from_arrays(name, read_npz(name))


def graph_from_arrays(name: str, arrays: dict[str, np.ndarray]) -> StateGraph:
    """The :class:`StateGraph` held by the arrays of a saved graph file (from :func:`read_npz`),
    checked as :func:`load_graph` describes; ``name`` names the file in errors. ``arrays`` is
    consumed (its entries are taken or converted in place).

    Raises
    ------
    dve.errors.ConfigurationError
        When the arrays are not a saved state graph or are inconsistent.
    """
    import json
    try:
        info = json.loads(str(arrays.pop("meta")))
        costs = {res: arrays.pop(f"cost_{k}") for k, res in enumerate(info["resources"])}
        fields = dict(error_state=int(info["error_state"]), depth=int(info["depth"]),
                      complete=bool(info["complete"]), n_expanded=int(info["n_expanded"]),
                      error_successors=bool(info.get("error_successors", False)),
                      initial=int(info["initial"]), name=str(info["name"]),
                      seconds=float(info["seconds"]),
                      slot_names=tuple(info["slot_names"]), slot_kinds=tuple(info["slot_kinds"]),
                      process_states={k: tuple(v) for k, v in info["process_states"].items()},
                      action_names=tuple(info["action_names"]))
        need = ("indptr", "indices", "time", "action", "states", "parent", "parent_action",
                "deadlocks")
        missing = [k for k in need if k not in arrays]
        if missing:
            raise KeyError(missing[0])
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        raise ConfigurationError(f"{name}: not a state graph saved by dvecost (bad or missing "
                                 f"'{exc}')") from None
    _check_csr(name, arrays, costs)
    extra = {k: _codes_from_limbs(v) for k, v in arrays.items() if k in ("action_codes",)}
    base = {k: arrays[k] for k in need}
    return StateGraph(costs=costs, **fields, **base, **extra)


def _codes_to_limbs(codes: np.ndarray) -> np.ndarray:
    """``action_codes`` as a file holds them: int64 as they are; Python integers (system sync
    step codes past 63 bits) as rows of uint64 limbs, the least significant first (a file
    holds no object arrays).

    >>> c = np.array([5, 2**70 + 3], dtype=object)
    >>> _codes_from_limbs(_codes_to_limbs(c)).tolist() == [5, 2**70 + 3]
    True
    """
    if codes.dtype != object:
        return codes
    k = max(1, (max(int(c) for c in codes) if codes.size else 0).bit_length() + 63 >> 6)
    mask = (1 << 64) - 1
    return np.array([[int(c) >> (64 * i) & mask for i in range(k)] for c in codes], np.uint64)


def _codes_from_limbs(codes: np.ndarray) -> np.ndarray:
    if codes.ndim != 2:
        return codes
    return np.array([sum(int(v) << (64 * i) for i, v in enumerate(row))
                     for row in codes.tolist()], dtype=object)


def _check_csr(name: str, arrays: dict, costs: dict) -> None:
    """Consistency of a loaded graph's arrays (in place: converted to int64 where checked)."""
    ip = check_int_range(name, "indptr", arrays["indptr"], 0, _INT64_MAX)
    n = ip.shape[0] - 1
    if n < 0:
        raise ConfigurationError(f"{name}: 'indptr' is empty")
    m = int(arrays["indices"].shape[0])
    if int(ip[0]) != 0 or int(ip[-1]) != m or (n and int(np.diff(ip).min()) < 0):
        raise ConfigurationError(f"{name}: 'indptr' must run from 0 to {m} (the number of "
                                 "edges) without decreasing")
    arrays["indptr"] = ip
    idx = arrays["indices"]
    check_int_range(name, "indices", idx, 0, max(n - 1, 0))
    if idx.dtype not in (np.int32, np.int64):
        arrays["indices"] = idx.astype(np.int64)
    arrays["time"] = check_int_range(name, "time", arrays["time"], 0, _INT64_MAX)
    for res in costs:
        costs[res] = check_int_range(name, f"cost of '{res}'", costs[res], -_INT64_MAX,
                                     _INT64_MAX)
    for key, length in (("time", m), ("action", m), ("parent", n), ("parent_action", n)):
        if arrays[key].shape[0] != length:
            raise ConfigurationError(f"{name}: '{key}' has {arrays[key].shape[0]} entries, "
                                     f"expected {length}")
    for res, c in costs.items():
        if c.shape[0] != m:
            raise ConfigurationError(f"{name}: the cost of '{res}' has {c.shape[0]} entries, "
                                     f"expected {m}")
    if arrays["states"].ndim != 2 or arrays["states"].shape[0] != n:
        raise ConfigurationError(f"{name}: 'states' must have one row per state ({n})")


def validate_graph(graph: StateGraph) -> None:
    """Check the invariants listed in the module docstring; raise on the first violation.

    Raises
    ------
    runtime.errors.StateSpaceError
        Naming the invariant that does not hold.

    Examples
    --------
    >>> from dve import load_model
    >>> from statespace import build_state_graph
    >>> validate_graph(build_state_graph(load_model(
    ...     "process P { state a, b; init a; trans a -> b {}, b -> a {}; } system async;")))
    """
    def fail(msg: str):
        raise StateSpaceError(f"invalid state graph: {msg}")

    n, m = graph.n_states, graph.n_edges
    ip, ix = graph.indptr, graph.indices
    if ip.dtype != np.int64 or ip.shape != (n + 1,) or ip[0] != 0 or ip[-1] != m:
        fail("indptr must be int64 of length n+1 from 0 to n_edges")
    if np.any(np.diff(ip) < 0):
        fail("indptr must be non-decreasing")
    if ix.dtype not in (np.int32, np.int64) or (n >= 2**31 and ix.dtype != np.int64):
        fail("indices must be int32 (int64 past 2**31 states)")
    if m and (ix.min() < 0 or ix.max() >= n):
        fail("indices out of range")
    for name, arr in [("time", graph.time), *((f"cost {k}", v) for k, v in graph.costs.items())]:
        if arr.dtype != np.int64 or arr.shape != (m,):
            fail(f"{name} must be int64 of length n_edges")
    if graph.action.dtype != np.int32 or graph.action.shape != (m,):
        fail("action must be int32 of length n_edges")
    if graph.charge is not None:
        pal = graph.palette
        if pal is None or graph.charge.shape != (m,) or graph.charge.dtype != charge_dtype(
                pal.size):
            fail("charge must have one entry per edge, of the narrowest dtype for the palette")
        if m and int(graph.charge.max()) >= pal.size:
            fail("charge out of the palette's range")
        prow = np.stack([*pal.costs.values(), pal.time], axis=1)
        if pal.size > 1 and not all(tuple(a) < tuple(b) for a, b in zip(prow[:-1].tolist(),
                                                                         prow[1:].tolist())):
            fail("the palette's rows must be distinct and in ascending order")
    if graph.states.shape[0] != n:
        fail("states must have one row per state")
    if n and graph.initial != 0:
        fail("the initial state must be 0")
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(ip))
    if m > 1:
        key_prev = (rows[:-1], ix[:-1].astype(np.int64), graph.action[:-1])
        key_next = (rows[1:], ix[1:].astype(np.int64), graph.action[1:])
        same_row = key_prev[0] == key_next[0]
        less = (key_prev[1] < key_next[1]) | ((key_prev[1] == key_next[1])
                                              & (key_prev[2] <= key_next[2]))
        if np.any(same_row & ~less):
            fail("edges of a row must be sorted by (target, action)")
    deg = np.diff(ip)
    if graph.error_state >= 0 and deg[graph.error_state] != 0 and not graph.error_successors:
        fail("the error state must have no successors")
    dead = np.flatnonzero(deg == 0)
    if graph.complete:
        expect = dead[dead != graph.error_state]
        if not np.array_equal(np.sort(graph.deadlocks), expect):
            fail("deadlocks must list exactly the states without successors")
    # BFS numbering: a state's parent has a smaller id, and ids grow with discovery.
    par = graph.parent
    if n and (par[0] != -1 or np.any(par[1:] < 0) or np.any(par[1:] >= np.arange(1, n))):
        fail("parent must give a breadth-first tree rooted at 0 with parent[i] < i")
    if n > 1 and np.any(np.diff(par[1:]) < 0):
        fail("states must be numbered in breadth-first discovery order")
    if len(np.unique(graph.states, axis=0)) != n:
        fail("two states have the same state vector")
