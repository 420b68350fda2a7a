"""Run under ``mpiexec``: explore each model named on the command line as every process of the
world and, on process 0, write one JSON line per model: the digest of every array
(``tools/graph_digest.py``), the palette rows per edge, the counts, or the refusal's message.

``python dist_worker.py OUT MODEL[:N] ...``: ``MODEL:N`` sets ``-D N=N``; a ``.py`` scenario
file ``FILE.py:N`` is its family rendered for ``N`` clients.

``DIST_XP=stand-in`` runs the search's device path over a NumPy stand-in of CuPy
(``tests/statespace/device_stand_in.py``), ``stand-in-kernels`` with its generated successor
kernel compiled for the host; ``DIST_BATCH=K`` expands ``K`` states per successor call;
``DIST_MIN_ROWS=K`` computes batches of fewer than ``K`` states on the host where the device
has no kernel (default: the one-GPU explorer's threshold).
``DIST_FAIL=R:K`` makes the ``K``-th look-up in process ``R``'s visited set fail for want of
memory; a model whose search stops is written as its stop's name and counts.
"""

import json
import os
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests" / "statespace"))

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


class _Patch:
    """The one call of pytest's ``monkeypatch`` the stand-in makes, for a process of its own."""

    @staticmethod
    def setitem(mapping, key, value):
        mapping[key] = value


def options() -> dict:
    """The search's array module and batch from the environment (see the module docstring)."""
    got = {}
    kind = os.environ.get("DIST_XP", "")
    if kind:
        from device_stand_in import stand_in
        got["xp"] = stand_in(_Patch(), kernels=kind == "stand-in-kernels")
    if os.environ.get("DIST_BATCH"):
        got["batch"] = int(os.environ["DIST_BATCH"])
    if os.environ.get("DIST_MIN_ROWS"):
        from statespace.dist.successors import NextStates
        NextStates.device_min_rows = int(os.environ["DIST_MIN_ROWS"])
    return got


def fail_at(rank: int) -> None:
    """``DIST_FAIL``: this process's look-ups in its visited set fail from the given one on
    (see the module docstring)."""
    spec = os.environ.get("DIST_FAIL", "")
    if not spec or int(spec.split(":")[0]) != rank:
        return
    from statespace.store import VisitedSet
    at, calls, add = int(spec.split(":")[1]), [0], VisitedSet.add

    def failing(self, *args, **kw):
        calls[0] += 1
        if calls[0] >= at:
            raise MemoryError("DIST_FAIL")
        return add(self, *args, **kw)
    VisitedSet.add = failing


def main() -> None:
    from runtime.errors import ExplorationLimit
    comm = world()
    out = []
    opts = options()
    fail_at(comm.rank)
    for spec in sys.argv[2:]:
        try:
            g = explore_distributed(load(spec), comm, **opts)
        except ExplorationLimit as exc:
            if comm.rank == 0:
                out.append({"model": spec, "stop": type(exc).__name__, "counts": exc.counts})
            continue
        if comm.rank == 0:
            out.append({"model": spec, "size": comm.size, **summary(g),
                        "edges_on_device": g.on_device is not None})
        else:
            assert g is None
    if comm.rank == 0:
        pathlib.Path(sys.argv[1]).write_text("\n".join(json.dumps(o) for o in out))


if __name__ == "__main__":
    main()
