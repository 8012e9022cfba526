#!/bin/bash
# W3D: NEW (main's next commit) with three consumer warpgroups at D = 128 too, on 64-key tiles
# with lazy O rescaling, so that S, P and O of the overlapped step fit 160 registers
# (sm90-three-consumers-d128-64key.patch on NEW). Expects .gpu/libs.tar.xz holding libNEW/ and
# libW3D/ (NEW's objects with the 16-bit D = 128 units and hopper.cpp rebuilt from the patch),
# .gpu/ctxattn_gpu_bench, .gpu/ctxattn_tests.xz. The bench in rotating order first, then the
# GPU tests.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in NEW W3D; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
W=long_8k,chunk_long_tp8,batch_1k,short_256,chunk_prefix
for v in NEW W3D W3D NEW; do run1 $v $W 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
gt W3D sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 100 cuda_sm90
step tests
tar cf $OUT/logs.tar -C /tmp/o .
true
