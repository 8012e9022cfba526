#!/bin/bash
# Not run yet (no device time left): three consumer warpgroups for the e4m3 kernels. Expects
# .gpu/libs.tar.xz holding libMAIN/ (main at 707d73d), libD64/ (sm90-three-consumers-d64-e4m3.patch:
# every D = 64 kernel on three consumer warpgroups; e4m3 KV and e4m3 Q/K/V with 40 / 152
# registers) and libF3/ (sm90-three-consumers-e4m3-d64-d128.patch: D64 and the one-term e4m3 Q/K/V
# kernel at D = 128 on three warpgroups and 64-key tiles), all units rebuilt and relinked,
# .gpu/ctxattn_gpu_bench and .gpu/ctxattn_tests.xz from main's build. GPU tests first, then the
# bench in rotating order.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN D64 F3; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
gt F3 sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt F3 edges 'CudaSm90*:Sm90*' 120
step tests
W=fp8.d64,kv8.d64,kv8h.d64,fp8.long_8k,fp8out.long_8k,fp8.batch_1k,d64
for v in MAIN D64 F3 F3 D64 MAIN; do run1 $v $W 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
