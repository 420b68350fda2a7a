# Shared by the device scripts (`source tools/device/common.sh` from the repository root, on
# the device, with .whl — the lark wheel — and .bench carried; .cupy_cache optional: a CuPy
# kernel cache an earlier call brought back).

# device_setup: lark from the carried wheel into /tmp/site, bytecode for the project and it,
# the environment every script runs the project with, and the carried kernel cache.
device_setup() {
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
  python3 -m compileall -q dve statespace ocm scenarios dvecost tools /tmp/site > /dev/null
  export PYTHONPATH=/tmp/site:$PWD DVECOST_SHARED=$PWD/.bench/shared PYTHONUNBUFFERED=1
  if [ -d .cupy_cache ]; then mkdir -p ~/.cupy; cp -rL .cupy_cache ~/.cupy/kernel_cache; fi
  mkdir -p /tmp/fj
}

# wall NAME ARGS...: one whole `python3 -m dvecost ARGS --json` process (run in $WALL_DIR,
# default here, with that tree's packages), its wall time and the JSON's gist on one line;
# the JSON and stderr kept as /tmp/fj/NAME.json and .stderr.
wall() {
  local name=$1; shift
  local dir=${WALL_DIR:-$PWD}
  local t0=$(date +%s.%N)
  (cd "$dir" && PYTHONPATH=/tmp/site:$dir python3 -m dvecost "$@" --json \
    > "/tmp/fj/$name.json" 2> "/tmp/fj/$name.stderr"); local rc=$?
  local t1=$(date +%s.%N)
  python3 - "/tmp/fj/$name.json" "$name" "$rc" "$t0" "$t1" <<'PY'
import json, sys
p, name, rc, t0, t1 = sys.argv[1:]
try:
    d = json.load(open(p))
except Exception as e:
    d = {"error": repr(e)}
t = {k: round(v, 3) for k, v in d.get("timings", {}).items()}
print(f"{name:18s} rc={rc} wall {float(t1) - float(t0):6.3f} s  {d.get('value')} "
      f"{d.get('exact')} certified={d.get('certified')} {d.get('n_states')} "
      f"{d.get('n_transitions')} {d.get('backend')} {t}")
PY
}

# floor CODE: the best of 3 wall times of `python3 -c CODE` (a start-up floor).
floor() {
  local best=99 t0 t1
  for i in 1 2 3; do
    t0=$(date +%s.%N); python3 -c "$1" >/dev/null 2>&1; t1=$(date +%s.%N)
    best=$(python3 -c "print(min($best, $t1 - $t0))"); done
  printf '%6.3f s  %s\n' "$best" "$1"
}

# timelines: one timeline (tools/device/timeline_analyze.py --as-program) of `analyze
# --backend gpu` on each of cs_10 and cs_12, on stderr.
timelines() {
  for n in 10 12; do
    T0=$(date +%s.%N) python3 tools/device/timeline_analyze.py --as-program -- analyze \
      .bench/cs_$n.dve --backend gpu --json > /dev/null
  done
}

# profile_cs10 LINES [CALLERS]: cProfile of one cs_10 `analyze --backend gpu`, the LINES
# costliest functions by own time (and who calls those matching CALLERS).
profile_cs10() {
  python3 -m cProfile -o /tmp/p10.prof -m dvecost analyze .bench/cs_10.dve --backend gpu \
    --json > /dev/null
  python3 - "$1" "${2:-}" <<'PY' 2>&1 | grep -v '^$' | cut -c1-170
import pstats, sys
s = pstats.Stats("/tmp/p10.prof")
s.sort_stats("tottime").print_stats(int(sys.argv[1]))
if sys.argv[2]:
    s.print_callers(sys.argv[2])
PY
}
