#!/usr/bin/env bash
# Issue 15's wall-time targets on the device (carry .whl and .bench; optionally .cupy_cache,
# a CuPy kernel cache from an earlier call, see below): `dvecost analyze --backend gpu` on
# cs_10 and cs_12 as whole processes (interpreter start included), the first with CuPy's
# kernel cache as found (empty on a fresh machine unless carried), then warm; the CPU's answer
# for comparison; timelines (tools/device/timeline_analyze.py); then the GPU tests. Writes
# log.txt, the timelines and kernel_cache.tgz (the cache, to carry next time) under $OUT.
set -uo pipefail
OUT=${OUT:-/tmp/final-out}; mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m compileall -q dve statespace ocm scenarios dvecost tools /tmp/site > /dev/null
export PYTHONPATH=/tmp/site:$PWD DVECOST_SHARED=$PWD/.bench/shared PYTHONUNBUFFERED=1
if [ -d .cupy_cache ]; then mkdir -p ~/.cupy; cp -r .cupy_cache ~/.cupy/kernel_cache; fi
echo "kernel cache before: $(ls ~/.cupy/kernel_cache 2>/dev/null | wc -l) files; $(git log --oneline -1 2>/dev/null)"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
wall() {   # wall NAME ARGS...: one whole process, wall time and the JSON's gist
  local name=$1; shift
  local t0=$(date +%s.%N)
  python3 -m dvecost "$@" --json > "$OUT/$name.json" 2> "$OUT/$name.stderr"; local rc=$?
  local t1=$(date +%s.%N)
  python3 - "$OUT/$name.json" "$name" "$rc" "$t0" "$t1" <<'PY'
import json, sys
p, name, rc, t0, t1 = sys.argv[1:]
try:
    d = json.load(open(p))
except Exception as e:
    d = {"error": repr(e)}
t = {k: round(v, 3) for k, v in d.get("timings", {}).items()}
print(f"{name:14s} rc={rc} wall {float(t1) - float(t0):6.3f} s  {d.get('exact')} "
      f"certified={d.get('certified')} {d.get('n_states')} {d.get('n_transitions')} "
      f"{d.get('backend')} {t}")
PY
}
wall cs10_first analyze .bench/cs_10.dve --backend gpu
wall cs12_first analyze .bench/cs_12.dve --backend gpu
(cd ~/.cupy && tar czf "$OUT/kernel_cache.tgz" kernel_cache) && ls -la "$OUT/kernel_cache.tgz"
for i in 1 2 3; do wall cs10_gpu$i analyze .bench/cs_10.dve --backend gpu; done
for i in 1 2 3; do wall cs12_gpu$i analyze .bench/cs_12.dve --backend gpu; done
wall cs10_cpu analyze .bench/cs_10.dve --backend cpu
wall cs12_cpu analyze .bench/cs_12.dve --backend cpu
python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
for n in (10, 12):
    c, g = (json.load(open(f"{out}/cs{n}_{b}.json")) for b in ("cpu", "gpu3"))
    keys = ("value", "exact", "certified", "n_states", "n_transitions", "n_deadlocks",
            "cycle", "prefix", "initial")
    print(f"cs_{n}: GPU JSON equals CPU JSON on {keys}:", all(c.get(k) == g.get(k) for k in keys),
          [k for k in keys if c.get(k) != g.get(k)])
PY
for n in 10 12; do
  T0=$(date +%s.%N) python3 tools/device/timeline_analyze.py -- analyze .bench/cs_$n.dve \
    --backend gpu --json > /dev/null 2> "$OUT/timeline$n.txt"; cat "$OUT/timeline$n.txt"
done
python3 -m cProfile -o /tmp/p10.prof -m dvecost analyze .bench/cs_10.dve --backend gpu --json > /dev/null
python3 -c "
import pstats; s = pstats.Stats('/tmp/p10.prof'); s.sort_stats('tottime').print_stats(20); s.print_callers('compileProgram')" 2>&1 | grep -v '^$' | cut -c1-160 | head -60
if [ "${TESTS:-1}" = 1 ]; then
  t0=$(date +%s)
  timeout ${TEST_TIMEOUT:-300} python3 -m pytest -q -m gpu tests -p no:cacheprovider -n 4 \
    --durations=8 > "$OUT/pytest.log" 2>&1; echo "gpu tests rc=$? in $(( $(date +%s) - t0 )) s"
  tail -25 "$OUT/pytest.log"
fi
