#!/bin/bash
# v23 run 1: INNER (v22's sm90-inner-loop.patch on main) and IP (that patch with
# sm90-producer-regs.patch) through the sm90 gtest step, the edge tests and racecheck, then MAIN,
# INNER and IP in ctxattn_gpu_bench in rotating order. Every log goes back in one tar file.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN INNER IP; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
for v in INNER IP; do
  export LD_LIBRARY_PATH=$PWD/.gpu/lib$v
  CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-$v.log 2>&1; echo "rc $?" >> /tmp/o/gtest-sm90-$v.log
  timeout 120 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:Sm90*' > /tmp/o/gtest-edges-$v.log 2>&1; echo "rc $?" >> /tmp/o/gtest-edges-$v.log
  grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-*-$v.log | sed "s/^/$v /"
  step tests-$v
done
export LD_LIBRARY_PATH=$PWD/.gpu/libINNER
CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 70 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSplit.ShortChunks*' > /tmp/o/racecheck-INNER.log 2>&1; echo "rc $?" >> /tmp/o/racecheck-INNER.log
tail -2 /tmp/o/racecheck-INNER.log
unset LD_LIBRARY_PATH
step racecheck
for v in MAIN INNER IP IP INNER MAIN; do run1 $v long_8k,fp8.long_8k,d256,fp8.d256 64,16; done
step bench-long
for v in MAIN INNER INNER MAIN; do run1 $v chunk_long_tp8,batch_1k,short_256,d64,fp8.batch_1k,fp8out.long_8k 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
