#!/bin/bash
# The harness with FA3 on KV2's library (its bf16 D = 128 kernels are main's final ones):
# chunk_long_tp8 and long_8k at pages 64 and 16.
cd "$(dirname "$0")/../../.."
xz -dc .gpu/libKV2.tar.xz | tar xf - -C .gpu
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libKV2/libctxattn.so BENCH_BUDGET_S=120 OUT=/tmp/r timeout 200 bash bench/gpu_run.sh run -w chunk_long_tp8,long_8k --page-size 64,16 --impl ctxattn,fa3 > /tmp/r.log 2>&1
cp /tmp/r/bench/results.csv $OUT/harness.csv; grep -v "^\s*$" /tmp/r.log | grep -v "^#" > $OUT/harness.log; grep -E "ctxattn  |fa3  " $OUT/harness.log
