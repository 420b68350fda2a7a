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
source tools/device/common.sh; device_setup
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
  floor "$c"
done
echo -n "OPENBLAS_NUM_THREADS=1: "; OPENBLAS_NUM_THREADS=1 floor "import numpy"
timelines
profile_cs10 22 'compileProgram|memGetInfo' | tail -45
