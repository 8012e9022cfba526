#!/bin/bash
# Session v28 run 2 (prepared, after run1.sh on the same machine or a fresh one): the tool bench
# NEW / FIN / GA rotating at pages 64 and 16 (FIN against NEW: v27's merged form; GA against FIN:
# what the gather instance costs the other calls), then pages of 1, 2 and 4 tokens on the
# portable and sm90 backends of GA. Expects .gpu28/ from pack.sh.
cd "$(dirname "$0")/../../.."
source docs/results/2026-12-04-h200-v28/common.sh
step unpacked
W=short_256,batch_1k,long_8k,d64,d64_sinks_swa,fp8.d64,fp8.long_8k,chunk_long_tp8,d256
for v in NEW FIN GA GA FIN NEW; do run1 $v $W 64,16 3; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
S=long_8k,batch_1k,short_256,d64,d256,fp8.long_8k,kv8.long_8k,chunk_long_tp8
for r in 1 2; do run1 GA $S 1,2,4 3 cuda_portable,cuda_sm90; done
run1 GAF long_8k,batch_1k,short_256,d64 1,4 3
step small-pages
tar cf $OUT/logs.tar -C /tmp/o .
true
