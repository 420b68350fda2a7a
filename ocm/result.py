"""``CycleResult``: what the cycle engine returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

__all__ = ["CycleResult", "SccOptimum"]


@dataclass(frozen=True)
class SccOptimum:
    """The optimum of one nontrivial strongly connected component.

    Attributes
    ----------
    first : int
        The SCC's smallest vertex (names it).
    size : int
        Number of vertices in the SCC.
    value : Fraction
        Its optimal cycle mean or ratio (in the requested mode).
    """

    first: int
    size: int
    value: Fraction


@dataclass(frozen=True)
class CycleResult:
    """The optimal cycle mean or ratio of a graph, its critical cycle and how it was found.

    Attributes
    ----------
    value : Fraction
        The exact optimum ``p/q``: the critical cycle's sum of costs over its number of edges
        (mean) or its sum of times (ratio).
    cycle : tuple of int
        Vertices of the critical cycle, rotated to start at its smallest vertex;
        ``cycle_edges[i]`` goes from ``cycle[i]`` to ``cycle[(i + 1) % len(cycle)]``.
    cycle_edges : tuple of int
        Edge ids (positions in ``indices``) of the critical cycle.
    kind : str
        ``'mean'`` or ``'ratio'``.
    mode : str
        ``'max'`` or ``'min'``.
    certified : bool
        True when the exact certificate (integer potentials checked on every edge) held. The
        engine never returns ``certified=False`` silently: see ``ocm.optimal_cycle``.
    iterations : int
        Howard value determinations (including any resumed after a failed certificate).
    backend : str
        ``'cpu'`` or ``'gpu'``.
    timings : dict
        Seconds per phase (``prepare``, ``howard``, ``certify``, ``total``, ...).
    scc_optima : tuple of SccOptimum or None
        Optimum of every nontrivial SCC, ordered by smallest vertex; None when the engine ran
        without an SCC decomposition.
    n_vertices, n_edges : int
        Size of the input graph.
    """

    value: Fraction
    cycle: tuple[int, ...]
    cycle_edges: tuple[int, ...]
    kind: str
    mode: str
    certified: bool
    iterations: int
    backend: str
    timings: dict = field(default_factory=dict, compare=False)
    scc_optima: tuple[SccOptimum, ...] | None = None
    n_vertices: int = 0
    n_edges: int = 0

    @property
    def numerator(self) -> int:
        return self.value.numerator

    @property
    def denominator(self) -> int:
        return self.value.denominator

    @property
    def exact(self) -> str:
        """``'p/q'``, or ``'p'`` when ``q == 1``.

        >>> CycleResult(Fraction(7, 3), (0,), (0,), 'mean', 'max', True, 1, 'cpu').exact
        '7/3'
        """
        return str(self.value)  # Fraction's own text: 'p/q', or 'p' for an integer

    def as_dict(self) -> dict:
        """A JSON-ready dict (the CLI's ``--json`` object is built from it)."""
        return {
            "value": float(self.value), "exact": self.exact, "certified": self.certified,
            "kind": self.kind, "mode": self.mode, "cycle": list(self.cycle),
            "cycle_edges": list(self.cycle_edges), "cycle_length": len(self.cycle),
            "iterations": self.iterations, "backend": self.backend,
            "n_vertices": self.n_vertices, "n_edges": self.n_edges,
            "n_sccs": None if self.scc_optima is None else len(self.scc_optima),
            "timings": dict(self.timings),
        }
