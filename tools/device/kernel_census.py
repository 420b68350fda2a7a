"""Which CuPy kernels one ``dvecost`` command looks up, who asks, and what each costs (issue 15).

Run on the device, from the repository root (CuPy's kernel cache filled by an earlier run)::

    python3 tools/device/kernel_census.py [--deferred] -- analyze .bench/cs_10.dve \
        --backend gpu --json

CuPy is imported first (so that its compiler can be watched; the command's own warm-up thread
then finds it imported), every ``cupy.cuda.compiler._compile_module_with_cache`` call is
timed with the thread that made it, the kernel names in its source, its options and the first
frame of this project's code on the stack; NVRTC's empty-file compilations (CuPy runs one per
distinct option set, to key its cache) are timed apart. After the command, on stderr: the
look-ups grouped by calling line, the option sets, and the look-ups replayed once more under
cProfile (the file read, the hash and the module load split apart). ``--deferred``: the
explorer gets the device as with the program's warm-up thread still at work (a
``DeferredDevice``), so it rehearses the device path in a thread (``Explorer.run``).
"""

from __future__ import annotations

import collections
import os
import re
import sys
import threading
import time

T0 = time.time()
ROOT = os.getcwd()
OWN = tuple(os.path.join(ROOT, d) + os.sep for d in ("dve", "statespace", "ocm", "scenarios",
                                                        "dvecost"))
LOOKUPS: list[dict] = []
PRE: list[float] = []
CALLS: list[tuple] = []


def _caller() -> str:
    f = sys._getframe(2)
    while f is not None:
        name = f.f_code.co_filename
        if name.startswith(OWN):
            return f"{os.path.relpath(name, ROOT)}:{f.f_lineno} {f.f_code.co_name}"
        f = f.f_back
    return "(outside the project)"


def hook() -> None:
    import cupy.cuda.compiler as cc
    outer, inner, pre = cc._compile_module_with_cache, cc._compile_with_cache_cuda, cc._preprocess

    def compile_module(source, options=(), *a, **kw):
        t = time.time()
        n_pre = len(PRE)
        try:
            return outer(source, options, *a, **kw)
        finally:
            names = re.findall(r"__global__\s+void\s+(\w+)", source)
            LOOKUPS.append(dict(t=t - T0, s=time.time() - t, pre=sum(PRE[n_pre:]),
                                thread=threading.current_thread().name,
                                names=",".join(names)[:60], options=tuple(options),
                                caller=_caller()))

    def compile_cuda(*a, **kw):
        CALLS.append((a, kw))
        return inner(*a, **kw)

    def preprocess(*a, **kw):
        t = time.time()
        try:
            return pre(*a, **kw)
        finally:
            PRE.append(time.time() - t)

    cc._compile_module_with_cache = compile_module
    cc._compile_with_cache_cuda = compile_cuda
    cc._preprocess = preprocess


def report() -> None:
    err = sys.stderr
    total = sum(x["s"] for x in LOOKUPS)
    print(f"look-ups: {len(LOOKUPS)}, {total:.3f} s, of which NVRTC empty-file compiles "
          f"{len(PRE)}, {sum(PRE):.3f} s", file=err)
    by_thread = collections.defaultdict(lambda: [0, 0.0])
    for x in LOOKUPS:
        by_thread[x["thread"]][0] += 1
        by_thread[x["thread"]][1] += x["s"]
    print("by thread:", {k: (n, round(s, 3)) for k, (n, s) in by_thread.items()}, file=err)
    groups = collections.defaultdict(list)
    for x in LOOKUPS:
        groups[x["caller"]].append(x)
    print(f"{'n':>4} {'s':>6} {'first t':>7}  caller: kernels", file=err)
    for caller, xs in sorted(groups.items(), key=lambda kv: -sum(x["s"] for x in kv[1])):
        names = collections.Counter(x["names"] for x in xs)
        print(f"{len(xs):4d} {sum(x['s'] for x in xs):6.3f} {xs[0]['t']:7.3f}  {caller}: "
              + "; ".join(f"{k}x{v}" if v > 1 else k for k, v in names.most_common(6)),
              file=err)
    opts = collections.Counter(x["options"] for x in LOOKUPS)
    print("option sets:", len(opts), file=err)
    for o, n in opts.most_common():
        # Include paths by their last two parts: the options that tell the sets apart.
        short = [("-I.../" + "/".join(x.split("/")[-2:])) if x.startswith("-I") else x
                 for x in o]
        kernels = sorted({x["names"] for x in LOOKUPS if x["options"] == o})[:4]
        print(f"  {n:4d}  {' '.join(short)[:220]}  e.g. {', '.join(kernels)[:120]}", file=err)
    slow = sorted(LOOKUPS, key=lambda x: -x["s"])[:8]
    for x in slow:
        print(f"  slowest: {x['s']:.4f} s (NVRTC {x['pre']:.4f}) at {x['t']:.3f} "
              f"[{x['thread']}] {x['names']} {x['caller']}", file=err)
    # The same look-ups once more (CuPy's option-set cache is warm now): read, hash, load.
    import cProfile
    import pstats
    calls = list(CALLS)
    prof = cProfile.Profile()
    t = time.time()
    prof.enable()
    for a, kw in calls:
        kw = dict(kw)
        kw.pop("name_expressions", None)
        try:
            _INNER[0](*a, **kw)
        except Exception as e:   # noqa: BLE001 - a census, not a test
            print("replay failed:", type(e).__name__, e, file=err)
            break
    prof.disable()
    print(f"replayed {len(calls)} look-ups in {time.time() - t:.3f} s", file=err)
    pstats.Stats(prof, stream=err).sort_stats("tottime").print_stats(10)


_INNER: list = []


class _WatchImport:
    """A finder that finds nothing: it prints where ``cupyx`` is first imported (its import
    pulls in SciPy's sparse matrices, 0.3 s)."""

    def find_spec(self, name, path=None, target=None):
        if name == "cupyx":
            import traceback
            print(f"cupyx imported at {time.time() - T0:.3f} s from:", file=sys.stderr)
            traceback.print_stack(limit=8, file=sys.stderr)
        return None


def _audit(event, args) -> None:
    # CuPy's lazy placeholder for cupyx runs cupyx's body at the first attribute read, whose
    # first import of a submodule shows who read it.
    if event == "import" and str(args[0]).startswith("cupyx.") and not _AUDITED:
        _AUDITED.append(args[0])
        import traceback
        print(f"cupyx loaded at {time.time() - T0:.3f} s ({args[0]}), from:", file=sys.stderr)
        stack = [f for f in traceback.extract_stack()[:-1] if "importlib" not in f.filename]
        print("".join(traceback.format_list(stack[-int(os.environ.get("STACK", 8)):])),
              file=sys.stderr)


_AUDITED: list = []


def main() -> int:
    argv = sys.argv[sys.argv.index("--") + 1:]
    sys.meta_path.insert(0, _WatchImport())   # (CuPy's lazy placeholder is found at import)
    sys.addaudithook(_audit)
    import cupy
    import cupy.cuda.compiler as cc
    _INNER.append(cc._compile_with_cache_cuda)
    hook()
    print(f"cupy imported at {time.time() - T0:.3f} s", file=sys.stderr)
    import dvecost.cli
    if "--deferred" in sys.argv[1:sys.argv.index("--")]:
        # As the program runs with its warm-up thread still at work: the explorer gets a
        # device that is resolved on first use (and so rehearses, see Explorer.run).
        import ocm.backend as ob
        plain = ob.array_module_for
        import dvecost.analysis as an
        an.array_module_for = ob.array_module_for = lambda b: (
            ob.DeferredDevice(required=True) if b == "gpu" else plain(b))
    rc = dvecost.cli.main(argv)
    sys.stdout.flush()
    cupy.cuda.Device().synchronize()
    print(f"command done at {time.time() - T0:.3f} s, rc {rc}; cupyx loaded: "
          f"{any(m.startswith('cupyx.') for m in sys.modules)}, scipy.sparse loaded: "
          f"{'scipy.sparse' in sys.modules}", file=sys.stderr)
    report()
    return rc


if __name__ == "__main__":
    sys.exit(main())
