#!/bin/bash
# Session 9 call 1: the P V wait after the row maxima (PVM) and after the maxima plus a quarter of
# the exponentials (PVQ) against main (FIN): three-way A/B in rotating order, then 150-call
# long_8k, then the touched kernels' GPU tests on both.
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in FIN PVM PVQ; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu
B=.gpu
run1() { LD_LIBRARY_PATH=.gpu/lib$1 $B/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
ORD=("FIN PVM PVQ" "PVQ FIN PVM" "PVM PVQ FIN")
for r in 0 1 2; do
  for w in long_8k chunk_long_tp8 fp8.long_8k; do for v in ${ORD[$r]}; do run1 $v $w 64,16; done; done
  for w in d64 batch_1k; do for v in ${ORD[$r]}; do run1 $v $w 64; done; done
  echo "round $r $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
  [ $(( $(date +%s)-T0 )) -gt 110 ] && break
done
for v in FIN PVM PVQ; do run1 $v long_8k 64 150; run1 $v fp8.long_8k 64 150; done
echo "sustained $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
export CTXATTN_TEST_BACKEND=cuda_sm90
for v in PVM PVQ; do
LD_LIBRARY_PATH=.gpu/lib$v timeout 100 $B/ctxattn_tests --gtest_filter='CudaSm90*:CudaSplit*' > $OUT/gtest-$v.txt 2>&1; echo "gtest $v rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
grep -E "FAILED|PASSED" $OUT/gtest-$v.txt | head
done
