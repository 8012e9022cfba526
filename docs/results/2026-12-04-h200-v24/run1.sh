#!/bin/bash
# v24 run 1: main's final library (70a85fb) validated on the GPU (gtest step on the sm90 backend,
# the sm90 edge and torture tests, memcheck / racecheck / synccheck on the reduced sweep); the
# register-stamp timeline TL2 (perturbation first, then one call's lines each); three K / V stages
# for the 16-bit D = 128 kernels (TS): gtest step, then ctxattn_gpu_bench against MAIN, rotating.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN TL2 TS; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$4 timeout 200 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step start
gt MAIN sm90 'CudaPortable*:CudaReliability*:CudaSplit*' cuda_sm90
gt MAIN edges 'CudaSm90*:Sm90*:CudaTorture*'
step tests-main
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu/libMAIN CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 90 compute-sanitizer --tool $t --error-exitcode 1 \
    .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaPortable.LyingMetadata*:CudaSplit.ShortChunks*' > /tmp/o/$t-MAIN.log 2>&1
  echo "rc $?" >> /tmp/o/$t-MAIN.log; echo "$t: $(tail -2 /tmp/o/$t-MAIN.log | tr '\n' ' ')"
done
step sanitizers-main
for v in MAIN TL2 TL2 MAIN; do run1 $v long_8k,fp8.long_8k 64,16; done
for w in long_8k fp8.long_8k; do for pg in 64 16; do
  LD_LIBRARY_PATH=.gpu/libTL2 timeout 60 .gpu/ctxattn_gpu_bench $w --backends cuda_sm90 --pages $pg --runs 1 \
    > /tmp/o/tl-$w-p$pg.out 2> /tmp/o/tl-$w-p$pg.txt
  echo "$w p$pg: $(grep -c '^timeline' /tmp/o/tl-$w-p$pg.txt) lines"
done; done
xz -6 /tmp/o/tl-*.txt
step timeline
gt TS sm90 'CudaPortable*:CudaReliability*:CudaSplit*' cuda_sm90
step tests-ts
W=long_8k,chunk_long_tp8,batch_1k,short_256,chunk_prefix
for v in MAIN TS TS MAIN; do run1 $v $W 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
