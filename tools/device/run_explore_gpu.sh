#!/usr/bin/env bash
# Exploration on the GPU, run on the device machine from the repository root (README.md here):
#   bash tools/device/run_explore_gpu.sh [tests] [bench] [analyze]   (default: all three)
# Needs, carried with the call: .whl (the lark wheel; CuPy, NumPy, SciPy and pytest are on the
# device image) and .bench (the client/server models cs_10.dve, cs_11.dve, cs_12.dve, and
# shared/ with models/ and a BEEM sample under beem/models, for DVECOST_SHARED). Writes env.txt, pytest.log, bench.json/md, analyze.txt and
# explore.log under $OUT.
# MODELS (default "10 11 12"): the cs_N sizes benchmarked; ANALYZE (default MODELS): those
# analysed; BACKENDS (default "gpu gpu cpu") the runs of each; REPEAT (default 2);
# TEST_TIMEOUT (default 300 s); DVECOST_KERNEL=off explores with array operations instead of
# the generated successor kernel.
set -uo pipefail
OUT=${OUT:-/tmp/explore-gpu-out}
mkdir -p "$OUT"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(tests bench analyze)
exec > >(tee -a "$OUT/explore.log") 2>&1
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
# Bytecode compiled once, as an installed package has it: the tree arrives as sources only,
# and compiling ~250 modules at every start would add ~0.8 s to each process timed below.
python3 -m compileall -q dve statespace ocm scenarios dvecost /tmp/site > /dev/null
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 DVECOST_SHARED=$PWD/.bench/shared
{
  date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc
  python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
rc=0
for s in "${steps[@]}"; do
  case "$s" in
    tests)
      t0=$(date +%s)
      timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -m gpu tests/statespace/test_explore_gpu.py --durations=12 \
        -p no:cacheprovider > "$OUT/pytest.log" 2>&1; trc=$?
      tail -30 "$OUT/pytest.log"; echo "tests: rc=$trc in $(( $(date +%s) - t0 )) s"
      [ $trc -ne 0 ] && rc=$trc ;;
    bench)
      m=(); for n in ${MODELS:-10 11 12}; do m+=(--model ".bench/cs_$n.dve"); done
      timeout 300 python3 -m dvecost bench explore --backend gpu --repeat "${REPEAT:-2}" \
        "${m[@]}" --json > "$OUT/bench.json" || rc=$?
      python3 - "$OUT/bench.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
cols = list(d["rows"][0])
print("| " + " | ".join(cols) + " |")
for r in d["rows"]:
    print("| " + " | ".join(str(r[c]) for c in cols) + " |")
for n in d["notes"]:
    print("-", n)
EOF
      ;;
    analyze)
      # Wall time of whole processes (interpreter start included): the GPU twice (the first
      # with CuPy's kernel cache empty, the second with it filled), then the CPU.
      for n in ${ANALYZE:-${MODELS:-10 11 12}}; do
        for b in ${BACKENDS:-gpu gpu cpu}; do
          t0=$(date +%s.%N)
          timeout 200 python3 -m dvecost analyze ".bench/cs_$n.dve" --backend "$b" --json \
            > "$OUT/analyze_${n}_$b.json" 2>/dev/null; arc=$?
          t1=$(date +%s.%N)
          python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('cs_$n $b rc=$arc wall %.2f s' % ($t1-$t0), d.get('value'), d.get('n_states'), d.get('n_transitions'), d.get('backend'), {k: round(v, 3) for k, v in d.get('timings', {}).items()})" "$OUT/analyze_${n}_$b.json" | tee -a "$OUT/analyze.txt"
        done
      done ;;
    *) echo "unknown step $s"; rc=2 ;;
  esac
done
exit $rc
