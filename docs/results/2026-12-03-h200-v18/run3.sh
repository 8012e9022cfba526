#!/bin/bash
# K a tile ahead of V in the producer (KV1) against BASE: ctxattn_gpu_bench in rotating order,
# then the GPU tests on KV1 (the sm90 step, the portable split tests).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in BASE KV1 KV1 BASE; do
  run1 $v chunk_long_tp8 64,16; run1 $v long_8k 64,16; run1 $v d64 64,16; run1 $v chunk_long_tp8_batch 64,16
done
step ab
for v in KV1 BASE; do
  for w in batch_1k short_256 chunk_prefix; do run1 $v $w 64,16; done
  run1 $v d256 64,16; run1 $v fp8.long_8k 64,16
done
step ab-rest
for v in KV1 BASE; do run1 $v long_8k 64,16 150; run1 $v chunk_long_tp8 64,16 150; done
step ab-150
export LD_LIBRARY_PATH=$PWD/.gpu/libKV1
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 200 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc" $OUT/gtest-sm90.log | head -30
step gtest-sm90
true
