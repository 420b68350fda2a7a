"""What process 0 holds of a graph left in blocks: run under ``mpiexec``, the processes analyse
the model as ``DVECOST_DIST_ENGINE=blocks dvecost analyze`` does (:class:`BlockRun`'s hooks
of :func:`dvecost.analyze`), and process 0 prints one JSON line: the graph's states and
transitions, the answer, and the bytes of its report graph's offsets and deadlocks, with the
offsets' type (``Entries``: only the runs' rows; an ``ndarray`` of every state before). A
second argument gives a template's ``N``::

    PYTHONPATH=$PWD mpiexec -n 2 python tools/held_bytes.py \\
        dvecost/examples/client_server_template.dve 11

With ``DVECOST_COMM=nccl`` (one process per GPU) the same on the GPUs.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> None:
    import dve
    from dvecost import analyze
    from dvecost.distributed import BlockRun
    from runtime.comm import world
    from statespace import compile_model

    path = argv[0]
    defines = {"N": int(argv[1])} if len(argv) > 1 else None
    comm = world()
    run = BlockRun(comm)
    if comm.rank != 0:
        run.follow(compile_model(dve.load_model(path, defines=defines)), max_states=None,
                   max_memory=None)
        return
    try:
        a = analyze(path, defines=defines, symmetry="off", explore=run.explore,
                    engine=run.engine, lazy_graph=True)
    finally:
        run.abandon()
    g = a.graph
    print(json.dumps({"model": path, "defines": defines, "processes": comm.size,
                      "n": g.n_states, "m": g.n_edges, "value": a.exact,
                      "offsets_type": type(g.indptr).__name__,
                      "offsets_bytes": int(g.indptr.nbytes),
                      "deadlocks_bytes": int(g.deadlocks.nbytes)}))


if __name__ == "__main__":
    main(sys.argv[1:])
