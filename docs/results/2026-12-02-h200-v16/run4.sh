#!/bin/bash
# Session 9 call 4: the P V wait's place in the two-term (nvfp4-output) e4m3 kernel: FIN (main:
# hoisted above the softmax), PVM (after the row maxima), PW (after the whole softmax), three
# rounds in rotating order, then 150 calls.
cd "$(dirname "$0")/.."
T0=$(date +%s)
xz -dc .gpu/libABC.tar.xz | tar xf - -C .gpu
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu
B=.gpu
run1() { LD_LIBRARY_PATH=.gpu/lib$1 $B/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
ORD=("FIN PVM PW" "PW FIN PVM" "PVM PW FIN")
for r in 0 1 2; do
  for v in ${ORD[$r]}; do run1 $v nvfp4.long_8k 64,16; run1 $v fp8out.long_8k 64; done
  echo "round $r $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
done
for v in FIN PVM PW; do run1 $v nvfp4.long_8k 64 150; done
echo "sustained $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
