#!/bin/bash
# NEW: main's working tree with three consumer warpgroups for the one-term e4m3 Q/K/V kernels at
# D = 64 too (the e4m3-KV ones and the two-term nvfp4-output one keep two). Expects
# .gpu/libs.tar.xz holding libMAIN/ (main at d05a367) and libD64/ (every D = 64 kernel on three
# warpgroups, v25's sm90-three-consumers-d64-e4m3.patch), .gpu/libNEW.xz (the candidate's
# libctxattn.so), .gpu/ctxattn_gpu_bench and .gpu/ctxattn_tests.xz from the candidate's build.
# The GPU tests, the bench in rotating order, the sanitizers, then the torture tests.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
mkdir -p .gpu/libNEW && xz -dc .gpu/libNEW.xz > .gpu/libNEW/libctxattn.so.0.1.0
for v in MAIN D64 NEW; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
gt NEW sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt NEW edges 'CudaSm90*:Sm90*' 120
step tests
W=fp8.d64,kv8.d64,kv8h.d64,nvfp4.long_8k,d64,fp8.long_8k
for v in MAIN NEW D64 NEW MAIN; do run1 $v $W 64,16; done
step bench
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu/libNEW CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 90 compute-sanitizer --tool $t --error-exitcode 1 \
    .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSplit.ShortChunks*:CudaSm90.E4m3Queries*' > /tmp/o/$t-NEW.log 2>&1
  echo "rc $?" >> /tmp/o/$t-NEW.log; echo "$t: $(tail -2 /tmp/o/$t-NEW.log | tr '\n' ' ')"
done
step sanitizers
tar cf $OUT/logs.tar -C /tmp/o .
gt NEW torture 'CudaTorture*' 190
step torture
tar cf $OUT/logs.tar -C /tmp/o .
true
