#!/usr/bin/env bash
# Issue 15's cs_10 target after the first-use costs were cut (no cupyx import, any_true,
# warm_up's first uses): run on the device with .whl, .bench and .cupy_cache carried (see
# final_startup.sh). Bytecode compiled as an install has it; CuPy's kernel look-ups of one
# cs_10 process (tools/device/kernel_census.py, with where cupyx is imported, if it is);
# whole-process wall times of `dvecost analyze --backend gpu` on cs_10 and cs_12 (RUNS each)
# and a timeline of each; then the same without warm_up's first uses (FIRST_USES=0 skips
# that comparison; it edits this throwaway copy's ocm/backend.py and puts it back); with
# TESTS=1 the GPU tests of tests/statespace. Writes log.txt (and pytest.log) under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/first-use-out}; mkdir -p "$OUT" /tmp/fj
exec > >(tee -a "$OUT/log.txt") 2>&1
source tools/device/common.sh; device_setup
date -u; echo "kernel cache: $(ls ~/.cupy/kernel_cache 2>/dev/null | wc -l) files"
python3 tools/device/compile_missing_bytecode.py | tail -1
series() {   # series TAG: RUNS processes of each model, then a timeline of each
  for n in 10 12; do for i in $(seq 1 ${RUNS:-5}); do
    wall cs${n}_$1$i analyze .bench/cs_$n.dve --backend gpu; done; done
  for n in 10 12; do
    echo "== timeline cs_$n ($1)"
    T0=$(date +%s.%N) python3 tools/device/timeline_analyze.py --as-program -- analyze \
      .bench/cs_$n.dve --backend gpu --json 2>&1 >/dev/null | grep -v "#1 end\|summarize\|emit_json\|decode_runs"
  done
}
wall warm10 analyze .bench/cs_10.dve --backend gpu   # anything missing compiled now
wall warm12 analyze .bench/cs_12.dve --backend gpu
echo "== census"
python3 tools/device/kernel_census.py -- analyze .bench/cs_10.dve --backend gpu --json \
  2>&1 >/dev/null | head -${CENSUS_LINES:-30}
series new
if [ "${FIRST_USES:-1}" = 1 ]; then
  cp ocm/backend.py /tmp/backend.py.orig
  sed -i 's/^                _first_uses(cupy)$/                pass/' ocm/backend.py
  grep -c "_first_uses(cupy)" ocm/backend.py; python3 -m compileall -q ocm > /dev/null
  series nofirst
  cp /tmp/backend.py.orig ocm/backend.py; python3 -m compileall -q ocm > /dev/null
fi
if [ "${TESTS:-0}" = 1 ]; then
  t0=$(date +%s)
  timeout ${TEST_TIMEOUT:-240} python3 -m pytest -q -m gpu tests/statespace -x -n 4 \
    -p no:cacheprovider > "$OUT/pytest.log" 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - t0 )) s"
  tail -4 "$OUT/pytest.log"
fi
