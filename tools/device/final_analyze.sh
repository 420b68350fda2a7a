#!/usr/bin/env bash
# The final issue-15 measurements on the device (carry .whl and .bench with cs_10/12/15): analyze
# --backend gpu and auto with bytecode compiled and the kernel cache filled, bench explore of
# cs_12, and cs_15, which outgrows the H100 (gpu: exit 3 with the counts; auto: on to the CPU).
pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
python3 -m compileall -q dve statespace ocm scenarios dvecost /tmp/site > /dev/null
export PYTHONPATH=/tmp/site:$PWD DVECOST_SHARED=$PWD/.bench/shared
python3 -m dvecost analyze .bench/cs_10.dve --backend gpu --json > /dev/null 2>&1   # fills the cache
python3 -m dvecost analyze .bench/cs_12.dve --backend gpu --json > /dev/null 2>&1
for n in 10 12; do for b in gpu gpu auto; do
  /usr/bin/time -f "cs_$n $b wall %e s maxrss %M KB" python3 -m dvecost analyze .bench/cs_$n.dve --backend $b --json > $OUT/a${n}_$b.json
  python3 -c "
import json; d=json.load(open('$OUT/a${n}_$b.json')); print(' ', d.get('exact'), d.get('certified'), d.get('n_states'), d.get('n_transitions'), d.get('backend'), {k: round(v,3) for k,v in d.get('timings',{}).items()})"
done; done 2>&1
timeout 120 python3 -m dvecost bench explore --backend gpu --repeat 1 --model .bench/cs_12.dve --json > $OUT/bench12.json && python3 -c "
import json; d=json.load(open('$OUT/bench12.json')); print(d['rows'])"
/usr/bin/time -f "cs_15 gpu wall %e s maxrss %M KB" timeout 200 python3 -m dvecost analyze .bench/cs_15.dve --backend gpu --json > $OUT/a15_gpu.json 2> $OUT/a15_gpu.err; echo "cs_15 gpu rc=$?"; tail -3 $OUT/a15_gpu.err; head -c 800 $OUT/a15_gpu.json; echo
/usr/bin/time -f "cs_15 auto wall %e s maxrss %M KB" timeout 200 python3 -m dvecost analyze .bench/cs_15.dve --backend auto --timeout 100 --json > $OUT/a15_auto.json 2> $OUT/a15_auto.err; echo "cs_15 auto rc=$?"; tail -3 $OUT/a15_auto.err; head -c 800 $OUT/a15_auto.json; echo
