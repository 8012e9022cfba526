#!/usr/bin/env bash
# Session 4 run 1: M = branch sm90-score-margin (rebased on main), K = M + four widener warps
# (the TMA warp widens too), X = main. kv8 tests on K, bench, the sm90 gtest step on M, racecheck on K.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in X M K; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; done
LD_LIBRARY_PATH=libK CTXATTN_TEST_BACKEND=cuda_sm90 timeout 90 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.Bf16Queries*:CudaSm90.*E4m3Kv*:CudaSm90.EveryE4m3*:CudaSm90.PersistentGrid*' > $OUT/gtest-K-e4m3.log 2>&1
echo "gtest K e4m3 rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-K-e4m3.log | head -8
b() {  # workload variants...
  local w=$1; shift
  for v in "$@"; do
    LD_LIBRARY_PATH=lib$v timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 5 2>&1 \
      | grep -E "^$w |rror|FAIL" | sed "s/^/$v /" | tee -a $OUT/bench.txt
  done
}
b kv8.long_8k X M K M K
for w in kv8.batch_1k kv8.d64 kv8.d256 kv8h.long_8k; do b $w M K; done
for w in long_8k d64 d256 batch_1k short_256 fp8.long_8k fp8.d256 nvfp4.long_8k; do b $w X M; done
echo "bench done at $SECONDS s" | tee -a $OUT/bench.txt
LD_LIBRARY_PATH=libM CTXATTN_TEST_BACKEND=cuda_sm90 timeout 230 bins/ctxattn_tests \
  --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-M.log 2>&1
echo "gtest M rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-M.log | head -8
LD_LIBRARY_PATH=libK CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=8:small timeout $((560-SECONDS)) \
  compute-sanitizer --tool racecheck --error-exitcode 9 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.*E4m3Kv*:CudaSm90.PersistentGrid*' > $OUT/racecheck-K.log 2>&1
echo "racecheck K rc=$? at $SECONDS s"; grep -E "PASSED|FAILED|ERROR SUMMARY|RACECHECK SUMMARY" $OUT/racecheck-K.log | tail -3
