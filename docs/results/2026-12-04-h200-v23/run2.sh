#!/bin/bash
# v23 run 2: P4 / P8 (exp2 of every 4th / 8th column block on the FMA pipe, CTXATTN_SM90_POLY_EVERY,
# in the bf16 D = 64 / 128 and e4m3 D = 128 units) against MAIN. The sm90 gtest step on P4, then
# ctxattn_gpu_bench in rotating order, then ncu's stall reasons (per issued instruction) and
# tensor-pipe activity for one long_8k launch at page 64 of MAIN and P4. Logs in one tar file.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN P4 P8; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libP4
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-P4.log 2>&1; echo "rc $?" >> /tmp/o/gtest-sm90-P4.log
grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-sm90-P4.log
unset LD_LIBRARY_PATH
step tests
W=long_8k,d64,chunk_long_tp8,fp8.long_8k,batch_1k,short_256
for v in MAIN P4 P8 P8 P4 MAIN; do run1 $v $W 64,16; done
step bench
for v in MAIN P4; do
  LD_LIBRARY_PATH=.gpu/lib$v timeout 90 ncu --clock-control none -k regex:attention_kernel --launch-skip 3 --launch-count 1 \
    --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second' \
    --csv --page raw .gpu/ctxattn_gpu_bench long_8k --backends cuda_sm90 --pages 64 --runs 1 > /tmp/o/ncu-$v.csv 2>&1
  echo "ncu $v rc $?"
done
step ncu
tar cf $OUT/logs.tar -C /tmp/o .
true
