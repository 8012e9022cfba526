#!/bin/bash
# Session 8 call 8: a second harness run of FIN's library on chunk_long_tp8 / chunk_long_tp8_batch
# with every peer available here (FA3, cuDNN SDPA, FA2).
cd "$(dirname "$0")/.."
mkdir -p .gpu/libFIN && xz -dc .gpu/libFIN.tar.xz | tar xf - -C .gpu/libFIN
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libFIN/libctxattn.so BENCH_BUDGET_S=250 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w chunk_long_tp8,chunk_long_tp8_batch --page-size 64,16 --impl ctxattn,fa3,cudnn_sdpa,fa2 > /tmp/h.log 2>&1
cp /tmp/h/bench/results.csv $OUT/harness-FIN-2.csv; grep -v "^\s*$" /tmp/h.log | grep -v "^#" > $OUT/harness-FIN-2.log
grep -E "^\[|ctxattn |fa3 |cudnn|fa2 " $OUT/harness-FIN-2.log
