#!/bin/bash
# Split pieces slowest in the grid order (PSL) against main (BASE): split GPU tests on PSL, the
# tool in rotating order, DRAM / L2 of chunk_long_tp8_batch under ncu.
cd "$(dirname "$0")/.."
T0=$(date +%s)
xz -dc .gpu/libs5.tar.xz | tar xf - -C .gpu
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libPSL
for b in cuda_sm90 cuda_portable; do
  CTXATTN_TEST_BACKEND=$b timeout 200 .gpu/ctxattn_tests --gtest_filter='CudaSplit*:CudaSm90.PersistentGrid*' > $OUT/gtest-$b.log 2>&1; echo "rc $?" >> $OUT/gtest-$b.log
  grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[  FAILED|^rc" $OUT/gtest-$b.log | head
done
step gtest
unset LD_LIBRARY_PATH
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in BASE PSL PSL BASE; do
  run1 $v chunk_long_tp8_batch 64,16; run1 $v chunk_long_tp8 64,16; run1 $v d64 64; run1 $v long_8k 64
done
step ab
M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct
for v in BASE PSL; do
  echo "== $v chunk_long_tp8_batch p64" >> $OUT/ncu.txt
  LD_LIBRARY_PATH=.gpu/lib$v timeout 120 ncu --clock-control none -k regex:attention_kernel --launch-skip 3 --launch-count 1 \
    --metrics $M .gpu/ctxattn_gpu_bench chunk_long_tp8_batch --backends cuda_sm90 --pages 64 --runs 1 2>&1 | grep -E "^\s+(gpu__|dram__|lts__)" >> $OUT/ncu.txt
done
cat $OUT/ncu.txt
step ncu
true
