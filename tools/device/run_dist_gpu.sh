#!/usr/bin/env bash
# The distributed search on several GPUs of one host (issue 26), run on the device machine from
# the repository root (README.md here):
#   bash tools/device/run_dist_gpu.sh [tests] [bench]   (default: both)
# tests: every test marked gpu under tests/dist (the NCCL collectives, the distributed build on
#   2 and 4 GPUs identical array for array to the one-process build, 'dvecost analyze --gpus 2');
# bench: 'dvecost bench scale --gpus 1,2,4' (1,2 on a host of two GPUs): strong scaling on the
#   client/server family at STRONG clients (default 14: cs_14, 94 M states) with the one-GPU
#   explorer as the reference, and weak scaling at WEAK clients per P (default 13,14,14).
# The cs_N models are the bundled template dvecost/examples/client_server_template.dve at
# -D N=..., the same state spaces as the cs_N.dve files (the project has no generator script);
# nothing needs carrying but .whl (the lark wheel, and mpi4py's if the image lacks it).
# Writes env.txt, pytest.log, scale.md, scale.json, scale.jsonl and dist.log under $OUT.
# REPEAT (default 1; each run already searches twice in its processes, the best kept);
# ENGINE (default --no-engine: exploration only; ENGINE=" " also times the cycle engine).
set -uo pipefail
OUT=${OUT:-/tmp/dist-gpu-out}
mkdir -p "$OUT"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(tests bench)
exec > >(tee -a "$OUT/dist.log") 2>&1
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
fi
python3 -m compileall -q runtime dve statespace ocm scenarios dvecost /tmp/site > /dev/null 2>&1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# NVLink multicast off (as the device machines set it); Open MPI's mpiexec runs as root only
# when both of these are set (the device machines run as root).
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
n_gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
{
  date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc
  python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)"
  python3 -c "import mpi4py; print('mpi4py', mpi4py.__version__)"
  mpiexec --version 2>&1 | head -2
  echo "GPUs: $n_gpus"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
if [ "$n_gpus" -ge 4 ]; then gpus=1,2,4; weak=${WEAK:-13,14,14}; else gpus=1,2; weak=${WEAK:-13,14}; fi
gpus=${GPUS:-$gpus}
rc=0
for s in "${steps[@]}"; do
  case "$s" in
    tests)
      t0=$(date +%s)
      timeout ${TEST_TIMEOUT:-400} python3 -m pytest -q -m gpu tests/dist -p no:cacheprovider \
        -rs > "$OUT/pytest.log" 2>&1; trc=$?
      tail -25 "$OUT/pytest.log"; echo "tests: rc=$trc in $(( $(date +%s) - t0 )) s"
      [ $trc -ne 0 ] && rc=$trc ;;
    bench)
      t0=$(date +%s)
      timeout ${BENCH_TIMEOUT:-480} python3 -m dvecost bench scale --gpus "$gpus" \
        --strong "${STRONG:-14}" --weak "$weak" --repeat "${REPEAT:-1}" ${ENGINE:---no-engine} \
        --jsonl "$OUT/scale.jsonl" --json > "$OUT/scale.json"; brc=$?
      echo "bench: rc=$brc in $(( $(date +%s) - t0 )) s"
      [ $brc -ne 0 ] && rc=$brc
      [ -s "$OUT/scale.json" ] && python3 - "$OUT/scale.json" <<'PY' | tee "$OUT/scale.md"
import json, sys
d = json.load(open(sys.argv[1]))
cols = list(d["rows"][0])
def cell(v):
    return f"{v:.4g}" if isinstance(v, float) else ("" if v is None else str(v))
print("| " + " | ".join(cols) + " |")
print("|" + "|".join("---" for _ in cols) + "|")
for r in d["rows"]:
    print("| " + " | ".join(cell(r[c]) for c in cols) + " |")
for n in d["notes"]:
    print("-", n)
PY
      ;;
    *) echo "unknown step $s"; rc=2 ;;
  esac
done
exit $rc
