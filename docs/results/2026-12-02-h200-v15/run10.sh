#!/bin/bash
# Session 8 call 10: PW (the P V wait made to depend on the softmax's row sums, so that ptxas keeps
# it after the softmax; bf16 D = 64 / 128 and e4m3 D = 128 units) against FIN (main), two rounds in
# alternating order; then GPU tests of those kernels on PW.
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in FIN PW; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu
B=.gpu
run1() { LD_LIBRARY_PATH=.gpu/lib$1 $B/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs 5 | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for r in 1 2; do
  for w in long_8k chunk_long_tp8; do if [ $r = 1 ]; then run1 FIN $w 64,16; run1 PW $w 64,16; else run1 PW $w 64,16; run1 FIN $w 64,16; fi; done
  for w in d64 fp8.long_8k batch_1k short_256; do if [ $r = 1 ]; then run1 FIN $w 64; run1 PW $w 64; else run1 PW $w 64; run1 FIN $w 64; fi; done
  echo "round $r $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
  [ $(( $(date +%s)-T0 )) -gt 70 ] && break
done
export CTXATTN_TEST_BACKEND=cuda_sm90
LD_LIBRARY_PATH=.gpu/libPW timeout $(( 160 - ($(date +%s)-T0) )) $B/ctxattn_tests --gtest_filter='CudaSm90.E4m3QueriesAndKvOnFp8*:CudaSm90.PersistentGrid*:CudaSplit.ShortChunks*:CudaSplit.SplitPieces*:CudaSm90.Bf16*:CudaSplit.Request*' > $OUT/gtest-PW.txt 2>&1; echo "gtest PW rc $? $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
grep -E "^\[       OK|FAILED|PASSED" $OUT/gtest-PW.txt
