#!/bin/bash
# Session 8 call 7: FIN (main + O rescaled inside the turn in the 16-bit split kernel at D = 128 on
# the static walk; the bf16 / fp16 D = 128 units built from that source, the rest main's objects):
# the sm90 gtest step, the tool, and the harness with FA3 on the split workloads and long_8k.
cd "$(dirname "$0")/.."
T0=$(date +%s)
mkdir -p .gpu/libFIN && xz -dc .gpu/libFIN.tar.xz | tar xf - -C .gpu/libFIN
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu
B=.gpu
export CTXATTN_TEST_BACKEND=cuda_sm90
LD_LIBRARY_PATH=.gpu/libFIN timeout 150 $B/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-FIN.txt 2>&1; echo "gtest FIN rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
grep -E "^\[       OK|FAILED|PASSED" $OUT/gtest-FIN.txt | tail -28
unset CTXATTN_TEST_BACKEND
for w in chunk_long_tp8 chunk_long_tp8_batch long_8k; do LD_LIBRARY_PATH=.gpu/libFIN $B/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64,16 --runs 5 | grep -v "^device\|^workload" | sed "s/^/FIN r5 /" | tee -a $OUT/bench.txt; done
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libFIN/libctxattn.so BENCH_BUDGET_S=300 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w chunk_long_tp8,chunk_long_tp8_batch,long_8k --page-size 64,16 --impl ctxattn,fa3 > /tmp/h.log 2>&1
cp /tmp/h/bench/results.csv $OUT/harness-FIN.csv; grep -v "^\s*$" /tmp/h.log | grep -v "^#" > $OUT/harness-FIN.log
echo "harness $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
grep -E "^\[|ctxattn |fa3 " $OUT/harness-FIN.log
