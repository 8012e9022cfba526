#!/bin/bash
# V a tile behind K in the producer, the final form (KV2: the first tile's V still after its K;
# 16-bit D <= 128 and e4m3 Q/K/V) against BASE: ctxattn_gpu_bench in rotating order, then the
# GPU tests on KV2.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in BASE KV2 KV2 BASE; do
  run1 $v chunk_long_tp8 64,16; run1 $v long_8k 64,16; run1 $v short_256 64,16; run1 $v fp8.long_8k 64,16
done
step ab
for v in KV2 BASE; do
  for w in d64 batch_1k chunk_prefix chunk_long_tp8_batch d256 fp8.batch_1k fp8.d64; do run1 $v $w 64,16; done
  for w in nvfp4.long_8k kv8.long_8k fp8.d256; do run1 $v $w 64; done
done
step ab-rest
export LD_LIBRARY_PATH=$PWD/.gpu/libKV2
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 200 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc" $OUT/gtest-sm90.log | head -30
step gtest-sm90
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 90 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaSplit.RerunsAreBitwiseEqual' > $OUT/racecheck-split.log 2>&1; echo "rc $?" >> $OUT/racecheck-split.log
tail -3 $OUT/racecheck-split.log
step racecheck
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 120 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaSm90.E4m3QueriesAndKvOnFp8TensorCoresMatchTheReference:CudaSm90.PersistentGridMatchesTheReference' > $OUT/racecheck-fp8.log 2>&1; echo "rc $?" >> $OUT/racecheck-fp8.log
tail -3 $OUT/racecheck-fp8.log
step racecheck-fp8
true
