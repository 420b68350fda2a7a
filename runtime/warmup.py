"""The CLI's start-up of CuPy and CUDA in the background, so that it overlaps the work the
host does first (parsing the model, the first breadth-first chunks).

``dvecost COMMAND --backend gpu`` calls :func:`warm_up` first; what it starts is recorded with
:func:`runtime.device.note_warm_up`, so that :func:`runtime.device.array_module_for` hands the
explorer a deferred device meanwhile. Everything here is best effort: a failure is left for
:func:`runtime.device.gpu_unavailable_reason` to report when the device is asked for.
"""

from __future__ import annotations

import threading

from .device import gpu_unavailable_reason, note_warm_up, warming_up

__all__ = ["warm_up"]


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
    started = warming_up()
    if started is not None:   # started already (the program's entry point starts it first)
        return started
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
    note_warm_up(thread)
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
    (measured on the H100 machine, see docs/history/). Other threads import
    SciPy as usual (the CPU engine's components), during the warm-up or after it."""

    def __init__(self, thread_id: int) -> None:
        self.thread_id = thread_id

    def find_spec(self, name, path=None, target=None):
        if (name == "scipy" or name.startswith("scipy.")) and \
                threading.get_ident() == self.thread_id:
            raise ModuleNotFoundError(f"No module named {name!r} (kept out of dvecost's "
                                      f"device warm-up)", name=name)
        return None


class _NoCuTensorPreload:
    """An import finder that keeps CuPy from preloading cuTENSOR when it is imported.

    ``import cupy`` loads the cuTENSOR library of a pip-installed CuPy at once, and with it
    cuBLASLt (``cupy._environment._preload_library('cutensor')``): 0.06-0.07 s on the H100
    machine (see docs/history/), for a library the device path of a ``dvecost``
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
    machine, see docs/history/). In
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
