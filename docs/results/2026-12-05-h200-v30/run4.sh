#!/bin/bash
# Session v30 run 4: GI = main with the gather's page ids staged in shared memory (one coalesced
# fill a tile, four passes' ids in one 16-byte load; not in the three-consumer D = 64 kernels,
# whose code stays main's). In the order of what matters most with little device time left: GI's
# small-page and dispatch tests, the tool bench MAIN / GI at pages 1 and 16 (16: the control, the
# TMA path), memcheck on the small-page test, the gtest step with sm90 forced (the sweep reaches
# pages 1-4), racecheck on the small-page test. Expects .gpu30b/ from pack4.sh.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu30b/libs.tar.xz | tar xf - -C .gpu30b
for v in MAIN GI; do
  ln -sf libctxattn.so.0.1.0 .gpu30b/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu30b/lib$v/libctxattn.so
done
xz -dc .gpu30b/ctxattn_tests.xz > .gpu30b/ctxattn_tests; chmod +x .gpu30b/ctxattn_tests
G=$PWD/.gpu30b/libGI
step unpacked
LD_LIBRARY_PATH=$G timeout 40 .gpu30b/ctxattn_tests --gtest_filter='CudaSm90.SmallPages*:CudaSm90.AutoChooses*' \
  > /tmp/o/gtest-edges-GI.log 2>&1
echo "rc $?" >> /tmp/o/gtest-edges-GI.log; grep -hE "^\[  (PASSED|FAILED) |^rc" /tmp/o/gtest-edges-GI.log
step tests
tar cf $OUT/logs.tar -C /tmp/o .
for v in MAIN GI; do
  LD_LIBRARY_PATH=.gpu30b/lib$v timeout 25 .gpu30b/ctxattn_gpu_bench long_8k,chunk_long_tp8 --backends cuda_sm90 \
    --pages 1,16 --runs 3 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$v /" | tee -a /tmp/o/bench.txt
done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
san() {  # san TOOL
  LD_LIBRARY_PATH=$G timeout 40 compute-sanitizer --tool $1 --error-exitcode 1 .gpu30b/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*' > /tmp/o/$1-GI.log 2>&1
  echo "rc $?" >> /tmp/o/$1-GI.log; echo "$1: $(tail -2 /tmp/o/$1-GI.log | tr '\n' ' ')"
  tar cf $OUT/logs.tar -C /tmp/o .
}
san memcheck
LD_LIBRARY_PATH=$G CTXATTN_TEST_BACKEND=cuda_sm90 timeout 100 .gpu30b/ctxattn_tests \
  --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-GI.log 2>&1
echo "rc $?" >> /tmp/o/gtest-sm90-GI.log; grep -hE "^\[  (PASSED|FAILED) |^sweep:|^rc" /tmp/o/gtest-sm90-GI.log
tar cf $OUT/logs.tar -C /tmp/o .
san racecheck
step done
true
