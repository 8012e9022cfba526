#!/usr/bin/env bash
# Session 4 run 3: K2 = main + four widener warps, the TMA warp widening each raw stage's tile
# just before reloading that stage. e4m3-KV tests on K2, bench against X (main), ncu on K2,
# racecheck and synccheck on K2's e4m3-KV tests.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in X K2; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; cp bins/ctxattn_gpu_bench lib$v/; done
LD_LIBRARY_PATH=libK2 CTXATTN_TEST_BACKEND=cuda_sm90 timeout 90 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.Bf16Queries*:CudaSm90.*E4m3Kv*:CudaSm90.EveryE4m3*:CudaSm90.PersistentGrid*' > $OUT/gtest-K2-e4m3.log 2>&1
echo "gtest K2 e4m3 rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-K2-e4m3.log | head -8
b() {  # workload variants...
  local w=$1; shift
  for v in "$@"; do
    LD_LIBRARY_PATH=lib$v timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 5 2>&1 \
      | grep -E "^$w |rror|FAIL" | sed "s/^/$v /" | tee -a $OUT/bench.txt
  done
}
b kv8.long_8k X K2 X K2
for w in kv8.batch_1k kv8.d64 kv8.d256 kv8h.long_8k; do b $w X K2; done
echo "bench done at $SECONDS s" | tee -a $OUT/bench.txt
echo "== K2 kv8.long_8k"; bash ../tests/gpu/profile_sm90.sh libK2 $OUT/K2 kv8.long_8k 64; rm -f $OUT/K2/*.ncu-rep
for tool in racecheck synccheck; do
LD_LIBRARY_PATH=libK2 CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=8:small timeout 150 \
  compute-sanitizer --tool $tool --error-exitcode 9 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.*E4m3Kv*:CudaSm90.PersistentGrid*' > $OUT/$tool-K2.log 2>&1
echo "$tool K2 rc=$? at $SECONDS s"; grep -E "PASSED|FAILED|ERROR SUMMARY|RACECHECK SUMMARY" $OUT/$tool-K2.log | tail -3
done
