#!/bin/bash
# Prepared in session v32 (no device was lent): the first call of the next session; carry
# [".gpu32"] (pack7.sh). MAIN = main; PR = P40 (the 16-bit D = 128 kernels on 40 / 232
# registers, sm90-producer-40-d128.patch) and P32 (the three-consumer D = 64 kernels' producer on
# 32), sm90-producer-32-d64.patch after P40; GI40 = the tile's page ids in shared memory (v30's GI) +
# P40; G2S40 = the second gathering warp on the static walk (v31's G2S, GI included) + P40.
# In the order of what matters most: PR's edge tests (its registers change every 16-bit D = 64 /
# 128 call, at every page size) and the gather variants' small-page, layout and dispatch tests;
# the tool bench at page 1 (the gather: MAIN, GI40, G2S40) and at pages 64 / 16 (MAIN, PR,
# G2S40; d64 for P32), two rounds in rotating order; memcheck on G2S40 and GI40. run7b.sh has the
# rest. About 8 minutes.
cd "$(dirname "$0")/../../.."
. docs/results/2026-12-05-h200-v32/common7.sh
edges PR edges 'CudaSm90*:Sm90*:DispatchPolicy*' 120
for v in G2S40 GI40 MAIN; do
  edges $v small 'Sm90GatherLayout*:DispatchPolicy*:CudaSm90.SmallPages*:CudaSm90.AutoChooses*' 60
done
step tests
save
P1=long_8k,ragged,batch_1k,chunk_long_tp8
P16=long_8k,batch_1k,short_256,chunk_prefix,chunk_long_tp8,ragged,d64
bench p1 $P1 1 MAIN GI40 G2S40
bench p16 $P16 64,16 MAIN PR G2S40
save
bench p1 $P1 1 G2S40 GI40 MAIN
bench p16 $P16 64,16 G2S40 PR MAIN
step bench
save
san memcheck G2S40
san memcheck GI40
step done
true
