#!/bin/bash
# Session v29 run 2: XQ's edge tests (the Q-by-TMA test with FQ's e4m3 cases), the tool bench
# NEW / GA / XQ rotating at pages 64 and 16 (GA against NEW: v27's merged form and the gather's
# second producer instance, never measured; XQ against GA: XI on short_256 / batch_1k, FQ on
# fp8.batch_1k, the rest controls), then XQ's gtest step and its sanitizers (XI's walk).
# Expects .gpu29/ from pack.sh.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu29/libs.tar.xz | tar xf - -C .gpu29
for v in NEW GA XQ; do ln -sf libctxattn.so.0.1.0 .gpu29/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu29/lib$v/libctxattn.so; done
xz -dc .gpu29/ctxattn_tests.xz > .gpu29/ctxattn_tests; chmod +x .gpu29/ctxattn_tests
run1() {  # run1 VARIANT WORKLOADS PAGES [RUNS]
  LD_LIBRARY_PATH=.gpu29/lib$1 timeout 100 .gpu29/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 \
    --runs ${4:-3} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt
}
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu29/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu29/ctxattn_tests --gtest_filter="$3" \
    > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log
  grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
gt XQ edges 'CudaSm90*:Sm90*' 120
step edges
W=short_256,batch_1k,fp8.batch_1k,long_8k,d64,d64_sinks_swa,fp8.d64,fp8.long_8k,chunk_long_tp8,d256
for v in NEW GA XQ XQ GA NEW; do run1 $v $W 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
gt XQ sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
step tests
tar cf $OUT/logs.tar -C /tmp/o .
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu29/libXQ CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 60 \
    compute-sanitizer --tool $t --error-exitcode 1 .gpu29/ctxattn_tests \
    --gtest_filter='CudaPortable.RandomSweep*:CudaSm90.QueriesByTma*:CudaSm90.PersistentGrid*' > /tmp/o/$t-XQ.log 2>&1
  echo "rc $?" >> /tmp/o/$t-XQ.log; echo "$t: $(tail -2 /tmp/o/$t-XQ.log | tr '\n' ' ')"
done
step sanitizers
tar cf $OUT/logs.tar -C /tmp/o .
true
