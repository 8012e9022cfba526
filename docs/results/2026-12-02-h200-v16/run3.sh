#!/bin/bash
# Session 9 call 3 (diagnosis): where the long_8k loop loses against chunk_long_tp8's. main's
# library (FIN): the tool on long_32k / long_8k / chunk_long_tp8; ncu on chunk_long_tp8 and
# long_32k (ours) and on chunk_long_tp8 (FA3); the harness on long_32k and long_8k with FA3.
cd "$(dirname "$0")/.."
T0=$(date +%s)
mkdir -p .gpu/libFIN && xz -dc .gpu/libFIN.tar.xz | tar xf - -C .gpu/libFIN
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu/libFIN
B=.gpu/libFIN
run1() { LD_LIBRARY_PATH=$B $B/ctxattn_gpu_bench $1 --backends cuda_sm90 --pages $2 --runs ${3:-5} | grep -v "^device\|^workload" | tee -a $OUT/bench.txt; }
run1 long_32k 64,16; run1 long_8k 64,16; run1 chunk_long_tp8 64,16; run1 long_32k 64 30
echo "tool $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
for w in chunk_long_tp8 long_32k; do
  timeout 120 bash tests/gpu/profile_sm90.sh $B /tmp/ncu $w 64 2>&1 | tee -a $OUT/summary.txt
  echo "ncu $w $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
done
pip install --no-deps --no-index --target /tmp/fa3 .whl/fa3only/*.whl > /dev/null 2>&1
PYTHONPATH=/tmp/fa3 timeout 120 ncu --clock-control none --kernel-name-base demangled -k regex:FlashAttnFwdSm90 --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section InstructionStats --section Occupancy --section SourceCounters --import-source no -f -o /tmp/fa3c python3 .gpu/fa3_prof2.py 512 131072 8 1 > $OUT/fa3c.log 2>&1
echo "fa3 ncu rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
ncu -i /tmp/fa3c.ncu-rep --page details > /tmp/ncu/fa3-chunk.txt 2>&1
ncu -i /tmp/fa3c.ncu-rep --page source --csv --print-source sass 2>/dev/null > /tmp/ncu/fa3-chunk.source.csv
grep -E "Duration|Issue Slots Busy|Executed Instructions  |Eligible Warps|Registers Per|Grid Size|Compute \(SM\)" /tmp/ncu/fa3-chunk.txt | head -12 | tee -a $OUT/summary.txt
python3 tests/gpu/ncu_source_compare.py /tmp/ncu/chunk_long_tp8-p64.source.csv /tmp/ncu/fa3-chunk.source.csv --top 12 > $OUT/cmp-chunk-ours-fa3.txt 2>&1
python3 tests/gpu/ncu_source_compare.py /tmp/ncu/long_32k-p64.source.csv /tmp/ncu/chunk_long_tp8-p64.source.csv --top 12 > $OUT/cmp-32k-chunk.txt 2>&1
tar cf - /tmp/ncu/*.txt | xz -6 > $OUT/ncu-txt.tar.xz
echo "cmp $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/$B/libctxattn.so BENCH_BUDGET_S=150 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w long_32k,long_8k --page-size 64,16 --impl ctxattn,fa3 > /tmp/h.log 2>&1
cp /tmp/h/bench/results.csv $OUT/harness.csv; grep -v "^\s*$" /tmp/h.log | grep -v "^#" > $OUT/harness.log
grep -E "^\[|ctxattn  |fa3  " $OUT/harness.log
echo "harness $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
