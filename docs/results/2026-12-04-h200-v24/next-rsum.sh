#!/bin/bash
# Not run yet: the first GPU call for sm90-row-sums-on-tensor-cores.patch (perf notes "sm90 v24").
# Expects build/ctxattn_softmax_under_gmma (main's build, carried), .gpu/ctxattn_gpu_bench,
# .gpu/ctxattn_tests.xz, and .gpu/libs.tar.xz holding libMAIN/ (main's build) and libRS/ (main's
# build with all fifteen sm90 units rebuilt from main + the patch, relinked). First the
# micro-benchmark: its "update, no row sums" part against "update only" (what the 64 FADD cost
# beside the GEMMs), "QK^T + PV + sums" against "QK^T + PV (RS)" (what the sums' GEMM costs the
# tensor cores), and its check line (whether the ones-block descriptor gives the rows' sums);
# then RS's GPU tests and sanitizers, then ctxattn_gpu_bench in rotating order.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
build/ctxattn_softmax_under_gmma | tee /tmp/o/softmax_under_gmma.txt
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN RS; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step microbenchmark
gt RS sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt RS edges 'CudaSm90*:Sm90*' 120
step tests
for t in racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu/libRS CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 90 compute-sanitizer --tool $t --error-exitcode 1 \
    .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSplit.ShortChunks*' > /tmp/o/$t-RS.log 2>&1
  echo "rc $?" >> /tmp/o/$t-RS.log; echo "$t: $(tail -2 /tmp/o/$t-RS.log | tr '\n' ' ')"
done
step sanitizers
W=long_8k,d64,d256,chunk_long_tp8,batch_1k,short_256
for v in MAIN RS RS MAIN; do run1 $v $W 64,16; done
for v in MAIN RS; do run1 $v kv8.long_8k,chunk_prefix 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
