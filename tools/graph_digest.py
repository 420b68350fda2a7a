"""SHA-256 digests of explored state graphs in the full form (int64 costs and times per edge).

Run with one checkout's packages first on the path, then with another's, and compare the
lines: the compact graph (a palette row per edge) must expand back to exactly the arrays the
full form held. Models: the bundled examples, the client/server template rendered for a few
``N`` (whole and symmetry-reduced), the scenario examples and templates rendered to DVE
(``system sync`` models: whole, and symmetry-reduced where they have interchangeable clients),
and a sample of BEEM models (when the benchmark is found beside the checkout, as the tests look
for it)::

    PYTHONPATH=/path/to/other/checkout python tools/graph_digest.py > before.txt
    PYTHONPATH=$PWD python tools/graph_digest.py > after.txt
    diff before.txt after.txt
"""

from __future__ import annotations

import hashlib
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
BEEM_SAMPLE = ("anderson.1", "brp.1", "cyclic_scheduler.1", "driving_phils.1",
               "firewire_link.1", "hanoi.1", "iprotocol.1", "lamport.1", "leader_election.1",
               "mcs.1", "msmie.1", "public_subscribe.1", "bopdp.1", "at.1", "peterson.1")


def digest(g) -> str:
    """One hash over every array of ``g`` in the full form, dtypes and shapes included."""
    h = hashlib.sha256()
    arrays = [("indptr", g.indptr), ("indices", g.indices), ("action", g.action),
              ("time", g.time), ("states", g.states), ("parent", g.parent),
              ("parent_action", g.parent_action), ("deadlocks", g.deadlocks)]
    arrays += [(f"cost {r}", g.costs[r]) for r in sorted(g.costs)]
    for name, a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{name} {a.dtype.str} {a.shape}".encode())
        h.update(a.tobytes())
    h.update(f"{g.error_state} {g.depth} {g.n_expanded}".encode())
    return h.hexdigest()


def models():
    import dve
    for p in sorted((ROOT / "dvecost" / "examples").glob("*.dve")):
        yield p.name, dve.load_model(str(p))
    t = ROOT / "dvecost" / "examples" / "client_server_template.dve"
    for n in (2, 3, 4):
        yield f"{t.name} -D N={n}", dve.load_model(str(t), defines={"N": n})
    for p in sorted((ROOT / "dvecost" / "examples").glob("*.py")):
        try:
            from scenarios.loader import load_spec
            family = load_spec(p)
            yield f"{p.name} (2)", family(2).to_model()
            if p.name == "editor_farm.py":
                # Thin levels: about 3,500 breadth-first levels of one or two states.
                yield f"{p.name} (4) sync", family(4).to_model()
        except Exception as exc:   # noqa: BLE001 - a file that is no family is skipped
            print(f"# {p.name}: skipped ({type(exc).__name__})", file=sys.stderr)
    from scenarios.templates import TEMPLATES
    for name, n in (("paper-no-server", 3), ("paper-server", 4), ("editor", 3), ("editor", 5)):
        yield f"template {name} ({n}) sync", TEMPLATES[name].family(n).to_model()
    for r in (ROOT.parent / "shared", ROOT / "shared"):
        if (r / "beem" / "models").is_dir():
            for name in BEEM_SAMPLE:
                f = r / "beem" / "models" / f"{name}.dve"
                if f.is_file():
                    yield f.name, dve.load_model(str(f))
            break


def main() -> None:
    from statespace import build_state_graph, compile_model
    from statespace.quotient import build_quotient_graph
    for name, model in models():
        cm = compile_model(model)
        print(name, digest(build_state_graph(cm)), flush=True)
        if "template" in name or name.endswith(" sync"):
            print(name, "(symmetry)", digest(build_quotient_graph(cm).graph), flush=True)


if __name__ == "__main__":
    main()
