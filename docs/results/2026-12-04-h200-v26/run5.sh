#!/bin/bash
# AUTO on the Hopper kernel for every window (core/dispatch.cpp): NEW2 = NEW with the dispatch
# change (.gpu/libNEW.xz, stripped; .gpu/ctxattn_tests.xz from the same build). The edge tests
# (AUTO's choice and the persistent grid with a 100-key window at D = 64), then the harness on
# d64_sinks_swa with cuDNN paged (.whl/cudnn).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
mkdir -p .gpu/libNEW && xz -dc .gpu/libNEW.xz > .gpu/libNEW/libctxattn.so.0.1.0
ln -sf libctxattn.so.0.1.0 .gpu/libNEW/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/libNEW/libctxattn.so
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
LD_LIBRARY_PATH=$PWD/.gpu/libNEW timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:Sm90*' > /tmp/o/gtest-edges-NEW2.log 2>&1
echo "rc $?" >> /tmp/o/gtest-edges-NEW2.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^rc" /tmp/o/gtest-edges-NEW2.log
step edges
WHEELS=.whl/cudnn BENCH_LIBRARY=$PWD/.gpu/libNEW/libctxattn.so BENCH_BUDGET_S=150 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w d64_sinks_swa --page-size 64,16 --impl ctxattn,ctxattn_portable,cudnn_paged > /tmp/h.log 2>&1
echo "harness rc $?" >> /tmp/o/steps.txt
cp /tmp/h/bench/results.csv /tmp/o/harness.csv; grep -v "^\s*$" /tmp/h.log > /tmp/o/harness.log
grep -E "^\[|ctxattn|cudnn" /tmp/o/harness.log | tail -12
step harness
tar cf $OUT/logs.tar -C /tmp/o .
true
