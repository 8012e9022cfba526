#!/bin/bash
# Session v29 run 4. GA's racecheck reported hazards between the gather's cp.async writes and
# the reads of the e4m3 wideners / V transposer (and between the gather's own writes of
# successive tiles into one stage), which the cp.async.mbarrier.arrive.noinc completions order.
# GAF (each lane waits for its copies, fences them for the async proxy and arrives plainly) and
# GA4F (GAF's arrival, the gather over the producer warpgroup's four warps in the 16-bit
# kernels): the small-page test, racecheck on it (GA4F: memcheck and synccheck too), the tool
# bench at pages 1, 4 and 16 (GA's numbers are run 3's), an ncu profile of GAF on long_8k at
# page 1. FQ (main with Q by TMA in the e4m3 short form, its test cases with 16-byte row
# padding): the e4m3 and Q-by-TMA edge tests, and fp8.batch_1k against GAF (whose e4m3 kernels
# are main's but for the gather instance). Expects .gpu29b/ (libs.tar.xz: libGAF, libGA4F,
# libFQ; FQ's test binary; the bench).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu29b/libs.tar.xz | tar xf - -C .gpu29b
for v in GAF GA4F FQ; do
  ln -sf libctxattn.so.0.1.0 .gpu29b/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu29b/lib$v/libctxattn.so
done
xz -dc .gpu29b/ctxattn_tests.xz > .gpu29b/ctxattn_tests; chmod +x .gpu29b/ctxattn_tests
gt() {  # gt VARIANT NAME FILTER LIMIT
  LD_LIBRARY_PATH=$PWD/.gpu29b/lib$1 timeout $4 .gpu29b/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log
  grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
san() {  # san VARIANT TOOL FILTER
  LD_LIBRARY_PATH=$PWD/.gpu29b/lib$1 timeout 70 compute-sanitizer --tool $2 --error-exitcode 1 .gpu29b/ctxattn_tests \
    --gtest_filter="$3" > /tmp/o/$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/$2-$1.log; echo "$1 $2: $(tail -2 /tmp/o/$2-$1.log | tr '\n' ' ')"
}
step unpacked
gt FQ edges 'CudaSm90.QueriesByTma*:CudaSm90.E4m3*' 120
gt GAF pages 'CudaSm90.SmallPages*' 60
gt GA4F pages 'CudaSm90.SmallPages*' 60
san GAF racecheck 'CudaSm90.SmallPages*'
for t in racecheck memcheck synccheck; do san GA4F $t 'CudaSm90.SmallPages*'; done
step tests
tar cf $OUT/logs.tar -C /tmp/o .
run1() {  # run1 VARIANT WORKLOADS PAGES
  LD_LIBRARY_PATH=.gpu29b/lib$1 timeout 120 .gpu29b/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 \
    --runs 3 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt
}
for v in GAF FQ FQ GAF; do run1 $v fp8.batch_1k 64,16; done
S=long_8k,batch_1k,d256,fp8.long_8k,kv8.long_8k,chunk_long_tp8
for v in GAF GA4F; do run1 $v $S 1,4,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
cp .gpu29b/ctxattn_gpu_bench .gpu29b/libGAF/
bash tests/gpu/profile_sm90.sh .gpu29b/libGAF /tmp/o/ncu-GAF long_8k 1 2>&1 | tee /tmp/o/ncu-GAF-summary.txt
rm -f /tmp/o/ncu-GAF/*.ncu-rep
step ncu
tar cf $OUT/logs.tar -C /tmp/o .
true
