#!/bin/bash
# Session 8 call 1: D (split calls over more than one wave on the scheduler's walk) against its
# own static walk (env), QD (Q K^T descriptors uniform, on D) against D, F (e4m3 192-key tiles with
# the P scale folded) against D; then the sm90 gtest step on D, timed.
cd "$(dirname "$0")/.."
T0=$(date +%s)
for v in D QD F; do [ -f .gpu/lib$v.tar.xz ] || continue; mkdir -p .gpu/lib$v && xz -dc .gpu/lib$v.tar.xz | tar xf - -C .gpu/lib$v; done
xz -dc .gpu/binsD.tar.xz | tar xf - -C .gpu
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader | tee $OUT/steps.txt
B=.gpu
run1() { # label lib env workload pages
  env $3 LD_LIBRARY_PATH=.gpu/lib$2 $B/ctxattn_gpu_bench $4 --backends cuda_sm90 --pages $5 --runs 5 | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a $OUT/bench.txt; }
ab() { run1 "$1" $2 "$3" $6 $7; run1 "$4" $5 "X=1" $6 $7; }
echo "== walk: Ds (static split walk) vs D" | tee -a $OUT/bench.txt
for w in long_8k d64 chunk_long_tp8_batch; do ab Ds D CTXATTN_SM90_SPLIT_WALK=static D D $w 64,16; done
for w in d256 nvfp4.long_8k fp8.d64 kv8.long_8k long_8k; do ab Ds D CTXATTN_SM90_SPLIT_WALK=static D D $w 64; done
echo "walk $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
if [ -d .gpu/libQD ]; then echo "== QD vs D" | tee -a $OUT/bench.txt
for w in long_8k chunk_long_tp8; do ab D D X=1 QD QD $w 64,16; done
for w in d64 d256 short_256 batch_1k fp8.long_8k fp8.d64 long_8k; do ab D D X=1 QD QD $w 64; done
echo "qd $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; fi
echo "== sustain probe (harness inputs; b2b = the harness's timing, sync = the tool's)" | tee -a $OUT/bench.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 200 > $OUT/smi.csv 2>&1 &
SMI=$!
CTXATTN_LIBRARY=$PWD/.gpu/libD/libctxattn.so PYTHONPATH=$PWD/python timeout 150 python3 .gpu/sustain.py long_8k ctxattn,cudnn_sdpa 2>&1 | grep -v Warning | tee -a $OUT/bench.txt
kill $SMI; xz -9 $OUT/smi.csv
echo "sustain $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
if [ -d .gpu/libF ]; then echo "== F vs D" | tee -a $OUT/bench.txt
for w in fp8.long_8k; do ab D D X=1 F F $w 64,16; done
for w in fp8.batch_1k fp8out.long_8k fp8.long_8k; do ab D D X=1 F F $w 64; done
echo "f $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt; fi
export CTXATTN_TEST_BACKEND=cuda_sm90
left=$(( 560 - ($(date +%s)-T0) ))
S=$(date +%s)
LD_LIBRARY_PATH=.gpu/libD timeout $left $B/ctxattn_tests --gtest_filter='CudaSm90*:CudaPortable*:CudaSplit*:CudaReliability*' > $OUT/gtest-D.txt 2>&1; echo "gtest rc $? budget $left s took $(( $(date +%s)-S ))s" | tee -a $OUT/steps.txt
grep -E "^\[       OK|FAILED|PASSED|SKIPPED" $OUT/gtest-D.txt | tee $OUT/gtest-D-summary.txt | tail -40
xz -9 $OUT/gtest-D.txt
