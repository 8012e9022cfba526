#!/bin/bash
# Session v28 run 3 (prepared): the harness on GA against FA3: page1 (ragged at page size 1) with
# ctxattn on AUTO (the portable kernel), forced sm90 (the gather) and forced portable; then the
# 16-bit table shapes at pages 64 and 16; then the torture tests (pages 1-1024 on every GPU
# backend, sm90 now included at 1-4). Expects .gpu28b/ from pack.sh and .whl/fa3only (fa3-fwd
# alone, README.md).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
mkdir -p .gpu28b/libGA && xz -dc .gpu28b/libGA.xz > .gpu28b/libGA/libctxattn.so.0.1.0
ln -sf libctxattn.so.0.1.0 .gpu28b/libGA/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu28b/libGA/libctxattn.so
xz -dc .gpu28b/ctxattn_tests.xz > .gpu28b/ctxattn_tests; chmod +x .gpu28b/ctxattn_tests
harness() {  # harness NAME BUDGET ARGS...
  local name=$1 budget=$2; shift 2
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu28b/libGA/libctxattn.so BENCH_BUDGET_S=$budget OUT=/tmp/h-$name \
    bash bench/gpu_run.sh run "$@" > /tmp/h-$name.log 2>&1
  echo "harness $name rc $?" >> /tmp/o/steps.txt
  cp /tmp/h-$name/bench/results.csv /tmp/o/harness-$name.csv; grep -v "^\s*$" /tmp/h-$name.log > /tmp/o/harness-$name.log
  grep -E "^\[|ctxattn|fa3 " /tmp/o/harness-$name.log | head -40
}
harness page1 120 -w page1 --impl ctxattn,ctxattn_sm90,ctxattn_portable,fa3
step page1
tar cf $OUT/logs.tar -C /tmp/o .
harness table 200 -w long_8k,batch_1k,short_256,ragged,chunk_prefix,d64 --page-size 64,16 --impl ctxattn,fa3
step table
tar cf $OUT/logs.tar -C /tmp/o .
LD_LIBRARY_PATH=$PWD/.gpu28b/libGA timeout 170 .gpu28b/ctxattn_tests --gtest_filter='CudaTorture*' \
  > /tmp/o/gtest-torture-GA.log 2>&1
echo "rc $?" >> /tmp/o/gtest-torture-GA.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^rc" /tmp/o/gtest-torture-GA.log
step torture
tar cf $OUT/logs.tar -C /tmp/o .
true
