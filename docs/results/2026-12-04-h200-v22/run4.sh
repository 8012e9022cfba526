#!/bin/bash
# v22 run 4: the sm90 edge tests on FINAL alone (run 3's step ran out of its time limit inside them),
# run from .gpu as one command line:
cd "$(dirname "$0")/../../../.gpu"
xz -dc libs.tar.xz | tar xf - libFINAL && cd libFINAL && ln -sf libctxattn.so.0.1.0 libctxattn.so.0 && ln -sf libctxattn.so.0.1.0 libctxattn.so && cd ..
xz -dc ctxattn_tests.xz > ctxattn_tests && chmod +x ctxattn_tests
LD_LIBRARY_PATH=$PWD/libFINAL timeout 120 ./ctxattn_tests --gtest_filter='CudaSm90*:Sm90*' > $OUT/gtest-sm90-edges-FINAL.log 2>&1; echo "rc $?" >> $OUT/gtest-sm90-edges-FINAL.log
grep -E "^\[  (PASSED|FAILED)|^\[  FAILED|^rc" $OUT/gtest-sm90-edges-FINAL.log
