#!/usr/bin/env bash
# Whole-process wall times of `dvecost analyze --backend gpu` on cs_10 and cs_12 for several
# versions of the code in one machine, interleaved run by run (machines differ by 0.2-0.4 s,
# so only figures of one call compare). Run on the device from the repository root, with
# .whl, .bench and .cupy_cache carried (see final_startup.sh) and each other version's
# packages extracted under .ab/NAME (`git archive COMMIT dve statespace ocm scenarios
# dvecost | tar -x -C .ab/NAME`); the working tree is version "tree".
#   RUNS (default 5) per model and version; MODELS (default "10 12"); then for the tree a
#   timeline and a kernel census of cs_10 and the profile of its first device chunk; with
#   TESTS=1 the GPU tests of tests/statespace. Writes log.txt (and pytest.log) under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/ab-out}; mkdir -p "$OUT" /tmp/fj
exec > >(tee -a "$OUT/log.txt") 2>&1
ROOT=$PWD
source tools/device/common.sh; device_setup
versions=(tree); for d in .ab/*/; do [ -d "$d" ] && versions+=("$(basename "$d")"); done
dir() { if [ "$1" = tree ]; then echo "$ROOT"; else echo "$ROOT/.ab/$1"; fi; }
for v in "${versions[@]}"; do
  (cd "$(dir "$v")" && python3 -m compileall -q dve statespace ocm scenarios dvecost > /dev/null)
done
python3 -m compileall -q tools /tmp/site > /dev/null
date -u; echo "versions: ${versions[*]}; kernel cache: $(ls ~/.cupy/kernel_cache | wc -l) files"
PYTHONPATH=/tmp/site:$ROOT python3 tools/device/compile_missing_bytecode.py | tail -1
for v in "${versions[@]}"; do
  WALL_DIR=$(dir "$v") wall warm_$v analyze "$ROOT/.bench/cs_10.dve" --backend gpu; done
for n in ${MODELS:-10 12}; do for i in $(seq 1 ${RUNS:-5}); do for v in "${versions[@]}"; do
  WALL_DIR=$(dir "$v") wall "cs${n}_${v}_$i" analyze "$ROOT/.bench/cs_$n.dve" --backend gpu
done; done; done
sleep 1; python3 - "$OUT/log.txt" "${versions[@]}" <<'PY'
import re, statistics, sys
text = open(sys.argv[1]).read()
for n in (10, 12):
    for v in sys.argv[2:]:
        ws = sorted(float(w) for w in re.findall(rf"^cs{n}_{v}_\d+ +rc=0 wall +([\d.]+)", text, re.M))
        if ws:
            print(f"cs_{n} {v:8s} median {statistics.median(ws):.3f} s  min {ws[0]:.3f}  "
                  f"max {ws[-1]:.3f}  ({len(ws)} runs)")
PY
export PYTHONPATH=/tmp/site:$ROOT
echo "== timeline cs_10 (tree)"
T0=$(date +%s.%N) python3 tools/device/timeline_analyze.py --as-program -- analyze \
  .bench/cs_10.dve --backend gpu --json 2>&1 >/dev/null | grep -v "#1 end\|summarize\|emit_json\|decode_runs"
echo "== census cs_10 (tree)"
python3 tools/device/kernel_census.py -- analyze .bench/cs_10.dve --backend gpu --json \
  2>&1 >/dev/null | grep -v "^  File\|^    " | head -${CENSUS_LINES:-22}
echo "== first device chunk of cs_10 (tree)"
python3 tools/device/first_use.py --chunk -- analyze .bench/cs_10.dve --backend gpu --json \
  2>&1 >/dev/null | grep -v '^$' | cut -c1-160 | head -${PROFILE_LINES:-40}
if [ "${TESTS:-0}" = 1 ]; then
  t0=$(date +%s)
  timeout ${TEST_TIMEOUT:-240} python3 -m pytest -q -m gpu tests/statespace -x -n 4 \
    -p no:cacheprovider > "$OUT/pytest.log" 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - t0 )) s"
  tail -4 "$OUT/pytest.log"
fi
