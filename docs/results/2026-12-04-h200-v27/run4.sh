#!/bin/bash
# Session v27 run 4 (prepared, after run 3): the harness on FIN against FA3, then the torture tests on FIN.
# Expects .gpu4/libFIN.xz, .gpu4/ctxattn_tests.xz (FIN's build) and .whl/fa3only (fa3-fwd).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
mkdir -p .gpu4/libFIN && xz -dc .gpu4/libFIN.xz > .gpu4/libFIN/libctxattn.so.0.1.0
ln -sf libctxattn.so.0.1.0 .gpu4/libFIN/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu4/libFIN/libctxattn.so
xz -dc .gpu4/ctxattn_tests.xz > .gpu4/ctxattn_tests; chmod +x .gpu4/ctxattn_tests
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu4/libFIN/libctxattn.so BENCH_BUDGET_S=150 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w short_256,batch_1k,d64,long_8k,chunk_prefix \
  --page-size 64,16 --impl ctxattn,fa3 > /tmp/h.log 2>&1
echo "harness rc $?" >> /tmp/o/steps.txt
cp /tmp/h/bench/results.csv /tmp/o/harness.csv; grep -v "^\s*$" /tmp/h.log > /tmp/o/harness.log
grep -E "^\[|ctxattn |fa3 " /tmp/o/harness.log | head -40
step harness
tar cf $OUT/logs.tar -C /tmp/o .
LD_LIBRARY_PATH=$PWD/.gpu4/libFIN timeout 170 .gpu4/ctxattn_tests --gtest_filter='CudaTorture*' > /tmp/o/gtest-torture-FIN.log 2>&1
echo "rc $?" >> /tmp/o/gtest-torture-FIN.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^rc" /tmp/o/gtest-torture-FIN.log
step torture
tar cf $OUT/logs.tar -C /tmp/o .
true
