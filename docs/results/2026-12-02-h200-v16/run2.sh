#!/bin/bash
# Session 9 call 2: FIN (main) against PVM (the P V wait after the row maxima) at settled clocks:
# 300-call timings in A B B A order, then the harness (FA3 in the same run) for each library.
cd "$(dirname "$0")/.."
T0=$(date +%s)
xz -dc .gpu/libAB.tar.xz | tar xf - -C .gpu
xz -dc .gpu/binsD2.tar.xz | tar xf - -C .gpu
B=.gpu
run1() { LD_LIBRARY_PATH=.gpu/lib$1 $B/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
for v in FIN PVM PVM FIN; do
  for w in long_8k chunk_long_tp8; do run1 $v $w 64,16 300; done
  run1 $v fp8.long_8k 64 300
done
echo "sustained $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
h() {
  WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/lib$1/libctxattn.so BENCH_BUDGET_S=$2 OUT=/tmp/h$1$3 \
    bash bench/gpu_run.sh run -w long_8k,chunk_long_tp8 --page-size 64,16 --impl ctxattn,fa3 > /tmp/h$1$3.log 2>&1
  cp /tmp/h$1$3/bench/results.csv $OUT/harness-$1$3.csv; grep -v "^\s*$" /tmp/h$1$3.log | grep -v "^#" > $OUT/harness-$1$3.log
  grep -E "^\[|ctxattn  |fa3  " $OUT/harness-$1$3.log
  echo "harness $1$3 $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
}
h FIN 150 a
h PVM 150 a
[ $(( $(date +%s)-T0 )) -lt 300 ] && h PVM 150 b
[ $(( $(date +%s)-T0 )) -lt 380 ] && h FIN 150 b
true
