#!/bin/bash
# Session v29 run 3: pages of 1, 2 and 4 tokens, portable against sm90 (the gather), in the tool
# bench; then the harness on GA against FA3: page1 (ragged at page size 1) with ctxattn on AUTO
# (the portable kernel), forced sm90 and forced portable; the 16-bit table shapes at pages 64 and
# 16. Expects .gpu28b/ from v28's pack.sh with build/ctxattn_gpu_bench copied in, and
# .whl/fa3only (fa3-fwd alone, v28's README).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
mkdir -p .gpu28b/libGA && xz -dc .gpu28b/libGA.xz > .gpu28b/libGA/libctxattn.so.0.1.0
ln -sf libctxattn.so.0.1.0 .gpu28b/libGA/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu28b/libGA/libctxattn.so
step unpacked
S=long_8k,batch_1k,short_256,d64,d256,fp8.long_8k,kv8.long_8k,chunk_long_tp8
LD_LIBRARY_PATH=.gpu28b/libGA timeout 200 .gpu28b/ctxattn_gpu_bench $S --backends cuda_portable,cuda_sm90 \
  --pages 1,2,4,16 --runs 3 2>/dev/null | grep -v "^device" | tee /tmp/o/bench-small-pages.txt
step small-pages
tar cf $OUT/logs.tar -C /tmp/o .
harness() {  # harness NAME BUDGET ARGS...
  local name=$1 budget=$2; shift 2
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu28b/libGA/libctxattn.so BENCH_BUDGET_S=$budget OUT=/tmp/h-$name \
    bash bench/gpu_run.sh run "$@" > /tmp/h-$name.log 2>&1
  echo "harness $name rc $?" >> /tmp/o/steps.txt
  cp /tmp/h-$name/bench/results.csv /tmp/o/harness-$name.csv; grep -v "^\s*$" /tmp/h-$name.log > /tmp/o/harness-$name.log
  grep -E "^\[|ctxattn|fa3 " /tmp/o/harness-$name.log | head -40
}
harness page1 100 -w page1 --impl ctxattn,ctxattn_sm90,ctxattn_portable,fa3
step page1
tar cf $OUT/logs.tar -C /tmp/o .
harness table 180 -w long_8k,batch_1k,short_256,ragged,chunk_prefix,d64 --page-size 64,16 --impl ctxattn,fa3
step table
tar cf $OUT/logs.tar -C /tmp/o .
true
