#!/usr/bin/env bash
# Issue 15's wall-time targets on the device (carry .whl and .bench; optionally .cupy_cache,
# a CuPy kernel cache from an earlier call): with TESTS=1 (default) the GPU tests first
# (`pytest -m gpu tests`, 4 workers; they also fill CuPy's kernel cache, empty on a fresh
# machine), then `dvecost analyze --backend gpu` on cs_10 and cs_12 as whole processes
# (interpreter start included; RUNS each, default 5), with CPU=1 the CPU's answers compared,
# the import floors, and timelines (tools/device/timeline_analyze.py --as-program) of both.
# Writes log.txt, pytest.log and kernel_cache.tgz under $OUT (JSON outputs under /tmp/fj).
set -uo pipefail
OUT=${OUT:-/tmp/final-out}; mkdir -p "$OUT" /tmp/fj
exec > >(tee -a "$OUT/log.txt") 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m compileall -q dve statespace ocm scenarios dvecost tools /tmp/site > /dev/null
export PYTHONPATH=/tmp/site:$PWD DVECOST_SHARED=$PWD/.bench/shared PYTHONUNBUFFERED=1
if [ -d .cupy_cache ]; then mkdir -p ~/.cupy; cp -rL .cupy_cache ~/.cupy/kernel_cache; fi
date -u; echo "kernel cache before: $(ls ~/.cupy/kernel_cache 2>/dev/null | wc -l) files"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "${BYTECODE:-0}" = 1 ]; then   # bytecode for the image's NumPy and cuda-bindings too
  python3 tools/device/compile_missing_bytecode.py
fi
if [ "${TESTS:-1}" = 1 ]; then
  t0=$(date +%s)
  timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -m gpu tests -p no:cacheprovider -n 4 \
    --durations=10 > "$OUT/pytest.log" 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - t0 )) s"
  grep -E "passed|failed|FAILED|ERROR" "$OUT/pytest.log" | tail -15
fi
wall() {   # wall NAME ARGS...: one whole process, wall time and the JSON's gist
  local name=$1; shift
  local t0=$(date +%s.%N)
  python3 -m dvecost "$@" --json > "/tmp/fj/$name.json" 2> "/tmp/fj/$name.stderr"; local rc=$?
  local t1=$(date +%s.%N)
  python3 - "/tmp/fj/$name.json" "$name" "$rc" "$t0" "$t1" <<'PY'
import json, sys
p, name, rc, t0, t1 = sys.argv[1:]
try:
    d = json.load(open(p))
except Exception as e:
    d = {"error": repr(e)}
t = {k: round(v, 3) for k, v in d.get("timings", {}).items()}
print(f"{name:14s} rc={rc} wall {float(t1) - float(t0):6.3f} s  {d.get('exact')} "
      f"certified={d.get('certified')} {d.get('n_states')} {d.get('n_transitions')} "
      f"{d.get('backend')} {t}")
PY
}
wall cs10_first analyze .bench/cs_10.dve --backend gpu
wall cs12_first analyze .bench/cs_12.dve --backend gpu
(cd ~/.cupy && tar czf "$OUT/kernel_cache.tgz" kernel_cache) && ls -la "$OUT/kernel_cache.tgz"
for n in 10 12; do for i in $(seq 1 ${RUNS:-5}); do
  wall cs${n}_gpu$i analyze .bench/cs_$n.dve --backend gpu; done; done
if [ "${CPU:-0}" = 1 ]; then
  for n in 10 12; do wall cs${n}_cpu analyze .bench/cs_$n.dve --backend cpu; done
  python3 - <<'PY'
import json
for n in (10, 12):
    c, g = (json.load(open(f"/tmp/fj/cs{n}_{b}.json")) for b in ("cpu", "gpu1"))
    keys = ("value", "exact", "certified", "n_states", "n_transitions", "n_deadlocks",
            "cycle", "prefix", "initial")
    print(f"cs_{n}: GPU JSON equals CPU JSON on {keys}:", all(c.get(k) == g.get(k) for k in keys),
          [k for k in keys if c.get(k) != g.get(k)])
PY
fi
echo "== floors (best of 3 processes)"
for c in "pass" "import numpy" "import numpy, dvecost.cli" "import cupy" \
         "import cupy; cupy.cuda.runtime.getDeviceCount()" "import cupy; cupy.empty(1)"; do
  best=99; for i in 1 2 3; do t0=$(date +%s.%N); python3 -c "$c" >/dev/null 2>&1
    t1=$(date +%s.%N); best=$(python3 -c "print(min($best, $t1 - $t0))"); done
  printf '%6.3f s  %s\n' "$best" "$c"
done
best=99; for i in 1 2 3; do t0=$(date +%s.%N); OPENBLAS_NUM_THREADS=1 python3 -c "import numpy"
  t1=$(date +%s.%N); best=$(python3 -c "print(min($best, $t1 - $t0))"); done
printf '%6.3f s  OPENBLAS_NUM_THREADS=1: import numpy\n' "$best"
for n in 10 12; do
  T0=$(date +%s.%N) python3 tools/device/timeline_analyze.py --as-program -- analyze \
    .bench/cs_$n.dve --backend gpu --json > /dev/null
done
python3 -m cProfile -o /tmp/p10.prof -m dvecost analyze .bench/cs_10.dve --backend gpu --json > /dev/null
python3 -c "
import pstats; s = pstats.Stats('/tmp/p10.prof'); s.sort_stats('tottime').print_stats(22)
s.print_callers('compileProgram|memGetInfo')" 2>&1 | grep -v '^$' | cut -c1-170 | tail -45
