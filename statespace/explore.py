"""The front of exploration: a model in, its reachable state graph out.

:func:`build_state_graph` compiles a model where needed (:func:`as_compiled`), takes its
next-state generator (:func:`statespace.next_state.generator_for`: what a step is) and runs a
breadth-first search over it (:class:`statespace.search.BreadthFirstSearch`: how the space is
searched, numbered, limited and placed on a device). Both halves are documented where they
live.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from dve import syntax

from .compiler import compile_model
from .graph import StateGraph
from .model import CompiledModel
from .next_state import generator_for
from .search import DEVICE_CHUNK, HOST_CHUNK, BreadthFirstSearch

__all__ = ["DEVICE_CHUNK", "HOST_CHUNK", "as_compiled", "build_state_graph"]


def as_compiled(model: CompiledModel | syntax.Model, *, property: bool = True) -> CompiledModel:
    """``model`` compiled: itself when it already is, else :func:`compile_model` of it.

    The explorers take models, never text or paths: :func:`dve.load_model` is the one place
    where text becomes a model, and it checks what it reads.

    Raises
    ------
    TypeError
        For anything but a :class:`CompiledModel` or a :class:`dve.syntax.Model` (text, a path).

    Examples
    --------
    >>> from dve import load_model
    >>> as_compiled(load_model("process P { state a; init a; } system async;")).initial
    (0,)
    >>> as_compiled("m.dve")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    TypeError: expected a model (...), got str: read text or a file with dve.load_model
    """
    if isinstance(model, CompiledModel):
        return model
    if isinstance(model, syntax.Model):
        return compile_model(model, property=property)
    raise TypeError(f"expected a model (dve.syntax.Model or CompiledModel), got "
                    f"{type(model).__name__}: read text or a file with dve.load_model")


def build_state_graph(model: CompiledModel | syntax.Model, *, property: bool = True,
                      max_states: int | None = None, max_memory: int | None = None,
                      progress: Callable[[int, int, float], None] | None = None,
                      chunk_size: int | None = None, error_successors: bool = False,
                      xp=np, on_device_full: str = "host") -> StateGraph:
    """Explore the reachable state space of a model into a :class:`StateGraph`.

    Parameters
    ----------
    model : CompiledModel or dve.syntax.Model
        A compiled model, or a checked model from :func:`dve.load_model` (which reads text
        and files and applies ``-D`` values).
    property : bool
        Explore the product with the property process of ``system async property P``
        (default); false leaves the property process out.
    max_states : int, optional
        Stop once more states than this have been found.
    max_memory : int, optional
        Stop once the arrays of the exploration take more bytes than this.
    progress : callable, optional
        Called as ``progress(n_states, n_edges, edges_per_second)`` after each chunk.
    error_successors : bool
        False (default): the error state has no successors (DiVinE's generator since 2008,
        and what the analysis needs). True: expand it like any state, as the generator that
        produced BEEM's published counts did: the error state is all zeros with process 0 in
        a control state that has no transitions, so the other processes move on from their
        first declared states (BEEM ``anderson.1``: 347 039 states this way, 347 037 without).
    chunk_size : int, optional
        States expanded per batch (memory versus per-batch overhead; no effect on the result).
        Default :data:`HOST_CHUNK` with NumPy, :data:`DEVICE_CHUNK` with CuPy.
    xp : module
        The array module the exploration runs on: NumPy (default), or CuPy to explore on a
        GPU: it starts on the host and moves to the device at the first chunk of
        :attr:`Placement.device_min_rows <statespace.search.Placement.device_min_rows>`
        states; from then on the frontier, the visited set and
        the edges stay on the device, guards and effects run there for chunks of that many
        states (smaller ones on the host), and the finished graph is copied to the host once.
        Both give identical graphs.
    on_device_full : {'host', 'stop'}
        With a device module: what happens when the device's free memory is less than the
        next step needs (checked before the hand-over and before each chunk on the device),
        or an allocation on it fails: ``'host'`` (default) continues on the host from the last
        chunk boundary (the same graph) with a :class:`~runtime.device.DeviceFallbackWarning`;
        ``'stop'`` raises :class:`runtime.errors.OutOfMemory` with the graph found so far.

    Returns
    -------
    StateGraph

    Raises
    ------
    runtime.errors.StateLimitExceeded, runtime.errors.MemoryLimitExceeded
        When a limit is reached; ``partial`` holds the graph found so far (``complete`` false).
        :class:`~runtime.errors.OutOfMemory` (a MemoryLimitExceeded) with ``device`` true: the
        device was full and ``on_device_full`` is ``'stop'``.
    dve.errors.EvaluationError
        When the model does not compile (an initial value out of its type's range, ...).
    TypeError
        When ``model`` is text or a path (see :func:`as_compiled`).

    Examples
    --------
    >>> from dve import load_model
    >>> g = build_state_graph(load_model('''
    ... channel c;
    ... process P { byte v; state a, b; init a; trans a -> b { sync c!7; cost 2; time 3; }; }
    ... process Q { byte w; state a, b; init a; trans a -> b { sync c?w; cost 1; time 1; }; }
    ... system async;'''))
    >>> g.n_states, g.n_edges, g.cost().tolist(), g.time.tolist()
    (2, 1, [3], [3])
    >>> from statespace import decode_state
    >>> decode_state(g, 1)
    {'P': 'b', 'Q': 'b', 'P.v': 0, 'Q.w': 7}
    """
    cm = as_compiled(model, property=property)
    return BreadthFirstSearch(generator_for(cm), xp, chunk_size, max_states, max_memory,
                              progress, error_successors, on_device_full=on_device_full).run()
