#!/bin/bash
# Session 7 run 3: ncu profiles of main (W) and FA3 on fp8.long_8k and chunk_long_tp8, and the
# two-kernel branch (V) on fp8.long_8k. run3-fa3_prof.py was .gpu/fa3_prof.py.
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in W V; do mkdir -p .gpu/prof$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/prof$v; done
xz -dc .gpu/binsV.tar.xz | tar xf - -C .gpu/profW ctxattn_gpu_bench
cp .gpu/profW/ctxattn_gpu_bench .gpu/profV/
pip install --no-deps --no-index --target /tmp/fa3 .whl/fa3only/*.whl > $OUT/pip.txt 2>&1
prof() { echo "== $1 $2 $3" | tee -a $OUT/summary.txt; bash tests/gpu/profile_sm90.sh .gpu/prof$1 $OUT/$1 $2 $3 2>&1 | tee -a $OUT/summary.txt; }
fa3() {
  echo "== fa3 $1" | tee -a $OUT/summary.txt
  PYTHONPATH=/tmp/fa3 timeout 200 ncu --clock-control none -k regex:"device_kernel|flash|Flash" --launch-skip $2 --launch-count $3 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section Occupancy --section LaunchStats python3 .gpu/fa3_prof.py $1 > $OUT/fa3-$1.txt 2>&1
  echo "rc $?" | tee -a $OUT/summary.txt
  grep -E "device_kernel|flash|Duration|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Registers Per|Grid Size|finite" $OUT/fa3-$1.txt | cut -c1-200 | head -30 | tee -a $OUT/summary.txt
}
prof W fp8.long_8k 64
fa3 fp8.long_8k 0 6
prof W chunk_long_tp8 64
fa3 chunk_long_tp8 0 9
echo "elapsed $(( $(date +%s)-T0 ))" | tee -a $OUT/summary.txt
if [ $(( $(date +%s)-T0 )) -lt 330 ]; then prof V fp8.long_8k 64; fi
rm -f $OUT/*/*.ncu-rep
echo "elapsed $(( $(date +%s)-T0 ))" | tee -a $OUT/summary.txt
