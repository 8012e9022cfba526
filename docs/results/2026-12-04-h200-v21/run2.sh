#!/bin/bash
# v21 run 2: what the short form costs a call whose requests are all long. P16S (TWO with the long
# form on the scheduler at every page size) against EXP (P16S's kernels, with EXP_LONG_ONLY: the
# long form's launch alone; EXP_SHORT_ONLY: the short form's alone, every item empty there), then
# per-kernel durations under ncu; the fixed batch-independence test, memcheck and racecheck on P16S.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in P16S EXP; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -d .gpu/ctxattn_tests.xz; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1${EXP_LONG_ONLY:+-long}${EXP_SHORT_ONLY:+-short} /" | tee -a $OUT/bench.txt; }
for r in 1 2; do
  run1 P16S fp8.long_8k 64,16
  EXP_LONG_ONLY=1 run1 EXP fp8.long_8k 64,16
  EXP_SHORT_ONLY=1 run1 EXP fp8.long_8k 64,16
done
step ab
LD_LIBRARY_PATH=.gpu/libP16S timeout 120 ncu --metrics gpu__time_duration.sum .gpu/ctxattn_gpu_bench fp8.long_8k,fp8.batch_1k --backends cuda_sm90 --pages 64,16 --runs 1 > $OUT/ncu-durations.txt 2>&1
grep -E "attention_kernel|gpu__time_duration" $OUT/ncu-durations.txt | sed 's/(ctxattn::Params.*//' | cut -c1-160 | tail -60
step ncu
export LD_LIBRARY_PATH=$PWD/.gpu/libP16S
NEW='CudaSm90.E4m3TileFormsByRequestLengthOverEveryPageSize:CudaSm90.E4m3RequestBitsDoNotDependOnItsBatch'
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 120 .gpu/ctxattn_tests --gtest_filter=$NEW > $OUT/gtest-new.log 2>&1; echo "rc $?" >> $OUT/gtest-new.log
grep -E "^\[  (PASSED|FAILED) |^\[       OK|^rc|Failure" $OUT/gtest-new.log
step gtest-new
for tool in memcheck racecheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter=$NEW > $OUT/$tool.log 2>&1; echo "rc $?" >> $OUT/$tool.log
  tail -3 $OUT/$tool.log
  step $tool
done
true
