"""Where arrays live: NumPy on the host or CuPy on a GPU, and what a run needs to know of the
device whichever package computes on it (the explorer or the cycle engine).

Everything that tells the host from the device exists once, here:

- is a GPU usable (:func:`gpu_unavailable_reason`, :func:`gpu_available`; CuPy imports *and*
  a CUDA device answers) and is CuPy installed at all (:func:`cupy_installed`, no import);
- the array module for ``backend='cpu'|'gpu'|'auto'`` (:func:`array_module`,
  :func:`array_module_for`), with ``auto``'s :class:`DeferredDevice`, which imports CuPy only
  when the work is first handed to it;
- the one way back to the host (:func:`to_host`);
- the device's free memory (:func:`device_free_bytes`), handing the pools back
  (:func:`release_pool`, :func:`release_pools`), and the one test that an error is the
  device's out-of-memory (:func:`is_out_of_memory`);
- the one warning that the device could not take the work and the host took it over
  (:class:`DeviceFallbackWarning`).

The policies that use them stay with their users: when ``auto`` gives the cycle engine the GPU
(``ocm.backend``), when the explorer hands a chunk to the device (``statespace``). The CLI's
start-up of CuPy and CUDA in a thread is :mod:`runtime.warmup`. This module imports no CuPy
until asked for a device.

Examples
--------
>>> import numpy as np
>>> to_host(np.arange(3)).tolist(), to_host([1, 2]).tolist()
([0, 1, 2], [1, 2])
>>> array_module_for("cpu").__name__, device_free_bytes(np) is None
('numpy', True)
>>> is_out_of_memory(ValueError("cudaErrorMemoryAllocation")), is_out_of_memory(MemoryError())
(True, False)
"""

from __future__ import annotations

import functools
import importlib.util
import time
import types

import numpy as np

from .errors import BackendUnavailableError

__all__ = [
    "BACKENDS",
    "INSTALL_HINT",
    "DeviceFallbackWarning",
    "gpu_unavailable_reason",
    "gpu_available",
    "cupy_installed",
    "require_gpu",
    "array_module",
    "array_module_for",
    "DeferredDevice",
    "note_warm_up",
    "warming_up",
    "to_host",
    "is_out_of_memory",
    "FREE_QUERY_SECONDS",
    "device_free_bytes",
    "release_pool",
    "release_pools",
    "synchronize",
    "SideWork",
]

#: The accepted values of ``backend=``.
BACKENDS = ("auto", "cpu", "gpu")

#: What an error about a missing GPU tells the user to do.
INSTALL_HINT = ("install the GPU extra with 'pip install dvecost[gpu]' (needs an NVIDIA GPU and "
                "driver), or use '--backend cpu'")


class DeviceFallbackWarning(UserWarning):
    """Issued when work started for the GPU goes on on the host: an exploration whose next
    step does not fit the device's free memory or whose allocation failed (``--backend
    auto``; ``gpu`` stops with :class:`~runtime.errors.OutOfMemory` instead), a generated
    kernel that failed, or a cycle engine that ran out of device memory. The command line
    shows each message once, as a ``dvecost: warning:`` line."""


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why the GPU cannot be used here, or ``None`` when it can.

    Imports CuPy and asks the CUDA runtime for a device, once per process (cached).

    Returns
    -------
    str or None
        A short lower-case reason (``'CuPy is not installed'``, ``'no CUDA device found'``,
        ...), or ``None`` when CuPy imports and at least one device answers.
    """
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed"
    except Exception as exc:  # noqa: BLE001 - a broken CuPy install raises many things
        return f"CuPy failed to import ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001 - no driver, no libcuda, driver too old ...
        return f"no usable CUDA driver ({type(exc).__name__}: {exc})"
    if count < 1:
        return "no CUDA device found"
    return None


def gpu_available() -> bool:
    """True when CuPy imports and a CUDA device is present.

    >>> isinstance(gpu_available(), bool)
    True
    """
    return gpu_unavailable_reason() is None


@functools.lru_cache(maxsize=1)
def cupy_installed() -> bool:
    """True when an importable ``cupy`` is on the path, found without importing it (a
    :func:`importlib.util.find_spec` look-up: milliseconds, where ``import cupy`` and the
    device query take a good part of a second). Cached per process.

    >>> isinstance(cupy_installed(), bool)
    True
    """
    try:
        return importlib.util.find_spec("cupy") is not None
    except (ImportError, ValueError):
        return False


def require_gpu(reason: str | None = None) -> None:
    """Raise :class:`~runtime.errors.BackendUnavailableError` when there is no GPU (``reason``,
    or :func:`gpu_unavailable_reason` when not given); the message says how to get one.

    >>> try:
    ...     require_gpu("no CUDA device found")
    ... except BackendUnavailableError as exc:
    ...     print(str(exc)[:60])
    the GPU backend is unavailable: no CUDA device found; instal
    """
    if reason is None:
        reason = gpu_unavailable_reason()
    if reason is not None:
        raise BackendUnavailableError(f"the GPU backend is unavailable: {reason}; "
                                      f"{INSTALL_HINT}")


def array_module(backend: str):
    """The array module for a resolved backend: ``numpy`` for ``'cpu'``, ``cupy`` for ``'gpu'``.

    >>> array_module("cpu").__name__
    'numpy'
    """
    if backend == "gpu":
        import cupy
        return cupy
    return np


#: The thread that starts CuPy and CUDA ahead of need (:func:`runtime.warmup.warm_up`), or
#: None: told by :func:`note_warm_up`, read by :func:`array_module_for`.
_WARMING = None


def note_warm_up(thread) -> None:
    """Record the thread that imports CuPy and starts CUDA in the background (see
    :func:`runtime.warmup.warm_up`): while it runs, ``backend='gpu'`` gets a
    :class:`DeferredDevice` so that the first chunks are computed on the host meanwhile."""
    global _WARMING
    _WARMING = thread


def warming_up():
    """The thread recorded by :func:`note_warm_up`, or None (none was started).

    >>> warming_up() is None or hasattr(warming_up(), "join")
    True
    """
    return _WARMING


def array_module_for(backend: str):
    """The array module for ``backend`` whatever the size of the work (state-space
    exploration: its size is known only at the end): NumPy for ``'cpu'``, CuPy for ``'gpu'``
    (:class:`~runtime.errors.BackendUnavailableError` where there is none), and for ``'auto'``
    NumPy where CuPy is not installed, else a :class:`DeferredDevice`: nothing is imported
    until the work is large enough to use the device. For ``'gpu'`` while the warm-up thread
    (:func:`note_warm_up`) is still at work, a :class:`DeferredDevice` that requires the
    device (the caller's first use of it waits for CuPy, and raises BackendUnavailableError if
    there is no device after all).

    >>> array_module_for("cpu").__name__
    'numpy'
    >>> array_module_for("fast")
    Traceback (most recent call last):
    ...
    ValueError: unknown backend 'fast': expected one of auto, cpu, gpu
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown backend '{backend}': expected one of {', '.join(BACKENDS)}")
    if backend == "auto":
        return DeferredDevice() if cupy_installed() else np
    if backend == "cpu":
        return np
    if _WARMING is not None and _WARMING.is_alive() and cupy_installed():
        # The warm-up is importing CuPy and starting CUDA: the explorer computes its first,
        # small chunks on the host meanwhile, and asks for the device when it needs it (a
        # device that is missing after all is reported then: BackendUnavailableError).
        return DeferredDevice(required=True)
    require_gpu()
    return array_module("gpu")


class DeferredDevice(types.ModuleType):
    """CuPy, imported on first use: the array module ``auto`` gives the explorer.

    The explorer keeps a device module aside and computes on the host until a chunk is large
    enough; only then does it read anything off the module (the device's free memory first).
    So a small model never imports CuPy or starts CUDA, the fixed cost that ``auto`` avoids.
    The first attribute read resolves the module: CuPy when it imports and a device answers
    (:func:`gpu_available`; every later read is CuPy's own attribute), else a device with no
    free memory, so that the explorer stays on the host; :attr:`unavailable` then holds the
    reason (a caller may drop the explorer's fallback warning, which is about a device that
    never was). With ``required`` (``--backend gpu``, see :func:`array_module_for`) no device
    raises :class:`~runtime.errors.BackendUnavailableError` instead.

    Examples
    --------
    >>> xp = DeferredDevice()
    >>> xp.resolved, xp.unavailable
    (False, None)
    """

    def __init__(self, required: bool = False) -> None:
        super().__init__("cupy", "CuPy, imported when first used (runtime.device.DeferredDevice)")
        self.resolved = False
        self.unavailable: str | None = None
        self.required = required

    def __getattr__(self, name: str):
        # Called only for names the instance does not hold: before resolution every name,
        # after it those CuPy loads lazily (its submodules), read off CuPy itself.
        if name.startswith("__"):
            raise AttributeError(name)
        target = self.__dict__.get("_target")
        if target is None:
            target = self._resolve()
        return getattr(target, name)

    def _resolve(self):
        self.resolved = True
        self.unavailable = gpu_unavailable_reason()
        if self.unavailable is not None and self.required:
            require_gpu(self.unavailable)
        if self.unavailable is not None:
            self._target = _NO_DEVICE
            return self._target
        import cupy
        # CuPy's names on the instance: later reads cost what they cost on CuPy.
        self.__dict__.update((k, v) for k, v in vars(cupy).items()
                             if not k.startswith("__") and k not in _OWN)
        self._target = cupy
        return cupy


_OWN = frozenset({"resolved", "unavailable", "required", "_target", "_resolve"})
#: What a :class:`DeferredDevice` without a device answers: no free memory, an empty pool.
_NO_POOL = types.SimpleNamespace(free_bytes=lambda: 0, used_bytes=lambda: 0,
                                 total_bytes=lambda: 0, free_all_blocks=lambda: None)
_NO_DEVICE = types.SimpleNamespace(
    cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(memGetInfo=lambda: (0, 0))),
    get_default_memory_pool=lambda: _NO_POOL)


def to_host(a) -> np.ndarray:
    """``a`` as a NumPy array: itself when it already is one, a copy from the device for a
    CuPy array, ``numpy.asarray`` of anything else (a list). The one way back to the host.

    >>> to_host([1, 2]).tolist()
    [1, 2]
    """
    if isinstance(a, np.ndarray):
        return a
    get = getattr(a, "get", None)
    return get() if get is not None else np.asarray(a)


def is_out_of_memory(exc: BaseException) -> bool:
    """True when ``exc``, or the error it was raised from, is a failed device allocation
    (CuPy's ``cuda.memory.OutOfMemoryError``, or CUDA's out-of-memory error), recognised by
    class name and CUDA's error text, without importing CuPy.

    >>> is_out_of_memory(MemoryError()), is_out_of_memory(RuntimeError("CUDA_ERROR_OUT_OF_MEMORY"))
    (False, True)
    """
    for e in (exc, getattr(exc, "__cause__", None)):
        if e is None:
            continue
        if type(e).__name__ == "OutOfMemoryError":  # cupy.cuda.memory.OutOfMemoryError
            return True
        text = str(e)
        if "cudaErrorMemoryAllocation" in text or "CUDA_ERROR_OUT_OF_MEMORY" in text:
            return True
    return False


#: Seconds for which :func:`device_free_bytes` answers from its last query of the device,
#: less what CuPy's memory pool took from the device since (``cudaMemGetInfo`` costs ~4 ms
#: on the H100 machine, measured: 0.12 s of a 2.5 s ``dvecost analyze`` of cs_10 that asked
#: once per chunk).
FREE_QUERY_SECONDS = 0.5
_LAST_QUERY: dict = {}   # id -> (memGetInfo, monotonic time, device free, pool total) then


def device_free_bytes(xp) -> int | None:
    """The bytes the device of ``xp`` can still allocate: its free memory
    (``cuda.runtime.memGetInfo``) plus the free blocks CuPy's memory pool holds; None for
    NumPy or a module without a CUDA runtime (nothing to check).

    The device is asked at most once in :data:`FREE_QUERY_SECONDS`: in between, the answer
    is the last one less the growth of the pool's ``total_bytes()`` (what this process took
    since); a pool that cannot tell its total has the device asked every time.

    >>> device_free_bytes(np) is None
    True
    """
    if xp is np:
        return None
    try:
        query = xp.cuda.runtime.memGetInfo
    except AttributeError:
        return None
    pool = getattr(xp, "get_default_memory_pool", lambda: None)()
    total = getattr(pool, "total_bytes", None)
    total = int(total()) if total is not None else None
    now = time.monotonic()
    # By the query function (one per device runtime: CuPy's whatever module object wraps it),
    # held in the entry so that its id cannot be reused by another while cached.
    last = _LAST_QUERY.get(id(query))
    if (total is not None and last is not None and last[0] is query
            and now - last[1] < FREE_QUERY_SECONDS):
        free = last[2] - (total - last[3])
    else:
        free = int(query()[0])
        if total is not None:
            _LAST_QUERY[id(query)] = (query, now, free, total)
    try:
        free += int(pool.free_bytes())
    except AttributeError:
        pass
    return free


def synchronize(xp) -> None:
    """Wait until the work queued on ``xp``'s device is done (nothing for NumPy, or a module
    without ``cuda``): where a phase's clock stops, so that it counts the phase's kernels
    rather than their launches.

    >>> synchronize(np)
    """
    cuda = getattr(xp, "cuda", None)
    if cuda is not None and hasattr(cuda, "Device"):
        cuda.Device().synchronize()


def release_pool(xp) -> None:
    """Hand the free blocks of ``xp``'s (CuPy's) memory pool back to the device (best effort;
    nothing for NumPy).

    >>> release_pool(np)
    """
    try:
        xp.get_default_memory_pool().free_all_blocks()
    except AttributeError:
        pass


def release_pools() -> None:
    """Hand the free blocks of CuPy's device and pinned memory pools back, where CuPy is
    loaded (best effort): after the device ran out of memory, so that a later call starts
    clean. Imports nothing that is not loaded already.

    >>> release_pools()
    """
    import sys
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return
    try:
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:  # noqa: BLE001 - best effort only
        pass


class SideWork:
    """Work put on a second stream of a device, beside what the current stream does, and
    joined later: so that a device can compute while an exchange of the current stream
    moves data (NCCL's transfers leave most of the device idle).

    :meth:`run` enqueues ``fn(*args)`` on the side stream, after everything the current
    stream holds so far; :meth:`join` makes the current stream wait for the side's work,
    and only then lets go of the arguments: CuPy's pool gives a freed block back to the
    stream that allocated it, so an argument let go earlier could be overwritten by the
    current stream while the side one still reads it. Everything the side work returns is
    for the current stream only after the join. On the host (NumPy, or any module that is
    not CuPy) :meth:`run` calls ``fn`` at once and :meth:`join` does nothing.

    >>> side = SideWork(np)
    >>> side.run(sum, [1, 2]), side.join()
    (3, None)
    """

    def __init__(self, xp) -> None:
        self.xp = xp
        self.stream = xp.cuda.Stream(non_blocking=True) \
            if getattr(xp, "__name__", "") == "cupy" else None
        self.held: list = []

    def run(self, fn, *args):
        """``fn(*args)``, on the side stream where there is one (see the class)."""
        if self.stream is None:
            return fn(*args)
        cuda = self.xp.cuda
        ready = cuda.Event(disable_timing=True)
        ready.record()   # (on the current stream)
        self.stream.wait_event(ready)
        with self.stream:
            out = fn(*args)
        self.held.append(args)
        return out

    def join(self) -> None:
        """The current stream waits for the side's work so far; its arguments let go."""
        if self.stream is None or not self.held:
            return
        cuda = self.xp.cuda
        done = cuda.Event(disable_timing=True)
        done.record(self.stream)
        cuda.get_current_stream().wait_event(done)
        self.held = []
