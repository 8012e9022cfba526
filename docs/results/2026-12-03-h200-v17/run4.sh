#!/bin/bash
# The harness twice on main's library (BASE) with FA3: chunk_long_tp8 and long_8k (run from the
# repository root after run3.sh, with libBASE.tar.xz in .gpu/).
xz -dc .gpu/libBASE.tar.xz | tar xf - -C .gpu; T0=$(date +%s); for r in a b; do WHEELS=.whl/fa3only BENCH_LIBRARY=$PWD/.gpu/libBASE/libctxattn.so BENCH_BUDGET_S=120 OUT=/tmp/r$r timeout 200 bash bench/gpu_run.sh run -w chunk_long_tp8,long_8k --page-size 64,16 --impl ctxattn,fa3 > /tmp/r$r.log 2>&1; cp /tmp/r$r/bench/results.csv $OUT/harness-repeat-$r.csv; grep -v "^\s*$" /tmp/r$r.log | grep -v "^#" > $OUT/harness-repeat-$r.log; grep -E "ctxattn  |fa3  " $OUT/harness-repeat-$r.log; echo "repeat $r $(( $(date +%s)-T0 ))s"; done
