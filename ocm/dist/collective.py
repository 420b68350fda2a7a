"""The collectives the stages of the engine across processes share.

Each stage of :func:`ocm.dist.optimal_cycle_distributed` (:mod:`ocm.dist.components`,
:mod:`ocm.dist.restrict`, :mod:`ocm.dist.policy`) ends its rounds on facts every process must
agree on: a count over every process (:func:`count`), an error found by one process raised on
all of them (:func:`agree`: raising on one only would leave the others waiting in a
collective), and values asked of their owners a part of the ids at a time (:func:`fetch_parts`,
as many calls on every process).

Examples
--------
>>> import numpy as np
>>> from runtime.comm import SelfComm
>>> count(SelfComm(), np.array([True, False, True]))
2
>>> agree(SelfComm(), None)   # no process found an error: nothing raised
"""

from __future__ import annotations

from typing import Any

import numpy as np

from runtime.comm import Comm

from ..errors import ZeroTimeCycleError
from .block import Layout, fetch
from .ops import id_slices

__all__ = ["agree", "count", "fetch_parts"]


def agree(comm: Comm, error: Exception | None) -> None:
    """Raise the first process's error on every process (errors are local facts; raising on
    one process only would leave the others waiting in a collective).

    Parameters
    ----------
    comm : runtime.comm.Comm
        Every process calls it, with the error it found or None.
    error : Exception or None
        This process's error; a :class:`~ocm.errors.ZeroTimeCycleError` keeps its cycle and
        edges on every process.

    Examples
    --------
    >>> from runtime.comm import SelfComm
    >>> from ocm.errors import InputError
    >>> agree(SelfComm(), InputError("bad"))
    Traceback (most recent call last):
    ...
    ocm.errors.InputError: bad
    """
    got = comm.allgather(None if error is None else (type(error), error.args,
                                                      getattr(error, "cycle", None),
                                                      getattr(error, "edges", None)))
    for g in got:
        if g is not None:
            cls, args, cycle, edges = g
            if cls is ZeroTimeCycleError:
                raise ZeroTimeCycleError(*args, cycle=cycle or (), edges=edges or ())
            raise cls(*args)


def count(comm: Comm, a: Any) -> int:
    """The number of true (non-zero) entries of ``a`` over every process (one ``allreduce``).

    >>> import numpy as np
    >>> from runtime.comm import SelfComm
    >>> count(SelfComm(), np.array([0, 3, 0, 1]))
    2
    """
    return comm.allreduce(int(comm.xp.count_nonzero(a)))


def fetch_parts(comm: Comm, layout: Layout, ids: Any, *arrays: Any, seen: Any = None) -> list:
    """:func:`~ocm.dist.block.fetch` a part of the ids at a time (:func:`ops.id_slices`,
    as many calls on every process, agreed by one ``allreduce``), the answers written into
    one int64 array per array asked: a fetch's temporaries (owners, order, the ids and
    values sent and received: about 150 bytes an id for three arrays) are a part's, not
    every vertex's. Every part is read before the caller changes anything, so the answers
    are those of one fetch. Collective.

    Examples
    --------
    >>> import numpy as np
    >>> from runtime.comm import SelfComm
    >>> from ocm.dist import split_graph
    >>> b = split_graph(np.array([0, 1, 2, 3]), np.array([1, 2, 0]), np.array([1, 1, 1]),
    ...                 None, 0, 1)
    >>> seen = np.zeros(3, dtype=bool)
    >>> fetch_parts(SelfComm(), b.layout, np.array([2, 0]), np.array([10, 11, 12]),
    ...             seen=seen)[0].tolist(), seen.tolist()
    ([12, 10], [True, False, True])
    """
    xp = comm.xp
    parts = id_slices(int(ids.shape[0]))
    calls = comm.allreduce(len(parts), "max")
    if calls == 1:
        return fetch(comm, layout, ids, *arrays, seen=seen)
    out = [xp.empty(ids.shape[0], np.int64) for _ in arrays]
    for i in range(calls):
        sl = parts[i] if i < len(parts) else slice(0, 0)
        got = fetch(comm, layout, ids[sl], *arrays, seen=seen)
        for o, g in zip(out, got):
            o[sl] = g
        del got
    return out
