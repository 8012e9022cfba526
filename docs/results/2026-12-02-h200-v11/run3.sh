#!/usr/bin/env bash
# Session 3 run 3: B = 2edc9e8; V = V widened to fp16 under bf16 queries; W = V + the wideners'
# bank-conflict-free unit order. Bench, then the sm90 gtest step and memcheck (e4m3 KV tests) on W.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in B V W; do mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v; done
b() {  # workload variants...
  local w=$1; shift
  for v in "$@"; do
    LD_LIBRARY_PATH=lib$v timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 5 2>&1 \
      | grep -E "^$w |rror|FAIL" | sed "s/^/$v /" | tee -a $OUT/bench.txt
  done
}
b kv8.long_8k B V W B V W
for w in kv8.batch_1k kv8.d64 kv8.d256 kv8h.long_8k kv8h.d64; do b $w B V W; done
for w in kv8.long_8k kv8h.long_8k; do
  LD_LIBRARY_PATH=libW timeout 30 bins/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 16 --runs 5 2>&1 \
    | grep -E "^$w |rror|FAIL" | sed "s/^/W /" | tee -a $OUT/bench.txt
done
echo "bench done at $SECONDS s" | tee -a $OUT/bench.txt
LD_LIBRARY_PATH=libW CTXATTN_TEST_BACKEND=cuda_sm90 timeout 230 bins/ctxattn_tests \
  --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-W.log 2>&1
echo "gtest W rc=$? at $SECONDS s"; grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|Failure" $OUT/gtest-W.log | head -8
LD_LIBRARY_PATH=libW CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=8:small timeout $((540-SECONDS)) \
  compute-sanitizer --tool memcheck --error-exitcode 9 bins/ctxattn_tests --gtest_filter='CudaSm90.*E4m3*' > $OUT/memcheck-W.log 2>&1
echo "memcheck rc=$? at $SECONDS s"; grep -E "PASSED|FAILED|ERROR SUMMARY" $OUT/memcheck-W.log | tail -3
