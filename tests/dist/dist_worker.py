"""Run under ``mpiexec``: explore each model named on the command line as every process of the
world and, on process 0, write one JSON line per model: the digest of every array
(``tools/graph_digest.py``), the palette rows per edge, the counts, or the refusal's message.

``python dist_worker.py OUT MODEL[:N] ...``: ``MODEL:N`` sets ``-D N=N``.
"""

import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import numpy as np  # noqa: E402

import dve  # noqa: E402
from graph_digest import digest  # noqa: E402
from runtime.comm import world  # noqa: E402
from statespace.dist import DistributedRefused, explore_distributed  # noqa: E402


def main() -> None:
    comm = world()
    out = []
    for spec in sys.argv[2:]:
        path, _, n = spec.partition(":")
        model = dve.load_model(path, defines={"N": int(n)} if n else None)
        try:
            g = explore_distributed(model, comm)
        except DistributedRefused as exc:
            out.append({"model": spec, "refused": str(exc)})
            continue
        if comm.rank == 0:
            out.append({"model": spec, "size": comm.size, "digest": digest(g),
                        "charge": [str(g.charge.dtype), np.asarray(g.charge).tolist()],
                        "palette_time": np.asarray(g.palette.time).tolist(),
                        "states": g.n_states, "edges": g.n_edges})
        else:
            assert g is None
    if comm.rank == 0:
        pathlib.Path(sys.argv[1]).write_text("\n".join(json.dumps(o) for o in out))


if __name__ == "__main__":
    main()
