#!/bin/bash
# The second call after run5.sh (same carry, .gpu31): the gtest step with sm90 forced, racecheck
# and synccheck on G2 (both walks); then the portable kernel against G2S (or, with VARIANT=G2,
# G2) at pages 1 and 4 on the 16-bit D = 64 / 128 shapes AUTO keeps on the portable kernel
# (core/dispatch.h sm90_takes_small_pages), for the rule's next form. About 6 minutes.
cd "$(dirname "$0")/../../.."
. docs/results/2026-12-05-h200-v31/common5.sh
V=${VARIANT:-G2S}
LD_LIBRARY_PATH=.gpu31/libG2 CTXATTN_TEST_BACKEND=cuda_sm90 timeout 120 .gpu31/ctxattn_tests \
  --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-G2.log 2>&1
echo "rc $?" >> /tmp/o/gtest-sm90-G2.log; grep -hE "^\[  (PASSED|FAILED) |^sweep:|^rc" /tmp/o/gtest-sm90-G2.log
save
san racecheck G2
san synccheck G2
step G2-checks
S=long_8k,batch_4k,ragged,chunk_prefix,chunk_long_tp8_batch,batch_1k,short_256,d64.batch_1k,d64.short_256,d64.chunk_long_tp8
LD_LIBRARY_PATH=.gpu31/lib$V timeout 150 .gpu31/ctxattn_gpu_bench $S --backends cuda_portable,cuda_sm90 --pages 1,4 \
  --runs 3 2>/dev/null | grep -v "^device" | tee /tmp/o/bench-small-pages-$V.txt
step done
save
true
