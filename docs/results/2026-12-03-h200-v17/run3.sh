#!/bin/bash
# main's library (BASE, v16) in the harness with FA3: the split workloads, long_8k, fp8 and nvfp4.
cd "$(dirname "$0")/.."
T0=$(date +%s)
xz -dc .gpu/libBASE.tar.xz | tar xf - -C .gpu
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
h() {
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libBASE/libctxattn.so BENCH_BUDGET_S=$1 OUT=/tmp/h$2 \
    timeout 300 bash bench/gpu_run.sh run -w $3 --page-size 64,16 --impl ctxattn,fa3 > /tmp/h$2.log 2>&1
  cp /tmp/h$2/bench/results.csv $OUT/harness-$2.csv; grep -v "^\s*$" /tmp/h$2.log | grep -v "^#" > $OUT/harness-$2.log
  grep -E "ctxattn  |fa3  " $OUT/harness-$2.log | tail -20
  step "harness $2"
}
h 200 split chunk_long_tp8,chunk_long_tp8_batch
[ $(( $(date +%s)-T0 )) -lt 300 ] && h 180 fp8 fp8,nvfp4_out
true
