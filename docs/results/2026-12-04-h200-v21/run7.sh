#!/bin/bash
# v21 run 7: RS (main's kernels, the long form skipping the O rescale when no row of a warp has a
# new maximum: a warp vote around the 64 multiplies by exactly 1) against FINAL (main), rotating
# order; the e4m3 edge tests on RS.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in FINAL RS; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in FINAL RS RS FINAL; do run1 $v fp8.long_8k 64,16; done
step ab
LD_LIBRARY_PATH=$PWD/.gpu/libRS timeout 60 .gpu/ctxattn_tests --gtest_filter='CudaSm90.E4m3*' > $OUT/gtest-RS.log 2>&1; echo "rc $?" >> $OUT/gtest-RS.log
grep -E "^\[  (PASSED|FAILED) |^rc|Failure" $OUT/gtest-RS.log
step gtest
true
