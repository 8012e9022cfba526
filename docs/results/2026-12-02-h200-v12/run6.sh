#!/usr/bin/env bash
# Session 4 run 6: B = main + the wideners' whole-tile path + the one-pass bf16 Q conversion.
# e4m3-KV tests on B, bench against X (main), harness on B (fp8_kv, long_8k), the sm90 gtest
# step on B, memcheck and synccheck on its e4m3-KV tests.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in X B; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; done
LD_LIBRARY_PATH=libB CTXATTN_TEST_BACKEND=cuda_sm90 timeout 90 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.Bf16Queries*:CudaSm90.*E4m3Kv*:CudaSm90.EveryE4m3*:CudaSm90.PersistentGrid*' > $OUT/gtest-B-e4m3.log 2>&1
echo "gtest B e4m3 rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-B-e4m3.log | head -8
b() {  # workload variants...
  local w=$1; shift
  for v in "$@"; do
    LD_LIBRARY_PATH=lib$v timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 5 2>&1 \
      | grep -E "^$w |rror|FAIL" | sed "s/^/$v /" | tee -a $OUT/bench.txt
  done
}
b kv8.long_8k X B X B
for w in kv8.batch_1k kv8.d64 kv8.d256 kv8h.long_8k; do b $w X B; done
echo "bench done at $SECONDS s" | tee -a $OUT/bench.txt
cd ..
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libB/libctxattn.so BENCH_BUDGET_S=150 bash bench/gpu_run.sh run \
  -w fp8_kv,long_8k --page-size 64,16 --impl ctxattn,fa3,cudnn_sdpa > $OUT/harness.log 2>&1
echo "harness rc=$? at $SECONDS s"; grep -E "^  ctxattn" $OUT/harness.log
cd .gpu
LD_LIBRARY_PATH=libB CTXATTN_TEST_BACKEND=cuda_sm90 timeout 230 bins/ctxattn_tests \
  --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-B.log 2>&1
echo "gtest B rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|^sweep" $OUT/gtest-B.log | head -8
for tool in memcheck synccheck; do
LD_LIBRARY_PATH=libB CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=8:small timeout $((560-SECONDS)) \
  compute-sanitizer --tool $tool --error-exitcode 9 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.*E4m3Kv*:CudaSm90.PersistentGrid*' > $OUT/$tool-B.log 2>&1
echo "$tool B rc=$? at $SECONDS s"; grep -E "PASSED|FAILED|ERROR SUMMARY" $OUT/$tool-B.log | tail -3
done
