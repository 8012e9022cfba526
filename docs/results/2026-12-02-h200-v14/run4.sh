#!/bin/bash
# Session 7 run 4: ncu source counters of main (W) on chunk_long_tp8 and long_8k at page 64.
cd "$(dirname "$0")/.."
mkdir -p .gpu/profW && xz -dc .gpu/libW.tar.xz | tar xf - -C .gpu/profW
xz -dc .gpu/binsV.tar.xz | tar xf - -C .gpu/profW ctxattn_gpu_bench
for w in chunk_long_tp8 long_8k; do
  bash tests/gpu/profile_sm90.sh .gpu/profW $OUT/tmp $w 64 > $OUT/$w-summary.txt 2>&1
  cp $OUT/tmp/$w-p64.txt $OUT/$w-p64.txt; xz -9 -c $OUT/tmp/$w-p64.source.csv > $OUT/$w-p64.source.csv.xz
done
rm -rf $OUT/tmp
