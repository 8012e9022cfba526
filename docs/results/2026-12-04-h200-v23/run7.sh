#!/bin/bash
# v23 run 7: TL (main's library with the bf16 and e4m3 D = 128 units built with
# CTXATTN_SM90_TIMELINE, src/cuda/sm90/timeline.cuh): the cycles between the tile loop's landmarks
# for the first thread of each consumer warpgroup of CTA 0, on long_8k and fp8.long_8k at page 64.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
ln -sf libctxattn.so.0.1.0 .gpu/libTL/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/libTL/libctxattn.so
for w in long_8k fp8.long_8k; do
  LD_LIBRARY_PATH=.gpu/libTL timeout 60 .gpu/ctxattn_gpu_bench $w --backends cuda_sm90 --pages 64 --runs 1 > /tmp/o/timeline-$w.txt 2>&1
  echo "$w rc $? $(grep -c '^timeline' /tmp/o/timeline-$w.txt) lines"
  grep -v '^timeline' /tmp/o/timeline-$w.txt | tail -2
done
xz -6 /tmp/o/timeline-*.txt
tar cf $OUT/logs.tar -C /tmp/o .
true
