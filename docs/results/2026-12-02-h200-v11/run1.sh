#!/usr/bin/env bash
# Session 3 run 1: B = 2edc9e8 kernels; P = P V under the softmax (D <= 128, no e4m3 KV);
# PF = P with the e4m3 P scale folded into the exponent at D = 128 too. Bench A/B, then the sm90
# gtest step on P, then memcheck and synccheck on P (owed for the v10 transpose).
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in B P PF; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; done
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv > $OUT/bench.txt
b() {  # workload variants...
  local w=$1; shift
  for v in "$@"; do
    LD_LIBRARY_PATH=lib$v timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 5 2>&1 \
      | grep -E "^$w |rror|FAIL" | sed "s/^/$v /" | tee -a $OUT/bench.txt
  done
}
for w in fp8.long_8k fp8out.long_8k; do b $w B P PF B P PF; done
for w in fp8.batch_1k fp8.d64 nvfp4.long_8k; do b $w B P PF; done
for w in long_8k d64 batch_1k short_256; do b $w B P B P; done
echo "bench done at $SECONDS s" | tee -a $OUT/bench.txt
LD_LIBRARY_PATH=libP CTXATTN_TEST_BACKEND=cuda_sm90 timeout 230 bins/ctxattn_tests \
  --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-P.log 2>&1
echo "gtest P rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-P.log | head -8
for t in memcheck synccheck; do
  [ $SECONDS -gt 420 ] && { echo "skip $t at $SECONDS s"; continue; }
  LD_LIBRARY_PATH=libP CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=8:small timeout $((560-SECONDS)) \
    compute-sanitizer --tool $t --error-exitcode 9 bins/ctxattn_tests --gtest_filter='CudaSm90*' > $OUT/$t-P.log 2>&1
  echo "$t rc=$? at $SECONDS s"; tail -3 $OUT/$t-P.log
done
