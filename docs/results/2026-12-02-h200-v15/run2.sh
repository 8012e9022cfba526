#!/bin/bash
# Session 8 call 2: the GPU's power limit; the harness's back-to-back timing against the tool's
# for ctxattn (D) and FA3 with the clocks sampled; the harness on D's library against FA3
# (long_8k and chunk_long_tp8 at page 64 on D's walk; page 16 and chunk_long_tp8_batch on the
# static split walk, the rule D2 will take).
cd "$(dirname "$0")/.."
T0=$(date +%s)
mkdir -p .gpu/libD && xz -dc .gpu/libD.tar.xz | tar xf - -C .gpu/libD
nvidia-smi -q -d POWER,PERFORMANCE,CLOCK > $OUT/power.txt 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/fa3 .whl/fa3only/*.whl 2>&1 | tail -2
echo "== sustain probe" | tee -a $OUT/bench.txt
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 100 > $OUT/smi.csv 2>&1 &
SMI=$!
CTXATTN_LIBRARY=$PWD/.gpu/libD/libctxattn.so PYTHONPATH=$PWD/python:/tmp/fa3 timeout 200 python3 .gpu/sustain.py long_8k ctxattn,fa3 2>&1 | grep -v Warning | tee -a $OUT/bench.txt
CTXATTN_LIBRARY=$PWD/.gpu/libD/libctxattn.so PYTHONPATH=$PWD/python:/tmp/fa3 timeout 100 python3 .gpu/sustain.py chunk_long_tp8 ctxattn,fa3 2>&1 | grep -v Warning | tee -a $OUT/bench.txt
kill $SMI; xz -9 $OUT/smi.csv
echo "sustain $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
h() { # name budget env... -- harness args
  local name=$1 budget=$2; shift 2
  env "$@" WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libD/libctxattn.so BENCH_BUDGET_S=$budget OUT=/tmp/$name \
    bash bench/gpu_run.sh run $HARGS > /tmp/$name.log 2>&1
  cp /tmp/$name/bench/results.csv $OUT/$name.csv; grep -v "^\s*$" /tmp/$name.log | tail -30 > $OUT/$name.log
  echo "$name $(( $(date +%s)-T0 ))s" | tee -a $OUT/steps.txt
}
HARGS="-w long_8k,chunk_long_tp8 --page-size 64 --impl ctxattn,fa3" h hA 220 X=1
HARGS="-w long_8k,chunk_long_tp8,chunk_long_tp8_batch --page-size 16 --impl ctxattn,fa3" h hB 230 CTXATTN_SM90_SPLIT_WALK=static
HARGS="-w chunk_long_tp8_batch --page-size 64 --impl ctxattn,fa3" h hC 130 CTXATTN_SM90_SPLIT_WALK=static
