#!/bin/bash
# Session v27 run 1: Q by TMA. NEW = main at d45b77f; QT = Q of the 16-bit kernels by TMA (one
# thread a consumer warpgroup, D / 64 boxes on an mbarrier a Q region) instead of 128 threads'
# row-table lookups and cp.async; QTE = QT with the next item's Q started under the first Q K^T
# of the current item (static walk) instead of under its last P V; QTE's library also reads
# CTXATTN_X_SW (SW: the scheduler's walk at every page size, run 2). Expects .gpu/libs.tar.xz
# (libNEW/ libQT/ libQTE/, stripped), .gpu/ctxattn_gpu_bench and .gpu/ctxattn_tests.xz from main.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in NEW QT QTE; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 90 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
gt QTE sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt QTE edges 'CudaSm90*:Sm90*' 120
gt QT edges 'CudaSm90*:Sm90*' 120
step tests
tar cf $OUT/logs.tar -C /tmp/o .
W=short_256,batch_1k,chunk_prefix,d64.short_256,d64.batch_1k,d64.chunk_prefix,long_8k,batch_4k,d256,d64,chunk_long_tp8
for v in NEW QT QTE QTE QT NEW; do run1 $v $W 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
