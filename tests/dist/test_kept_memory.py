"""runtime.memory.keep_freed_memory: a loop of arrays allocated and freed reuses memory rather
than fresh pages (fewer page faults), in a process of its own (the setting is process-wide)."""

from __future__ import annotations

import json
import subprocess
import sys

from mpirun import ROOT

#: A loop like a search's levels: arrays of a few megabytes made, written and dropped.
_PROGRAM = r"""
import json, resource, sys
import numpy as np
from runtime.memory import keep_freed_memory
kept = keep_freed_memory() if sys.argv[1] == "1" else None
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for size in (3 << 20, 5 << 20):   # (the first round settles the allocator)
    a = np.ones(size // 8); b = a * 2; del a, b
before = faults()
for i in range(40):
    size = (3 + i % 3) << 20
    a = np.ones(size // 8)
    b = a * 2
    del a, b
print(json.dumps({"kept": kept, "faults": faults() - before}))
"""


def _faults(keep: bool) -> dict:
    out = subprocess.run([sys.executable, "-c", _PROGRAM, "1" if keep else "0"],
                         capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_kept_memory_spares_fresh_pages():
    plain, kept = _faults(False), _faults(True)
    if not kept["kept"]:   # not glibc: nothing was set, nothing to compare
        assert kept["kept"] is False
        return
    # 40 rounds of two arrays of 3 to 5 MB: thousands of fresh pages without, a few with.
    assert plain["faults"] > 2000
    assert kept["faults"] < plain["faults"] / 10


def test_search_costs_tool_reports_both_processes_and_both_exchanges():
    """``tools/search_costs.py`` under ``mpiexec -n 2``: each process's exploration (CPU,
    system time, faults) and, per size, the communicator's exchange beside MPI's own."""
    from mpirun import run
    model = str(ROOT / "dvecost" / "examples" / "client_server_template.dve")
    for flag, allocator in (([], "keeps freed memory"), (["--plain"], "glibc's own")):
        r = run(2, str(ROOT / "tools" / "search_costs.py"), model, "2", *flag)
        assert r.returncode == 0, r.stderr
        d = json.loads(r.stdout)
        assert d["allocator"] == allocator
        assert len(d["explore"]) == 2
        for e in d["explore"]:
            assert 0 < e["cpu_s"] < 10 and 0 <= e["sys_s"] <= e["cpu_s"] + 0.01 and e["faults"] >= 0
        assert sorted(d["exchange"], key=int) == ["10", "1000", "40000"]
        assert all(v["comm_us"] > 0 and v["alltoallv_us"] > 0 for v in d["exchange"].values())
