#!/bin/bash
# Session v28 run 1 (prepared; no GPU was lent in the session that wrote it). GA = main with the
# small-page gather (043be83+); FIN = 5d25fb9 (v27's merged form, never run on a GPU); NEW =
# d45b77f. GA's GPU tests with the sm90 backend forced (the sweep and torture now reach pages of
# 1-4 tokens on it), the edge tests (CudaSm90.SmallPages*), the sanitizers on the gathered
# pages; the small-page test on GAF (GA whose lanes wait for their copies and fence them for the
# async proxy before arriving: if GA fails where GAF passes, the cp.async -> WGMMA ordering is
# the cause). run2.sh measures. Expects .gpu28/ from pack.sh.
cd "$(dirname "$0")/../../.."
source docs/results/2026-12-04-h200-v28/common.sh
step unpacked
gt GA edges 'CudaSm90*:Sm90*' 150
gt GAF pages 'CudaSm90.SmallPages*' 60
gt GA sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 180 cuda_sm90
step tests
tar cf $OUT/logs.tar -C /tmp/o .
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu28/libGA CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 90 \
    compute-sanitizer --tool $t --error-exitcode 1 .gpu28/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*:CudaPortable.RandomSweep*:CudaSm90.QueriesByTma*' > /tmp/o/$t-GA.log 2>&1
  echo "rc $?" >> /tmp/o/$t-GA.log; echo "$t: $(tail -2 /tmp/o/$t-GA.log | tr '\n' ' ')"
done
step sanitizers
tar cf $OUT/logs.tar -C /tmp/o .
true
