"""How much memory the cycle engine across processes holds, per phase and per transition, on
the CPU: run under ``mpiexec``, every process explores the model with the graph left in
blocks (as ``DVECOST_DIST_ENGINE=blocks dvecost analyze`` does), then runs the engine with
:mod:`tracemalloc` counting every array NumPy allocates; process 0 prints a table (or, with
``--json``, one JSON line) of each phase's peak of live bytes on each process, divided by
that process's transitions::

    PYTHONPATH=$PWD mpiexec -n 2 python tools/engine_memory.py \\
        dvecost/examples/client_server_template.dve N=10 [--stand-in] [--edge-block K] [--json]

A phase's figure is the block's graph (offsets, targets, actions, palette rows: what the
engine reads, 8 bytes a state and 9 a transition on cs_N) plus the peak, within the phase,
of the arrays the engine allocated and had not freed (NumPy reports its buffers to
``tracemalloc``; arrays that existed before the engine are counted as the graph, never
twice). ``--stand-in``: the engine over the tests' NumPy stand-in of CuPy, so the device
branches (:mod:`ocm.dist.ops`) are the ones measured; ``--edge-block K``: slices of ``K``
edges (:data:`ocm.dist.ops.EDGE_BLOCK`, 2^26 by default, more than a small model's block:
2^18 is to cs_11's 11 M edges a process what 2^26 is to cs_16's 2.75 G a GPU). What a GPU
adds on top is not seen here: CuPy's pool keeps freed blocks (it reuses them, so its peak
is near the live peak) and its sorts take a buffer of the sorted array's size.
"""

from __future__ import annotations

import json
import pathlib
import sys
import tracemalloc

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


class PhaseMeter:
    """The peak of bytes allocated since :meth:`start` and still live, per phase: its
    :meth:`lap` is the engine's ``on_lap`` (a phase's peak is the one since the last lap).

    >>> import numpy as np
    >>> m = PhaseMeter(); m.start()
    >>> a = np.ones(1 << 20); del a; m.lap("trim", 0.0)
    >>> b = np.ones(1 << 18); m.lap("cycle", 0.0); m.stop()
    >>> m.peak["trim"] >= 8 << 20, (2 << 20) <= m.peak["cycle"] < (3 << 20)
    (True, True)
    """

    def __init__(self) -> None:
        self.peak: dict[str, int] = {}
        self.base = 0

    def start(self) -> None:
        if not tracemalloc.is_tracing():
            tracemalloc.start()
        self.base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()

    def lap(self, phase: str, seconds: float) -> None:
        peak = tracemalloc.get_traced_memory()[1] - self.base
        self.peak[phase] = max(self.peak.get(phase, 0), peak)
        tracemalloc.reset_peak()

    def stop(self) -> None:
        tracemalloc.stop()


def graph_bytes(block) -> int:
    """What the engine reads of a process's block: offsets, targets, actions, palette rows."""
    return sum(int(a.nbytes) for a in (block.indptr, block.targets, block.actions,
                                       block.charge))


def measure(path: str, defines: dict, stand_in: bool = False,
            edge_block: int | None = None) -> dict | None:
    """Every process's figures, on process 0 (None elsewhere): transitions, states, the
    graph's bytes and each phase's peak (bytes, the graph included). Collective.
    ``edge_block``: the engine's slices of edges (:data:`ocm.dist.ops.EDGE_BLOCK`) for this
    run, so that a small model's slices are as small a part of its edges as a large one's
    on a GPU."""
    import dve
    from ocm.dist import PHASES, ops
    from dvecost.distributed import host_comm, solve_blocks
    from runtime.comm import world
    from statespace.dist import explore_distributed
    from statespace.dist.blocks import hand_over_blocks

    comm, options = world(), {}
    if stand_in:
        sys.path[:0] = [str(ROOT / "tests" / "dist"), str(ROOT / "tests" / "statespace")]
        import os
        os.environ["DIST_XP"] = "stand-in"
        from cycle_cases import worker_comm
        comm = worker_comm(comm)
        options["xp"] = comm.xp
    if edge_block is not None:
        ops.EDGE_BLOCK = edge_block
    model = dve.load_model(path, defines={k: int(v) for k, v in defines.items()})
    block = explore_distributed(model, comm, handover=hand_over_blocks, timings={},
                                **options)
    meter = PhaseMeter()
    meter.start()
    outcome = solve_blocks(block, comm, block.model.resources[0], "mean", "max", {},
                           on_lap=meter.lap)
    meter.stop()
    g = graph_bytes(block)
    t = np.asarray(block.targets).astype(np.int64)
    far = block.layout.owner_of(t) != comm.rank     # (targets another process holds)
    mine = {"rank": comm.rank, "m": int(block.targets.shape[0]),
            "n": int(block.indptr.shape[0] - 1), "graph": g,
            "remote": int(np.unique(t[far]).shape[0]),
            "phases": {k: g + meter.peak[k] for k in PHASES if k in meter.peak}}
    parts = host_comm(comm).allgather(mine)
    if comm.rank:
        return None
    return {"model": path, **defines, "processes": comm.size, "stand_in": stand_in,
            "edge_block": ops.EDGE_BLOCK,
            "value": str(getattr(outcome, "value", outcome)),
            "certified": bool(getattr(outcome, "certified", False)), "per_process": parts}


def table(report: dict) -> str:
    """Bytes per transition, a phase a line and a process a column, and the peak last."""
    from ocm.dist import PHASES
    procs = report["per_process"]
    lines = [f"{report['model']} {report.get('N', '')} P={report['processes']}"
             f"{' (stand-in of CuPy)' if report['stand_in'] else ''}, slices of "
             f"{report['edge_block']} edges: value "
             f"{report['value']}, certified {report['certified']}",
             f"{'bytes per transition':24}" + "".join(f"{'rank ' + str(p['rank']):>10}"
                                                      for p in procs),
             f"{'transitions':24}" + "".join(f"{p['m']:>10}" for p in procs),
             f"{'states':24}" + "".join(f"{p['n']:>10}" for p in procs),
             f"{'remote targets':24}" + "".join(f"{p['remote']:>10}" for p in procs),
             f"{'graph':24}" + "".join(f"{p['graph'] / p['m']:>10.1f}" for p in procs)]
    for ph in PHASES:
        if any(ph in p["phases"] for p in procs):
            lines.append(f"{ph:24}" + "".join(
                f"{p['phases'].get(ph, 0) / p['m']:>10.1f}" for p in procs))
    lines.append(f"{'peak':24}" + "".join(f"{peak_per_transition(p):>10.1f}" for p in procs))
    return "\n".join(lines)


def peak_per_transition(part: dict) -> float:
    """A process's peak over the phases, per transition of its block."""
    return max(part["phases"].values()) / max(part["m"], 1)


def main(argv: list[str]) -> None:
    path = argv[0]
    defines = dict(a.split("=") for a in argv[1:] if "=" in a)
    block = int(argv[argv.index("--edge-block") + 1]) if "--edge-block" in argv else None
    report = measure(path, defines, "--stand-in" in argv, block)
    if report is not None:
        print(json.dumps(report) if "--json" in argv else table(report))


if __name__ == "__main__":
    main(sys.argv[1:])
