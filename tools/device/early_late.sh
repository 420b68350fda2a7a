#!/usr/bin/env bash
# Whole-process wall times of `analyze cs_10 --backend gpu`: the program's entry point
# (`python3 -m dvecost`: the device warm-up starts before the analysis modules are imported)
# against tools/device/variant.py (dvecost.cli.main: the warm-up starts after them),
# interleaved; medians at the end. Run on the device from the repository root with .whl,
# .bench and .cupy_cache carried. RUNS (default 7), MODEL (default cs_10).
set -uo pipefail
source tools/device/common.sh; device_setup
export PYTHONPATH=/tmp/site:$PWD
python3 tools/device/compile_missing_bytecode.py | tail -1
m=.bench/${MODEL:-cs_10}.dve
python3 -m dvecost analyze $m --backend gpu --json > /dev/null
log=/tmp/early_late.txt; : > $log
for i in $(seq 1 ${RUNS:-7}); do
  for v in early late; do
    t0=$(date +%s.%N)
    if [ $v = early ]; then python3 -m dvecost analyze $m --backend gpu --json > /tmp/v.json
    else python3 tools/device/variant.py analyze $m --backend gpu --json > /tmp/v.json; fi
    rc=$?; t1=$(date +%s.%N)
    echo "$v rc=$rc $(python3 -c "print(round($t1 - $t0, 3))")" | tee -a $log
  done
done
python3 - $log <<'PY'
import collections, statistics, sys
w = collections.defaultdict(list)
for line in open(sys.argv[1]):
    v, rc, t = line.split()
    if rc == "rc=0":
        w[v].append(float(t))
for v, ts in w.items():
    print(v, f"median {statistics.median(ts):.3f} min {min(ts):.3f} max {max(ts):.3f}")
PY
