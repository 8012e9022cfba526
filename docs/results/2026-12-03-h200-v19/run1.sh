#!/bin/bash
# DEEP (three K / V^T stages and three raw V stages for the one-term e4m3 D = 128 kernel) against
# MAIN: ctxattn_gpu_bench in rotating order on the fp8 workloads, the sm90 GPU tests on DEEP, then
# the harness with FA3 fp8 on both libraries.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in MAIN DEEP DEEP MAIN; do
  run1 $v fp8.long_8k 64,16; run1 $v fp8.batch_1k 64,16
done
step ab
for v in DEEP MAIN; do
  for w in fp8out.long_8k fp8.d64 nvfp4.long_8k; do run1 $v $w 64,16; done
  run1 $v fp8.long_8k 64,16 150
done
step ab-rest
export LD_LIBRARY_PATH=$PWD/.gpu/libDEEP
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 200 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:CudaSplit*' > $OUT/gtest-sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc" $OUT/gtest-sm90.log | head -30
step gtest-sm90
unset LD_LIBRARY_PATH
for v in MAIN DEEP; do
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/lib$v/libctxattn.so BENCH_BUDGET_S=100 OUT=/tmp/r$v timeout 150 bash bench/gpu_run.sh run -w fp8.long_8k,fp8.batch_1k --page-size 64,16 --impl ctxattn,fa3 > /tmp/r$v.log 2>&1
  cp /tmp/r$v/bench/results.csv $OUT/harness-$v.csv; grep -v "^\s*$" /tmp/r$v.log | grep -v "^#" > $OUT/harness-$v.log; grep -E "ctxattn  |fa3  " $OUT/harness-$v.log
  step harness-$v
done
true
