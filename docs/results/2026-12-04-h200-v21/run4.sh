#!/bin/bash
# v21 run 4: main's library (the two forms, the long form on the scheduler at every page size): the
# GPU gtest step of tests/gpu/run_gpu_suite.sh against the sm90 backend (sweep, reliability,
# split), then the torture and sm90 edge tests.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
ln -sf libctxattn.so.0.1.0 .gpu/libFINAL/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/libFINAL/libctxattn.so
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libFINAL
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 380 .gpu/ctxattn_tests --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > $OUT/gtest-cuda_sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-cuda_sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc" $OUT/gtest-cuda_sm90.log | head -20
step gtest-sm90
timeout 180 .gpu/ctxattn_tests --gtest_filter='CudaTorture*:CudaSm90*:Sm90*' > $OUT/gtest-torture.log 2>&1; echo "rc $?" >> $OUT/gtest-torture.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^\[ torture  \]|^rc" $OUT/gtest-torture.log | head -20
step gtest-torture
true
