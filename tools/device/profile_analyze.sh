#!/usr/bin/env bash
# Where the wall time of `dvecost analyze --backend gpu` goes, on the device (carry .whl and
# .bench): cs_12 timed twice with CuPy's kernel cache filled, import times, one cProfile, and
# cs_14 end to end (the largest cs_N tried). Writes under $OUT.
pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m compileall -q dve statespace ocm scenarios dvecost /tmp/site > /dev/null
export PYTHONPATH=/tmp/site:$PWD DVECOST_SHARED=$PWD/.bench/shared
python3 -m dvecost analyze .bench/cs_12.dve --backend gpu --json > /dev/null 2>&1   # fills the cache
for i in 1 2; do
  /usr/bin/time -f "cs_12 gpu wall %e s" python3 -m dvecost analyze .bench/cs_12.dve --backend gpu \
    --json > "$OUT/a12_$i.json"
done
python3 -c "
import json
d = json.load(open('$OUT/a12_2.json'))
print(d.get('value'), d.get('certified'), {k: round(v, 3) for k, v in d.get('timings', {}).items()})"
python3 -X importtime -c "import dvecost.cli" 2> "$OUT/importtime.txt"
sort -t'|' -k2 -n "$OUT/importtime.txt" | tail -5
python3 -m cProfile -o "$OUT/a12.prof" -m dvecost analyze .bench/cs_12.dve --backend gpu --json > /dev/null
python3 -c "
import pstats; pstats.Stats('$OUT/a12.prof').sort_stats('cumulative').print_stats(35)" > "$OUT/a12_prof.txt"
head -80 "$OUT/a12_prof.txt" | tail -50
/usr/bin/time -f "cs_14 gpu wall %e s maxrss %M KB" timeout 150 python3 -m dvecost analyze \
  .bench/cs_14.dve --backend gpu --json > "$OUT/a14.json" 2> "$OUT/a14.err"
echo "rc=$?"; tail -4 "$OUT/a14.err"; head -c 600 "$OUT/a14.json"
