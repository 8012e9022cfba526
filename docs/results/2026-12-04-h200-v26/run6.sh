#!/bin/bash
# S4: four K / V stages (instead of two) for the kernels on three consumer warpgroups (16-bit and
# one-term e4m3 Q/K/V at D = 64; 184,624 / 135,536 bytes of shared memory), the bf16 / fp16 /
# e4m3 D = 64 units and hopper.cpp rebuilt from sm90-d64-four-stages.patch. MAIN = NEW2's library
# (main at c717260). Bench in rotating order, then the GPU tests on S4.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
for v in NEW S4; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.xz > .gpu/lib$v/libctxattn.so.0.1.0
  ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
W=d64,d64_sinks_swa,fp8.d64,d64.batch_1k,d64.short_256,d64.chunk_prefix,swa127.fp8.d64
for v in NEW S4 S4 NEW; do run1 $v $W 64,16; done
step bench
gt S4 sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt S4 edges 'CudaSm90*:Sm90*' 120
step tests
tar cf $OUT/logs.tar -C /tmp/o .
true
