#!/bin/bash
# v24 run 4: the timeline of main's kernels taken by every warp of each consumer warpgroup (TLW:
# main + sm90-timeline2.patch, each stamp set's first clock printed, the first thread of each warp
# records; bf16 and e4m3 D = 128 units), to see whether the warps that share their SM sub-partition
# with the producer warp (warp 0 of each warpgroup) run the tile differently from the others.
cd "$(dirname "$0")/../../.."
rm -rf /tmp/o; mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
ln -sf libctxattn.so.0.1.0 .gpu/libTLW/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/libTLW/libctxattn.so
for pg in 64 16; do for w in long_8k fp8.long_8k; do
  LD_LIBRARY_PATH=.gpu/libTLW timeout 60 .gpu/ctxattn_gpu_bench $w --backends cuda_sm90 --pages $pg --runs 3 > /tmp/o/tl-TLW-$w-p$pg.out 2> /tmp/o/tl-TLW-$w-p$pg.txt
  echo "TLW $w p$pg: $(grep -c '^timeline' /tmp/o/tl-TLW-$w-p$pg.txt) lines, $(tail -1 /tmp/o/tl-TLW-$w-p$pg.out)"
done; done
tar cf $OUT/logs.tar -C /tmp/o .
true
