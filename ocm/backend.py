"""The cycle engine's policy for the array backend (NumPy or CuPy), and its fallback.

The engine itself is written once over ``xp``; whether a GPU is usable, the array module, the
device's out-of-memory test and the fallback warning are the run's concerns, shared with the
explorer (:mod:`runtime.device`). This module answers what is the engine's own:

- which backend ``backend='cpu'|'gpu'|'auto'`` means for a graph of ``n_edges`` edges
  (:func:`resolve_backend`), raising :class:`~runtime.errors.BackendUnavailableError` for an
  explicit ``'gpu'`` that cannot be had;
- what to do when the GPU runs out of memory (:func:`call_with_cpu_fallback`): rerun on the
  CPU with a :class:`~runtime.device.DeviceFallbackWarning`;
- how much memory the CPU engine adds (:func:`engine_memory_bytes`).

``auto`` picks the GPU only for graphs of at least :data:`AUTO_MIN_EDGES` edges, and asks
for a device (importing CuPy) only then: below that size a process's first GPU call (CUDA
start-up, module loading) costs more than the CPU engine's whole run (measured on an H100, see
``docs/benchmarks.md``, "Cycle engine, GPU (issue 5)").

Examples
--------
>>> resolve_backend("cpu", 10)
'cpu'
>>> resolve_backend("auto", 10)  # small graphs stay on the CPU, GPU or not
'cpu'
"""

from __future__ import annotations

import warnings

from runtime import device
from runtime.device import (BACKENDS, DeviceFallbackWarning, is_out_of_memory, release_pools,
                            require_gpu)

from .errors import InputError

__all__ = [
    "AUTO_MIN_EDGES",
    "resolve_backend",
    "engine_memory_bytes",
    "warn_fallback",
    "call_with_cpu_fallback",
]

#: ``auto`` uses the GPU from this many edges on. Measured on an H100 (``--sweep`` of the GPU
#: benchmark, random graphs of 10 edges per vertex): a warm GPU engine is faster than the CPU
#: engine from 10^4 edges on (5.4 ms against 13 ms), but a process's first GPU call pays CUDA
#: start-up and kernel loading (0.2 to 0.5 s), which the CPU engine's run time only passes at
#: about 3 * 10^5 edges (0.26 s there; 0.94 s at 10^6).
AUTO_MIN_EDGES = 300_000

def resolve_backend(backend: str, n_edges: int) -> str:
    """Turn ``backend='auto'|'cpu'|'gpu'`` into ``'cpu'`` or ``'gpu'`` for a graph.

    Parameters
    ----------
    backend : {'auto', 'cpu', 'gpu'}
        What the user asked for.
    n_edges : int
        Number of edges of the graph to analyse (``auto`` uses the GPU only from
        :data:`AUTO_MIN_EDGES` on).

    Returns
    -------
    str
        ``'cpu'`` or ``'gpu'``.

    Raises
    ------
    BackendUnavailableError
        ``backend='gpu'`` where CuPy or a CUDA device is missing; the message says how to get
        one (``pip install dvecost[gpu]``) or to use ``--backend cpu``.
    InputError
        ``backend`` is not one of :data:`BACKENDS`.

    Examples
    --------
    >>> resolve_backend("cpu", 10**8)
    'cpu'
    >>> resolve_backend("fast", 1)
    Traceback (most recent call last):
    ...
    ocm.errors.InputError: unknown backend 'fast': expected one of auto, cpu, gpu
    """
    if backend not in BACKENDS:
        raise InputError(
            f"unknown backend '{backend}': expected one of {', '.join(BACKENDS)}")
    if backend == "cpu":
        return "cpu"
    if backend == "auto" and n_edges < AUTO_MIN_EDGES:
        return "cpu"  # small: not even worth importing CuPy
    reason = device.gpu_unavailable_reason()   # read through the module: one answer to patch
    if backend == "gpu":
        require_gpu(reason)
        return "gpu"
    # auto on a large graph: quietly the CPU when there is no GPU.
    return "gpu" if reason is None else "cpu"


#: Bytes per edge and per vertex the CPU cycle engine allocates at its peak (CSR copies, SCC
#: labels, policies, biases, the certificate's arrays), with a quarter of room: on a saved
#: partial graph of BEEM bakery.7 (3.06 M vertices, 10.3 M edges) the engine took the process
#: from 389 MB after loading to a 1154 MB peak, 765 MB, against 952 MB estimated.
ENGINE_BYTES_PER_EDGE = 64
ENGINE_BYTES_PER_VERTEX = 96


def engine_memory_bytes(n_vertices: int, n_edges: int) -> int:
    """How much memory the CPU cycle engine adds to the process on a graph of this size (an
    upper estimate, see :data:`ENGINE_BYTES_PER_EDGE`); what ``--max-memory`` checks first.

    >>> engine_memory_bytes(3, 4)
    640
    """
    return ENGINE_BYTES_PER_EDGE * n_edges + ENGINE_BYTES_PER_VERTEX * (n_vertices + 1)


def warn_fallback(exc: BaseException, n_edges: int) -> None:
    """Warn (:class:`~runtime.device.DeviceFallbackWarning`) that the GPU ran out of memory
    and the CPU engine takes over.

    Frees CuPy's memory pools first, so that a later GPU call starts clean.
    """
    release_pools()
    warnings.warn(f"the GPU ran out of memory on a graph of {n_edges} edges ({exc}); "
                  "continuing on the CPU engine", DeviceFallbackWarning, stacklevel=3)


def call_with_cpu_fallback(run, xp, n_edges: int):
    """``run(xp)`` on the GPU; if the device runs out of memory, warn and ``run(numpy)``.

    Parameters
    ----------
    run : callable
        ``run(xp) -> result``: the whole computation over the array module ``xp`` (it must
        accept CuPy inputs with ``xp=numpy``, e.g. by copying them to the host).
    xp : module
        The array module chosen (``cupy``).
    n_edges : int
        For the warning's message.

    Returns
    -------
    The result of ``run``, from the CPU engine after a :class:`DeviceFallbackWarning` when the
    GPU ran out of memory. Other errors propagate unchanged.
    """
    import numpy

    try:
        return run(xp)
    except Exception as exc:  # noqa: BLE001 - only out-of-memory is handled, the rest re-raised
        if not is_out_of_memory(exc):
            raise
        warn_fallback(exc, n_edges)
    return run(numpy)
