#!/usr/bin/env bash
# Session 3 run 5: the magnitude test on B, W and X, with the failing magnitudes named.
set -u
cd "$(dirname "$0")"
mkdir -p bins && tar xJf bins.tar.xz -C bins
for v in B W X; do
  mkdir -p lib$v && tar xJf lib$v.tar.xz -C lib$v
  LD_LIBRARY_PATH=lib$v CTXATTN_TEST_BACKEND=cuda_sm90 timeout 40 bins/ctxattn_tests \
    --gtest_filter='CudaSm90.Bf16Queries*' > $OUT/mag-$v.log 2>&1
  echo "$v rc=$?"; grep -E "rows of magnitude|^out t|lse t" $OUT/mag-$v.log | head -20
done
