"""``dvecost analyze --backend gpu`` and ``explore --backend gpu`` on the client/server family,
each model in a process of its own, with the device's memory sampled (``nvidia-smi``) and the
process's peak host memory (``/usr/bin/time``): the figures of docs/benchmarks.md for the
compact graph. Usage: ``python tools/device/compact_cs.py GEN.py OUTDIR 13 14 15:explore``
(``N:explore`` explores only; ``N:analyze`` analyses only; a bare N does both)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time


def sample_device(stop: threading.Event, peak: list) -> None:
    while not stop.is_set():
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used",
                                  "--format=csv,noheader,nounits"], capture_output=True,
                                 text=True, timeout=5).stdout
            peak[0] = max(peak[0], int(out.split()[0]))
        except Exception:   # noqa: BLE001 - a missed sample
            pass
        stop.wait(0.2)


def one(cmd: list[str], timeout: float) -> dict:
    stop, peak = threading.Event(), [0]
    th = threading.Thread(target=sample_device, args=(stop, peak), daemon=True)
    th.start()
    t0 = time.perf_counter()
    try:
        p = subprocess.run(["/usr/bin/time", "-f", "MAXRSS_KB %M", *cmd], capture_output=True,
                           text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timeout", exc.stdout or "", exc.stderr or ""
        out = out.decode() if isinstance(out, bytes) else out
        err = err.decode() if isinstance(err, bytes) else err
    wall = time.perf_counter() - t0
    stop.set()
    th.join()
    rss = [int(x.split()[1]) for x in err.splitlines() if x.startswith("MAXRSS_KB")]
    return {"cmd": " ".join(cmd[2:]), "rc": rc, "wall_s": round(wall, 2),
            "peak_host_MiB": round(rss[0] / 1024, 1) if rss else None,
            "peak_device_MiB": peak[0], "stdout": out[-3000:], "stderr": err[-3000:]}


def main() -> None:
    gen, outdir, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    py = sys.executable
    results = []
    for spec in specs:
        n, _, what = spec.partition(":")
        model = os.path.join(outdir, f"cs_{n}.dve")
        with open(model, "w") as f:
            subprocess.run([py, gen, n], stdout=f, check=True)
        if what in ("", "explore"):
            r = one([py, "-m", "dvecost", "explore", "--backend", "gpu", "--json", model],
                    float(os.environ.get("CS_TIMEOUT", "240")))
            results.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "stderr"}), flush=True)
            print(r["stderr"][-600:], flush=True)
        if what in ("", "analyze"):
            r = one([py, "-m", "dvecost", "analyze", "--backend", "gpu", model],
                    float(os.environ.get("CS_TIMEOUT", "240")))
            results.append(r)
            print(json.dumps({k: v for k, v in r.items() if k != "stderr"}), flush=True)
            print(r["stderr"][-600:], flush=True)
    with open(os.path.join(outdir, "compact_cs.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
