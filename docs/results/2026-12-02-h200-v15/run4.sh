#!/bin/bash
# Session 8 call 4: D2 (split calls on the scheduler's walk where one request alone fills more
# than a wave, at page 64+) and RT (D2 with O rescaled inside the turn, between the Q K^T and P V
# issues: bf16 D = 64 / 128 and e4m3 D = 128 units); bursts and sustained; the GPU tests on both;
# memcheck on the new split test.
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in D2 RT; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu
B=.gpu
run1() { LD_LIBRARY_PATH=.gpu/lib$2 $B/ctxattn_gpu_bench $4 --backends cuda_sm90 --pages $5 --runs $3 | grep -v "^device\|^workload" | sed "s/^/$1 r$3 /" | tee -a $OUT/bench.txt; }
ab() { run1 $1 $1 $3 $4 $5; run1 $2 $2 $3 $4 $5; }
for w in long_8k chunk_long_tp8 d64 fp8.long_8k; do ab D2 RT 5 $w 64,16; done
for w in batch_1k short_256 fp8.batch_1k chunk_long_tp8_batch; do ab D2 RT 5 $w 64; done
for w in long_8k chunk_long_tp8 fp8.long_8k; do ab D2 RT 150 $w 64; ab RT D2 150 $w 64; done
echo "bench $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
export CTXATTN_TEST_BACKEND=cuda_sm90
for v in D2 RT; do
  LD_LIBRARY_PATH=.gpu/lib$v timeout 150 $B/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-$v.txt 2>&1; echo "gtest $v rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
  grep -E "FAILED|PASSED|SKIPPED|Split" $OUT/gtest-$v.txt | tail -8
done
LD_LIBRARY_PATH=.gpu/libD2 timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 $B/ctxattn_tests --gtest_filter='CudaSplit.SplitPieces*' > $OUT/memcheck-D2.txt 2>&1; echo "memcheck D2 rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
tail -5 $OUT/memcheck-D2.txt
