#!/bin/bash
# Session 7 run 2: branch sm90-fp8-192-v3 (V: two kernels, 192 and 128 keys) against main (W).
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in W V; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsV.tar.xz | tar xf - -C .gpu
B=.gpu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
b() { for v in W V; do LD_LIBRARY_PATH=.gpu/lib$v $B/ctxattn_gpu_bench $1 --backends cuda_sm90 --pages $2 --runs 5 | grep -v "^device\|^workload" | sed "s/^/$v /" | tee -a $OUT/bench.txt; done; }
t0=$(date +%s)
for w in fp8.long_8k fp8.batch_1k fp8out.long_8k fp8.d64 long_8k short_256 chunk_long_tp8 fp8.long_8k; do b $w 64,16; done
echo "bench $(( $(date +%s)-t0 ))s" | tee -a $OUT/steps.txt
t0=$(date +%s)
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libV/libctxattn.so BENCH_BUDGET_S=100 bash bench/gpu_run.sh run -w fp8,chunk_long_tp8 --page-size 64,16 --impl ctxattn,fa3 > $OUT/harness-V.log 2>&1
echo "harness rc $? $(( $(date +%s)-t0 ))s" | tee -a $OUT/steps.txt
cp $OUT/bench/results.csv $OUT/harness-V.csv 2>/dev/null; rm -rf $OUT/bench
grep -A3 "^fp8\|^chunk" $OUT/harness-V.log | grep -v "^--" | head -40
export CTXATTN_TEST_BACKEND=cuda_sm90
t0=$(date +%s)
LD_LIBRARY_PATH=.gpu/libV timeout 320 $B/ctxattn_tests --gtest_filter='CudaSm90*:CudaSplit*:CudaPortable*:CudaReliability*' > $OUT/gtest-V.txt 2>&1; echo "gtest rc $? $(( $(date +%s)-t0 ))s" | tee -a $OUT/steps.txt
grep -E "^\[  (PASSED|FAILED)|FAILED|tests ran" $OUT/gtest-V.txt | head; tail -3 $OUT/gtest-V.txt
left=$(( 570 - ($(date +%s)-T0) ))
if [ $left -gt 30 ]; then
LD_LIBRARY_PATH=.gpu/libV timeout $left compute-sanitizer --tool memcheck $B/ctxattn_tests --gtest_filter='CudaSm90.E4m3Wide*' > $OUT/memcheck-V.txt 2>&1; echo "memcheck rc $? left $left" | tee -a $OUT/steps.txt
tail -3 $OUT/memcheck-V.txt
fi
