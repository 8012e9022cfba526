#!/bin/bash
# Tail pieces (TAIL) against main before them (BASE): the GPU tests on TAIL (sm90 step, the
# portable split tests, memcheck on the new tail test), ctxattn_gpu_bench A/B in rotating order.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
unset LD_LIBRARY_PATH
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in BASE TAIL TAIL BASE; do
  run1 $v chunk_long_tp8 64,16; run1 $v chunk_long_tp8_batch 64,16; run1 $v d64 64; run1 $v long_8k 64,16
done
step ab-chunk
for v in BASE TAIL; do
  for w in batch_1k short_256 chunk_prefix fp8.long_8k; do run1 $v $w 64; done
done
step ab-rest
export LD_LIBRARY_PATH=$PWD/.gpu/libTAIL
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 200 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*:SplitPolicy*' > $OUT/gtest-sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc" $OUT/gtest-sm90.log | head -30
step gtest-sm90
CTXATTN_TEST_BACKEND=cuda_portable timeout 100 .gpu/ctxattn_tests --gtest_filter='CudaSplit*' > $OUT/gtest-portable-split.log 2>&1; echo "rc $?" >> $OUT/gtest-portable-split.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^rc" $OUT/gtest-portable-split.log | head
step gtest-portable
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaSplit.TailPieces*' > $OUT/memcheck-tail.log 2>&1; echo "rc $?" >> $OUT/memcheck-tail.log
tail -4 $OUT/memcheck-tail.log
step memcheck
true
