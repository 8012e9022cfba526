#!/bin/bash
# Session 8 call 6: RTS (O rescaled inside the turn in the 16-bit split kernel at D = 128 only)
# against D2 (= main bd38a9a), two rounds in alternating order; racecheck on main's new split test;
# RTS's split tests.
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in D2 RTS; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu
B=.gpu
run1() { LD_LIBRARY_PATH=.gpu/lib$2 $B/ctxattn_gpu_bench $4 --backends cuda_sm90 --pages $5 --runs $3 | grep -v "^device\|^workload" | sed "s/^/$1 r$3 /" | tee -a $OUT/bench.txt; }
for w in chunk_long_tp8 chunk_long_tp8_batch long_8k; do run1 D2 D2 5 $w 64,16; run1 RTS RTS 5 $w 64,16; done
for w in chunk_long_tp8 chunk_long_tp8_batch long_8k; do run1 RTS RTS 5 $w 64,16; run1 D2 D2 5 $w 64,16; done
echo "bench $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
export CTXATTN_TEST_BACKEND=cuda_sm90
LD_LIBRARY_PATH=.gpu/libD2 timeout 200 compute-sanitizer --tool racecheck --error-exitcode 9 $B/ctxattn_tests --gtest_filter='CudaSplit.SplitPieces*' > $OUT/racecheck-D2.txt 2>&1; echo "racecheck D2 rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
tail -4 $OUT/racecheck-D2.txt
left=$(( 540 - ($(date +%s)-T0) ))
LD_LIBRARY_PATH=.gpu/libRTS timeout $left $B/ctxattn_tests --gtest_filter='CudaSplit*' > $OUT/gtest-RTS.txt 2>&1; echo "gtest RTS rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
grep -E "OK|FAILED|PASSED" $OUT/gtest-RTS.txt | tail -8
