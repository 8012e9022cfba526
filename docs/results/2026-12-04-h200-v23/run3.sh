#!/bin/bash
# v23 run 3: TREE (the softmax's row maxima and sums in four chains each instead of two, in the
# bf16 D = 64 / 128 and e4m3 D = 128 units) against MAIN: the sm90 gtest step on TREE, then
# ctxattn_gpu_bench in rotating order; then ncu's stall reasons per issued instruction for one
# long_8k launch of TREE and of FA3 (fa3-fwd 0.0.3, contiguous KV), as run 2 did for MAIN.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN TREE; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libTREE
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-TREE.log 2>&1; echo "rc $?" >> /tmp/o/gtest-sm90-TREE.log
grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-sm90-TREE.log
unset LD_LIBRARY_PATH
step tests
W=long_8k,d64,chunk_long_tp8,fp8.long_8k,batch_1k,short_256
for v in MAIN TREE TREE MAIN MAIN TREE; do run1 $v $W 64,16; done
step bench
M='regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second'
LD_LIBRARY_PATH=.gpu/libTREE timeout 90 ncu --clock-control none -k regex:attention_kernel --launch-skip 3 --launch-count 1 \
  --metrics "$M" --csv --page raw .gpu/ctxattn_gpu_bench long_8k --backends cuda_sm90 --pages 64 --runs 1 > /tmp/o/ncu-TREE.csv 2>&1
echo "ncu TREE rc $?"
pip install --no-deps --no-index --target /tmp/fa3 .whl/fa3only/*.whl > /dev/null 2>&1
PYTHONPATH=/tmp/fa3 timeout 120 ncu --clock-control none -k regex:"device_kernel" --launch-skip 2 --launch-count 1 \
  --metrics "$M" --csv --page raw python3 docs/results/2026-12-02-h200-v15/run9-fa3_prof.py > /tmp/o/ncu-FA3.csv 2>&1
echo "ncu FA3 rc $?"
step ncu
tar cf $OUT/logs.tar -C /tmp/o .
true
