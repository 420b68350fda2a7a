"""Running ``dvecost analyze`` as several processes: under ``mpiexec``, or ``--gpus N``.

``mpiexec -n P dvecost analyze MODEL`` starts P copies of the command; each finds the MPI
world (:func:`runtime.comm.world`) and takes its share of the breadth-first search
(:mod:`statespace.dist`). Process 0 then gathers the graph and runs the one-process engine (on
its GPU under ``--gpus``) where the graph fits its GPU (a search on CPU processes always
gathers: ``DVECOST_DIST_ENGINE=auto``, the default); otherwise, or with
``DVECOST_DIST_ENGINE=blocks``, the graph stays in
blocks of consecutive ids, one per process, the cycle engine runs across the processes (on
their GPUs under ``--gpus``, the rows never leaving them; :mod:`dvecost.distributed`) and only
the runs shown come to process 0, which prints: for graphs too large for one process or one GPU
(on CPU processes it costs more than one process's engine; ``--dot``, which may draw the whole
graph, always gathers). The others print nothing and end with the same exit code. ``dvecost
analyze --gpus N`` starts ``mpiexec -n N`` itself with one process per GPU exchanging through
NCCL.

Before exploring, the processes agree that every one of them is ready (an ``allreduce``): a
process 0 that fails first (a bad option, a model that does not load) sets the others free
instead of leaving them waiting in the search's first collective.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys

from dve.errors import ConfigurationError
from runtime.comm import Comm, launched_world_size, world
from runtime.errors import DvecostError, ExplorationLimit, RunStopped

__all__ = ["distributed_world", "Rendezvous", "follow", "launch_gpus", "add_gpus",
           "engine_in_blocks"]


def engine_in_blocks(args: argparse.Namespace) -> bool | str:
    """Whether the run keeps the graph in blocks and runs the engine across processes
    (``DVECOST_DIST_ENGINE=blocks``: True), gathers it to process 0 (``gather``, and always
    with ``--dot``: False), or decides when the search is done (``auto``, the default:
    ``'auto'``; in blocks only where the gathered graph would not fit process 0's GPU, so a
    search on CPU processes always gathers).

    Raises
    ------
    ConfigurationError
        Another value.
    """
    how = os.environ.get("DVECOST_DIST_ENGINE", "auto")
    if how not in ("gather", "blocks", "auto"):
        raise ConfigurationError(f"DVECOST_DIST_ENGINE={how}: expected gather, blocks or auto "
                                 "(auto, the default, gathers the graph to the first process "
                                 "where it fits its GPU)")
    if getattr(args, "dot", None) or how == "gather":
        return False
    return True if how == "blocks" else "auto"


def add_gpus(p: argparse.ArgumentParser) -> None:
    """``--gpus N``: one process per GPU of this host, through NCCL."""
    p.add_argument("--gpus", type=int, metavar="N",
                   help="explore with N GPUs of this host, one process each (NCCL; starts "
                        "'mpiexec -n N' itself). Under 'mpiexec -n P' the P processes share "
                        "the search on the CPU without this option")


def distributed_world() -> Comm | None:
    """The communicator when this process is one of several (started by ``mpiexec``, or by
    ``--gpus``), else None (mpi4py is not imported then)."""
    if launched_world_size() > 1 or os.environ.get("DVECOST_COMM") == "nccl":
        comm = world()
        return comm if comm.size > 1 else None
    return None


def dist_trace():
    """With ``DVECOST_DIST_TRACE`` set, a function printing one line to standard error (each
    process its own, flushed), given to :class:`dvecost.distributed.BlockRun`: each step of
    a blocked run as it ends, so that a run stopped by a timeout says where its time went;
    else None. With ``DVECOST_DIST_STALL=SECONDS`` too, every process also writes its Python
    stack to standard error each time that long passes (:func:`faulthandler.dump_traceback_later`):
    where a process is while a step does not end (a phase that stalls, a collective that
    waits for a process that never comes)."""
    if not os.environ.get("DVECOST_DIST_TRACE"):
        return None
    stall = os.environ.get("DVECOST_DIST_STALL")
    if stall:
        import faulthandler
        try:
            seconds = float(stall)
        except ValueError:
            seconds = 0.0
        if seconds > 0:
            import atexit
            faulthandler.dump_traceback_later(seconds, repeat=True, file=sys.stderr)
            # (stopped before the interpreter is torn down: a dump then may crash it)
            atexit.register(faulthandler.cancel_dump_traceback_later)

    def trace(line: str) -> None:
        sys.stderr.write(line + "\n")   # (one write a line: the processes share the stream)
        sys.stderr.flush()
    return trace


class Rendezvous:
    """Process 0's side of the agreement to start (see the module docstring): :meth:`explore`
    is the ``explore`` hook of :func:`dvecost.analyze` and, with the graph in blocks,
    :meth:`engine` its ``engine`` hook; :meth:`abandon` frees the others when process 0 fails
    before exploring or before its engine."""

    def __init__(self, comm: Comm, blocks: bool | str = False) -> None:
        from ..distributed import BlockRun
        self.comm = comm
        self.met = False
        self.run = BlockRun(comm, auto=blocks == "auto", trace=dist_trace()) if blocks \
            else None

    def explore(self, compiled, *, max_states, max_memory, progress):
        from statespace.dist import distributed_quotient
        self.met = True
        if self.comm.allreduce(1, "min") == 0:
            raise ConfigurationError("another process of the run could not start")
        if self.run is not None:
            return self.run.explore(compiled, max_states=max_states, max_memory=max_memory,
                                    progress=progress)
        return distributed_quotient(compiled, self.comm, max_states=max_states,
                                    max_memory=max_memory, progress=progress)

    @property
    def engine(self):
        """The ``engine`` hook of :func:`dvecost.analyze` (None: the one-process engine on
        the gathered graph)."""
        return None if self.run is None else self.run.engine

    def abandon(self) -> None:
        if not self.met:
            self.met = True
            self.comm.allreduce(0, "min")
        elif self.run is not None:
            self.run.abandon()


def follow(args: argparse.Namespace, comm: Comm, blocks: bool | str = False) -> int:
    """A process other than 0: its share of the search, printing nothing; the exit code is
    the one process 0 ends with (2 bad input, 3 a limit, 128 + signal number)."""
    from dve import load_model
    from statespace import compile_model
    from statespace.dist import explore_distributed

    from . import parse_defines, stop_info

    try:
        try:
            model = load_model(args.model, defines=parse_defines(args.defines))
            compiled = compile_model(model)
            ready = 1
        except DvecostError:
            ready = 0
        if comm.allreduce(ready, "min") == 0:
            return 2
        if blocks:
            from ..distributed import BlockRun
            return BlockRun(comm, auto=blocks == "auto", trace=dist_trace()).follow(
                compiled, max_states=args.max_states, max_memory=args.max_memory)
        explore_distributed(compiled, comm, max_states=args.max_states,
                            max_memory=args.max_memory)
        return 0
    except ConfigurationError:
        return 2
    except (ExplorationLimit, RunStopped) as exc:
        return stop_info(exc, args)["exit_code"]


def launch_gpus(n: int, argv: list[str]) -> int:
    """Run this command again as ``mpiexec -n n`` processes, one per GPU, exchanging through
    NCCL (``DVECOST_COMM=nccl``); its exit code."""
    if n < 1:
        raise ConfigurationError(f"--gpus {n}: expected at least 1")
    launcher = shutil.which("mpiexec", path=os.path.dirname(sys.executable)) or \
        shutil.which("mpiexec")
    if launcher is None:
        raise ConfigurationError("--gpus starts its processes with mpiexec, which is not "
                                 "installed: pip install 'dvecost[dist]' brings mpi4py and "
                                 "MPICH's mpiexec")
    words = _without_gpus(argv)
    env = dict(os.environ, DVECOST_COMM="nccl")
    # mpiexec's own messages go straight to our stderr (inherited, not captured), so a launch
    # that fails shows why. Open MPI refuses to run as root unless the user allows it: said
    # as a hint, never allowed for them.
    code = subprocess.call([launcher, "-n", str(n), sys.executable, "-m", "dvecost", *words],
                           env=env)
    if code not in (0, 2, 3, 130, 143) and _root() and \
            "OMPI_ALLOW_RUN_AS_ROOT" not in os.environ:
        print("dvecost: hint: if mpiexec is Open MPI's, it refuses to run as root unless "
              "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 are set",
              file=sys.stderr)
    return code


def _root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _without_gpus(argv: list[str]) -> list[str]:
    """``argv`` less its ``--gpus N`` (or ``--gpus=N``).

    >>> _without_gpus(["analyze", "m.dve", "--gpus", "2", "-q"])
    ['analyze', 'm.dve', '-q']
    >>> _without_gpus(["analyze", "--gpus=4", "m.dve"])
    ['analyze', 'm.dve']
    """
    out, skip = [], False
    for w in argv:
        if skip:
            skip = False
        elif w == "--gpus":
            skip = True
        elif not w.startswith("--gpus="):
            out.append(w)
    return out
