#!/bin/bash
# Session v29 run 5 (prepared, not run: no device time was left). GP = main with
# sm90-gather-ids-ahead.patch: the small-page gather keeps the page ids of its next four passes
# in flight (ncu in run 4: each pass waited for its id from L2, 51% of the producer's stall
# samples). Not in the kernels of three consumer warpgroups (D = 64 16-bit), whose code is
# main's. The small-page test, the gtest step with sm90 forced (the sweep reaches pages 1-4),
# memcheck and synccheck on the small-page test; the tool bench MAIN / GP rotating at pages 1, 2,
# 4 and 16 (page 16 the control: the TMA path's loops compile as main's). RR = main with
# sm90-raw-readers-arrive.patch (every widener / transposing thread releases a raw stage after its
# own reads, 96 arrivals instead of one a warp: the protocol racecheck follows, perf notes "sm90
# v29" item 6): racecheck on the small-page test, the e4m3 edge tests, and the bench of the e4m3
# kernels against MAIN at pages 64 and 16. Expects .gpu29c/ from `PART=run5 pack.sh`.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu29c/libs.tar.xz | tar xf - -C .gpu29c
for v in MAIN GP RR; do
  ln -sf libctxattn.so.0.1.0 .gpu29c/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu29c/lib$v/libctxattn.so
done
xz -dc .gpu29c/ctxattn_tests.xz > .gpu29c/ctxattn_tests; chmod +x .gpu29c/ctxattn_tests
step unpacked
LD_LIBRARY_PATH=$PWD/.gpu29c/libGP timeout 60 .gpu29c/ctxattn_tests --gtest_filter='CudaSm90.SmallPages*' > /tmp/o/gtest-pages-GP.log 2>&1
echo "rc $?" >> /tmp/o/gtest-pages-GP.log; grep -hE "^\[  (PASSED|FAILED) |^rc" /tmp/o/gtest-pages-GP.log
LD_LIBRARY_PATH=$PWD/.gpu29c/libGP CTXATTN_TEST_BACKEND=cuda_sm90 timeout 180 .gpu29c/ctxattn_tests \
  --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-GP.log 2>&1
echo "rc $?" >> /tmp/o/gtest-sm90-GP.log; grep -hE "^\[  (PASSED|FAILED) |^sweep:|^rc" /tmp/o/gtest-sm90-GP.log
for t in memcheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu29c/libGP timeout 70 compute-sanitizer --tool $t --error-exitcode 1 .gpu29c/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*' > /tmp/o/$t-GP.log 2>&1
  echo "rc $?" >> /tmp/o/$t-GP.log; echo "$t: $(tail -2 /tmp/o/$t-GP.log | tr '\n' ' ')"
done
LD_LIBRARY_PATH=$PWD/.gpu29c/libRR timeout 120 .gpu29c/ctxattn_tests --gtest_filter='CudaSm90.E4m3*:CudaSm90.SmallPages*' \
  > /tmp/o/gtest-e4m3-RR.log 2>&1
echo "rc $?" >> /tmp/o/gtest-e4m3-RR.log; grep -hE "^\[  (PASSED|FAILED) |^rc" /tmp/o/gtest-e4m3-RR.log
LD_LIBRARY_PATH=$PWD/.gpu29c/libRR timeout 90 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu29c/ctxattn_tests \
  --gtest_filter='CudaSm90.SmallPages*' > /tmp/o/racecheck-RR.log 2>&1
echo "rc $?" >> /tmp/o/racecheck-RR.log; echo "racecheck RR: $(tail -2 /tmp/o/racecheck-RR.log | tr '\n' ' ')"
step tests
tar cf $OUT/logs.tar -C /tmp/o .
for v in MAIN RR RR MAIN; do
  LD_LIBRARY_PATH=.gpu29c/lib$v timeout 100 .gpu29c/ctxattn_gpu_bench fp8.long_8k,fp8.batch_1k,fp8.d64,kv8.long_8k,kv8.batch_1k \
    --backends cuda_sm90 --pages 64,16 --runs 3 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$v /" | tee -a /tmp/o/bench.txt
done
S=long_8k,batch_1k,short_256,d256,fp8.long_8k,kv8.long_8k,chunk_long_tp8
for v in MAIN GP GP MAIN; do
  LD_LIBRARY_PATH=.gpu29c/lib$v timeout 120 .gpu29c/ctxattn_gpu_bench $S --backends cuda_sm90 --pages 1,2,4,16 \
    --runs 3 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$v /" | tee -a /tmp/o/bench.txt
done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
