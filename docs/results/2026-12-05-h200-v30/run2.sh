#!/bin/bash
# Session v30 run 2: main with RR, GP and AUTO's small-page rule (core/dispatch.h). Tests: the
# dispatch tests, the small-page test, the gtest step with sm90 forced; the tool bench, portable
# against sm90 at pages 1 and 4, on the shapes the rule has not yet been measured on (ragged,
# batch_4k, chunk_prefix, the split shapes of every kernel family, the short shapes at D = 64 and
# with e4m3); the harness's page1 row (AUTO, sm90 and portable forced, FA3); ncu of the gather on
# long_8k at page 1. Expects .gpu30/ from pack.sh and .whl/fa3only (fa3-fwd alone, v28's README).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu30/libs.tar.xz | tar xf - -C .gpu30
L=.gpu30/libMAIN
ln -sf libctxattn.so.0.1.0 $L/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 $L/libctxattn.so
xz -dc .gpu30/ctxattn_tests.xz > .gpu30/ctxattn_tests; chmod +x .gpu30/ctxattn_tests
cp .gpu30/ctxattn_gpu_bench $L/
step unpacked
LD_LIBRARY_PATH=$PWD/$L timeout 120 .gpu30/ctxattn_tests \
  --gtest_filter='DispatchPolicy*:CudaSm90.AutoChooses*:CudaSm90.SmallPages*:CudaSm90.*Refuse*' > /tmp/o/gtest-auto.log 2>&1
echo "rc $?" >> /tmp/o/gtest-auto.log; grep -hE "^\[  (PASSED|FAILED) |^rc" /tmp/o/gtest-auto.log
LD_LIBRARY_PATH=$PWD/$L CTXATTN_TEST_BACKEND=cuda_sm90 timeout 180 .gpu30/ctxattn_tests \
  --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90.log 2>&1
echo "rc $?" >> /tmp/o/gtest-sm90.log; grep -hE "^\[  (PASSED|FAILED) |^sweep:|^rc" /tmp/o/gtest-sm90.log
step tests
tar cf $OUT/logs.tar -C /tmp/o .
S=ragged,batch_4k,chunk_prefix,chunk_long_tp8_batch,d64.chunk_long_tp8,d256.chunk_long_tp8,fp8.chunk_long_tp8
S=$S,kv8.chunk_long_tp8,d64.batch_1k,d64.short_256,fp8.batch_1k,kv8.batch_1k,long_8k
LD_LIBRARY_PATH=$L timeout 300 $L/ctxattn_gpu_bench $S --backends cuda_portable,cuda_sm90 --pages 1,4 --runs 3 \
  2>/dev/null | grep -v "^device" | tee /tmp/o/bench-small-pages.txt
step bench
tar cf $OUT/logs.tar -C /tmp/o .
WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/$L/libctxattn.so BENCH_BUDGET_S=100 OUT=/tmp/h-page1 \
  bash bench/gpu_run.sh run -w page1 --impl ctxattn,ctxattn_sm90,ctxattn_portable,fa3 > /tmp/h-page1.log 2>&1
echo "harness page1 rc $?" >> /tmp/o/steps.txt
cp /tmp/h-page1/bench/results.csv /tmp/o/harness-page1.csv; grep -v "^\s*$" /tmp/h-page1.log > /tmp/o/harness-page1.log
grep -E "^\[|ctxattn|fa3 " /tmp/o/harness-page1.log | head -20
step page1
tar cf $OUT/logs.tar -C /tmp/o .
bash tests/gpu/profile_sm90.sh $L /tmp/o/ncu long_8k 1 2>&1 | tee /tmp/o/ncu-summary.txt
xz -9 /tmp/o/ncu/long_8k-p1.source.csv
rm -f /tmp/o/ncu/*.ncu-rep
step ncu
tar cf $OUT/logs.tar -C /tmp/o .
true
