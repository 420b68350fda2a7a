"""What the agreement of failures costs the cycle engine across processes: run under
``mpiexec``, every process explores the model with the graph left in blocks, then runs the
engine ``REPEATS`` times over the guarded communicator (:func:`runtime.guard.guarded`, what a
run uses) and as many over the plain one, interleaved (guarded first on even repeats, plain
first on odd ones); process 0 prints one JSON line: per process and per way, each run's wall
and CPU seconds (``time.process_time``), and the guarded run's headers and agreed receive
buffers. A third argument gives a template's ``N`` (``-D N=...``); the client/server family
with ten clients (846,369 states, 6,298,560 transitions) is the bundled template at N = 10::

    PYTHONPATH=$PWD mpiexec -n 2 python tools/guard_cost.py \
        dvecost/examples/client_server_template.dve 6 10

With ``DVECOST_COMM=nccl`` (one process per GPU) the same on the GPUs.
"""

from __future__ import annotations

import json
import sys
import time


def main(argv: list[str]) -> None:
    import dve
    from dvecost.distributed import engine_block, engine_comm
    from ocm.dist import optimal_cycle_distributed
    from runtime.comm import Forwarding, world
    from runtime.guard import guarded
    from statespace.dist import explore_distributed
    from statespace.dist.blocks import hand_over_blocks

    comm = world()
    defines = {"N": int(argv[2])} if len(argv) > 2 else None
    block = explore_distributed(dve.load_model(argv[0], defines=defines), comm,
                                handover=hand_over_blocks)
    g = engine_block(block, block.model.resources[0], False)
    base = engine_comm(comm, block)
    ways = {"guarded": guarded(base), "plain": Forwarding(base)}
    state = ways["guarded"].state
    out: dict = {"guarded": [], "plain": []}
    value = None
    for i in range(int(argv[1])):
        for name in ("guarded", "plain") if i % 2 == 0 else ("plain", "guarded"):
            base.barrier()
            was = (state.headers, state.agreed_buffers)
            w0, c0 = time.perf_counter(), time.process_time()
            r = optimal_cycle_distributed(g, ways[name], kind="mean", mode="max")
            out[name].append((round(time.perf_counter() - w0, 3),
                              round(time.process_time() - c0, 3)))
            if name == "guarded":
                value = str(r.value)
                per_run = {"headers": state.headers - was[0],
                           "agreed_buffers": state.agreed_buffers - was[1]}
    every = comm.allgather(out)
    if comm.rank == 0:
        print(json.dumps({"n": block.n, "m": block.m, "value": value, "per_run": per_run,
                          "processes": every}))


if __name__ == "__main__":
    main(sys.argv[1:])
