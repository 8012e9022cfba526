#!/usr/bin/env bash
# Session 3 run 2: B = 2edc9e8 kernels; V = e4m3 KV under bf16 queries widens V to fp16 (P V in
# fp16). Bench A/B on kv8.*, kv8h.* (fp16 queries: what one conversion a pair costs), then the sm90
# gtest step on V, then an ncu profile of kv8.long_8k on V if time is left.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in B V; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; done
b() {  # workload variants...
  local w=$1; shift
  for v in "$@"; do
    LD_LIBRARY_PATH=lib$v timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 5 2>&1 \
      | grep -E "^$w |rror|FAIL" | sed "s/^/$v /" | tee -a $OUT/bench.txt
  done
}
for w in kv8.long_8k kv8.batch_1k; do b $w B V B V; done
for w in kv8.d64 kv8.d256 kv8h.long_8k kv8h.d64 long_8k; do b $w B V; done
echo "bench done at $SECONDS s" | tee -a $OUT/bench.txt
LD_LIBRARY_PATH=libV CTXATTN_TEST_BACKEND=cuda_sm90 timeout 230 bins/ctxattn_tests \
  --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-V.log 2>&1
echo "gtest V rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-V.log | head -8
if [ $SECONDS -lt 380 ]; then
  cp bins/ctxattn_gpu_bench libV/
  bash ../tests/gpu/profile_sm90.sh libV $OUT/prof kv8.long_8k 64 > $OUT/prof.log 2>&1
  echo "profile rc=$? at $SECONDS s"; rm -f $OUT/prof/*.ncu-rep
fi
