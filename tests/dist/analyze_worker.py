"""Run under ``mpiexec``: ``dvecost analyze`` (the command's own entry point,
:func:`dvecost.cli.main`) once per argument list of a JSON file, every process calling it as
``mpiexec -n P dvecost analyze ARGS`` would, one run after the other in the same processes
(cheaper than one ``mpiexec`` a run); process 0 writes one JSON line per run: the exit code,
what it printed on standard output and on standard error.

    mpiexec -n 2 python tests/dist/analyze_worker.py OUT.jsonl RUNS.json
"""

import contextlib
import io
import json
import pathlib
import sys

from dvecost.cli import main as cli
from runtime.comm import world


def main() -> None:
    comm = world()
    runs = json.loads(pathlib.Path(sys.argv[2]).read_text())
    out = []
    for args in runs:
        so, se = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(so), contextlib.redirect_stderr(se):
            code = cli(list(args))
        comm.barrier()   # (each run ends on every process before the next begins)
        out.append({"args": args, "code": code, "stdout": so.getvalue(),
                    "stderr": se.getvalue()})
    if comm.rank == 0:
        pathlib.Path(sys.argv[1]).write_text("\n".join(json.dumps(o) for o in out))


if __name__ == "__main__":
    main()
