#!/bin/bash
# Not run yet (no device time left in the session that prepared it). Two questions about page 16,
# where the D = 64 kernels trail page 64 (d64 1118 against 1059 us, d64_sinks_swa 185 / 160,
# fp8.d64 1015 / 962; four K / V stages changed nothing, v26 item 6):
#  1. SW (sm90-scheduler-every-page-size.patch, all units): calls that may split take the
#     scheduler's walk at every page size when one request fills a wave (main: only at pages of
#     64+ keys, measured in v15 before the third warpgroup: d64 1312 -> 1352 at page 16). The
#     page-64 rows are a control (same walk, same kernels).
#  2. TL3 (sm90-timeline-three-consumers.patch, the bf16 D = 64 unit with -DCTXATTN_SM90_TIMELINE):
#     each consumer warpgroup's landmarks at pages 64 and 16, medians per part.
# Expects .gpu/libs.tar.xz holding libNEW/ (main at 381b503), libSW/ and libTL3/ (stripped),
# .gpu/ctxattn_gpu_bench and .gpu/ctxattn_tests.xz from main's build. Then the GPU tests on SW.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in NEW SW TL3; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 90 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
W=d64,d64_sinks_swa,fp8.d64,kv8.d64,long_8k,d256,fp8.d256,kv8.long_8k,nvfp4.long_8k,chunk_long_tp8,chunk_long_tp8_batch
for v in NEW SW SW NEW; do run1 $v $W 16,64; done
step bench
for p in 64 16; do
  LD_LIBRARY_PATH=.gpu/libTL3 timeout 60 .gpu/ctxattn_gpu_bench d64 --backends cuda_sm90 --pages $p --runs 5 2> /tmp/o/timeline-p$p.txt | sed "s/^/TL3 /" >> /tmp/o/bench.txt
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
gt SW sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt SW edges 'CudaSm90*:Sm90*' 120
step tests
tar cf $OUT/logs.tar -C /tmp/o .
true
