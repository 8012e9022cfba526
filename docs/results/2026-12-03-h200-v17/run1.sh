#!/bin/bash
# Split CTAs across tile ends (SPAN) against the library before it (BASE): GPU tests on SPAN,
# sanitizers on the new split test, ctxattn_gpu_bench A/B in rotating order, the harness with FA3.
cd "$(dirname "$0")/.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
ls -la .gpu >> $OUT/steps.txt
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libSPAN
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 300 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc" $OUT/gtest-sm90.log | head -30
step gtest-sm90
CTXATTN_TEST_BACKEND=cuda_portable timeout 200 .gpu/ctxattn_tests --gtest_filter='CudaSplit*' > $OUT/gtest-portable-split.log 2>&1; echo "rc $?" >> $OUT/gtest-portable-split.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^rc" $OUT/gtest-portable-split.log | head
step gtest-portable
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaSplit.SharesAcross*:CudaSplit.SplitPiecesBeside*' > $OUT/memcheck-split.log 2>&1; echo "rc $?" >> $OUT/memcheck-split.log
tail -4 $OUT/memcheck-split.log
step memcheck
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaSplit.SharesAcross*' > $OUT/racecheck-split.log 2>&1; echo "rc $?" >> $OUT/racecheck-split.log
tail -4 $OUT/racecheck-split.log
step racecheck
unset LD_LIBRARY_PATH
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in BASE SPAN SPAN BASE; do
  run1 $v chunk_long_tp8 64,16; run1 $v chunk_long_tp8_batch 64,16
done
step ab-chunk
for v in BASE SPAN; do
  for w in long_8k d64 fp8.long_8k nvfp4.long_8k batch_1k short_256 chunk_prefix; do run1 $v $w 64; done
  run1 $v d256 16
done
step ab-rest
for v in SPAN BASE; do run1 $v chunk_long_tp8 64,16 150; done
step ab-150
true
