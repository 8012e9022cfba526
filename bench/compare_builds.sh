#!/usr/bin/env bash
# A candidate build against a baseline on one GPU machine, in one call: the candidate's Hopper
# gtests and sanitizers first (a failing candidate is not timed), then ctxattn_gpu_bench on both,
# interleaved workload by workload so that clock drift hits both alike.
#
#   bench/compare_builds.sh BASE_DIR CANDIDATE_DIR [OUT_DIR] [WORKLOADS]
#
# Each DIR holds libctxattn.so (+ .so.0), ctxattn_tests and ctxattn_gpu_bench of one build.
# WORKLOADS: a comma list of ctxattn_gpu_bench workloads (default: the short and long shapes the
# Hopper notes track). CTXATTN_COMPARE_STEPS (default "gtest,sanitize,bench") picks the steps.
# Exit status: the number of failed steps.
set -u
BASE=${1:?base build dir}
CAND=${2:?candidate build dir}
OUT=${3:-compare-out}
WORKLOADS=${4:-short_256,batch_1k,chunk_prefix,long_8k,d64,d256,chunk_long_tp8}
STEPS=${CTXATTN_COMPARE_STEPS:-gtest,sanitize,bench}
mkdir -p "$OUT"
failed=0
. "$(dirname "$0")/../tests/gpu/common.sh"
start=$(date +%s)
elapsed() { echo "   [$(( $(date +%s) - start )) s]"; }

if step gtest; then
  LD_LIBRARY_PATH="$CAND" CTXATTN_TEST_BACKEND=cuda_sm90 timeout 300 "$CAND/ctxattn_tests" \
    --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > "$OUT/gtest-sm90.log" 2>&1
  record "gtest sm90" $?
  grep -E "^\[  (PASSED|FAILED) |^\[  FAILED  \]|^sweep:" "$OUT/gtest-sm90.log"
  LD_LIBRARY_PATH="$CAND" timeout 300 "$CAND/ctxattn_tests" --gtest_filter='CudaTorture*' \
    > "$OUT/gtest-torture.log" 2>&1
  record "gtest torture" $?
  grep -E "^\[  (PASSED|FAILED) |^\[ torture  \]" "$OUT/gtest-torture.log" | head -4
  elapsed
fi

if step sanitize && [ "$failed" -eq 0 ]; then
  for tool in memcheck racecheck synccheck; do
    LD_LIBRARY_PATH="$CAND" CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=8:small timeout 200 \
      compute-sanitizer --tool $tool --error-exitcode 1 "$CAND/ctxattn_tests" \
      --gtest_filter='CudaSm90*:CudaPortable.RandomSweep*:CudaSplit.ShortChunks*' > "$OUT/$tool.log" 2>&1
    record "$tool" $?
    tail -1 "$OUT/$tool.log"
  done
  elapsed
fi

if step bench && [ "$failed" -eq 0 ]; then
  for w in ${WORKLOADS//,/ }; do
    for side in base candidate; do
      dir=$BASE
      [ "$side" = candidate ] && dir=$CAND
      LD_LIBRARY_PATH="$dir" timeout 120 "$dir/ctxattn_gpu_bench" "$w" --backends cuda_sm90 --pages 16,64 --runs 7 \
        2>&1 | grep -E "^$w " | sed "s/^/$side /" | tee -a "$OUT/bench.txt"
    done
  done
  elapsed
fi
exit "$failed"
