"""Where one ``dvecost analyze`` process spends its wall time, as a timeline (issue 15).

Run on the device, from the repository root, with the shell's clock just before Python starts
(so that the interpreter's own start is counted)::

    T0=$(date +%s.%N) python3 tools/device/timeline_analyze.py [--sync] -- \
        analyze .bench/cs_10.dve --backend gpu --json > out.json

It runs ``dvecost.cli.main`` on the arguments after ``--`` in this process and prints to
stderr, in order of time: when the interpreter reached this script, when the imports were
done, and the start and end of each stage (loading, compiling, exploration chunks on the host
and on the device, the hand-over, the successor kernel's compilation, the graph's assembly,
the cycle engine, decoding, the JSON line), each as seconds since ``T0``, plus CuPy's kernels
loaded (count and seconds in ``compile_with_cache``). With ``--sync`` every device stage ends
with a device synchronisation, so its time is its own (slightly more wall time in all);
without, the times are those of the unperturbed process (device work may be charged to a
later stage). ``--as-program`` runs ``main()`` as the program does (no ``argv``: the device
warm-up thread, and the process ended by ``os._exit``, the timeline printed just before).
``--prewarm-context`` (an experiment) starts a thread at once that imports CuPy
and creates the CUDA context while the main thread goes on.
"""

from __future__ import annotations

import os
import sys
import time

T0 = float(os.environ.get("T0") or time.time())
MARKS: list[tuple[float, str]] = [(time.time(), "interpreter reached the script")]
_OPTS = sys.argv[1:sys.argv.index("--")] if "--" in sys.argv else []
SYNC = "--sync" in _OPTS


CHUNKS = {"host": [0, 0.0], "device": [0, 0.0]}
LOADS = [0, 0.0]


def mark(what: str) -> None:
    MARKS.append((time.time(), what))


def _sync() -> None:
    if SYNC and "cupy" in sys.modules:
        try:
            sys.modules["cupy"].cuda.Device().synchronize()
        except Exception:   # noqa: BLE001 - no context yet
            pass


def wrap(owner, name: str, label: str, *, each: bool = True) -> None:
    f = getattr(owner, name)
    count = [0]

    def g(*a, **kw):
        count[0] += 1
        k = count[0]
        tag = f"{label} #{k}" if each else label
        if each or k == 1:
            mark(f"{tag} start")
        try:
            return f(*a, **kw)
        finally:
            _sync()
            if each or k == 1:
                mark(f"{tag} end")
    setattr(owner, name, g)


def _prewarm() -> None:
    import threading

    def work():
        import cupy
        mark("[thread] cupy imported")
        cupy.cuda.runtime.getDeviceCount()
        cupy.empty(1)
        mark("[thread] CUDA context made")
    threading.Thread(target=work, daemon=True).start()


def main() -> int:
    if "--prewarm-context" in _OPTS:
        _prewarm()
    argv = sys.argv[sys.argv.index("--") + 1:]
    import numpy  # noqa: F401
    mark("numpy imported")
    import dvecost.cli
    mark("dvecost.cli imported")
    import dve
    import ocm
    import ocm.backend
    import statespace
    import statespace.explore as ex
    import statespace.kernel as kn
    import statespace.witness as wi
    import dvecost.analysis as an
    import dvecost.cli.analyze  # noqa: F401
    mark("analysis modules imported")

    chunks = CHUNKS
    orig_chunk = ex.Explorer._chunk

    def chunk(self, k):
        t = time.time()
        where = "device" if ex.on_device(self.xp) else "host"
        if chunks[where][0] == 0:
            mark(f"first {where} chunk start ({k} states)")
        try:
            return orig_chunk(self, k)
        finally:
            _sync()
            chunks[where][0] += 1
            chunks[where][1] += time.time() - t
            if chunks[where][0] == 1:
                mark(f"first {where} chunk end")
    ex.Explorer._chunk = chunk
    wrap(dve, "load_model", "dve.load_model")
    wrap(an.statespace, "compile_model", "compile_model")
    wrap(ocm.backend, "gpu_unavailable_reason", "import cupy + device count", each=False)
    wrap(ex.Explorer, "_to_device", "hand-over to the device")
    wrap(kn.SuccessorKernel, "function", "successor kernel get/compile", each=False)
    wrap(ex.Explorer, "_finish", "Explorer._finish")
    wrap(an.ocm, "optimal_cycle", "ocm.optimal_cycle")
    wrap(an, "decode_runs", "decode_runs")
    wrap(an, "summarize", "summarize")
    import dvecost.cli.analyze as ca
    wrap(ca, "emit_json", "emit_json")

    loads = LOADS

    def hook_cupy():
        try:
            import cupy.cuda.compiler as cc
        except ImportError:
            return
        for nm in ("_compile_module_with_cache", "compile_with_cache"):
            f = getattr(cc, nm, None)
            if f is None:
                continue

            def g(*a, __f=f, **kw):
                t = time.time()
                try:
                    return __f(*a, **kw)
                finally:
                    loads[0] += 1
                    loads[1] += time.time() - t
            setattr(cc, nm, g)
            break

    orig_reason = ocm.backend.gpu_unavailable_reason

    hooked = []

    def reason(*a, **kw):
        r = orig_reason(*a, **kw)
        if not hooked:   # once: each call wrapped the wrappers again, counting loads twice
            hooked.append(True)
            hook_cupy()
        return r
    ocm.backend.gpu_unavailable_reason = reason

    if "--as-program" in _OPTS:
        # As `python3 -m dvecost ARGS` runs: main() without argv (the device warm-up thread,
        # the process ended by os._exit); the timeline is printed just before that exit.
        end = dvecost.cli._end_process

        def end_process(code):
            mark("command done")
            report()
            end(code)
            mark("no os._exit (no CuPy imported)")
        dvecost.cli._end_process = end_process
        sys.argv = ["dvecost", *argv]
        rc = dvecost.cli.main()
    else:
        rc = dvecost.cli.main(argv)
    sys.stdout.flush()
    mark("main returned")
    report()
    return rc


def report() -> None:
    prev = T0
    print(f"{'t (s)':>7} {'delta':>7}  event", file=sys.stderr)
    for t, what in MARKS:
        print(f"{t - T0:7.3f} {t - prev:7.3f}  {what}", file=sys.stderr)
        prev = t
    for where, (n, s) in CHUNKS.items():
        print(f"  {where} chunks: {n}, {s:.3f} s", file=sys.stderr)
    print(f"  CuPy kernels through compile_with_cache: {LOADS[0]}, {LOADS[1]:.3f} s",
          file=sys.stderr)
    sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
