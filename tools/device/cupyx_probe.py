"""What CuPy's first elementwise call costs, and what of it SciPy is: run on the device.

``python3 tools/device/cupyx_probe.py MODE`` in a fresh process: imports CuPy, makes the
context, then times the first elementwise call. MODE ``plain`` as CuPy ships; ``noscipy``
with ``scipy`` unimportable during that call (``sys.modules['scipy'] = None``); ``lean``
CuPy imported as ``ocm.backend.warm_up`` does (no cuTENSOR preload); ``stack``
prints where ``cupyx`` is first imported. Prints the modules the call loaded, by package.
"""
import sys
import time

mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
t0 = time.perf_counter()
if mode == "lean":   # as dvecost's warm-up imports it: no cuTENSOR preload
    from ocm.backend import _import_cupy_lean
    t0 = time.perf_counter()
    _import_cupy_lean()
import cupy  # noqa: E402
t1 = time.perf_counter()
cupy.empty(1)
cupy.cuda.Device().synchronize()
t2 = time.perf_counter()
if mode == "stack":
    import traceback

    def hook(event, args):
        if event == "import" and str(args[0]) in ("cupyx", "scipy"):
            print(f"-- {args[0]} imported from:", file=sys.stderr)
            traceback.print_stack(limit=12)
    sys.addaudithook(hook)
before = set(sys.modules)
a = cupy.arange(1 << 15, dtype=cupy.int64)
t3 = time.perf_counter()
if mode == "noscipy":
    saved = sys.modules.get("scipy")
    sys.modules["scipy"] = None
    try:
        low = a < 5
    finally:
        if saved is None:
            del sys.modules["scipy"]
        else:
            sys.modules["scipy"] = saved
else:
    low = a < 5
cupy.cuda.Device().synchronize()
t4 = time.perf_counter()
b = a > 7
cupy.cuda.Device().synchronize()
t5 = time.perf_counter()
new = sorted(set(sys.modules) - before)
tops = {}
for m in new:
    tops[m.split(".")[0]] = tops.get(m.split(".")[0], 0) + 1
print(f"{mode:8s} cupy {cupy.__version__} import {t1 - t0:.3f} context {t2 - t1:.3f} "
      f"first elementwise {t4 - t3:.3f} second {t5 - t4:.4f}; loaded {len(new)} modules {tops}")
