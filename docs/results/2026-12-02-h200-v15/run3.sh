#!/bin/bash
# Session 8 call 3: QD (Q K^T descriptors uniform, on D) against D, in bursts of 5 runs (as the
# tool's A/Bs so far) and sustained (150 runs, the clocks settled as in the harness); F (the e4m3
# 192-key tiles with the P scale folded) against D.
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in D QD F; do [ -f .gpu/lib$v.tar.xz ] || continue; mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsD.tar.xz | tar xf - -C .gpu
B=.gpu
run1() { # label lib runs workload pages
  LD_LIBRARY_PATH=.gpu/lib$2 $B/ctxattn_gpu_bench $4 --backends cuda_sm90 --pages $5 --runs $3 | grep -v "^device\|^workload" | sed "s/^/$1 r$3 /" | tee -a $OUT/bench.txt; }
ab() { run1 $1 $1 $3 $4 $5; run1 $2 $2 $3 $4 $5; }
echo "== QD vs D" | tee -a $OUT/bench.txt
for w in long_8k chunk_long_tp8; do ab D QD 5 $w 64,16; done
for w in d64 d256 short_256 batch_1k fp8.long_8k fp8.d64; do ab D QD 5 $w 64; done
for w in long_8k chunk_long_tp8; do ab D QD 150 $w 64; ab QD D 150 $w 64; done
echo "qd $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
if [ -d .gpu/libF ]; then
echo "== F vs D" | tee -a $OUT/bench.txt
for w in fp8.long_8k; do ab D F 5 $w 64,16; done
for w in fp8.batch_1k fp8out.long_8k; do ab D F 5 $w 64; done
ab D F 150 fp8.long_8k 64; ab F D 150 fp8.long_8k 64
echo "f $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
export CTXATTN_TEST_BACKEND=cuda_sm90
LD_LIBRARY_PATH=.gpu/libF timeout 200 $B/ctxattn_tests --gtest_filter='CudaSm90.E4m3*:CudaSm90.PersistentGrid*:CudaSplit.ShortChunks*' > $OUT/gtest-F.txt 2>&1; echo "gtest F rc $?" | tee -a $OUT/steps.txt
grep -E "^\[       OK|FAILED|PASSED|SKIPPED" $OUT/gtest-F.txt | tail -12
fi
left=$(( 560 - ($(date +%s)-T0) ))
export CTXATTN_TEST_BACKEND=cuda_sm90
LD_LIBRARY_PATH=.gpu/libQD timeout $left $B/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-QD.txt 2>&1; echo "gtest QD rc $? (budget $left s)" | tee -a $OUT/steps.txt
grep -E "^\[       OK|FAILED|PASSED|SKIPPED" $OUT/gtest-QD.txt | tail -30
