#!/bin/bash
# After run5.sh, if G2S (or G2) holds: the harness's page1 row (ragged at page 1, 16-bit D = 128)
# on the variant packed in .gpu31h/ (pack6.sh) with sm90 forced against FA3, and ragged at page
# 16 as the control. Expects .whl/fa3only (fa3-fwd alone); carry [".gpu31h", ".whl/fa3only"].
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
X=$(ls .gpu31h/lib*.xz | head -1); V=$(basename $X .xz)
L=$PWD/.gpu31h/$V
mkdir -p $L && xz -dc $X > $L/libctxattn.so.0.1.0
echo "library: $V" | tee /tmp/o/variant.txt
ln -sf libctxattn.so.0.1.0 $L/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 $L/libctxattn.so
WHEELS=.whl/fa3only BENCH_LIBRARY=$L/libctxattn.so BENCH_BUDGET_S=300 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w page1,ragged --page-size 16 --impl ctxattn_sm90,fa3 > /tmp/h.log 2>&1
echo "harness rc $? $(( $(date +%s)-T0 ))s" | tee /tmp/o/steps.txt
cp /tmp/h/bench/results.csv /tmp/o/harness.csv; grep -v "^\s*$" /tmp/h.log > /tmp/o/harness.log
grep -E "^\[|ctxattn|fa3 " /tmp/o/harness.log | head -30
tar cf $OUT/logs.tar -C /tmp/o .
true
