"""Where a search's arrays live: the hand-over to the device, and the way back to the host.

A search started with a device module (CuPy) runs on the host until its first chunk of
:attr:`Placement.device_min_rows` states, then moves its visited set, frontier and levels to
the device (:meth:`Placement.move`); before each chunk there it checks that the device's free
memory holds the next step (:meth:`Placement.fits`). When it does not, or an allocation fails,
the search goes back to the host from the last chunk boundary with a warning, or stops with
:class:`~runtime.errors.OutOfMemory` (:meth:`Placement.full`). This is the one place where an
array of the search changes module.
"""

from __future__ import annotations

import os
import warnings

import numpy as np

from runtime.arrays import on_device
from runtime.device import (DeviceFallbackWarning, device_free_bytes, is_out_of_memory,
                            release_pool, to_host)
from runtime.errors import OutOfMemory

from ..kernel import SuccessorKernel
from ..next_state import KernelGenerator

__all__ = ["Placement", "kernel_generator", "out_of_device_memory"]


class Placement:
    """The device placement of one search (see the module docstring).

    Parameters
    ----------
    device_xp : module or None
        The device module the search may move to (None: it stays on the host).
    on_device_full : {'host', 'stop'}
        What a full device does: continue on the host with a warning, or stop.
    """

    #: On a device, the successors of ``system async`` models come from one generated kernel
    #: (:mod:`statespace.kernel`) where the model is in its scope; False: the array form.
    #: (The environment variable ``DVECOST_KERNEL=off`` does the same, for measurements.)
    use_kernel = True

    #: With a device module: exploration moves to the device at the first chunk of this many
    #: states. Without the generated kernel, later chunks of fewer states get their
    #: successors computed on the host (the same code over NumPy; the visited set and the
    #: outputs stay on the device): the array form costs the device a fixed few thousand
    #: kernel launches and synchronisations a chunk whatever its size, more than the host
    #: takes for a small frontier. The kernel takes every chunk on the device (measured on
    #: cs_10's last 15 chunks, of 1 to 15,540 states: 7-18 ms each on the host path).
    device_min_rows = 1 << 14

    def __init__(self, device_xp, on_device_full: str) -> None:
        if on_device_full not in ("host", "stop"):
            raise ValueError(f"on_device_full must be 'host' or 'stop', not {on_device_full!r}")
        self.device_xp = device_xp
        self.on_device_full = on_device_full
        #: The generator by the model's generated kernel, once on a device (when in its scope).
        self.kernel: KernelGenerator | None = None

    def should_move(self, search, k: int) -> bool:
        """Whether the search moves to the device before a chunk of ``k`` states (it is on
        the host, may move, the chunk is large enough and the step fits there)."""
        return (self.device_xp is not None and search.xp is np
                and k >= self.device_min_rows and self.fits(search, True))

    def move(self, search) -> None:
        """:meth:`to_device`; when an allocation there fails, :meth:`full` (what was moved
        comes back to the host, or the search stops)."""
        if out_of_device_memory(self.to_device, search):
            self.full(search, "an allocation on the GPU failed")

    def to_device(self, search) -> None:
        """Move the search's state to the device module: the visited set, the frontier, the
        levels, the keys and tables a chunk reads, and the generator's evaluator; outputs
        recorded so far stay on the host."""
        xp = self.device_xp
        search.gen.at(xp)   # the device's evaluator, made now
        search.xp = xp
        search.visited.to(xp)
        search.builder.to_device(xp)
        search.init_key, search.err_key = xp.asarray(search.init_key), xp.asarray(search.err_key)
        if self.use_kernel:
            self.kernel = kernel_generator(search.gen, xp)

    def fits(self, search, moving: bool) -> bool:
        """Whether the next step fits in the device's free memory (the search's
        ``step_bytes``, plus with ``moving`` the visited set, frontier and levels copied over
        at the hand-over). When it does not, :meth:`full` decides (host or stop) and this
        returns False. A module that cannot tell its free memory always fits."""
        free = device_free_bytes(self.device_xp)
        if free is None:
            return True
        need = sum(search.step_bytes())
        if moving:
            need += search.visited.nbytes + search.builder.device_bytes()
        if need <= free:
            return True
        self.full(search, f"the GPU has {_mib(free)} free, the next step needs about "
                          f"{_mib(need)}")
        return False

    def full(self, search, why: str) -> None:
        """The device is full at a chunk boundary: continue on the host (``on_device_full``
        'host', with a warning) or raise :class:`OutOfMemory` with the graph so far."""
        if on_device(search.xp) or on_device(search.visited.xp):   # (also half moved)
            self.to_host(search)
        self.device_xp = None   # never back to the device
        if self.on_device_full == "host":
            warnings.warn(f"{why} at {search.mark[0]:,} states; exploration continues on the "
                          "CPU (--backend gpu stops instead)", DeviceFallbackWarning,
                          stacklevel=2)
            return
        exc = OutOfMemory(None, search.mark[0], partial=search.partial())
        exc.device, exc.why = True, why
        exc.counts = search.counts_of(exc.partial)
        raise exc

    def to_host(self, search) -> None:
        """:meth:`to_device` undone: everything the search holds copied to the host; the
        device's pool emptied."""
        dev = self.device_xp
        search.visited.to(np)
        search.builder.to_host()
        search.init_key, search.err_key = to_host(search.init_key), to_host(search.err_key)
        search.xp = np
        release_pool(dev)


def kernel_generator(gen, xp) -> KernelGenerator | None:
    """The generator by the model's generated kernel over device module ``xp``, compiled
    now: None when ``xp`` compiles no kernels, the model is not ``system async`` or is
    outside the kernel's scope, ``DVECOST_KERNEL=off`` is set, or the kernel fails to compile
    (then with a :class:`~runtime.device.DeviceFallbackWarning`: the array form computes the
    same). ``gen`` is the model's array-form generator."""
    if not (hasattr(xp, "RawModule") and gen.kind == "async"
            and os.environ.get("DVECOST_KERNEL", "on") != "off"):
        return None
    kernel = SuccessorKernel.for_model(gen.cm, charges=gen.charge_table is None)
    if kernel is None:
        return None
    made = KernelGenerator(gen, kernel, xp)
    try:
        made.compile()   # compiled now, once
    except Exception as exc:   # noqa: BLE001 - the array form computes the same
        if is_out_of_memory(exc):
            raise
        warnings.warn(f"{gen.cm.name}: the generated successor kernel did not "
                      f"compile ({type(exc).__name__}: {str(exc)[:200]}); exploring "
                      "with array operations instead", DeviceFallbackWarning, stacklevel=3)
        return None
    return made


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB"


def out_of_device_memory(fn, *args) -> bool:
    """Call ``fn(*args)``; True when it failed for want of device memory (any other error
    goes on up). The caller recovers after this returns, not inside the handler: by then the
    failed call's device arrays, which the exception's frames held, are freed."""
    try:
        fn(*args)
    except Exception as exc:   # noqa: BLE001 - only the device's OOM
        if not is_out_of_memory(exc):
            raise
        return True
    return False
