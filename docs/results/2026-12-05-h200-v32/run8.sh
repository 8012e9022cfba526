#!/bin/bash
# After run7.sh / run7b.sh, with the variant that held packed in .gpu32h/ (pack8.sh): the harness
# against FA3 on the rows the variant moves: page1 (ragged at page 1, sm90 forced, and what AUTO
# picks), ragged, long_8k, batch_1k, short_256 and chunk_prefix at pages 64 and 16; then ncu of
# short_256 at page 64 on the variant (tests/gpu/profile_sm90.sh: not profiled on our side since
# v9; cuDNN SDPA's kernel ran it at DRAM 50% in v27). Expects .whl/fa3only (fa3-fwd alone);
# carry [".gpu32h", ".whl/fa3only"]. About 8 minutes.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
X=$(ls .gpu32h/lib*.xz | head -1); V=$(basename $X .xz)
L=$PWD/.gpu32h/$V
mkdir -p $L && xz -dc $X > $L/libctxattn.so.0.1.0
echo "library: $V" | tee /tmp/o/variant.txt
ln -sf libctxattn.so.0.1.0 $L/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 $L/libctxattn.so
WHEELS=.whl/fa3only BENCH_LIBRARY=$L/libctxattn.so BENCH_BUDGET_S=200 OUT=/tmp/h1 \
  bash bench/gpu_run.sh run -w page1 --page-size 16 --impl ctxattn,ctxattn_sm90,fa3 > /tmp/h1.log 2>&1
echo "harness page1 rc $? $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt
cp /tmp/h1/bench/results.csv /tmp/o/harness-page1.csv; grep -v "^\s*$" /tmp/h1.log > /tmp/o/harness-page1.log
tar cf $OUT/logs.tar -C /tmp/o .
WHEELS=.whl/fa3only BENCH_LIBRARY=$L/libctxattn.so BENCH_BUDGET_S=260 OUT=/tmp/h2 \
  bash bench/gpu_run.sh run -w long_8k,ragged,batch_1k,short_256,chunk_prefix --page-size 64,16 --impl ctxattn,fa3 \
  > /tmp/h2.log 2>&1
echo "harness rc $? $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt
cp /tmp/h2/bench/results.csv /tmp/o/harness.csv; grep -v "^\s*$" /tmp/h2.log > /tmp/o/harness.log
grep -E "^\[|ctxattn|fa3 " /tmp/o/harness-page1.log /tmp/o/harness.log | head -60
tar cf $OUT/logs.tar -C /tmp/o .
ln -sf $PWD/.gpu32h/ctxattn_gpu_bench $L/
bash tests/gpu/profile_sm90.sh $L /tmp/o/ncu short_256 64 2>&1 | tee /tmp/o/ncu-summary.txt
xz -9 /tmp/o/ncu/short_256-p64.source.csv; rm -f /tmp/o/ncu/*.ncu-rep
echo "ncu $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt
tar cf $OUT/logs.tar -C /tmp/o .
true
