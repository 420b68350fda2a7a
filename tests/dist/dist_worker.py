"""Run under ``mpiexec``: explore each model named on the command line as every process of the
world and, on process 0, write one JSON line per model: the digest of every array
(``tools/graph_digest.py``), the palette rows per edge, the counts, or the refusal's message.

``python dist_worker.py OUT MODEL[:N] ...``: ``MODEL:N`` sets ``-D N=N``; a ``.py`` scenario
file ``FILE.py:N`` is its family rendered for ``N`` clients.
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
from statespace.dist import explore_distributed  # noqa: E402


def load(spec: str):
    """The model a spec names (see the module docstring)."""
    path, _, n = spec.partition(":")
    if path.endswith(".py"):
        from scenarios.loader import load_spec
        return load_spec(path)(int(n)).to_model()
    return dve.load_model(path, defines={"N": int(n)} if n else None)


def summary(g) -> dict:
    """What is compared of a graph: every array's digest, the palette rows, the step codes."""
    codes = None if g.action_codes is None else [str(g.action_codes.dtype),
                                                 [int(c) for c in g.action_codes]]
    return {"digest": digest(g), "charge": [str(g.charge.dtype), np.asarray(g.charge).tolist()],
            "palette_time": np.asarray(g.palette.time).tolist(), "action_codes": codes,
            "states": g.n_states, "edges": g.n_edges}


def main() -> None:
    comm = world()
    out = []
    for spec in sys.argv[2:]:
        g = explore_distributed(load(spec), comm)
        if comm.rank == 0:
            out.append({"model": spec, "size": comm.size, **summary(g)})
        else:
            assert g is None
    if comm.rank == 0:
        pathlib.Path(sys.argv[1]).write_text("\n".join(json.dumps(o) for o in out))


if __name__ == "__main__":
    main()
