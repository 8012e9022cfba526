#!/bin/bash
# Prepared for the next session (not run). On main at ef9784b (FIN):
#   XI = sm90-overlap-items.patch, built with -DCMAKE_CUDA_FLAGS=-DCTXATTN_SM90_OVERLAP_ITEMS (the
#        16-bit D = 128 kernel of short requests computes the next item's first Q K^T under the
#        current item's epilogue);
#   FQ = sm90-q-tma-e4m3.patch (Q by TMA in the short form of the e4m3 Q/K/V kernel at D = 128
#        too: fp8.batch_1k), with its test cases;
#   TL3 = ../2026-12-04-h200-v26/sm90-timeline-three-consumers.patch, built with
#        -DCMAKE_CUDA_FLAGS=-DCTXATTN_SM90_TIMELINE (v24's per-tile timeline for three consumer
#        warpgroups): d64 at pages 64 and 16, where page 16 trails by 6% (not the walk, v27 item 2;
#        not the stages, v26 item 6).
# The GPU tests and the three sanitizers on XI first (its consumer walk and turn sequence are
# new), FQ's gtest step and edge tests, then the bench FIN / XI / FQ rotating on the shapes of
# those kernels (and two controls). Expects .gpu5/libs.tar.xz (libFIN/, libXI/, libFQ/, libTL3/: stripped),
# .gpu5/ctxattn_gpu_bench and .gpu5/ctxattn_tests.xz built from the FQ tree (its test binary holds
# the e4m3 cases; on FIN and XI they compare the copies with themselves). Carry [".gpu5"] (pack.sh builds it).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu5/libs.tar.xz | tar xf - -C .gpu5
for v in FIN XI FQ TL3; do ln -sf libctxattn.so.0.1.0 .gpu5/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu5/lib$v/libctxattn.so; done
xz -dc .gpu5/ctxattn_tests.xz > .gpu5/ctxattn_tests; chmod +x .gpu5/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu5/lib$1 timeout 90 .gpu5/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu5/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu5/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
gt XI sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt XI edges 'CudaSm90*:Sm90*' 120
step tests
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu5/libXI CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 80 compute-sanitizer --tool $t --error-exitcode 1 \
    .gpu5/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSm90.QueriesByTma*:CudaSm90.PersistentGrid*:CudaSm90.SchedulerCounters*' > /tmp/o/$t-XI.log 2>&1
  echo "rc $?" >> /tmp/o/$t-XI.log; echo "$t: $(tail -2 /tmp/o/$t-XI.log | tr '\n' ' ')"
done
step sanitizers
gt FQ sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt FQ edges 'CudaSm90*:Sm90*' 120
step tests-fq
tar cf $OUT/logs.tar -C /tmp/o .
W=short_256,batch_1k,fp8.batch_1k,long_8k,d64.short_256
for v in FIN XI FQ FQ XI FIN; do run1 $v $W 64,16; done
step bench
for p in 64 16; do
  LD_LIBRARY_PATH=.gpu5/libTL3 timeout 60 .gpu5/ctxattn_gpu_bench d64 --backends cuda_sm90 --pages $p --runs 5 2> /tmp/o/timeline-p$p.txt | sed "s/^/TL3 /" >> /tmp/o/bench.txt
  python3 - /tmp/o/timeline-p$p.txt $p <<'PY' | tee -a /tmp/o/summary.txt
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"timeline .* wg (\d+) item \d+: (.*) t0 \d+", line)
    if not m: continue
    for k, v in re.findall(r"(\w+) (\d+)", m.group(2)):
        rows.setdefault((int(m.group(1)), k), []).append(int(v))
for wg in sorted({w for w, _ in rows}):
    cells = " ".join(f"{k} {statistics.median(rows[(wg, k)]):.0f}" for k in
                     ("kv_wait", "turn", "issue", "s_wait", "softmax", "tail", "next", "period"))
    print(f"page {sys.argv[2]} wg {wg} ({len(rows[(wg, 'period')])} tiles): {cells}")
PY
done
step timeline
tar cf $OUT/logs.tar -C /tmp/o .
true
