#!/bin/bash
# v22 run 3: FINAL (main's library: the long form without Q ahead, CTL2's kernels) through the GPU
# suite against the sm90 backend (sweep, torture, edges) and compute-sanitizer memcheck, racecheck
# and synccheck on the reduced sweep; then ncu on the long form's launch of fp8.long_8k at pages 16
# and 64 in FINAL and CTL (24 / 240 registers): why CTL wins at page 64 and loses at page 16.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in FINAL CTL; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libFINAL
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > $OUT/gtest-cuda_sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-cuda_sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc" $OUT/gtest-cuda_sm90.log | head -20
step gtest-sm90
timeout 240 .gpu/ctxattn_tests --gtest_filter='CudaTorture*:CudaSm90*:Sm90*' > $OUT/gtest-torture.log 2>&1; echo "rc $?" >> $OUT/gtest-torture.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^\[ torture  \]|^rc" $OUT/gtest-torture.log | head -20
step gtest-torture-edges
tests='CudaPortable.RandomSweep*:CudaPortable.UglyShapes*:CudaPortable.LyingMetadata*:CudaPortable.MetadataCheck*:CudaReliability.GuardBytes*:CudaSplit.ShortChunks*:CudaSplit.GraphReplays*:CudaSm90.E4m3*'
CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=12:small timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter="$tests" > $OUT/memcheck-cuda_sm90.log 2>&1; echo "rc $?" >> $OUT/memcheck-cuda_sm90.log
tail -3 $OUT/memcheck-cuda_sm90.log
step memcheck
for tool in racecheck synccheck; do
  CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 70 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaPortable.MetadataCheck*:CudaSplit.ShortChunks*:CudaSm90.E4m3TileForms*' > $OUT/$tool-cuda_sm90.log 2>&1; echo "rc $?" >> $OUT/$tool-cuda_sm90.log
  tail -3 $OUT/$tool-cuda_sm90.log
  step $tool
done
unset LD_LIBRARY_PATH
for v in FINAL CTL; do for p in 16 64; do
  LD_LIBRARY_PATH=.gpu/lib$v timeout 60 ncu --clock-control none --kernel-name-base mangled -k regex:ELi2E --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section WarpStateStats --section SchedulerStats -f -o /tmp/ncu-$v-$p \
    .gpu/ctxattn_gpu_bench fp8.long_8k --backends cuda_sm90 --pages $p --runs 1 > $OUT/ncu-$v-p$p.log 2>&1
  ncu -i /tmp/ncu-$v-$p.ncu-rep --page details > $OUT/ncu-$v-p$p.txt 2>&1
  grep -E "Duration|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" $OUT/ncu-$v-p$p.txt | head -5 | sed "s/^/$v p$p /"
done; done
step ncu
true
