#!/bin/bash
# The second call after run7.sh (same carry, .gpu32): the gtest step with sm90 forced (the sweep
# reaches pages 1-4 and every page size on the Hopper kernel) on G2S40 and on PR, racecheck and
# synccheck on G2S40, the torture tests on it; then the portable kernel against G2S40 at pages 1 and 4 on the
# 16-bit D = 64 / 128 shapes AUTO keeps on the portable kernel (core/dispatch.h
# sm90_takes_small_pages), for the rule's next form. VARIANT=GI40 (or PR) checks that one
# instead. About 7 minutes.
cd "$(dirname "$0")/../../.."
. docs/results/2026-12-05-h200-v32/common7.sh
V=${VARIANT:-G2S40}
edges $V sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
save
[ $V = PR ] || edges PR sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
save
san racecheck $V
san synccheck $V
step checks
edges $V torture 'CudaTorture*' 170
step torture
save
S=long_8k,batch_4k,ragged,chunk_prefix,chunk_long_tp8_batch,batch_1k,short_256,d64.batch_1k,d64.short_256,d64.chunk_long_tp8
LD_LIBRARY_PATH=$PWD/.gpu32/lib$V timeout 150 .gpu32/ctxattn_gpu_bench $S --backends cuda_portable,cuda_sm90 --pages 1,4 \
  --runs 3 2>/dev/null | grep -v "^device" | tee /tmp/o/bench-small-pages-$V.txt
step done
save
true
