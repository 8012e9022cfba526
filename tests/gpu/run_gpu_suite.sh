#!/usr/bin/env bash
# The GPU suite of the CUDA backends, for a machine with an NVIDIA GPU (CI has none).
#
#   tests/gpu/run_gpu_suite.sh [BUILD_DIR] [OUT_DIR] [STEPS]
#
# BUILD_DIR (default build-cuda) holds libctxattn.so and ctxattn_tests from a CUDA build
# (cmake -S . -B build-cuda -DCTXATTN_CUDA=ON && cmake --build build-cuda -j; add
# -DCTXATTN_LINEINFO=ON for source lines in compute-sanitizer's reports); OUT_DIR (default
# gpu-out) receives one log per step. STEPS is a comma list of:
#   gtest     the GPU gtests (tests/cpp/test_cuda_*.cpp: random sweep vs the CPU reference,
#             determinism, PDL, graph replay, metadata check, lying metadata) once per backend in
#             CTXATTN_GPU_BACKENDS (default: cuda_portable cuda_sm90), and the metadata torture
#             test, which loops over every GPU backend itself
#   bench     bench/portable_vs_fa2.py (ctxattn vs torch FA2, BENCH.md workloads)
#   sanitize  compute-sanitizer memcheck, racecheck and synccheck on a reduced sweep, per
#             backend, and memcheck on a quarter of the metadata torture cases
#   python    the pytest suite (its GPU cases run on this backend)
# default: all four. Each step has a time limit, so a hang costs minutes, not the machine. Exit status: the number of failed steps.
set -u
BUILD=${1:-build-cuda}
OUT=${2:-gpu-out}
STEPS=${3:-gtest,bench,sanitize,python}
# The CUDA backends the gtest and sanitize steps run against (cuda_sm90 needs an sm90 device and
# a build with 90a; on other GPUs its cases report UNSUPPORTED and the sweep test fails loudly).
BACKENDS=${CTXATTN_GPU_BACKENDS:-cuda_portable cuda_sm90}
mkdir -p "$OUT"
failed=0
. "$(dirname "$0")/common.sh"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"

if step gtest; then
  # The same suite against each CUDA backend (CTXATTN_TEST_BACKEND, tests/cpp/device_problem.h);
  # the torture test loops over the backends itself and runs once.
  for backend in $BACKENDS; do
    CTXATTN_TEST_BACKEND=$backend timeout 420 "$BUILD/ctxattn_tests" \
      --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > "$OUT/gtest-$backend.log" 2>&1
    record "gtest $backend" $?
    grep -E "^\[  (PASSED|FAILED|SKIPPED) |^sweep:" "$OUT/gtest-$backend.log"
  done
  timeout 420 "$BUILD/ctxattn_tests" --gtest_filter='CudaTorture*:CudaSm90*' > "$OUT/gtest-torture.log" 2>&1
  record "gtest torture, sm90 edges" $?
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[ torture  \]" "$OUT/gtest-torture.log"
fi

if step bench; then
  CTXATTN_LIBRARY="$BUILD/libctxattn.so" PYTHONPATH=python timeout 180 python3 bench/portable_vs_fa2.py --out "$OUT" \
    > "$OUT/bench.log" 2>&1
  record bench $?
  cat "$OUT/bench.log"
fi
if step sanitize; then
  tests='CudaPortable.RandomSweep*:CudaPortable.UglyShapes*:CudaPortable.LyingMetadata*:CudaPortable.MetadataCheck*:CudaReliability.GuardBytes*:CudaSplit.ShortChunks*:CudaSplit.GraphReplays*:CudaSm90.*Nvfp4*:CudaSm90.HeadDim512*'
  for backend in $BACKENDS; do
    CTXATTN_TEST_BACKEND=$backend CTXATTN_GPU_SWEEP=12:small timeout 240 compute-sanitizer --tool memcheck \
      --error-exitcode 1 "$BUILD/ctxattn_tests" --gtest_filter="$tests" > "$OUT/memcheck-$backend.log" 2>&1
    record "memcheck $backend" $?
    tail -3 "$OUT/memcheck-$backend.log"
    for tool in racecheck synccheck; do
      CTXATTN_TEST_BACKEND=$backend CTXATTN_GPU_SWEEP=4:small timeout 180 compute-sanitizer --tool $tool \
        --error-exitcode 1 "$BUILD/ctxattn_tests" --gtest_filter='CudaPortable.RandomSweep*:CudaPortable.MetadataCheck*:CudaSplit.ShortChunks*' \
        > "$OUT/$tool-$backend.log" 2>&1
      record "$tool $backend" $?
      tail -3 "$OUT/$tool-$backend.log"
    done
  done
  # Lying metadata of every kind on every backend: no access outside the buffers it was given.
  CTXATTN_GPU_TORTURE=4 timeout 300 compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$BUILD/ctxattn_tests" --gtest_filter='CudaTorture*' > "$OUT/memcheck-torture.log" 2>&1
  record memcheck-torture $?
  grep -E "^\[ torture  \]|ERROR SUMMARY" "$OUT/memcheck-torture.log"
fi

if step python; then
  CTXATTN_LIBRARY="$BUILD/libctxattn.so" PYTHONPATH=python timeout 300 python3 -m pytest -q -p no:cacheprovider \
    tests/python > "$OUT/pytest.log" 2>&1
  record pytest $?
  tail -5 "$OUT/pytest.log"
fi

exit "$failed"
