#!/bin/bash
# v20 run 1: the one-term e4m3 D = 128 kernel on 192-key tiles (T192: static walk as main's
# kernel; T192S: on the scheduler's walk where the call takes it), and main's 128-key kernel on the
# scheduler (SCHED), against MAIN. GPU tests on T192S (sm90, split, layout), memcheck and racecheck
# on the 192-key test; ctxattn_gpu_bench in rotating order; the harness with FA3 fp8.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN SCHED T192 T192S; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -d .gpu/ctxattn_tests.xz; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt
export LD_LIBRARY_PATH=$PWD/.gpu/libT192S
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 200 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:CudaSplit*:Sm90Fp8Layout*' > $OUT/gtest-sm90.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90.log
grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^sweep:|^rc|Failure|error" $OUT/gtest-sm90.log | head -30
step gtest
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaSm90.E4m3TilesOf192KeysOverEveryPageSize' > $OUT/memcheck.log 2>&1; echo "rc $?" >> $OUT/memcheck.log
tail -3 $OUT/memcheck.log
step memcheck
timeout 120 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaSm90.E4m3TilesOf192KeysOverEveryPageSize' > $OUT/racecheck.log 2>&1; echo "rc $?" >> $OUT/racecheck.log
tail -3 $OUT/racecheck.log
step racecheck
unset LD_LIBRARY_PATH
for v in MAIN SCHED T192 T192S T192S T192 SCHED MAIN; do
  run1 $v fp8.long_8k 64,16; run1 $v fp8.batch_1k 64,16
done
step ab
for v in T192S MAIN SCHED T192; do
  run1 $v fp8out.long_8k 64,16
  run1 $v fp8.long_8k 64,16 150
done
step ab-rest
for v in MAIN T192S; do
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/lib$v/libctxattn.so BENCH_BUDGET_S=100 OUT=/tmp/r$v timeout 150 bash bench/gpu_run.sh run -w fp8 --page-size 64,16 --impl ctxattn,fa3 > /tmp/r$v.log 2>&1
  cp /tmp/r$v/bench/results.csv $OUT/harness-$v.csv; grep -v "^\s*$" /tmp/r$v.log | grep -v "^#" > $OUT/harness-$v.log; grep -E "ctxattn  |fa3  " $OUT/harness-$v.log
  step harness-$v
done
true
