#!/bin/bash
# v20 run 2: TWO = the one-term e4m3 D = 128 kernel in two forms by request length (128-key tiles
# under 4096 keys, 192-key tiles on the scheduler's walk from 4096 on) against MAIN. The whole GPU
# suite on TWO against the sm90 backend, memcheck / racecheck on the new tests, ctxattn_gpu_bench
# in rotating order, the harness with FA3 fp8.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN TWO; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -d .gpu/ctxattn_tests.xz; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libTWO
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 240 .gpu/ctxattn_tests --gtest_filter='Cuda*:Sm90*' > $OUT/gtest-sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc|Failure|error" $OUT/gtest-sm90.log | head -30
step gtest
NEW='CudaSm90.E4m3TileFormsByRequestLengthOverEveryPageSize:CudaSm90.E4m3RequestBitsDoNotDependOnItsBatch'
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter=$NEW > $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
tail -3 $OUT/memcheck.log
step memcheck
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter=$NEW > $OUT/racecheck.log 2>&1; echo "rc $?" >> $OUT/racecheck.log
tail -3 $OUT/racecheck.log
step racecheck
unset LD_LIBRARY_PATH
for v in MAIN TWO TWO MAIN; do
  run1 $v fp8.long_8k 64,16; run1 $v fp8.batch_1k 64,16; run1 $v fp8out.long_8k 64,16
done
step ab
for v in TWO MAIN; do run1 $v fp8.long_8k 64,16 150; run1 $v nvfp4.long_8k 64; done
step ab-rest
for v in MAIN TWO; do
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/lib$v/libctxattn.so BENCH_BUDGET_S=100 OUT=/tmp/r$v timeout 150 bash bench/gpu_run.sh run -w fp8 --page-size 64,16 --impl ctxattn,fa3 > /tmp/r$v.log 2>&1
  cp /tmp/r$v/bench/results.csv $OUT/harness-$v.csv; grep -v "^\s*$" /tmp/r$v.log | grep -v "^#" > $OUT/harness-$v.log; grep -E "ctxattn  |fa3  " $OUT/harness-$v.log
  step harness-$v
done
true
