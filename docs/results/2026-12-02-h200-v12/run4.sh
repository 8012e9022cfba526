#!/usr/bin/env bash
# Session 4 run 4: K3 = main + wideners widening K of the next tile before V of the current one.
# e4m3-KV tests, bench against X (main), the sm90 gtest step, racecheck and synccheck on K3.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in X K3; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; cp bins/ctxattn_gpu_bench lib$v/; done
LD_LIBRARY_PATH=libK3 CTXATTN_TEST_BACKEND=cuda_sm90 timeout 90 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.Bf16Queries*:CudaSm90.*E4m3Kv*:CudaSm90.EveryE4m3*:CudaSm90.PersistentGrid*' > $OUT/gtest-K3-e4m3.log 2>&1
echo "gtest K3 e4m3 rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-K3-e4m3.log | head -8
b() {  # workload variants...
  local w=$1; shift
  for v in "$@"; do
    LD_LIBRARY_PATH=lib$v timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 5 2>&1 \
      | grep -E "^$w |rror|FAIL" | sed "s/^/$v /" | tee -a $OUT/bench.txt
  done
}
b kv8.long_8k X K3 X K3
for w in kv8.batch_1k kv8.d64 kv8.d256 kv8h.long_8k; do b $w X K3; done
LD_LIBRARY_PATH=libK3 timeout 30 bins/ctxattn_gpu_bench kv8.long_8k --backends cuda_sm90 --pages 16 --runs 5 2>&1 \
  | grep -E "^kv8|rror|FAIL" | sed "s/^/K3 /" | tee -a $OUT/bench.txt
echo "bench done at $SECONDS s" | tee -a $OUT/bench.txt
LD_LIBRARY_PATH=libK3 CTXATTN_TEST_BACKEND=cuda_sm90 timeout 230 bins/ctxattn_tests \
  --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-K3.log 2>&1
echo "gtest K3 rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|^sweep" $OUT/gtest-K3.log | head -8
for tool in racecheck synccheck memcheck; do
LD_LIBRARY_PATH=libK3 CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=8:small timeout 100 \
  compute-sanitizer --tool $tool --error-exitcode 9 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.*E4m3Kv*:CudaSm90.PersistentGrid*' > $OUT/$tool-K3.log 2>&1
echo "$tool K3 rc=$? at $SECONDS s"; grep -E "PASSED|FAILED|ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool-K3.log | tail -3
done
