#!/bin/bash
# v21 run 1: the one-term e4m3 D = 128 kernel in two forms (TWO, main after the merge) against the
# kernel before it (MAIN), and two variants of TWO: P16S (the long form on the scheduler's walk at
# every page size, not only from page 64) and FP (P16S with the 256 p scale folded into the
# exponent on the 192-key tiles). ctxattn_gpu_bench in rotating order, then the sm90 edge tests
# and the split tests on FP (every changed kernel and the host's choices), memcheck on the new tests.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN TWO P16S FP; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -d .gpu/ctxattn_tests.xz; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
step unpack
for v in MAIN TWO P16S FP FP P16S TWO MAIN; do run1 $v fp8.long_8k 64,16; done
step ab-long
for v in MAIN TWO FP FP TWO MAIN; do run1 $v fp8.batch_1k 64,16; run1 $v fp8out.long_8k 64,16; done
step ab-other
for v in TWO FP P16S MAIN; do run1 $v fp8.long_8k 64,16 150; done
for v in TWO MAIN; do run1 $v nvfp4.long_8k 64; run1 $v fp8.d256 64; done
step ab-150
export LD_LIBRARY_PATH=$PWD/.gpu/libFP
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 200 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:CudaSplit*:Sm90Fp8Layout*' > $OUT/gtest-sm90-FP.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90-FP.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^rc|Failure" $OUT/gtest-sm90-FP.log | head -30
step gtest-FP
NEW='CudaSm90.E4m3TileFormsByRequestLengthOverEveryPageSize:CudaSm90.E4m3RequestBitsDoNotDependOnItsBatch'
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter=$NEW > $OUT/memcheck-FP.log 2>&1; echo "rc $?" >> $OUT/memcheck-FP.log
tail -3 $OUT/memcheck-FP.log
step memcheck-FP
true
