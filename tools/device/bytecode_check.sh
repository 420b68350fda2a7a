#!/usr/bin/env bash
# Does the device image's Python find bytecode for the modules `dvecost analyze --backend gpu`
# imports? (carry .whl, .bench and .cupy_cache, the kernel cache of an earlier call). Lists the
# modules loaded from source per top-level package (the image sets PYTHONDONTWRITEBYTECODE
# and ships NumPy and cuda-bindings without bytecode: each process compiles them again), then
# compiles those modules' bytecode, as a pip install has it, and times cs_10 and cs_12 (RUNS
# each), the import floors, and one timeline of each.
set -uo pipefail
OUT=${OUT:-/tmp/bc-out}; mkdir -p "$OUT" /tmp/fj
exec > >(tee -a "$OUT/log.txt") 2>&1
source tools/device/common.sh; device_setup
python3 - <<'PY'
import collections, importlib.util, os, sys
import dvecost.cli, dvecost.analysis, cupy
cupy.empty(1)
src = collections.Counter(); byte = collections.Counter(); ro = set()
for name, m in list(sys.modules.items()):
    f = getattr(m, "__file__", None)
    if not f or not f.endswith(".py"):
        continue
    top = name.split(".")[0]
    ok = os.path.exists(importlib.util.cache_from_source(f))
    (byte if ok else src)[top] += 1
    if not ok and not os.access(os.path.dirname(f), os.W_OK):
        ro.add(top)
print("modules without bytecode, by package:", dict(src.most_common(12)))
print("with bytecode:", dict(byte.most_common(8)))
print("without bytecode in a read-only folder:", sorted(ro))
print("PYTHONDONTWRITEBYTECODE =", os.environ.get("PYTHONDONTWRITEBYTECODE"))
import py_compile
n = 0
for name, m in list(sys.modules.items()):
    f = getattr(m, "__file__", None)
    if f and f.endswith(".py") and not os.path.exists(importlib.util.cache_from_source(f)):
        try:
            py_compile.compile(f, doraise=True)
            n += 1
        except Exception as e:
            print("not compiled:", f, e)
print("compiled", n, "modules")
PY
for n in 10 12; do for i in $(seq 1 ${RUNS:-5}); do
  wall cs${n}_gpu$i analyze .bench/cs_$n.dve --backend gpu; done; done
echo "== floors with the bytecode compiled (best of 3 processes)"
for c in "pass" "import numpy" "import numpy, dvecost.cli" "import cupy" \
         "import cupy; cupy.cuda.runtime.getDeviceCount()" "import cupy; cupy.empty(1)" \
         "import dvecost.cli, cupy; cupy.empty(1)"; do
  floor "$c"
done
timelines
profile_cs10 14 | tail -17
