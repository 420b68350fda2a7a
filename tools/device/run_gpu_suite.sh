#!/usr/bin/env bash
# The GPU suite, run on the device machine from the repository root (tools/device/README.md):
#   bash tools/device/run_gpu_suite.sh [tests] [quick] [full] [sweep]   (default: tests full)
# tests: every test marked gpu (tests/, the explorer's and the cycle engine's device paths);
# quick, full, sweep: the cycle engine's GPU benchmark (python3 -m dvecost.benchmarks.ocm_gpu)
# against the CPU engine and the ocmref reference solver.
# Needs, carried with the call: .whl (the lark wheel: CuPy, NumPy, SciPy, networkx and pytest
# are on the device image) and, for the benchmarks, .bench (ocmref/ocmref, a static build of
# the reference solver, ocmref/gen.py, its graph generator, and optionally cs_N.dve client/server
# models; each is explored on the device and benchmarked as a state graph).
# REF_TIMEOUT (seconds, default 200): reference runs still going then are killed and
# reported as '>T (killed)'. Writes env.txt, pytest.log, junit.xml, bench*.json/md and suite.log under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/gpu-suite-out}
mkdir -p "$OUT"
steps=("$@"); [ ${#steps[@]} -eq 0 ] && steps=(tests full)
exec > >(tee -a "$OUT/suite.log") 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
{
  date -u; nvidia-smi; nproc; lscpu | grep -E 'Model name|^CPU\(s\)'
  python3 -c "import cupy, numpy, scipy; print('cupy', cupy.__version__, 'numpy', numpy.__version__, 'scipy', scipy.__version__); print(cupy.cuda.runtime.getDeviceProperties(0)['name'])"
} > "$OUT/env.txt" 2>&1
head -20 "$OUT/env.txt"
rc=0
for s in "${steps[@]}"; do
  case "$s" in
    tests)
      t0=$(date +%s)
      timeout ${TEST_TIMEOUT:-540} python3 -m pytest -q -m gpu tests -p no:cacheprovider \
        --junitxml="$OUT/junit.xml" > "$OUT/pytest.log" 2>&1; trc=$?
      tail -25 "$OUT/pytest.log"; echo "tests: rc=$trc in $(( $(date +%s) - t0 )) s"
      [ $trc -ne 0 ] && rc=$trc ;;
    quick)
      timeout 200 python3 -m dvecost.benchmarks.ocm_gpu --quick --repeat 5 --workdir /tmp/g \
        --json-out "$OUT/bench_quick.json" --md-out "$OUT/bench_quick.md" || rc=$? ;;
    sweep)
      timeout 200 python3 -m dvecost.benchmarks.ocm_gpu --graphs "" --sweep --refs "" \
        --workdir /tmp/g --json-out "$OUT/bench_sweep.json" --md-out "$OUT/bench_sweep.md" || rc=$? ;;
    full)
      dve=(); for f in .bench/cs_*.dve; do [ -f "$f" ] && dve+=(--dve "$f"); done
      timeout 400 python3 -m dvecost.benchmarks.ocm_gpu --repeat 5 --workdir /tmp/g \
        "${dve[@]}" --ref-timeout "${REF_TIMEOUT:-200}" \
        --json-out "$OUT/bench.json" --md-out "$OUT/bench.md" || rc=$? ;;
    *) echo "unknown step $s"; rc=2 ;;
  esac
done
exit $rc
