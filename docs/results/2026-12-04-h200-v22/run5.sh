#!/bin/bash
# v22 run 5: FP (FINAL with the 256 p scale of the e4m3 P folded into the exponent in the long form
# as well: 72 FMUL a main loop instead of 260) against FINAL, ctxattn_gpu_bench, F P P F.
cd "$(dirname "$0")/../../.."
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in FINAL FP; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in FINAL FP FP FINAL; do run1 $v fp8.long_8k 64,16; done
true
