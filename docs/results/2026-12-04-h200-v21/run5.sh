#!/bin/bash
# v21 run 5: the sm90 edge tests on main's library (run 4's torture step used up its time limit
# before them), the harness with FA3 fp8 on main's library, compute-sanitizer memcheck and
# racecheck on the reduced sweep against the sm90 backend (shorter limits: the session's device
# time was running out).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in FINAL; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libFINAL
timeout 100 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:Sm90*' > $OUT/gtest-sm90-edges.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90-edges.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|^rc|Failure" $OUT/gtest-sm90-edges.log | head
step gtest-edges
unset LD_LIBRARY_PATH
for v in FINAL; do
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/lib$v/libctxattn.so BENCH_BUDGET_S=100 OUT=/tmp/r$v timeout 160 bash bench/gpu_run.sh run -w fp8 --page-size 64,16 --impl ctxattn,fa3 > /tmp/r$v.log 2>&1
  cp /tmp/r$v/bench/results.csv $OUT/harness-$v.csv; grep -v "^\s*$" /tmp/r$v.log | grep -v "^#" > $OUT/harness-$v.log; grep -E "ctxattn  |fa3  " $OUT/harness-$v.log
  step harness-$v
done
export LD_LIBRARY_PATH=$PWD/.gpu/libFINAL
tests='CudaPortable.RandomSweep*:CudaPortable.UglyShapes*:CudaPortable.LyingMetadata*:CudaPortable.MetadataCheck*:CudaReliability.GuardBytes*:CudaSplit.ShortChunks*:CudaSplit.GraphReplays*'
CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=12:small timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter="$tests" > $OUT/memcheck-cuda_sm90.log 2>&1; echo "rc $?" >> $OUT/memcheck-cuda_sm90.log
tail -3 $OUT/memcheck-cuda_sm90.log
step memcheck
for tool in racecheck; do
  CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 70 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaPortable.MetadataCheck*:CudaSplit.ShortChunks*' > $OUT/$tool-cuda_sm90.log 2>&1; echo "rc $?" >> $OUT/$tool-cuda_sm90.log
  tail -3 $OUT/$tool-cuda_sm90.log
  step $tool
done
true
