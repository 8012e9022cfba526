#!/bin/bash
# v22 run 2: the register split and Q ahead of the 192-key long form taken apart. CTL = no Q ahead,
# 24 / 240 (run 1's control); CTL2 = no Q ahead, 40 / 232; CTL3 = Q ahead, 24 / 240; MAIN = Q ahead,
# 40 / 232. Each is main's build with the e4m3 D = 128 unit and hopper.cpp replaced. The sm90 tests
# on CTL2, ctxattn_gpu_bench in rotating order, then the harness with FA3 fp8 on MAIN and CTL2.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN CTL CTL2 CTL3; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -d .gpu/ctxattn_tests.xz; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
gt() { LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=cuda_sm90 timeout $3 .gpu/ctxattn_tests --gtest_filter="$2" > $OUT/gtest-$4-$1.log 2>&1; echo "rc $?" >> $OUT/gtest-$4-$1.log
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^rc|Failure" $OUT/gtest-$4-$1.log | head -20 | sed "s/^/$1 $4 /"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt 2>&1
step unpack
gt CTL2 'CudaSm90*:Sm90*' 120 sm90
step gtest-sm90-CTL2
for v in MAIN CTL CTL2 CTL3 CTL3 CTL2 CTL MAIN; do run1 $v fp8.long_8k 64,16; done
step ab-long
for v in MAIN CTL2 CTL MAIN CTL2; do run1 $v fp8out.long_8k 64,16; done
step ab-fp8out
for v in CTL2 CTL MAIN CTL3; do run1 $v fp8.long_8k 64,16 150; done
step ab-150
i=0
for v in MAIN CTL2 CTL2 MAIN; do
  i=$((i+1))
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/lib$v/libctxattn.so BENCH_BUDGET_S=80 OUT=/tmp/r$i timeout 120 bash bench/gpu_run.sh run -w fp8 --page-size 64,16 --impl ctxattn,fa3 > /tmp/r$i.log 2>&1
  cp /tmp/r$i/bench/results.csv $OUT/harness-$i-$v.csv; grep -v "^\s*$" /tmp/r$i.log | grep -v "^#" > $OUT/harness-$i-$v.log; grep -E "ctxattn  |fa3  " $OUT/harness-$i-$v.log | sed "s/^/$v /"
  step harness-$i-$v
done
true
