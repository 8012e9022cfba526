#!/usr/bin/env bash
# The GPU suite of the CUDA backends, for a machine with an NVIDIA GPU (CI has none).
#
#   tests/gpu/run_gpu_suite.sh [BUILD_DIR] [OUT_DIR] [STEPS]
#
# BUILD_DIR (default build-cuda) holds libctxattn.so and ctxattn_tests from a CUDA build
# (cmake -S . -B build-cuda -DCTXATTN_CUDA=ON && cmake --build build-cuda -j); OUT_DIR (default
# gpu-out) receives one log per step. STEPS is a comma list of:
#   gtest     the GPU gtests (tests/cpp/test_cuda_*.cpp: random sweep vs the CPU reference,
#             determinism, PDL, graph replay, metadata check, lying metadata, the metadata
#             torture test on every GPU backend)
#   bench     scripts/gpu_portable_bench.py (ctxattn vs torch FA2, BENCH.md workloads)
#   sanitize  compute-sanitizer memcheck and racecheck on a reduced sweep, memcheck on a
#             quarter of the metadata torture cases
#   python    the pytest suite (its GPU cases run on this backend)
# default: all four. Each step has a time limit, so a hang costs minutes, not the machine. Exit status: the number of failed steps.
set -u
BUILD=${1:-build-cuda}
OUT=${2:-gpu-out}
STEPS=${3:-gtest,bench,sanitize,python}
mkdir -p "$OUT"
failed=0
step() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
record() {  # name status
  echo "== $1: $([ "$2" -eq 0 ] && echo PASS || echo "FAIL ($2)")" | tee -a "$OUT/summary.txt"
  [ "$2" -eq 0 ] || failed=$((failed + 1))
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

if step gtest; then
  timeout 420 "$BUILD/ctxattn_tests" --gtest_filter='CudaPortable*:CudaReliability*:CudaTorture*' > "$OUT/gtest.log" 2>&1
  record gtest $?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[ torture  \]" "$OUT/gtest.log"
fi

if step bench; then
  CTXATTN_LIBRARY="$BUILD/libctxattn.so" PYTHONPATH=python timeout 180 python3 scripts/gpu_portable_bench.py --out "$OUT" \
    > "$OUT/bench.log" 2>&1
  record bench $?
  cat "$OUT/bench.log"
fi
if step sanitize; then
  tests='CudaPortable.RandomSweep*:CudaPortable.UglyShapes*:CudaPortable.LyingMetadata*:CudaPortable.MetadataCheck*:CudaReliability.GuardBytes*'
  CTXATTN_GPU_SWEEP=12:small timeout 240 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$BUILD/ctxattn_tests" --gtest_filter="$tests" > "$OUT/memcheck.log" 2>&1
  record memcheck $?
  tail -3 "$OUT/memcheck.log"
  # Lying metadata of every kind on every backend: no access outside the buffers it was given.
  CTXATTN_GPU_TORTURE=4 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$BUILD/ctxattn_tests" --gtest_filter='CudaTorture*' > "$OUT/memcheck-torture.log" 2>&1
  record memcheck-torture $?
  grep -E "^\[ torture  \]|ERROR SUMMARY" "$OUT/memcheck-torture.log"
  CTXATTN_GPU_SWEEP=4:small timeout 180 compute-sanitizer --tool racecheck --error-exitcode 1 \
    "$BUILD/ctxattn_tests" --gtest_filter='CudaPortable.RandomSweep*:CudaPortable.MetadataCheck*' \
    > "$OUT/racecheck.log" 2>&1
  record racecheck $?
  tail -3 "$OUT/racecheck.log"
fi

if step python; then
  CTXATTN_LIBRARY="$BUILD/libctxattn.so" PYTHONPATH=python timeout 300 python3 -m pytest -q -p no:cacheprovider \
    tests/python > "$OUT/pytest.log" 2>&1
  record pytest $?
  tail -5 "$OUT/pytest.log"
fi

exit "$failed"
