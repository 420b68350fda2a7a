"""BEEM conformance on the CPU or the GPU (issue 15): every published count, once, in parallel.

Explores every instance of ``beem/expected.tsv`` with at most ``--max-states`` published states
(default 5,000,000), and the ``deadlock`` and ``LTL`` rows of ``beem/divine_tests_expected.tsv``,
through the project's front door (:func:`dve.load_model`, :func:`statespace.compile_model`,
:func:`statespace.build_state_graph`), and compares the states, transitions (where published),
deadlocks and accepting states with the published numbers, counted as
``tests/statespace/test_explore_beem.py`` counts them: expected.tsv with the property product and
the error state expanded like any state (BEEM's generator), the DiVinE deadlock rows without
the property process. With ``--backend gpu`` the graph is built with CuPy;
``--compare-cpu`` builds it with NumPy too, in another worker at the same time, and requires
every array of the two graphs to be equal, dtype and shape included (numbering, CSR, costs,
times, actions, states, parents, deadlocks), compared through a SHA-256 of each
(:func:`graph_digest`).

Run on the device from the repository root (see ``run_explore_gpu.sh`` for the carried lark
wheel and ``DVECOST_SHARED``)::

    python3 tools/device/beem_conformance.py --backend gpu --compare-cpu --out $OUT/conformance

Builds run in worker processes (``--jobs``, default one per core), the costliest first
(:func:`cost`) so that the long ones start early; at most ``--gpu-jobs`` of them use CuPy at
once, and models with fewer than ``--gpu-min-states`` published states run on NumPy only (the
explorer keeps frontiers of fewer than ``Placement.device_min_rows`` states on the host anyway).
A build running longer than ``--timeout`` seconds is stopped (its worker killed and replaced).
One line per finished instance goes to stderr; ``conformance.tsv`` (one row per instance:
``seconds`` is the worker time of its builds, ``explore_s`` / ``cpu_explore_s`` the explorer's
time, ``device_bytes`` what CuPy's pool held, 0 when the run never reached the device) and
``summary.json`` (counts by status, wall time, per-instance seconds, the environment) are
rewritten atomically in ``--out`` after every instance, so a stop leaves what was found.

Exit status: 0 every count as published (the rows known to come from other semantics, see
:data:`KNOWN`, differing as known); 1 a mismatch, a CPU/GPU difference or a failure; 2 bad
usage; 3 timeouts but nothing wrong; 130/143 after SIGINT/SIGTERM (workers killed, the files
written with the models not finished marked ``interrupted`` / ``not_run``).
"""

from __future__ import annotations

import argparse
import csv
import fnmatch
import json
import os
import platform
import signal
import subprocess
import sys
import time
from multiprocessing import connection, get_context
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: Rows whose published numbers come from other semantics than the file's (see
#: tests/statespace/test_explore_beem.py for the evidence): a difference there is ``known``.
KNOWN = {
    "anderson.1.prop4.dve": "LTSmin's LTL product count (633945), not DiVinE's; we give 623718",
    "bufchan2.dve": "row gives 3/5 for a one-message variant; the file gives 8/12 (DiVinE's DOT)",
    "bufchan2-local.dve": "row gives 3/5 for a one-message variant; the file gives 8/12",
}

#: The statuses of a row, in the order the summary lists them.
STATUSES = ("match", "known", "mismatch", "failed", "timeout", "skipped", "running", "interrupted",
            "not_run")

COLUMNS = ("id", "set", "model", "defines", "property", "status", "backend", "device_bytes",
           "expected_states", "states", "expected_transitions", "transitions",
           "expected_deadlocks", "deadlocks", "expected_accepting", "accepting", "cpu_compare",
           "load_s", "explore_s", "cpu_explore_s", "seconds", "note")


# ------------------------------------------------------------------------------- the set

def default_beem() -> Path:
    shared = os.environ.get("DVECOST_SHARED")
    return (Path(shared) if shared else REPO.parent / "shared") / "beem"


def _read(path: Path) -> list[dict]:
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def _int(text: str) -> int | None:
    return None if text in ("", "NA", "-") else int(text)


def instances(beem: Path, max_states: int, divine: bool = True) -> list[dict]:
    """The instances to check, each a dict (``id``, ``set``, ``model``, ``path``, ``defines``,
    ``property``, ``error_successors``, the published counts, ``known``), in file order."""
    from dvecost.cli import parse_defines   # the CLI's reading of -D N=3 lists
    out = []
    for row in _read(beem / "expected.tsv"):
        n = int(row["states"])
        if n > max_states:
            continue
        out.append(dict(id=row["model_file"], set="beem", model=row["model_file"],
                        defines={}, property=True, error_successors=True, ltl=False,
                        states=n, transitions=_int(row["transitions"]), deadlocks=None,
                        accepting=None, known=KNOWN.get(row["model_file"])))
    for row in _read(beem / "divine_tests_expected.tsv") if divine else []:
        kind = row["property"]
        if kind not in ("deadlock", "LTL") or int(row["states"]) > max_states:
            continue
        defines = ({} if row["defines"] in ("-", "")
                   else parse_defines(row["defines"].split(",")))
        tag = ",".join(f"{k}={v}" for k, v in defines.items())
        out.append(dict(id=f"divine:{row['model_file']}:{kind}" + (f":{tag}" if tag else ""),
                        set="divine", model=row["model_file"], defines=defines,
                        property=kind == "LTL", error_successors=False, ltl=kind == "LTL",
                        states=int(row["states"]), transitions=int(row["transitions"]),
                        deadlocks=int(row["deadlocks"]),
                        accepting=int(row["accepting"]) if kind == "LTL" else None,
                        known=KNOWN.get(row["model_file"]) if kind == "deadlock" else None))
    for spec in out:
        spec["path"] = str(beem / "models" / spec["model"])
    return out


def select(specs: list[dict], only: list[str], skip: list[str], min_states: int) -> list[dict]:
    """The instances whose id or file matches a pattern of ``only`` (all when empty), none of
    ``skip``, with at least ``min_states`` published states."""
    def hit(spec, pats):
        return any(fnmatch.fnmatchcase(spec["id"], p) or fnmatch.fnmatchcase(spec["model"], p)
                   for p in pats)
    return [s for s in specs if (not only or hit(s, only)) and not hit(s, skip)
            and s["states"] >= min_states]


# ------------------------------------------------------------------------------- one model

GRAPH_ARRAYS = ("indptr", "indices", "time", "action", "states", "parent", "parent_action",
                "deadlocks")
GRAPH_SCALARS = ("error_state", "depth", "complete", "n_expanded", "n_states", "n_edges")


def graph_digest(g) -> dict[str, str]:
    """One SHA-256 per field of a state graph (dtype, shape and bytes of every array, the
    costs of every resource, the action codes, the scalar counts), so that two builds in
    different processes compare field by field without sending the arrays across."""
    import hashlib

    import numpy as np

    def h(a):
        if a is None:
            return "none"
        a = np.ascontiguousarray(a)
        d = hashlib.sha256(f"{type(a).__name__} {a.dtype.str} {a.shape}".encode())
        d.update(memoryview(a).cast("B"))
        return d.hexdigest()
    out = {n: h(getattr(g, n)) for n in GRAPH_ARRAYS}
    costs = hashlib.sha256()
    for r in sorted(g.costs):
        costs.update(f"{r}={h(g.costs[r])};".encode())
    out["costs"] = costs.hexdigest()
    out["action_codes"] = h(g.action_codes)
    out.update((n, repr(getattr(g, n))) for n in GRAPH_SCALARS)
    return out


def graph_differences(a, b) -> list[str]:
    """The fields in which two state graphs (or their :func:`graph_digest`) differ, in the
    digest's order; empty when identical.

    >>> import numpy as np
    >>> from types import SimpleNamespace as G
    >>> base = {n: np.zeros(2, np.int64) for n in GRAPH_ARRAYS}
    >>> base.update(dict.fromkeys(GRAPH_SCALARS, 0), costs={"c": np.ones(2)}, action_codes=None)
    >>> other = dict(base, time=np.zeros(2, np.int32), depth=1)
    >>> graph_differences(G(**base), G(**base)), graph_differences(G(**base), G(**other))
    ([], ['time', 'depth'])
    """
    da = a if isinstance(a, dict) else graph_digest(a)
    db = b if isinstance(b, dict) else graph_digest(b)
    return [k for k in da if da[k] != db.get(k)]


#: What a worker builds: the graph with NumPy (``cpu``), with CuPy (``gpu``), or with NumPy
#: as the reference a ``gpu`` build of the same instance is compared with (``ref``).
KINDS = ("cpu", "gpu", "ref")


def check_one(spec: dict, kind: str, digest: bool = False,
              max_memory: int | None = None) -> dict:
    """Build one instance's graph (``kind`` of :data:`KINDS`) and compare its counts with the
    published ones: the part of the TSV row this build gives, with ``digest`` the graph's
    :func:`graph_digest` too."""
    import warnings

    import numpy as np

    import dve
    import statespace
    from runtime.device import DeviceFallbackWarning
    from runtime.errors import ExplorationLimit

    row: dict = {}
    notes = []
    t0 = time.perf_counter()
    cm = statespace.compile_model(dve.load_model(spec["path"], defines=spec["defines"]),
                                  property=spec["property"])
    row["load_s"] = time.perf_counter() - t0
    if spec["ltl"] and cm.property_process is None:
        return dict(row, status="skipped",
                    note="the property is an inline DiVinE 3 'ltl' formula (no property "
                         "process)")
    # A guard against a runaway exploration: twice the published number and a margin.
    limit = 2 * spec["states"] + 1000

    def build(xp):
        t = time.perf_counter()
        try:
            g = statespace.build_state_graph(cm, xp=xp, max_states=limit, max_memory=max_memory,
                                             error_successors=spec["error_successors"])
        except ExplorationLimit as exc:
            if exc.partial is None:
                raise
            g = exc.partial
            notes.append(f"stopped: {exc}")
        return g, time.perf_counter() - t

    if kind == "gpu":
        import cupy
        pool = cupy.get_default_memory_pool()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DeviceFallbackWarning)
            g, row["explore_s"] = build(cupy)
        notes += [f"fallback: {w.message}" for w in caught
                  if issubclass(w.category, DeviceFallbackWarning)]
        # What CuPy's pool held at the end (freed blocks stay cached in it): zero when the
        # frontier never reached Placement.device_min_rows and the run stayed on the host.
        row["device_bytes"] = int(pool.total_bytes())
        pool.free_all_blocks()
    else:
        g, row["explore_s"] = build(np)
    row.update(states=g.n_states, transitions=g.n_edges, deadlocks=g.n_deadlocks)
    if spec["ltl"]:
        prop = cm.processes[cm.property_process]
        row["accepting"] = int(sum((g.states[:, prop.slot] == a).sum() for a in prop.accept))
    if digest:
        row["digest"] = graph_digest(g)
    wrong = [k for k in ("states", "transitions", "deadlocks", "accepting")
             if spec[k] is not None and row.get(k) != spec[k]]
    if not g.complete:
        wrong.append("complete")
    if wrong:
        row["status"] = "known" if spec["known"] else "mismatch"
        notes.insert(0, ("known: " + spec["known"]) if spec["known"] else
                     "differs in " + ", ".join(wrong))
    else:
        row["status"] = "match"
        if spec["known"]:
            notes.insert(0, "matches although listed as known to differ: " + spec["known"])
    row["note"] = "; ".join(notes)
    return row


def _worker(conn, max_memory: int | None) -> None:
    """A worker process: runs the ``(spec, kind, digest)`` it receives until it receives
    None. SIGINT is the parent's to handle (it kills the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        spec, kind, digest = msg
        try:
            row = check_one(spec, kind, digest, max_memory)
        except Exception as exc:   # noqa: BLE001 - reported as the model's failure
            text = str(exc).strip().splitlines()
            row = {"status": "failed",
                   "note": f"{type(exc).__name__}: {text[0] if text else ''}"[:300]}
        conn.send(row)


# ------------------------------------------------------------------------------- the runner

#: Families far slower per state than the rest, with the factor: plc's guards have thousands
#: of operators (plc.3, 1,268,968 states: 110 s on one core against ~5 s for models of that
#: size). The largest cost (published states times the factor) starts first.
SLOW_FAMILIES = {"plc.": 20}


def cost(spec: dict) -> int:
    """The order of the work: published states, times the family's slowness."""
    return spec["states"] * next((f for p, f in SLOW_FAMILIES.items()
                                  if spec["model"].startswith(p)), 1)


class _Stop(Exception):
    pass


class Runner:
    """Schedules the builds on worker processes and keeps the rows and the output files.

    Each instance is one build (``cpu`` or ``gpu``), or with ``--compare-cpu`` two that run
    side by side in different workers (``gpu`` and its ``ref``), compared through their
    :func:`graph_digest`; the row is complete when all its builds are."""

    def __init__(self, args, specs: list[dict]) -> None:
        self.args = args
        self.specs = specs
        self.rows: dict[str, dict] = {s["id"]: self._blank(s) for s in specs}
        self.parts: dict[str, dict[str, dict]] = {s["id"]: {} for s in specs}
        self.need: dict[str, tuple[str, ...]] = {}
        tasks = []
        for spec in specs:
            gpu = args.backend == "gpu" and spec["states"] >= args.gpu_min_states
            self.need[spec["id"]] = kinds = (("gpu", "ref") if gpu and args.compare_cpu else
                                             ("gpu",) if gpu else ("cpu",))
            tasks += [(spec, k) for k in kinds]
        # Largest first: the long explorations start at once, the small ones fill in.
        self.pending = sorted(tasks, key=lambda t: (-cost(t[0]), KINDS.index(t[1])))
        self.workers: list[dict] = []
        self.ctx = get_context("spawn")
        self.t0 = time.time()
        self.done = 0
        self.signal: int | None = None
        self.last_note = time.monotonic()

    @staticmethod
    def _blank(spec: dict) -> dict:
        return {"id": spec["id"], "set": spec["set"], "model": spec["model"],
                "defines": ",".join(f"{k}={v}" for k, v in spec["defines"].items()),
                "property": spec["property"], "status": "not_run",
                "expected_states": spec["states"], "expected_transitions": spec["transitions"],
                "expected_deadlocks": spec["deadlocks"],
                "expected_accepting": spec["accepting"]}

    # -- workers
    def _start_worker(self) -> dict:
        parent, child = self.ctx.Pipe()
        mem = int(self.args.max_memory * 2**30) if self.args.max_memory else None
        p = self.ctx.Process(target=_worker, args=(child, mem), daemon=True)
        p.start()
        child.close()
        w = {"proc": p, "conn": parent, "task": None, "start": 0.0}
        self.workers.append(w)
        return w

    def _kill(self, w: dict) -> None:
        p = w["proc"]
        if p.is_alive():
            p.kill()
        p.join(5)
        w["conn"].close()
        if w in self.workers:
            self.workers.remove(w)

    def _busy(self) -> list[dict]:
        return [w for w in self.workers if w["task"] is not None]

    def _assign(self) -> None:
        gpu_busy = sum(w["task"][1] == "gpu" for w in self._busy())
        idle = [w for w in self.workers if w["task"] is None]
        for w in idle + [None] * (self.args.jobs - len(self.workers)):
            pick = next((t for t in self.pending
                         if not (t[1] == "gpu" and gpu_busy >= self.args.gpu_jobs)), None)
            if pick is None:
                return
            self.pending.remove(pick)
            if w is None:
                w = self._start_worker()
            w.update(task=pick, start=time.monotonic())
            gpu_busy += pick[1] == "gpu"
            spec, kind = pick
            self.rows[spec["id"]]["status"] = "running"
            w["conn"].send((spec, kind, self.args.compare_cpu and kind != "cpu"))

    def _part(self, w: dict, part: dict) -> None:
        """A build is over (``part``: its result): the row is complete once all are."""
        spec, kind = w["task"]
        w["task"] = None
        part["wall"] = time.monotonic() - w["start"]
        parts = self.parts[spec["id"]]
        parts[kind] = part
        if len(parts) == len(self.need[spec["id"]]):
            row = self._merge(spec, parts)
            self.rows[spec["id"]] = row
            self.done += 1
            self._line(row)
            self.write()

    def _merge(self, spec: dict, parts: dict[str, dict]) -> dict:
        kind = "gpu" if "gpu" in parts else "cpu"
        main, ref = parts[kind], parts.get("ref")
        row = dict(self.rows[spec["id"]], backend=kind,
                   seconds=sum(p["wall"] for p in parts.values()))
        row.update((k, v) for k, v in main.items() if k not in ("digest", "wall"))
        notes = [main["note"]] if main.get("note") else []
        if ref is not None:
            row["cpu_explore_s"] = ref.get("explore_s")
            if ref["status"] in ("failed", "timeout"):
                notes.append(f"CPU build: {ref['status']}: {ref.get('note', '')}")
                if row["status"] in ("match", "known"):
                    row["status"] = ref["status"]
            elif "digest" in main and "digest" in ref:
                diff = graph_differences(main["digest"], ref["digest"])
                row["cpu_compare"] = "identical" if not diff else "differs:" + ",".join(diff)
                if diff:
                    row["status"] = "mismatch"
                    notes.append("the GPU graph differs from the CPU graph")
        row["note"] = "; ".join(notes)
        return row

    # -- the loop
    def run(self) -> int:
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        try:
            self.write()
            while self.pending or self._busy():
                if self.signal is not None:
                    raise _Stop
                self._assign()
                self._poll()
        except _Stop:
            pass
        finally:
            for s, h in old.items():
                signal.signal(s, h)
            self._shutdown()
        self.write()
        return self.exit_code()

    def _on_signal(self, signum, frame) -> None:
        self.signal = signum

    def _poll(self) -> None:
        busy = self._busy()
        now = time.monotonic()
        wait_s = min([0.5] + [max(0.0, w["start"] + self.args.timeout - now) for w in busy])
        ready = connection.wait([w["conn"] for w in busy] + [w["proc"].sentinel for w in busy],
                                timeout=wait_s)
        for w in busy:
            if w["conn"] in ready:
                try:
                    part = w["conn"].recv()
                except (EOFError, OSError):
                    part = None
                if part is not None:
                    self._part(w, part)
                    continue
            if w["proc"].sentinel in ready or not w["proc"].is_alive():
                code = w["proc"].exitcode
                why = (f"killed by signal {-code}" + (" (out of memory?)" if code == -9 else "")
                       if code is not None and code < 0 else f"exit code {code}")
                self._kill(w)
                self._part(w, {"status": "failed", "note": f"the worker died: {why}"})
            elif time.monotonic() - w["start"] > self.args.timeout:
                self._kill(w)
                self._part(w, {"status": "timeout",
                               "note": f"stopped after {self.args.timeout:g} s"})
        if time.monotonic() - self.last_note > 60:
            self.last_note = time.monotonic()
            running = ", ".join(f"{w['task'][0]['id']} {w['task'][1]} "
                                f"({time.monotonic() - w['start']:.0f} s)" for w in self._busy())
            self._say(f"{self.done}/{len(self.specs)} done; running: {running}")

    def _shutdown(self) -> None:
        for w in list(self.workers):
            if w["task"] is not None:   # a stop: the build was not finished
                self._kill(w)
                continue
            try:
                w["conn"].send(None)
            except OSError:
                pass
            w["proc"].join(5)
            self._kill(w)
        for r in self.rows.values():
            if r["status"] == "running":   # started, not complete
                r["status"] = "interrupted"

    # -- output
    def counts(self) -> dict[str, int]:
        c = dict.fromkeys(STATUSES, 0)
        for r in self.rows.values():
            c[r["status"] if r["status"] in c else "not_run"] += 1
        return c

    def exit_code(self) -> int:
        if self.signal is not None:
            return 128 + self.signal
        c = self.counts()
        if c["mismatch"] or c["failed"]:
            return 1
        return 3 if c["timeout"] else 0

    def summary(self) -> dict:
        rows = [self.rows[s["id"]] for s in self.specs]
        done = [r for r in rows if r["status"] in ("match", "known", "mismatch")]
        return {
            "tool": "tools/device/beem_conformance.py",
            "backend": self.args.backend, "compare_cpu": self.args.compare_cpu,
            "max_states": self.args.max_states, "jobs": self.args.jobs,
            "gpu_jobs": self.args.gpu_jobs, "gpu_min_states": self.args.gpu_min_states,
            "timeout_s": self.args.timeout,
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.t0)),
            "wall_s": round(time.time() - self.t0, 3),
            "instances": len(rows), "counts": self.counts(),
            "finished": self.signal is None and not self.pending
            and not any(r["status"] == "running" for r in rows),
            "signal": signal.Signals(self.signal).name if self.signal else None,
            "exit_code": self.exit_code(),
            "states_explored": sum(r.get("states") or 0 for r in done),
            "transitions_explored": sum(r.get("transitions") or 0 for r in done),
            "cpu_compared": sum(r.get("cpu_compare") == "identical" for r in rows),
            "on_device": sum((r.get("device_bytes") or 0) > 0 for r in rows),
            # Explorations that left the device for the host (full, or a kernel that failed).
            "device_fallbacks": sum("fallback: " in (r.get("note") or "") for r in rows),
            "problems": {r["id"]: f"{r['status']}: {r.get('note', '')}" for r in rows
                         if r["status"] in ("mismatch", "failed", "timeout")},
            "seconds": {r["id"]: round(r["seconds"], 3) for r in rows if "seconds" in r},
            "environment": environment(self.args.backend),
        }

    def write(self) -> None:
        out = Path(self.args.out)
        out.mkdir(parents=True, exist_ok=True)
        lines = ["\t".join(COLUMNS)]
        for s in self.specs:
            r = self.rows[s["id"]]
            lines.append("\t".join(_cell(r.get(c)) for c in COLUMNS))
        _atomic(out / "conformance.tsv", "\n".join(lines) + "\n")
        _atomic(out / "summary.json", json.dumps(self.summary(), indent=1) + "\n")

    def _line(self, r: dict) -> None:
        extra = f" {r['cpu_compare']}" if r.get("cpu_compare") else ""
        dev = (f" device {r['device_bytes'] / 2**20:.1f} MiB" if r.get("device_bytes")
               else "")
        self._say(f"[{self.done:>3}/{len(self.specs)}] {r['status']:<8} {r['id']:<36} "
                  f"{_n(r.get('states')):>10} st {_n(r.get('transitions')):>11} tr "
                  f"{r['seconds']:7.1f} s {r.get('backend', '')}{dev}{extra}"
                  + (f"  ({r['note']})" if r.get("note") else ""))

    @staticmethod
    def _say(text: str) -> None:
        print(text, file=sys.stderr, flush=True)


def _n(v) -> str:
    return "-" if v is None else f"{v:,}"


def _cell(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}"
    return str(v).replace("\t", " ").replace("\n", " ")


def _atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


_ENV: dict = {}


def environment(backend: str) -> dict:
    """Python, NumPy (and CuPy) versions, the commit, the host's cores (computed once)."""
    if not _ENV:
        import numpy
        _ENV.update(python=platform.python_version(), numpy=numpy.__version__,
                    cpus=os.cpu_count(), host=platform.node())
        try:
            _ENV["commit"] = subprocess.run(
                ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                text=True, timeout=10).stdout.strip() or None
        except (OSError, subprocess.SubprocessError):
            _ENV["commit"] = None
        if backend == "gpu":
            import cupy
            _ENV["cupy"] = cupy.__version__
    return _ENV


def copy_set(beem: Path, specs: list[dict], dest: Path) -> int:
    """Copy ``expected.tsv``, ``divine_tests_expected.tsv`` and the models of ``specs`` from
    ``beem`` to ``dest`` (a BEEM directory the tool reads with ``--beem``); says how much."""
    import shutil
    (dest / "models").mkdir(parents=True, exist_ok=True)
    files = [beem / n for n in ("expected.tsv", "divine_tests_expected.tsv")
             if (beem / n).exists()]
    for f in files:
        shutil.copyfile(f, dest / f.name)
    models = sorted({Path(s["path"]) for s in specs})
    for f in models:
        shutil.copyfile(f, dest / "models" / f.name)
    size = sum(f.stat().st_size for f in files + models)
    print(f"{len(models)} models of {len(specs)} instances, {size / 2**20:.1f} MiB -> {dest}",
          file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------- main

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", choices=("cpu", "gpu"), default="cpu")
    ap.add_argument("--compare-cpu", action="store_true",
                    help="with --backend gpu: build every GPU model with NumPy too and require "
                         "identical arrays")
    ap.add_argument("--max-states", type=int, default=5_000_000,
                    help="instances with at most this many published states (default 5e6)")
    ap.add_argument("--min-states", type=int, default=0)
    ap.add_argument("--only", action="append", default=[], metavar="PATTERN",
                    help="only instances whose file or id matches (fnmatch; repeatable)")
    ap.add_argument("--skip", action="append", default=[], metavar="PATTERN")
    ap.add_argument("--no-divine", action="store_true",
                    help="leave out the rows of divine_tests_expected.tsv")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--gpu-jobs", type=int, default=4,
                    help="at most this many workers use CuPy at once (default 4)")
    ap.add_argument("--gpu-min-states", type=int, default=50_000,
                    help="with --backend gpu, instances with fewer published states run on "
                         "NumPy only (default 50000)")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds per instance (default 1800)")
    ap.add_argument("--max-memory", type=float, metavar="GIB",
                    help="per instance: stop an exploration past this many GiB")
    ap.add_argument("--beem", type=Path, default=default_beem(),
                    help="the BEEM directory (default $DVECOST_SHARED/beem or ../shared/beem)")
    ap.add_argument("--out", type=Path, help="directory for the TSV and JSON")
    ap.add_argument("--copy-to", type=Path, metavar="DIR",
                    help="instead of running: copy the two TSVs and the selected instances' "
                         "models to DIR/beem (what a device run needs under DVECOST_SHARED)")
    args = ap.parse_args(argv)
    if (args.out is None) == (args.copy_to is None):
        ap.error("give --out DIR (run) or --copy-to DIR (copy the set)")
    if args.compare_cpu and args.backend != "gpu":
        ap.error("--compare-cpu compares the GPU build with the CPU build: needs --backend gpu")
    if args.jobs < 1 or args.gpu_jobs < 1 or args.timeout <= 0:
        ap.error("--jobs, --gpu-jobs and --timeout must be positive")
    if not (args.beem / "expected.tsv").exists():
        ap.error(f"{args.beem / 'expected.tsv'} not found (set DVECOST_SHARED or --beem)")
    if args.backend == "gpu":
        from runtime.device import gpu_unavailable_reason
        reason = gpu_unavailable_reason()
        if reason is not None:
            ap.error(f"--backend gpu: {reason}")
    specs = select(instances(args.beem, args.max_states, not args.no_divine),
                   args.only, args.skip, args.min_states)
    if not specs:
        ap.error("no instance selected")
    missing = [s["model"] for s in specs if not Path(s["path"]).exists()]
    if missing:
        ap.error(f"model files missing in {args.beem / 'models'}: {', '.join(missing[:5])}")
    if args.copy_to is not None:
        return copy_set(args.beem, specs, args.copy_to / "beem")
    runner = Runner(args, specs)
    print(f"{len(specs)} instances, {sum(s['states'] for s in specs):,} published states, "
          f"backend {args.backend}, {args.jobs} jobs -> {args.out}", file=sys.stderr, flush=True)
    code = runner.run()
    s = runner.summary()
    print(f"{s['counts']} in {s['wall_s']:.1f} s; exit {code}", file=sys.stderr, flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
