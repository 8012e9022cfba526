#!/bin/bash
# v22 run 1: the e4m3 D = 128 long form on 224-key tiles (T224: three-part V^T, 32-row boxes, no Q
# ahead, producer / consumers on 24 / 240 registers) and its control (CTL: the 192-key long form
# with no Q ahead on 24 / 240), both main's build with the e4m3 D = 128 unit and hopper.cpp
# replaced, against MAIN. The sm90 tests and the sweep on T224 first, the sm90 tests on CTL, then
# ctxattn_gpu_bench in rotating order, racecheck on the new form's tests.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN T224 CTL; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -d .gpu/ctxattn_tests.xz; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
gt() { LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=cuda_sm90 timeout $3 .gpu/ctxattn_tests --gtest_filter="$2" > $OUT/gtest-$4-$1.log 2>&1; echo "rc $?" >> $OUT/gtest-$4-$1.log
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^rc|Failure" $OUT/gtest-$4-$1.log | head -20 | sed "s/^/$1 $4 /"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
step unpack
gt T224 'CudaSm90*:Sm90*' 120 sm90
step gtest-sm90-T224
gt CTL 'CudaSm90*:Sm90*' 120 sm90
step gtest-sm90-CTL
for v in MAIN T224 CTL CTL T224 MAIN; do run1 $v fp8.long_8k 64,16; done
step ab-long
for v in MAIN T224 CTL T224 MAIN; do run1 $v fp8out.long_8k 64,16; done
for v in MAIN T224; do run1 $v fp8.batch_1k 64,16; done
step ab-other
for v in T224 CTL MAIN; do run1 $v fp8.long_8k 64,16 150; done
step ab-150
gt T224 'CudaPortable*:CudaReliability*:CudaSplit*' 150 sweep
step gtest-sweep-T224
NEW='CudaSm90.E4m3TileFormsByRequestLengthOverEveryPageSize:CudaSm90.E4m3RequestBitsDoNotDependOnItsBatch:CudaSm90.E4m3QueriesAndKvOnFp8TensorCoresMatchTheReference'
LD_LIBRARY_PATH=$PWD/.gpu/libT224 CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter=$NEW > $OUT/racecheck-T224.log 2>&1; echo "rc $?" >> $OUT/racecheck-T224.log
tail -3 $OUT/racecheck-T224.log
step racecheck-T224
true
