#!/usr/bin/env bash
# Issue 15's start-up costs of `dvecost analyze --backend gpu`, on the device (carry .whl and
# .bench): fixed floors (interpreter, imports, CUDA context), then timelines
# (tools/device/timeline_analyze.py) of cs_10 with CuPy's kernel cache empty (the machine is
# fresh) and filled, with and without --sync, cs_12, and one cProfile of each. Writes under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/startup-out}; mkdir -p "$OUT"
source tools/device/common.sh; device_setup
echo "kernel cache before: $(ls ~/.cupy/kernel_cache 2>/dev/null | wc -l) files"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
run_tl() {
  local name=$1; shift
  local t0=$(date +%s.%N)
  T0=$t0 python3 tools/device/timeline_analyze.py "$@" > "$OUT/$name.json" 2> "$OUT/$name.err"
  local rc=$? t1=$(date +%s.%N)
  echo "== $name: rc=$rc wall $(python3 -c "print(f'{$t1 - $t0:.3f}')") s  $(head -c 160 $OUT/$name.json | cut -c1-120)"
  cat "$OUT/$name.err"
}
run_tl cs10_cold -- analyze .bench/cs_10.dve --backend gpu --json
echo "kernel cache after cs_10: $(ls ~/.cupy/kernel_cache | wc -l) files, $(du -sh ~/.cupy/kernel_cache | cut -f1)"
run_tl cs12_cold -- analyze .bench/cs_12.dve --backend gpu --json
echo "kernel cache after cs_12: $(ls ~/.cupy/kernel_cache | wc -l) files"
echo "== floors (best of 3)"
floor "pass"
floor "import numpy"
floor "import cupy"
floor "import cupy; cupy.cuda.runtime.getDeviceCount()"
floor "import cupy; cupy.empty(1)"
floor "import cupy; a = cupy.arange(10); int((a + 1).sum())"
floor "import dvecost.cli"
floor "import dvecost.cli, dvecost.analysis, dvecost.cli.analyze, lark"
floor "import dvecost.cli, dvecost.analysis, cupy; cupy.empty(1)"
for i in 1 2; do run_tl cs10_warm$i -- analyze .bench/cs_10.dve --backend gpu --json; done
run_tl cs10_sync --sync -- analyze .bench/cs_10.dve --backend gpu --json
for i in 1 2; do run_tl cs10_prewarm$i --prewarm-context -- analyze .bench/cs_10.dve --backend gpu --json; done
for i in 1 2; do run_tl cs12_warm$i -- analyze .bench/cs_12.dve --backend gpu --json; done
run_tl cs12_sync --sync -- analyze .bench/cs_12.dve --backend gpu --json
run_tl cs10_cpu -- analyze .bench/cs_10.dve --backend cpu --json
python3 -X importtime -c "import dvecost.cli, dvecost.analysis, dvecost.cli.analyze, cupy" 2> "$OUT/importtime.txt"
echo "== importtime, top cumulative"; sort -t'|' -k2 -n "$OUT/importtime.txt" | tail -12
for n in 10 12; do
  python3 -m cProfile -o "$OUT/p$n.prof" -m dvecost analyze .bench/cs_$n.dve --backend gpu --json > /dev/null
  python3 -c "
import pstats; s = pstats.Stats('$OUT/p$n.prof'); s.sort_stats('tottime').print_stats(25)" > "$OUT/p${n}_tot.txt"
  python3 -c "
import pstats; s = pstats.Stats('$OUT/p$n.prof'); s.sort_stats('cumulative').print_stats(60)" > "$OUT/p${n}_cum.txt"
done
echo "== cs_10 cProfile tottime"; grep -A32 "ncalls" "$OUT/p10_tot.txt" | cut -c1-150
