#!/bin/bash
# Prepared in session v31 (no device was lent): the small-page gather's next steps on the GPU.
# MAIN = main (dcf92f5: c2e407d's kernels), GI = the tile's page ids staged in shared memory
# (v30's sm90-gather-ids-smem.patch), G2 = GI with a second gathering warp in the 16-bit D = 128
# kernels on both walks (sm90-gather-two-warps.patch), G2S = the same on the static walk only,
# which run.cuh then gives such calls (sm90-gather-two-warps-static.patch). In the order of what
# matters most: the host layout tests and each variant's small-page and dispatch tests; the tool
# bench of all four at pages 1 and 16 (16: the control, the TMA path), two rounds in rotating
# order; memcheck on G2 and G2S; the gtest step with sm90 forced on G2S (the sweep reaches pages
# 1-4); racecheck and synccheck on G2S. run5b.sh has the rest. Expects .gpu31/ from pack5.sh;
# about 7 minutes.
cd "$(dirname "$0")/../../.."
. docs/results/2026-12-05-h200-v31/common5.sh
for v in G2S G2 GI MAIN; do
  LD_LIBRARY_PATH=$PWD/.gpu31/lib$v timeout 60 .gpu31/ctxattn_tests \
    --gtest_filter='Sm90GatherLayout*:DispatchPolicy*:CudaSm90.SmallPages*:CudaSm90.AutoChooses*' > /tmp/o/gtest-edges-$v.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-edges-$v.log; echo "$v: $(grep -hE "^\[  (PASSED|FAILED) |^rc" /tmp/o/gtest-edges-$v.log | tr '\n' ' ')"
done
step tests
save
for round in 1 2; do
  order="MAIN GI G2 G2S"; [ $round = 2 ] && order="G2S G2 GI MAIN"
  for v in $order; do
    LD_LIBRARY_PATH=.gpu31/lib$v timeout 40 .gpu31/ctxattn_gpu_bench long_8k,chunk_long_tp8,batch_1k,ragged \
      --backends cuda_sm90 --pages 1,16 --runs 3 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$v r$round /" \
      | tee -a /tmp/o/bench.txt
  done
done
step bench
save
san memcheck G2S
san memcheck G2
LD_LIBRARY_PATH=.gpu31/libG2S CTXATTN_TEST_BACKEND=cuda_sm90 timeout 120 .gpu31/ctxattn_tests \
  --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-G2S.log 2>&1
echo "rc $?" >> /tmp/o/gtest-sm90-G2S.log; grep -hE "^\[  (PASSED|FAILED) |^sweep:|^rc" /tmp/o/gtest-sm90-G2S.log
step gtest-sm90
save
san racecheck G2S
san synccheck G2S
step done
true
