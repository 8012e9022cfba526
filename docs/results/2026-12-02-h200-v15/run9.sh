#!/bin/bash
# Session 8 call 9: one launch of long_8k under ncu (source counters), main's library (FIN) and
# FA3 (fa3-fwd 0.0.3, contiguous KV), for the per-tile comparison of the next session.
cd "$(dirname "$0")/.."
T0=$(date +%s)
mkdir -p .gpu/profFIN && xz -dc .gpu/libFIN.tar.xz | tar xf - -C .gpu/profFIN
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu/profFIN ctxattn_gpu_bench
pip install --no-deps --no-index --target /tmp/fa3 .whl/fa3only/*.whl > /dev/null 2>&1
timeout 110 bash tests/gpu/profile_sm90.sh .gpu/profFIN $OUT/ours long_8k 64 2>&1 | tee $OUT/summary.txt
echo "ours $(( $(date +%s)-T0 ))s" | tee -a $OUT/summary.txt
PYTHONPATH=/tmp/fa3 timeout 130 ncu --clock-control none -k regex:"device_kernel" --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
  --section InstructionStats --section Occupancy --section SourceCounters --import-source no -f -o /tmp/fa3 python3 .gpu/fa3_prof.py > $OUT/fa3.log 2>&1
echo "fa3 rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/summary.txt
ncu -i /tmp/fa3.ncu-rep --page details > $OUT/fa3.txt 2>&1
ncu -i /tmp/fa3.ncu-rep --page source --csv --print-source sass 2>/dev/null | xz -6 > $OUT/fa3.source.csv.xz
grep -E "Duration|Issue Slots Busy|Executed Instructions  |Eligible Warps|Registers Per|Grid Size" $OUT/fa3.txt | head -12 | tee -a $OUT/summary.txt
xz -6 $OUT/ours/*.source.csv; rm -f $OUT/ours/*.ncu-rep
