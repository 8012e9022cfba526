#!/bin/bash
# W3: three consumer warpgroups (192-row M tiles) for the 16-bit kernels at D = 128 (P through
# shared memory) and D = 64 (P in registers); sm90-three-consumers.patch. Expects .gpu/libs.tar.xz
# holding libMAIN/ (main's build) and libW3/ (main's build with every sm90 unit and hopper.cpp
# rebuilt from main + the patch, relinked), .gpu/ctxattn_gpu_bench, .gpu/ctxattn_tests.xz.
# GPU tests first, then the bench in rotating order, then the sanitizers.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN W3; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
gt W3 sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt W3 edges 'CudaSm90*:Sm90*' 120
step tests
W=long_8k,d64,chunk_long_tp8,batch_1k,short_256,chunk_prefix
for v in MAIN W3 W3 MAIN; do run1 $v $W 64,16; done
step bench
for t in racecheck synccheck memcheck; do
  LD_LIBRARY_PATH=$PWD/.gpu/libW3 CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 90 compute-sanitizer --tool $t --error-exitcode 1 \
    .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSplit.ShortChunks*' > /tmp/o/$t-W3.log 2>&1
  echo "rc $?" >> /tmp/o/$t-W3.log; echo "$t: $(tail -2 /tmp/o/$t-W3.log | tr '\n' ' ')"
done
step sanitizers
tar cf $OUT/logs.tar -C /tmp/o .
true
