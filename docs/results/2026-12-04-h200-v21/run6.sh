#!/bin/bash
# v21 run 6: the harness with FA3 fp8 on MAIN (the library before the two forms) and main's
# (FINAL), alternating, two rounds each: does the tool's gain show in the harness?
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN FINAL; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
i=0
for v in MAIN FINAL FINAL MAIN; do
  i=$((i+1))
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/lib$v/libctxattn.so BENCH_BUDGET_S=80 OUT=/tmp/r$i timeout 120 bash bench/gpu_run.sh run -w fp8 --page-size 64,16 --impl ctxattn,fa3 > /tmp/r$i.log 2>&1
  cp /tmp/r$i/bench/results.csv $OUT/harness-$i-$v.csv; grep -v "^\s*$" /tmp/r$i.log | grep -v "^#" > $OUT/harness-$i-$v.log; grep -E "ctxattn  |fa3  " $OUT/harness-$i-$v.log | sed "s/^/$v /"
  step harness-$i-$v
done
true
