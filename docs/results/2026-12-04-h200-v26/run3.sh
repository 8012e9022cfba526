#!/bin/bash
# The harness on NEW's library against cuDNN paged (the one peer that takes sinks): d64_sinks,
# d64_sinks_swa, and d64 for a third reading beside run 2's. Expects build-h/libNEW.xz and
# .whl/cudnn (nvidia-cudnn-frontend).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p build-h/libNEW && xz -dc build-h/libNEW.xz > build-h/libNEW/libctxattn.so.0.1.0
ln -sf libctxattn.so.0.1.0 build-h/libNEW/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 build-h/libNEW/libctxattn.so
WHEELS=.whl/cudnn BENCH_LIBRARY=$PWD/build-h/libNEW/libctxattn.so BENCH_BUDGET_S=240 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w d64_sinks,d64_sinks_swa,d64 \
  --page-size 64,16 --impl ctxattn,cudnn_paged > /tmp/h.log 2>&1
echo "harness rc $? $(( $(date +%s)-T0 ))s" | tee $OUT/steps.txt
cp /tmp/h/bench/results.csv $OUT/harness.csv; cp /tmp/h/bench/results.png $OUT/harness.png 2>/dev/null; grep -v "^\s*$" /tmp/h.log > $OUT/harness.log
grep -E "^\[|ctxattn |fa3 |cudnn" $OUT/harness.log | head -80
true
