#!/bin/bash
# The harness on NEW's library (run 1, stripped) with FA3 and cuDNN SDPA in the same run: d64
# (issue 10's 64 / 8 heads, D = 64 shape), chunk_long_tp8 (issue 12), then the rest of the suite
# as the budget allows (the cuDNN frontend's wheel does not fit in the same carry: run 3).
# Expects build-h/libNEW.xz and .whl/fa3only (fa3-fwd).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p build-h/libNEW && xz -dc build-h/libNEW.xz > build-h/libNEW/libctxattn.so.0.1.0
ln -sf libctxattn.so.0.1.0 build-h/libNEW/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 build-h/libNEW/libctxattn.so
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/build-h/libNEW/libctxattn.so BENCH_BUDGET_S=470 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w d64,chunk_long_tp8,long_8k,chunk_long_tp8_batch,fp8,batch_1k,short_256,chunk_prefix,d256,batch_4k,long_32k,ragged \
  --page-size 64,16 --impl ctxattn,fa3,cudnn_sdpa > /tmp/h.log 2>&1
echo "harness rc $? $(( $(date +%s)-T0 ))s" | tee $OUT/steps.txt
cp /tmp/h/bench/results.csv $OUT/harness.csv; cp /tmp/h/bench/results.png $OUT/harness.png 2>/dev/null; grep -v "^\s*$" /tmp/h.log > $OUT/harness.log
grep -E "^\[|ctxattn |fa3 |cudnn" $OUT/harness.log | head -80
true
