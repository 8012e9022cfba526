#!/bin/bash
# Session 7 run 1: branch sm90-fp8-192-v2 (F) against main (W): gtest step, sanitizers, A/B bench, harness fp8.
cd "$(dirname "$0")/.."
for v in W F; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsF.tar.xz | tar xf - -C .gpu
B=.gpu
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > $OUT/gpu.txt
export CTXATTN_TEST_BACKEND=cuda_sm90
t0=$(date +%s)
LD_LIBRARY_PATH=.gpu/libF timeout 260 $B/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-F.txt 2>&1; echo "gtest rc $? $(( $(date +%s)-t0 ))s" | tee -a $OUT/steps.txt
tail -5 $OUT/gtest-F.txt
t0=$(date +%s)
LD_LIBRARY_PATH=.gpu/libF timeout 100 compute-sanitizer --tool racecheck --racecheck-report hazard $B/ctxattn_tests --gtest_filter='CudaSm90.E4m3Wide*' > $OUT/racecheck-F.txt 2>&1; echo "racecheck rc $? $(( $(date +%s)-t0 ))s" | tee -a $OUT/steps.txt
tail -3 $OUT/racecheck-F.txt
t0=$(date +%s)
LD_LIBRARY_PATH=.gpu/libF timeout 80 compute-sanitizer --tool memcheck $B/ctxattn_tests --gtest_filter='CudaSm90.E4m3Wide*:CudaSm90.PersistentGrid*' > $OUT/memcheck-F.txt 2>&1; echo "memcheck rc $? $(( $(date +%s)-t0 ))s" | tee -a $OUT/steps.txt
tail -3 $OUT/memcheck-F.txt
b() { for v in W F; do LD_LIBRARY_PATH=.gpu/lib$v $B/ctxattn_gpu_bench $1 --backends cuda_sm90 --pages $2 --runs 5 | grep -v "^device\|^workload" | sed "s/^/$v /" | tee -a $OUT/bench.txt; done; }
t0=$(date +%s)
for w in fp8.long_8k fp8.batch_1k fp8out.long_8k nvfp4.long_8k fp8.d64 fp8.d256 long_8k d64 short_256; do b $w 64,16; done
b fp8.long_8k 64,16
echo "bench $(( $(date +%s)-t0 ))s" | tee -a $OUT/steps.txt
t0=$(date +%s)
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libF/libctxattn.so BENCH_BUDGET_S=150 bash bench/gpu_run.sh run -w fp8,nvfp4_out --page-size 64,16 --impl ctxattn,fa3 > $OUT/harness-F.log 2>&1
echo "harness rc $? $(( $(date +%s)-t0 ))s" | tee -a $OUT/steps.txt
cp bench-out/bench/results.csv $OUT/harness-F.csv 2>/dev/null; cp $OUT/bench/results.csv $OUT/harness-F.csv 2>/dev/null
tail -30 $OUT/harness-F.log
