#!/bin/bash
# Prepared in session v31 (no device was lent): the small-page gather's next two steps on the
# GPU. MAIN = main (c2e407d and later docs), GI = the tile's page ids staged in shared memory
# (v30's sm90-gather-ids-smem.patch), G2 = GI with a second gathering warp in the 16-bit D = 128
# kernels (sm90-gather-two-warps.patch). In the order of what matters most: the host layout tests
# and GI / G2's small-page and dispatch tests; the tool bench MAIN / GI / G2 at pages 1 and 16
# (16: the control, the TMA path), two rounds in rotating order; memcheck on G2; the gtest step
# with sm90 forced on G2 (the sweep reaches pages 1-4); racecheck and synccheck on G2; portable
# against G2 at pages 1 and 4 on the 16-bit D = 64 / 128 shapes AUTO keeps on the portable kernel
# (core/dispatch.h sm90_takes_small_pages). Expects .gpu31/ from pack5.sh; about 8 minutes.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
save() { tar cf $OUT/logs.tar -C /tmp/o .; }
xz -dc .gpu31/libs.tar.xz | tar xf - -C .gpu31
for v in MAIN GI G2; do
  ln -sf libctxattn.so.0.1.0 .gpu31/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu31/lib$v/libctxattn.so
done
xz -dc .gpu31/ctxattn_tests.xz > .gpu31/ctxattn_tests; chmod +x .gpu31/ctxattn_tests
step unpacked
for v in G2 GI MAIN; do
  LD_LIBRARY_PATH=$PWD/.gpu31/lib$v timeout 60 .gpu31/ctxattn_tests \
    --gtest_filter='Sm90GatherLayout*:DispatchPolicy*:CudaSm90.SmallPages*:CudaSm90.AutoChooses*' > /tmp/o/gtest-edges-$v.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-edges-$v.log; echo "$v: $(grep -hE "^\[  (PASSED|FAILED) |^rc" /tmp/o/gtest-edges-$v.log | tr '\n' ' ')"
done
step tests
save
for round in 1 2; do
  order="MAIN GI G2"; [ $round = 2 ] && order="G2 GI MAIN"
  for v in $order; do
    LD_LIBRARY_PATH=.gpu31/lib$v timeout 40 .gpu31/ctxattn_gpu_bench long_8k,chunk_long_tp8,batch_1k,ragged \
      --backends cuda_sm90 --pages 1,16 --runs 3 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$v r$round /" \
      | tee -a /tmp/o/bench.txt
  done
done
step bench
save
san() {  # san TOOL
  LD_LIBRARY_PATH=.gpu31/libG2 timeout 60 compute-sanitizer --tool $1 --error-exitcode 1 .gpu31/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*' > /tmp/o/$1-G2.log 2>&1
  echo "rc $?" >> /tmp/o/$1-G2.log; echo "$1: $(tail -2 /tmp/o/$1-G2.log | tr '\n' ' ')"
  save
}
san memcheck
LD_LIBRARY_PATH=.gpu31/libG2 CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 .gpu31/ctxattn_tests \
  --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-G2.log 2>&1
echo "rc $?" >> /tmp/o/gtest-sm90-G2.log; grep -hE "^\[  (PASSED|FAILED) |^sweep:|^rc" /tmp/o/gtest-sm90-G2.log
step gtest-sm90
save
san racecheck
san synccheck
step sanitizers
S=long_8k,batch_4k,ragged,chunk_prefix,chunk_long_tp8_batch,batch_1k,short_256,d64.batch_1k,d64.short_256,d64.chunk_long_tp8
LD_LIBRARY_PATH=.gpu31/libG2 timeout 150 .gpu31/ctxattn_gpu_bench $S --backends cuda_portable,cuda_sm90 --pages 1,4 \
  --runs 3 2>/dev/null | grep -v "^device" | tee /tmp/o/bench-small-pages-G2.txt
step done
save
true
