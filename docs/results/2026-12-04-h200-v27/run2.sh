#!/bin/bash
# Session v27 run 2 (same machine and .gpu as run 1): SW on QTE's library (CTXATTN_X_SW=1: calls
# that may split take the scheduler's walk at every page size), rotating; ncu profiles of
# short_256 at page 64 (NEW and QTE) and of cuDNN SDPA (torch 2.11) on short_256 and batch_1k;
# then the torture tests and the sanitizers on QTE.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
if [ ! -f .gpu/libQTE/libctxattn.so.0.1.0 ]; then
  xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
  for v in NEW QT QTE; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
  xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
fi
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 90 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$5$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step start
W=d64,d64_sinks_swa,fp8.d64,kv8.d64,long_8k,chunk_long_tp8,chunk_long_tp8_batch
for r in 1 2; do
  run1 QTE $W 16,64 5 ""
  export CTXATTN_X_SW=1; run1 QTE $W 16,64 5 SW-; unset CTXATTN_X_SW
done
step sw
for v in NEW QTE; do
  bash tests/gpu/profile_sm90.sh .gpu/lib$v /tmp/o/ncu-$v short_256 64 > /tmp/o/ncu-$v-summary.txt 2>&1
  cat /tmp/o/ncu-$v-summary.txt | sed "s/^/$v /"
done
for w in short_256 batch_1k; do
  timeout 120 ncu --clock-control none --profile-from-start off --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
    python3 .gpu/sdpa_prof.py $w > /tmp/o/ncu-cudnn-$w.txt 2>&1
  echo "cudnn $w rc $?"; grep -E "mean us|Duration|DRAM Throughput|Memory Throughput|Compute \(SM\)|Registers Per|Grid Size|Block Size|Shared Memory Config|Eligible|Issue Slots|L2 Hit|Dynamic Shared|  [a-z_]*sdpa|fmha|cudnn" /tmp/o/ncu-cudnn-$w.txt | cut -c1-160 | head -30
done
rm -f /tmp/o/ncu-*/*.ncu-rep
step ncu
tar cf $OUT/logs.tar -C /tmp/o .
gt QTE torture 'CudaTorture*' 190
step torture
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu/libQTE CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 80 compute-sanitizer --tool $t --error-exitcode 1 \
    .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSplit.ShortChunks*:CudaSm90.Striped*' > /tmp/o/$t-QTE.log 2>&1
  echo "rc $?" >> /tmp/o/$t-QTE.log; echo "$t: $(tail -2 /tmp/o/$t-QTE.log | tr '\n' ' ')"
done
step sanitizers
tar cf $OUT/logs.tar -C /tmp/o .
true
