"""Choosing the array backend (NumPy or CuPy) for the cycle engine, and falling back.

Owned by the GPU engine (issue 5). The engine itself is written once over ``xp``; this module
only answers three questions, in one place, so that the API and the CLI agree:

- is a GPU usable here (:func:`gpu_available`: CuPy imports *and* a CUDA device answers);
- which backend does ``backend='cpu'|'gpu'|'auto'`` mean for a graph of ``n_edges`` edges
  (:func:`resolve_backend`), raising :class:`~ocm.errors.BackendUnavailableError` for an
  explicit ``'gpu'`` that cannot be had;
- what to do when the GPU runs out of memory (:func:`is_out_of_memory`,
  :class:`GpuFallbackWarning`): the caller reruns on the CPU and warns once.

``auto`` picks the GPU only for graphs of at least :data:`AUTO_MIN_EDGES` edges, and asks
for a device (importing CuPy) only then: below that size a process's first GPU call (CUDA
start-up, module loading) costs more than the CPU engine's whole run (measured on an H100, see
``docs/benchmarks.md``, "Cycle engine, GPU (issue 5)"). Exploration, whose size is known only
at its end, gets a :class:`DeferredDevice` for ``auto`` (:func:`array_module_for`): CuPy is
imported, and the device asked for, only when the explorer first hands work to it.

Examples
--------
>>> resolve_backend("cpu", 10)
'cpu'
>>> resolve_backend("auto", 10)  # small graphs stay on the CPU, GPU or not
'cpu'
"""

from __future__ import annotations

import functools
import importlib.util
import types
import warnings

from .errors import BackendUnavailableError, InputError

__all__ = [
    "AUTO_MIN_EDGES",
    "BACKENDS",
    "GpuFallbackWarning",
    "gpu_available",
    "gpu_unavailable_reason",
    "resolve_backend",
    "array_module",
    "array_module_for",
    "DeferredDevice",
    "cupy_installed",
    "is_out_of_memory",
    "warn_fallback",
    "call_with_cpu_fallback",
    "warm_up",
]

#: The accepted values of ``backend=``.
BACKENDS = ("auto", "cpu", "gpu")

#: ``auto`` uses the GPU from this many edges on. Measured on an H100 (``--sweep`` of the GPU
#: benchmark, random graphs of 10 edges per vertex): a warm GPU engine is faster than the CPU
#: engine from 10^4 edges on (5.4 ms against 13 ms), but a process's first GPU call pays CUDA
#: start-up and kernel loading (0.2 to 0.5 s), which the CPU engine's run time only passes at
#: about 3 * 10^5 edges (0.26 s there; 0.94 s at 10^6).
AUTO_MIN_EDGES = 300_000

_INSTALL_HINT = ("install the GPU extra with 'pip install dvecost[gpu]' (needs an NVIDIA GPU and "
                 "driver), or use '--backend cpu'")


class GpuFallbackWarning(UserWarning):
    """Issued when the GPU engine ran out of device memory and the CPU engine took over."""


@functools.lru_cache(maxsize=1)
def gpu_unavailable_reason() -> str | None:
    """Why the GPU backend cannot be used here, or ``None`` when it can.

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
    reason = gpu_unavailable_reason()
    if backend == "gpu":
        if reason is not None:
            raise BackendUnavailableError(f"the GPU backend is unavailable: {reason}; "
                                          f"{_INSTALL_HINT}")
        return "gpu"
    # auto on a large graph: quietly the CPU when there is no GPU.
    return "gpu" if reason is None else "cpu"


def warm_up():
    """Start importing CuPy and creating the CUDA context in a background (daemon) thread,
    and return the thread: what ``dvecost COMMAND --backend gpu`` does first, so that the
    ~0.5 s they take on an H100 machine (import 0.1-0.3 s, ``cuInit`` and the context 0.2 s)
    overlap the model's parsing and the first breadth-first chunks, which run on the host.
    A second thread starts the driver meanwhile (:func:`_start_driver`), and once the
    context is made the first thread makes the first calls whose cost is per process
    (:func:`_first_uses`). The caller's own ``import cupy`` waits for the thread's
    (Python's import lock) and :func:`gpu_unavailable_reason` reports any failure as it
    would have; the threads' errors are dropped.

    >>> warm_up().join(60)   # where there is no CuPy or no device, it just ends
    """
    import threading

    global _WARMING
    if _WARMING is not None:   # started already (the program's entry point starts it first)
        return _WARMING
    # The driver's start beside CuPy's import, not after it: both take a good part of the
    # warm-up, and the driver's leaves the interpreter's lock free.
    threading.Thread(target=_start_driver, name="dvecost-driver-start", daemon=True).start()

    def work() -> None:
        try:
            _import_cupy_lean()   # before gpu_unavailable_reason imports it as it comes
            if gpu_unavailable_reason() is None:
                import cupy
                _import_cupyx_without_scipy()
                cupy.empty(1)   # the context, and the memory pool's first block
                _first_uses(cupy)
        except Exception:  # noqa: BLE001 - the command reports what fails, when it gets there
            pass

    thread = threading.Thread(target=work, name="dvecost-device-warm-up", daemon=True)
    thread.start()
    _WARMING = thread
    return thread


def _start_driver() -> None:
    """``cuInit`` and the device's primary context (the one CuPy's runtime calls use) through
    the driver library itself, found with :mod:`ctypes`: 0.25-0.3 s on the H100 machine,
    spent without the interpreter's lock, while :func:`warm_up`'s other thread imports CuPy
    (which would otherwise start them only after its import). The primary context is
    retained for the life of the process; CuPy's own ``cuInit`` then finds the driver
    started. Best effort: no driver, no device, any failure, and CuPy reports it itself."""
    try:
        import ctypes
        cuda = ctypes.CDLL("libcuda.so.1")
        dev, ctx = ctypes.c_int(0), ctypes.c_void_p()
        if cuda.cuInit(0) == 0 and cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0:
            cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev)
    except Exception:  # noqa: BLE001 - Windows, no driver: CuPy's own start reports it
        pass


class _NoSciPyInThread:
    """An import finder that makes ``scipy`` unimportable in one thread and nowhere else.

    ``cupyx``'s package body (which CuPy's first elementwise call loads, see
    :func:`_first_uses`) imports SciPy's sparse matrices, its array-API layer and
    ``numpy.f2py`` where SciPy is installed, only to convert SciPy's matrices; every such
    import sits in ``try ... except ImportError`` and leaves the conversion unavailable. The
    device path of a ``dvecost`` process converts no SciPy matrix, so its warm-up thread
    imports ``cupyx`` with SciPy kept out, 0.1-0.2 s less holding the interpreter's lock
    (measured on the H100 machine with ``tools/device/cupyx_probe.py``). Other threads import
    SciPy as usual (the CPU engine's components), during the warm-up or after it."""

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id

    def find_spec(self, name, path=None, target=None):
        import threading
        if (name == "scipy" or name.startswith("scipy.")) and \
                threading.get_ident() == self.thread_id:
            raise ModuleNotFoundError(f"No module named {name!r} (kept out of dvecost's "
                                      f"device warm-up)", name=name)
        return None


class _NoCuTensorPreload:
    """An import finder that keeps CuPy from preloading cuTENSOR when it is imported.

    ``import cupy`` loads the cuTENSOR library of a pip-installed CuPy at once, and with it
    cuBLASLt (``cupy._environment._preload_library('cutensor')``): 0.06-0.07 s on the H100
    machine (``tools/device/cupyx_probe.py``), for a library the device path of a ``dvecost``
    process never calls. CuPy skips a library its ``_preload_libs`` table marks as loaded; this
    finder marks cuTENSOR so right after ``cupy._environment`` is executed, before CuPy's
    ``__init__`` asks for the preload. Used only by :func:`warm_up`'s thread, only while it
    imports CuPy; where CuPy's layout differs it does nothing."""

    def find_spec(self, name, path=None, target=None):
        if name != "cupy._environment":
            return None
        from importlib.machinery import PathFinder
        spec = PathFinder.find_spec(name, path)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return None
        run = loader.exec_module

        def exec_module(module):
            run(module)
            table = getattr(module, "_preload_libs", None)
            if isinstance(table, dict) and table.get("cutensor", {}) is None:
                table["cutensor"] = {}

        loader.exec_module = exec_module
        return spec


def _import_cupy_lean() -> None:
    """``import cupy`` without its cuTENSOR preload (:class:`_NoCuTensorPreload`). Errors
    are left to :func:`gpu_unavailable_reason`, which imports CuPy again and reports them."""
    import sys
    finder = _NoCuTensorPreload()
    sys.meta_path.insert(0, finder)
    try:
        import cupy  # noqa: F401
    except Exception:  # noqa: BLE001 - reported by gpu_unavailable_reason
        pass
    finally:
        sys.meta_path.remove(finder)


def _import_cupyx_without_scipy() -> None:
    """Import ``cupyx`` in the calling thread with SciPy kept out of it
    (:class:`_NoSciPyInThread`); where SciPy is already loaded, ``cupyx`` as it comes."""
    import sys
    import threading
    if "scipy" in sys.modules:
        return
    finder = _NoSciPyInThread(threading.get_ident())
    sys.meta_path.insert(0, finder)
    try:
        import cupyx  # noqa: F401 - loaded for its side effect, once per process
        cupyx.scatter_add  # CuPy's lazy placeholder runs the package body on first use
    finally:
        sys.meta_path.remove(finder)


def _first_uses(cupy) -> None:
    """Call once, on small arrays, an elementwise operation and the sorts, scans and
    searches that every exploration and cycle engine run makes on the device: their first
    call costs per process, not per size. CuPy's first elementwise call loads ``cupyx``
    (through CuPy's lazy placeholder), which imports SciPy's sparse matrices: 0.24-0.3 s;
    NVRTC's start and the sort's and scan's kernels another 0.1-0.2 s (measured on the H100
    machine with ``tools/device/kernel_census.py`` and ``first_use.py``). In
    :func:`warm_up`'s thread they overlap the host's first chunks instead of delaying the
    first chunk on the device (``dvecost analyze --backend gpu`` of cs_10: 1.63 -> 1.28 s,
    median of 5 processes each, together with :func:`_start_driver`). The results are
    dropped."""
    import numpy
    n = 1 << 15   # a chunk's size: the sorts pick their kernels by size
    a = cupy.arange(n, dtype=numpy.uint64)[::-1].copy()
    i = a.view(numpy.int64)
    low = i < 5                                 # the first elementwise call (see above)
    a.sort()                                    # the visited set's sort of tags
    i.copy().sort()                             # the edges' sort
    cupy.argsort(i)                             # new ids in discovery order
    cupy.flatnonzero(low)                       # scans (run starts, boolean masks)
    cupy.cumsum(i)
    cupy.searchsorted(a, a)                     # look-ups in the visited set's runs
    cupy.cuda.Device().synchronize()


#: The thread :func:`warm_up` started last (None before).
_WARMING = None


def array_module(backend: str):
    """The array module for a resolved backend: ``numpy`` for ``'cpu'``, ``cupy`` for ``'gpu'``.

    >>> array_module("cpu").__name__
    'numpy'
    """
    if backend == "gpu":
        import cupy
        return cupy
    import numpy
    return numpy


def array_module_for(backend: str):
    """The array module for ``backend`` whatever the size of the work (state-space
    exploration: its size is known only at the end): NumPy for ``'cpu'``, CuPy for ``'gpu'``
    (:class:`~ocm.errors.BackendUnavailableError` where there is none), and for ``'auto'``
    NumPy where CuPy is not installed, else a :class:`DeferredDevice`: nothing is imported
    until the work is large enough to use the device. For ``'gpu'`` while :func:`warm_up`'s
    thread is still at work, a :class:`DeferredDevice` that requires the device (the
    caller's first use of it waits for CuPy, and raises BackendUnavailableError if there is
    no device after all).

    >>> array_module_for("cpu").__name__
    'numpy'
    """
    if backend == "auto":
        return DeferredDevice() if cupy_installed() else array_module("cpu")
    if (backend == "gpu" and _WARMING is not None and _WARMING.is_alive()
            and cupy_installed()):
        # warm_up is importing CuPy and starting CUDA: the explorer computes its first,
        # small chunks on the host meanwhile, and asks for the device when it needs it (a
        # device that is missing after all is reported then: BackendUnavailableError).
        return DeferredDevice(required=True)
    return array_module(resolve_backend(backend, 0))


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


class DeferredDevice(types.ModuleType):
    """CuPy, imported on first use: the array module ``auto`` gives the explorer.

    The explorer keeps a device module aside and computes on the host until a chunk of
    ``Explorer.device_min_rows`` states; only then does it read anything off the module (the
    device's free memory first). So a small model never imports CuPy or starts CUDA, the
    fixed cost that ``auto`` avoids. The first attribute read resolves the module: CuPy when
    it imports and a device answers (:func:`gpu_available`; every later read is CuPy's own
    attribute), else a device with no free memory, so that the explorer stays on the host;
    :attr:`unavailable` then holds the reason (a caller may drop the explorer's fallback
    warning, which is about a device that never was). With ``required`` (``--backend gpu``,
    see :func:`array_module_for`) no device raises :class:`~ocm.errors.BackendUnavailableError`
    instead.

    Examples
    --------
    >>> xp = DeferredDevice()
    >>> xp.resolved, xp.unavailable
    (False, None)
    """

    def __init__(self, required: bool = False) -> None:
        super().__init__("cupy", "CuPy, imported when first used (ocm.backend.DeferredDevice)")
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
            raise BackendUnavailableError(f"the GPU backend is unavailable: "
                                          f"{self.unavailable}; {_INSTALL_HINT}")
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


def is_out_of_memory(exc: BaseException) -> bool:
    """True when ``exc`` is CuPy's or CUDA's out-of-device-memory error.

    Checks by class name and CUDA error text so that it works without importing CuPy.

    >>> is_out_of_memory(MemoryError())
    False
    """
    for e in (exc, getattr(exc, "__cause__", None)):
        if e is None:
            continue
        if type(e).__name__ == "OutOfMemoryError":  # cupy.cuda.memory.OutOfMemoryError
            return True
        if "cudaErrorMemoryAllocation" in str(e) or "CUDA_ERROR_OUT_OF_MEMORY" in str(e):
            return True
    return False


def warn_fallback(exc: BaseException, n_edges: int) -> None:
    """Warn (:class:`GpuFallbackWarning`) that the GPU ran out of memory and the CPU takes over.

    Frees CuPy's memory pools first, so that a later GPU call starts clean.
    """
    try:
        import cupy
        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:  # noqa: BLE001 - best effort only
        pass
    warnings.warn(f"the GPU ran out of memory on a graph of {n_edges} edges ({exc}); "
                  "continuing on the CPU engine", GpuFallbackWarning, stacklevel=3)


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
    The result of ``run``, from the CPU engine after a :class:`GpuFallbackWarning` when the
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
