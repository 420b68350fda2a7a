#!/usr/bin/env bash
# Where the engine across GPUs spends its time, and its memory (issue 26), run on a host of 4
# GPUs from the repository root:
#   bash tools/device/run_engine_phases.sh [tests] [14] [15] [16]   (default: all four)
# tests: the gpu tests of the engine across processes (tests/dist/test_dist_gpu.py -k "blocks or runs":
#   DVECOST_DIST_ENGINE=blocks 'dvecost analyze --gpus 2/4' equal to one process);
# 14, 15, 16: 'DVECOST_DIST_ENGINE=blocks dvecost analyze --gpus 4 --json --no-witness' of
#   cs_N (the bundled client_server_template.dve at -D N=...), its JSON line (the
#   'distributed' key: each phase's seconds on the slowest GPU, the engine's rounds) in
#   cs_N.json, each process's steps as they end (DVECOST_DIST_TRACE: where a run stopped by the
#   timeout spent its time) in cs_N.err, every GPU's memory sampled each second in cs_N.mem.csv.
# At most about 8.5 minutes in all (tests 240 s at most, TIMEOUT per model, default 120 s).
# Writes env.txt, pytest.log, cs_N.json, cs_N.err, cs_N.mem.csv and phases.log under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/engine-phases-out}
mkdir -p "$OUT"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(tests 14 15 16)
exec > >(tee -a "$OUT/phases.log") 2>&1
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; nvidia-smi --query-gpu=name,memory.total --format=csv; nproc; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
rc=0
for s in "${steps[@]}"; do
  t0=$(date +%s)
  if [ "$s" = tests ]; then
    timeout 240 python3 -m pytest -q -m gpu tests/dist/test_dist_gpu.py -k "blocks or runs or nccl_collectives" \
      -p no:cacheprovider -rs > "$OUT/pytest.log" 2>&1; trc=$?
    tail -8 "$OUT/pytest.log"; echo "tests: rc=$trc in $(( $(date +%s) - t0 )) s"
    [ $trc -ne 0 ] && rc=$trc
    continue
  fi
  nvidia-smi --query-gpu=index,memory.used --format=csv,noheader,nounits -l 1 \
    > "$OUT/cs_$s.mem.csv" 2>/dev/null &
  smi=$!
  DVECOST_DIST_ENGINE=blocks DVECOST_DIST_TRACE=1 timeout "${TIMEOUT:-120}" \
    python3 -m dvecost analyze --gpus 4 \
    --json --no-witness -D N="$s" dvecost/examples/client_server_template.dve \
    > "$OUT/cs_$s.json" 2> "$OUT/cs_$s.err"; arc=$?
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  peak=$(sort -t, -k2 -n "$OUT/cs_$s.mem.csv" | tail -1)
  echo "cs_$s: rc=$arc in $(( $(date +%s) - t0 )) s wall; GPU memory peak (index, MiB): $peak"
  python3 - "$OUT/cs_$s.json" <<'PY'
import json, sys
try:
    d = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
except (IndexError, ValueError):
    sys.exit(print("  no JSON line (see cs_N.err)"))
print(" ", d.get("status"), d.get("exact"), d.get("certified"), d.get("n_states"),
      d.get("n_transitions"), "timings", d.get("timings"), "counts", d.get("counts"))
dist = d.get("distributed") or {}
for k, v in (dist.get("seconds") or {}).items():
    print(f"  {k:24s} {v:9.3f} s")
print("  rounds", dist.get("rounds"))
PY
  grep "^\[process 0\]" "$OUT/cs_$s.err" | tail -40; grep -v "^\[process" "$OUT/cs_$s.err" | tail -5
done
exit $rc
