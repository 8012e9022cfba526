#!/bin/bash
# Session v30 run 3: main as committed after this session's merges (RR, GP) and AUTO's
# small-page rule by kernel family (core/dispatch.h: sm90 with an e4m3 operand or at D = 256).
# The edge tests (CudaSm90*, Sm90*, the dispatch tests), the gtest step with sm90 forced (the
# sweep reaches pages 1-4 on it) and on AUTO, memcheck / racecheck / synccheck on the gathered
# pages, a small sweep and Q by TMA, the torture tests (pages 1-1024 on every GPU backend), and
# AUTO in the tool bench at page 1 on one shape of each family. Expects .gpu30/ from pack.sh.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu30/libs.tar.xz | tar xf - -C .gpu30
L=$PWD/.gpu30/libMAIN
ln -sf libctxattn.so.0.1.0 $L/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 $L/libctxattn.so
xz -dc .gpu30/ctxattn_tests.xz > .gpu30/ctxattn_tests; chmod +x .gpu30/ctxattn_tests
gt() {  # gt NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$L CTXATTN_TEST_BACKEND=$4 timeout $3 .gpu30/ctxattn_tests --gtest_filter="$2" > /tmp/o/gtest-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$1.log
  grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$1.log | sed "s/^/$1: /"
}
step unpacked
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
gt edges 'CudaSm90*:Sm90*:DispatchPolicy*' 150
gt sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 180 cuda_sm90
gt auto 'CudaPortable*:CudaReliability*:CudaSplit*' 180
step tests
tar cf $OUT/logs.tar -C /tmp/o .
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$L CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 80 \
    compute-sanitizer --tool $t --error-exitcode 1 .gpu30/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*:CudaPortable.RandomSweep*:CudaSm90.QueriesByTma*' > /tmp/o/$t.log 2>&1
  echo "rc $?" >> /tmp/o/$t.log; echo "$t: $(tail -2 /tmp/o/$t.log | tr '\n' ' ')"
done
step sanitizers
tar cf $OUT/logs.tar -C /tmp/o .
gt torture 'CudaTorture*' 170
step torture
tar cf $OUT/logs.tar -C /tmp/o .
LD_LIBRARY_PATH=$L timeout 60 .gpu30/ctxattn_gpu_bench long_8k,d64,d256,fp8.long_8k,kv8.long_8k --backends auto \
  --pages 1 --runs 3 2>/dev/null | grep -v "^device" | tee /tmp/o/bench-auto-page1.txt
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
