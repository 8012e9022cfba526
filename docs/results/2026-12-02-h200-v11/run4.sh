#!/usr/bin/env bash
# Session 3 run 4: W = fp16 V + conflict-free wideners; X = W + the whole kv8 kernel in fp16 (K
# widened to fp16, bf16 Q converted with a power of two a row). New test and the e4m3 tests on X
# first, bench, the sm90 gtest step on X, memcheck on the e4m3 tests.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in B W X; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; done
LD_LIBRARY_PATH=libX CTXATTN_TEST_BACKEND=cuda_sm90 timeout 60 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.Bf16Queries*:CudaSm90.*E4m3Kv*:CudaSm90.EveryE4m3*' > $OUT/gtest-X-e4m3.log 2>&1
echo "gtest X e4m3 rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-X-e4m3.log | head -8
b() {  # workload variants...
  local w=$1; shift
  for v in "$@"; do
    LD_LIBRARY_PATH=lib$v timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 5 2>&1 \
      | grep -E "^$w |rror|FAIL" | sed "s/^/$v /" | tee -a $OUT/bench.txt
  done
}
b kv8.long_8k B W X W X
for w in kv8.batch_1k kv8.d64 kv8.d256 kv8h.long_8k; do b $w W X; done
b long_8k B X
LD_LIBRARY_PATH=libX timeout 30 bins/ctxattn_gpu_bench kv8.long_8k --backends cuda_sm90 --pages 16 --runs 5 2>&1 \
  | grep -E "^kv8|rror|FAIL" | sed "s/^/X /" | tee -a $OUT/bench.txt
echo "bench done at $SECONDS s" | tee -a $OUT/bench.txt
LD_LIBRARY_PATH=libX CTXATTN_TEST_BACKEND=cuda_sm90 timeout 230 bins/ctxattn_tests \
  --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-X.log 2>&1
echo "gtest X rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-X.log | head -8
LD_LIBRARY_PATH=libX CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=8:small timeout $((400-SECONDS)) \
  compute-sanitizer --tool memcheck --error-exitcode 9 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.Bf16Queries*:CudaSm90.*E4m3Kv*' > $OUT/memcheck-X.log 2>&1
echo "memcheck rc=$? at $SECONDS s"; grep -E "PASSED|FAILED|ERROR SUMMARY" $OUT/memcheck-X.log | tail -3
