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
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m compileall -q dve statespace ocm scenarios dvecost tools /tmp/site > /dev/null
export PYTHONPATH=/tmp/site:$PWD DVECOST_SHARED=$PWD/.bench/shared PYTHONUNBUFFERED=1
mkdir -p ~/.cupy; cp -rL .cupy_cache ~/.cupy/kernel_cache
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
wall() {
  local name=$1; shift
  local t0=$(date +%s.%N)
  python3 -m dvecost "$@" --json > "/tmp/fj/$name.json" 2>/dev/null; local rc=$?
  local t1=$(date +%s.%N)
  python3 -c "
import json, sys; d = json.load(open('/tmp/fj/$name.json'))
print(f'$name rc=$rc wall {$t1 - $t0:6.3f} s', d.get('exact'), d.get('certified'), d.get('n_states'), d.get('n_transitions'), {k: round(v, 3) for k, v in d['timings'].items()})"
}
for n in 10 12; do for i in $(seq 1 ${RUNS:-5}); do
  wall cs${n}_gpu$i analyze .bench/cs_$n.dve --backend gpu; done; done
echo "== floors with the bytecode compiled (best of 3 processes)"
for c in "pass" "import numpy" "import numpy, dvecost.cli" "import cupy" \
         "import cupy; cupy.cuda.runtime.getDeviceCount()" "import cupy; cupy.empty(1)" \
         "import dvecost.cli, cupy; cupy.empty(1)"; do
  best=99; for i in 1 2 3; do t0=$(date +%s.%N); python3 -c "$c" >/dev/null 2>&1
    t1=$(date +%s.%N); best=$(python3 -c "print(min($best, $t1 - $t0))"); done
  printf '%6.3f s  %s\n' "$best" "$c"
done
for n in 10 12; do
  T0=$(date +%s.%N) python3 tools/device/timeline_analyze.py --as-program -- analyze \
    .bench/cs_$n.dve --backend gpu --json > /dev/null
done
python3 -m cProfile -o /tmp/p10.prof -m dvecost analyze .bench/cs_10.dve --backend gpu --json > /dev/null
python3 -c "
import pstats; s = pstats.Stats('/tmp/p10.prof'); s.sort_stats('tottime').print_stats(14)" 2>&1 | grep -v '^$' | cut -c1-150 | tail -17
