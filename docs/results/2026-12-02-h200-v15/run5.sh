#!/bin/bash
# Session 8 call 5: the harness on D2's library against FA3 (the issues' workloads, pages 64 and
# 16).
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in D2; do mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
h() { # name lib budget -- harness args in HARGS
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/lib$2/libctxattn.so BENCH_BUDGET_S=$3 OUT=/tmp/$1 \
    bash bench/gpu_run.sh run $HARGS > /tmp/$1.log 2>&1
  cp /tmp/$1/bench/results.csv $OUT/$1.csv; grep -v "^\s*$" /tmp/$1.log | grep -v "^#" > $OUT/$1.log
  echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
}
HARGS="-w long_8k,batch_1k,short_256,chunk_prefix,chunk_long_tp8,chunk_long_tp8_batch,d256,fp8,nvfp4_out,fp8_kv --page-size 64,16 --impl ctxattn,fa3,cudnn_sdpa" h hD2 D2 420
HARGS="-w long_8k,chunk_long_tp8 --page-size 64,16 --impl ctxattn,fa3" h hD2b D2 200
grep -E "^\[|ctxattn |fa3 " $OUT/hD2.log | head -80
grep -E "^\[|ctxattn |fa3 " $OUT/hD2b.log | head -30
