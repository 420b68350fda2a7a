"""``analyze`` as several processes with the graph left in blocks: the cycle engine across
processes (``ocm.dist``) and the runs shown gathered to process 0.

Every process calls the same steps in the same order (SPMD): the distributed search with the
block hand-over (:func:`statespace.dist.blocks.hand_over_blocks`), the whole graph's counts
agreed on process 0 (:func:`statespace.dist.blocks.counts_graph`: a few numbers a process),
process 0's question (resource, kind, mode) sent to every process, the engine on every
block, then the runs of its answer gathered to process 0. :class:`BlockRun` holds one
process's side of it; process 0 drives it through :func:`dvecost.analyze`'s ``explore`` and
``engine`` hooks, the others through :meth:`BlockRun.follow`.

From the end of the search to the answer the processes talk through the guarded
communicator (:func:`runtime.guard.guarded`): a failed allocation on any process (the
hand-over, the counts, the engine's phases, the runs gathered) is agreed at the next
collective, every process raises :class:`runtime.errors.AgreedOutOfMemory` with the graph's
counts and the phase, and the run ends with exit 3, process 0 printing the stop.

The answer is the one-process engine's (``ocm.optimal_cycle`` in its default mode on the
host: the edges inside SCCs), value, critical cycle, iterations and certificate alike, so
that process 0 prints what one process prints.
"""

from __future__ import annotations

import time as _time
from typing import Any

import numpy as np

from ocm.dist import PHASES, GraphBlock, optimal_cycle_distributed
from ocm import Palette
from ocm.errors import OcmError
from runtime.comm import Comm
from runtime.device import release_pool
from runtime.guard import guarded, has_failed
from runtime.arrays import module_of
from statespace.dist import explore_distributed
from statespace.dist.blocks import (StateBlock, counts_graph, hand_over_auto, hand_over_blocks,
                                    witness_graph)
from statespace.quotient import Quotient
from statespace.dist.search import DISTRIBUTED_SYMMETRY

__all__ = ["BlockRun", "engine_block", "engine_comm", "solve_blocks", "phase_report",
           "shown_edges", "host_comm"]


def host_comm(comm: Comm) -> Comm:
    """The communicator the engine's NumPy arrays travel by: ``comm`` itself, or the MPI
    beside NCCL's (:class:`runtime.comm.NcclComm` exchanges device arrays)."""
    return comm if comm.xp is np else getattr(comm, "mpi", comm)


def engine_comm(comm: Comm, block: StateBlock) -> Comm:
    """The communicator the engine runs over: ``comm`` itself (its arrays are the rows': on
    the GPUs under NCCL after a search on them), or the MPI beside NCCL's when the rows are
    on the host."""
    if comm.xp is np or module_of(block.targets) is not np:
        return comm
    return getattr(comm, "mpi", comm)


def engine_block(block: StateBlock, resource: str, ratio: bool) -> GraphBlock:
    """The engine's view of a process's block: its rows where the search left them (the
    block's layout of runs of ids), the cost of ``resource`` and the times as palettes (each
    edge's row of the block's palette, read where needed: 1 or 2 bytes an edge rather than
    8 each)."""
    xp = module_of(block.charge)

    def column(values: np.ndarray) -> Palette:
        return Palette(block.charge, np.asarray(values, np.int64) if xp is np else
                       xp.asarray(values, dtype=np.int64))
    return GraphBlock(n=block.n, m=block.m, layout=block.layout, indptr=block.indptr,
                      indices=block.targets, cost=column(block.palette.costs[resource]),
                      time=column(block.palette.time) if ratio else None)


def solve_blocks(block: StateBlock, comm: Comm, resource: str, kind: str, mode: str,
                 rounds: dict | None = None, on_lap=None):
    """The engine across processes on the blocks: a ``CycleResult``, or the ``OcmError``
    (no cycle, a zero-time cycle, ...) every process got; ``rounds`` filled as
    :func:`ocm.dist.optimal_cycle_distributed` fills it (and ``on_lap`` called as it
    calls it). Collective."""
    try:
        return optimal_cycle_distributed(engine_block(block, resource, kind == "ratio"),
                                         engine_comm(comm, block), kind=kind, mode=mode,
                                         rounds=rounds, on_lap=on_lap)
    except OcmError as exc:
        return exc


def phase_report(comm: Comm, search: dict, outcome, rounds: dict, witness: float) -> dict:
    """What ``analyze --json`` reports of a blocked run (``distributed``): the processes, the
    wall seconds of each phase on the slowest process for it (the search's levels, the
    hand-over to blocks, the graph's counts agreed on process 0, the engine's phases in
    :data:`ocm.dist.PHASES` order, the runs shown gathered) and the engine's rounds.
    Collective (one ``allgather``).

    >>> from runtime.comm import SelfComm
    >>> d = phase_report(SelfComm(), {"search": 2.0, "gather": 1.0}, None, {"trim": 3}, 0.5)
    >>> d["processes"], list(d["seconds"]), d["rounds"]
    (1, ['search', 'handover', 'counts', 'witness'], {'trim': 3})
    """
    mine = {"search": float(search.get("search", 0.0)),
            "handover": float(search.get("gather", 0.0)),
            "counts": float(search.get("counts", 0.0)), "witness": float(witness)}
    slowest: dict[str, float] = {}
    for part in comm.allgather(mine):
        for k, v in part.items():
            slowest[k] = max(slowest.get(k, 0.0), v)
    engine = dict(getattr(outcome, "timings", None) or {})   # (each phase's slowest already)
    seconds = {"search": slowest["search"], "handover": slowest["handover"],
               "counts": slowest["counts"]}
    seconds.update((k, float(engine[k])) for k in PHASES if k in engine)
    seconds["witness"] = slowest["witness"]
    return {"processes": comm.size, "seconds": seconds, "rounds": dict(rounds)}


def shown_edges(outcome) -> list:
    """The edges whose runs are shown: the critical cycle's, or the zero-time cycle's."""
    return list(getattr(outcome, "cycle_edges", None) or getattr(outcome, "edges", ()) or ())


class BlockRun:
    """One process's side of a blocked analysis (see the module docstring).

    Parameters
    ----------
    comm : runtime.comm.Comm
    auto : bool
        Keep the graph in blocks only where, gathered, it would not fit process 0's device
        (:func:`statespace.dist.blocks.hand_over_auto`); where it fits, process 0 gathers it
        and its one-process engine answers (:meth:`engine` then leaves the answer to it).
    trace : callable, optional
        Given one line of text as each step of this process ends (the search with the
        hand-over, each phase of the engine, the runs gathered), with the seconds since the
        run began: what a run stopped before its answer had done (``DVECOST_DIST_TRACE``).
    """

    def __init__(self, comm: Comm, auto: bool = False, trace=None) -> None:
        # The search's own collectives agree its stops once a level (the raw communicator);
        # everything after it goes through the guarded one (the search's hand-over too).
        self.search_comm = comm
        self.comm = guarded(comm)
        self.auto = auto
        self.trace = trace
        self.t0 = _time.perf_counter()
        self.block: StateBlock | None = None
        self.gathered = False
        self.asked = False
        self.timings: dict = {}

    def explore(self, compiled, *, max_states, max_memory, progress) -> Quotient | None:
        """The search and the counts (``dvecost.analyze``'s ``explore`` hook on process 0,
        the first step of :meth:`follow` elsewhere)."""
        got = explore_distributed(compiled, self.search_comm, max_states=max_states,
                                  max_memory=max_memory, progress=progress,
                                  handover=hand_over_auto if self.auto else hand_over_blocks,
                                  timings=self.timings)
        if not isinstance(got, StateBlock):   # gathered: the graph on process 0, or None
            self.gathered = True
            return None if got is None else Quotient(got, DISTRIBUTED_SYMMETRY, compiled)
        self.block = got
        self._note("search", self.timings.get("search", 0.0))
        self._note("share", self.timings.get("share", 0.0))
        for step, seconds in got.steps:
            self._note(f"handover.{step}", seconds)
        self._note("handover", self.timings.get("gather", 0.0))
        release_pool(module_of(got.targets))   # (the search's share: the engine's memory)
        t0 = _time.perf_counter()
        # Process 0 holds the whole graph's counts only (no array of every state): what
        # analyze reads before the engine's answer (the states and edges, the deadlocks).
        g = counts_graph(self.block, host_comm(self.comm))
        self.timings["counts"] = _time.perf_counter() - t0
        self._note("counts", self.timings["counts"])
        return None if g is None else Quotient(g, DISTRIBUTED_SYMMETRY, compiled)

    def engine(self, quotient: Quotient, resource: str, kind: str, mode: str):
        """Process 0's ``engine`` hook of :func:`dvecost.analyze`: the question to every
        process, the engine, the runs shown; ``(CycleResult or OcmError, quotient)``, or None
        where the graph was gathered (the one-process engine answers)."""
        if self.gathered:
            return None
        self.asked = True
        self.comm.allgather((resource, kind, mode))
        outcome, g, phases = self._solve(resource, kind, mode)
        return outcome, Quotient(g, DISTRIBUTED_SYMMETRY, quotient.model), phases

    def _solve(self, resource: str, kind: str, mode: str):
        """The engine, the runs shown gathered and the phases' report (every process)."""
        rounds: dict = {}
        outcome = solve_blocks(self.block, self.comm, resource, kind, mode, rounds,
                               None if self.trace is None else self._note)
        t0 = _time.perf_counter()
        g = witness_graph(self.block, host_comm(self.comm), shown_edges(outcome))
        self._note("witness", _time.perf_counter() - t0)
        phases = phase_report(host_comm(self.comm), self.timings, outcome, rounds,
                              _time.perf_counter() - t0)
        return outcome, g, phases

    def _note(self, step: str, seconds: float) -> None:
        if self.trace is not None:
            self.trace(f"[process {self.comm.rank}] {step} {seconds:.3f} s (at "
                       f"{_time.perf_counter() - self.t0:.1f} s)")

    def abandon(self) -> None:
        """Process 0 stopped after exploring and before its engine (a memory limit, an
        error): the others are told instead of being left waiting for the question."""
        if has_failed(self.comm):   # every process stopped together: nobody waits
            return
        if self.block is not None and not self.asked:
            self.asked = True
            self.comm.allgather(None)

    def follow(self, compiled, *, max_states, max_memory) -> int:
        """A process other than 0: the same steps as process 0, printing nothing; its exit
        code (0, or 3 when there is no answer or process 0 stopped before the engine)."""
        self.explore(compiled, max_states=max_states, max_memory=max_memory, progress=None)
        if self.gathered:   # process 0 holds the graph and answers alone
            return 0
        question: Any = self.comm.allgather(None)[0]
        if question is None:
            return 3
        resource, kind, mode = question
        outcome = self._solve(resource, kind, mode)[0]
        return 3 if isinstance(outcome, Exception) else 0
