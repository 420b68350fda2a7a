"""The next-state generator of ``system async`` models by one generated GPU kernel."""

from __future__ import annotations

from ..kernel import SuccessorKernel
from .async_gen import AsyncGenerator
from .record import Successors

__all__ = ["KernelGenerator"]


class KernelGenerator:
    """The successors of an :class:`~statespace.next_state.AsyncGenerator`'s model computed by
    the model's generated kernel (:mod:`statespace.kernel`): the same steps, faults, keys,
    costs and times, in (source row, action) order rather than by action (the search sorts
    them either way); the error key already written where a step faults.

    Parameters
    ----------
    inner : AsyncGenerator
        The array-form generator of the model (its tables and charge table are this one's).
    kernel : SuccessorKernel
        The model's kernel (:meth:`SuccessorKernel.for_model
        <statespace.kernel.SuccessorKernel.for_model>`), with charges exactly when the
        model's charges are not constants.
    xp : module
        A device array module with ``RawModule`` (CuPy).
    """

    kind = "async"
    #: The kernel writes the error state's key where a step faults.
    writes_error_key = True

    def __init__(self, inner: AsyncGenerator, kernel: SuccessorKernel, xp) -> None:
        self.inner, self.kernel, self.xp = inner, kernel, xp
        self.cm, self.layout, self.res = inner.cm, inner.layout, inner.res
        self.charge_table = inner.charge_table

    def n_actions(self) -> int:
        """The number of action ids."""
        return self.inner.n_actions()

    def compile(self) -> None:
        """Compile the kernel now (once), so that a failure shows before the first chunk."""
        self.kernel.function(self.xp)

    def successors(self, keys, X) -> Successors:
        """The steps of the chunk (``keys``, ``X`` on the device), as
        :meth:`AsyncGenerator.successors <statespace.next_state.AsyncGenerator.successors>`
        gives them (up to their order)."""
        return Successors(*self.kernel.successors(self.xp, X, keys))
