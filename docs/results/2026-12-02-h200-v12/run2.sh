#!/usr/bin/env bash
# Session 4 run 2: main's magnitude tests (committed form), ncu on kv8.long_8k for X (main) and
# K (four widener warps), and long_8k on X for reference.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in X K; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; cp bins/ctxattn_gpu_bench lib$v/; done
LD_LIBRARY_PATH=libX CTXATTN_TEST_BACKEND=cuda_sm90 timeout 60 bins/ctxattn_tests \
  --gtest_filter='CudaSm90.Bf16Queries*:CudaPortable.QueriesOfEveryMagnitude' > $OUT/gtest-X-magnitudes.log 2>&1
echo "gtest X magnitudes rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure|^\[       OK" $OUT/gtest-X-magnitudes.log | head -8
for v in X K; do
  echo "== $v kv8.long_8k"; bash ../tests/gpu/profile_sm90.sh lib$v $OUT/$v kv8.long_8k 64
  echo "at $SECONDS s"
done
echo "== X long_8k"; bash ../tests/gpu/profile_sm90.sh libX $OUT/X long_8k 64
echo "at $SECONDS s"
rm -f $OUT/*/*.ncu-rep
