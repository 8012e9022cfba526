#!/bin/bash
# Session 7 run 5: X (two e4m3 kernels + WGMMA descriptors advanced by constants) against main (W):
# A/B bench, then the GPU tests that cover every kernel family, as time allows.
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in W X; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsX.tar.xz | tar xf - -C .gpu
B=.gpu
b() { for v in W X; do LD_LIBRARY_PATH=.gpu/lib$v $B/ctxattn_gpu_bench $1 --backends cuda_sm90 --pages $2 --runs 5 | grep -v "^device\|^workload" | sed "s/^/$v /" | tee -a $OUT/bench.txt; done; }
for w in long_8k chunk_long_tp8 fp8.long_8k; do b $w 64,16; done
for w in d64 d256 short_256 batch_1k fp8.d64 kv8.long_8k nvfp4.long_8k long_8k; do b $w 64; done
echo "bench $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
export CTXATTN_TEST_BACKEND=cuda_sm90
left=$(( 300 - ($(date +%s)-T0) ))
LD_LIBRARY_PATH=.gpu/libX timeout $left $B/ctxattn_tests --gtest_filter='CudaSm90.E4m3QueriesAndKvOnFp8*:CudaSm90.E4m3KvUnder*:CudaSplit.ShortChunks*:CudaPortable.RandomSweep*:CudaSm90.E4m3Wide*:CudaSm90.PersistentGrid*' > $OUT/gtest-X.txt 2>&1; echo "gtest rc $? budget $left s" | tee -a $OUT/steps.txt
grep -E "^\[       OK|FAILED|PASSED" $OUT/gtest-X.txt | head -20
