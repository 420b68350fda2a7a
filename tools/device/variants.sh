#!/usr/bin/env bash
# Whole-process wall times of `analyze cs_N --backend gpu` for several DMR values
# (tools/device/variant.py), interleaved run by run; medians at the end. Run on the device
# from the repository root with .whl, .bench and .cupy_cache carried.
#   DMRS (default "16384 4096 1024"), RUNS (default 5), MODELS (default "10 12").
set -uo pipefail
source tools/device/common.sh; device_setup
export PYTHONPATH=/tmp/site:$PWD
python3 tools/device/compile_missing_bytecode.py | tail -1
python3 -m dvecost analyze .bench/cs_10.dve --backend gpu --json > /dev/null
log=/tmp/variants.txt; : > $log
for n in ${MODELS:-10 12}; do for i in $(seq 1 ${RUNS:-5}); do for d in ${DMRS:-16384 4096 1024}; do
  t0=$(date +%s.%N)
  DMR=$d python3 tools/device/variant.py analyze .bench/cs_$n.dve --backend gpu --json > /tmp/v.json
  rc=$?; t1=$(date +%s.%N)
  echo "cs_$n dmr=$d rc=$rc $(python3 -c "print(round($t1 - $t0, 3))") $(python3 -c "import json; d=json.load(open('/tmp/v.json')); print(d['value'], d['n_states'], d['timings']['explore'])")" | tee -a $log
done; done; done
python3 - $log <<'PY'
import collections, statistics, sys
w = collections.defaultdict(list)
for line in open(sys.argv[1]):
    n, d, rc, t = line.split()[:4]
    if rc == "rc=0":
        w[(n, d)].append(float(t))
for k, v in sorted(w.items()):
    print(k, f"median {statistics.median(v):.3f} min {min(v):.3f} max {max(v):.3f}")
PY
