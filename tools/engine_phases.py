"""Where a blocked run's time goes, on the CPU: run under ``mpiexec``, every process explores
the model with the graph left in blocks, runs the cycle engine across the processes and
gathers the runs shown, as ``DVECOST_DIST_ENGINE=blocks dvecost analyze`` does; process 0
prints one JSON line: the states and transitions, the answer, and what ``analyze --json``
reports under ``distributed`` (each phase's seconds on the slowest process, the rounds)::

    PYTHONPATH=$PWD mpiexec -n 2 python tools/engine_phases.py \\
        dvecost/examples/client_server_template.dve N=10 [--stand-in] [--profile DIR]

``--stand-in``: the search and the engine over the tests' NumPy stand-in of CuPy (the device
code path, kernels emulated); ``--profile DIR``: each process's cProfile of the engine and
the runs gathered, as ``DIR/engine.RANK.prof``. On the GPUs, ``dvecost analyze --gpus N
--json`` reports the same phases itself.
"""

from __future__ import annotations

import cProfile
import json
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main(argv: list[str]) -> None:
    import dve
    from dvecost.distributed import host_comm, phase_report, shown_edges, solve_blocks
    from runtime.comm import world
    from statespace.dist import explore_distributed
    from statespace.dist.blocks import counts_graph, hand_over_blocks, witness_graph

    path, defines = argv[0], dict(a.split("=") for a in argv[1:] if "=" in a)
    comm, options = world(), {}
    if "--stand-in" in argv:
        sys.path[:0] = [str(ROOT / "tests" / "dist"), str(ROOT / "tests" / "statespace")]
        import os
        os.environ["DIST_XP"] = "stand-in"
        from cycle_cases import worker_comm
        comm = worker_comm(comm)
        options["xp"] = comm.xp
    profile = argv[argv.index("--profile") + 1] if "--profile" in argv else None
    model = dve.load_model(path, defines={k: int(v) for k, v in defines.items()})
    t0 = time.perf_counter()
    seconds: dict = {}
    block = explore_distributed(model, comm, handover=hand_over_blocks, timings=seconds,
                                **options)
    t = time.perf_counter()
    counts_graph(block, host_comm(comm))
    seconds["counts"] = time.perf_counter() - t
    prof = cProfile.Profile() if profile else None
    if prof:
        prof.enable()
    rounds: dict = {}
    res = block.model.resources[0]
    outcome = solve_blocks(block, comm, res, "mean", "max", rounds)
    t1 = time.perf_counter()
    witness_graph(block, host_comm(comm), shown_edges(outcome))
    report = phase_report(host_comm(comm), seconds, outcome, rounds, time.perf_counter() - t1)
    if prof:
        prof.disable()
        pathlib.Path(profile).mkdir(parents=True, exist_ok=True)
        prof.dump_stats(f"{profile}/engine.{comm.rank}.prof")
    if comm.rank == 0:
        print(json.dumps({"model": path, **defines, "processes": comm.size,
                          "n": block.n, "m": block.m, "value": str(outcome.value),
                          "certified": outcome.certified, "wall": time.perf_counter() - t0,
                          **report}))


if __name__ == "__main__":
    main(sys.argv[1:])
