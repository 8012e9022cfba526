#!/bin/bash
# Tail pieces with the measured piece cost (TAIL2, kSplitPieceCostKeys 896) against BASE and
# TAIL (512): the split tests on TAIL2, ctxattn_gpu_bench in rotating order.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in BASE TAIL2 TAIL2 BASE; do
  run1 $v chunk_long_tp8 64,16; run1 $v chunk_long_tp8_batch 64,16; run1 $v long_8k 64,16; run1 $v d64 64
done
step ab
for v in TAIL2 BASE; do run1 $v chunk_long_tp8 64,16 150; done
step ab-150
for b in cuda_sm90 cuda_portable; do
  LD_LIBRARY_PATH=$PWD/.gpu/libTAIL2 CTXATTN_TEST_BACKEND=$b timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaSplit*:SplitPolicy*' > $OUT/gtest-split-$b.log 2>&1; echo "rc $?" >> $OUT/gtest-split-$b.log
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^rc" $OUT/gtest-split-$b.log | head
done
step gtest
true
