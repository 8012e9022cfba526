#!/bin/bash
# Session v29 run 1: GA = main at 040bd2c (v27's merged form and the small-page gather, never run
# on a GPU before), from .gpu28b/ (libGA.xz and main's test binary, packed by v28's pack.sh).
# The edge tests (CudaSm90*, with the small-page test), the gtest step with the sm90 backend
# forced (the sweep reaches pages 1-4 on it), memcheck / racecheck / synccheck on the gathered
# pages, the sweep and Q by TMA, then the torture tests (pages 1-1024 on every GPU backend).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
mkdir -p .gpu28b/libGA && xz -dc .gpu28b/libGA.xz > .gpu28b/libGA/libctxattn.so.0.1.0
ln -sf libctxattn.so.0.1.0 .gpu28b/libGA/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu28b/libGA/libctxattn.so
xz -dc .gpu28b/ctxattn_tests.xz > .gpu28b/ctxattn_tests; chmod +x .gpu28b/ctxattn_tests
gt() {  # gt NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu28b/libGA CTXATTN_TEST_BACKEND=$4 timeout $3 .gpu28b/ctxattn_tests --gtest_filter="$2" \
    > /tmp/o/gtest-$1-GA.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$1-GA.log
  grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$1-GA.log | sed "s/^/GA $1: /"
}
step unpacked
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
gt edges 'CudaSm90*:Sm90*' 150
gt sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 180 cuda_sm90
step tests
tar cf $OUT/logs.tar -C /tmp/o .
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu28b/libGA CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 80 \
    compute-sanitizer --tool $t --error-exitcode 1 .gpu28b/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*:CudaPortable.RandomSweep*:CudaSm90.QueriesByTma*' > /tmp/o/$t-GA.log 2>&1
  echo "rc $?" >> /tmp/o/$t-GA.log; echo "$t: $(tail -2 /tmp/o/$t-GA.log | tr '\n' ' ')"
done
step sanitizers
tar cf $OUT/logs.tar -C /tmp/o .
gt torture 'CudaTorture*' 170
step torture
tar cf $OUT/logs.tar -C /tmp/o .
true
