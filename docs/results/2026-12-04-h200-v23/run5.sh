#!/bin/bash
# v23 run 5: IRP (every sm90 unit: O's rescale among the softmax's exponentials, the correction
# by poly_exp2; softmax.cuh update_rescaling) against MAIN. The sm90 gtest step, the sm90 edge
# tests, memcheck and racecheck on the reduced sweep, then ctxattn_gpu_bench in rotating order.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN IRP; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libIRP
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-IRP.log 2>&1; echo "rc $?" >> /tmp/o/gtest-sm90-IRP.log
timeout 120 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:Sm90*' > /tmp/o/gtest-edges-IRP.log 2>&1; echo "rc $?" >> /tmp/o/gtest-edges-IRP.log
grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-*-IRP.log
step tests
CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=6:small timeout 90 compute-sanitizer --tool memcheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaPortable.LyingMetadata*:CudaSplit.ShortChunks*' > /tmp/o/memcheck-IRP.log 2>&1; echo "rc $?" >> /tmp/o/memcheck-IRP.log
tail -2 /tmp/o/memcheck-IRP.log
CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 70 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSplit.ShortChunks*' > /tmp/o/racecheck-IRP.log 2>&1; echo "rc $?" >> /tmp/o/racecheck-IRP.log
tail -2 /tmp/o/racecheck-IRP.log
unset LD_LIBRARY_PATH
step sanitizers
W=long_8k,d64,chunk_long_tp8,fp8.long_8k,batch_1k,short_256
for v in MAIN IRP IRP MAIN; do run1 $v $W 64,16; done
for v in MAIN IRP; do run1 $v d256,fp8.d256,fp8out.long_8k,chunk_prefix,kv8.long_8k,nvfp4.long_8k 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
