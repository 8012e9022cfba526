#!/bin/bash
# v21 run 3: SKIP (P16S whose short form, on its static walk, jumps from an empty item past the
# rest of its request) against P16S, in rotating order; the sm90 edge tests on SKIP.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in P16S SKIP; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -d .gpu/ctxattn_tests.xz; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in P16S SKIP SKIP P16S P16S SKIP; do run1 $v fp8.long_8k,fp8.batch_1k 64,16; done
step ab
for v in SKIP P16S; do run1 $v fp8out.long_8k,fp8.long_8k 64,16 30; done
step ab2
export LD_LIBRARY_PATH=$PWD/.gpu/libSKIP
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaSm90*' > $OUT/gtest-sm90-SKIP.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90-SKIP.log
grep -E "^\[  (PASSED|FAILED) |^\[  FAILED|^rc|Failure" $OUT/gtest-sm90-SKIP.log | head
step gtest
true
