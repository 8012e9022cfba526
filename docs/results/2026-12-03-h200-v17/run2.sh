#!/bin/bash
# Why SPAN is slower on chunk_long_tp8: DRAM bytes and L2 hit rate of one launch under ncu, BASE
# against SPAN; then d64 / batch_1k / short_256 again in rotating order (noise or code?).
cd "$(dirname "$0")/.."
T0=$(date +%s)
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; }
M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_hit_rate.pct,lts__t_sectors_op_read.sum,sm__cycles_active.avg,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed
for v in BASE SPAN; do
  for w in "chunk_long_tp8 64" "chunk_long_tp8 16" "chunk_long_tp8_batch 64"; do
    set -- $w
    echo "== $v $1 p$2" >> $OUT/ncu.txt
    LD_LIBRARY_PATH=.gpu/lib$v timeout 120 ncu --clock-control none -k regex:attention_kernel --launch-skip 3 --launch-count 1 \
      --metrics $M .gpu/ctxattn_gpu_bench $1 --backends cuda_sm90 --pages $2 --runs 1 2>&1 | grep -E "^\s+(gpu__|dram__|lts__|sm__|smsp__)" >> $OUT/ncu.txt
  done
done
cat $OUT/ncu.txt
step ncu
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in SPAN BASE BASE SPAN SPAN BASE; do
  for w in d64 batch_1k short_256; do run1 $v $w 64; done
done
step ab
true
