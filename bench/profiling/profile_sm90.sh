#!/usr/bin/env bash
# One Hopper-kernel launch of a ctxattn_gpu_bench workload under Nsight Compute, in one GPU call:
# the throughput, warp-state and scheduler sections as text, and the per-instruction source
# counters (SASS, executions and stall samples by reason) as CSV for reading offline.
#
#   bench/profiling/profile_sm90.sh BUILD_DIR OUT_DIR WORKLOAD [PAGE]
#
# BUILD_DIR holds libctxattn.so (+ .so.0) and ctxattn_gpu_bench of one build. When it holds no
# ctxattn_gpu_bench, the script first makes a profiling build there: sm_90a only, with
# -DCTXATTN_LINEINFO=ON so that the report maps SASS to source lines (the default build has no
# line tables). Environment switches of the library (CTXATTN_SM90_FP8_MMA, CTXATTN_SM90_GRID_CTAS)
# pass through. Writes OUT_DIR/WORKLOAD-pPAGE.{ncu-rep,txt,source.csv}. The bench's first launches
# are warm-ups and checks; the profiled one is the fourth kernel launch. Offline readers of the
# CSV: bench/profiling/ncu_source_compare.py (two kernels by opcode) and
# bench/profiling/ncu_loop_regions.py (the tile loop cut at its landmarks, stall reasons by region).
set -u
BUILD=${1:?build dir}
OUT=${2:?out dir}
W=${3:?workload}
PAGE=${4:-64}
mkdir -p "$OUT"
if [ ! -x "$BUILD/ctxattn_gpu_bench" ]; then
  root=$(cd "$(dirname "$0")/../.." && pwd)
  cmake -S "$root" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUDA=ON -DCTXATTN_CUDA_ARCHS=90a \
    -DCTXATTN_LINEINFO=ON -DCTXATTN_BUILD_TESTS=OFF > "$OUT/build.log" 2>&1 &&
    cmake --build "$BUILD" -j "$(nproc)" --target ctxattn ctxattn_gpu_bench >> "$OUT/build.log" 2>&1 ||
    { tail -20 "$OUT/build.log"; exit 1; }
fi
base="$OUT/$W-p$PAGE"
LD_LIBRARY_PATH="$BUILD" timeout 300 ncu --clock-control none -k regex:attention_kernel --launch-skip 3 \
  --launch-count 1 --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section SchedulerStats --section Occupancy --section SourceCounters \
  --import-source no -f -o "$base" "$BUILD/ctxattn_gpu_bench" "$W" --backends cuda_sm90 --pages "$PAGE" --runs 1 \
  > "$base.log" 2>&1
status=$?
if [ "$status" -ne 0 ] || [ ! -f "$base.ncu-rep" ]; then
  echo "ncu failed ($status):"
  tail -5 "$base.log"
  exit 1
fi
ncu -i "$base.ncu-rep" --page details > "$base.txt" 2>&1
ncu -i "$base.ncu-rep" --page source --csv --print-source sass > "$base.source.csv" 2>&1
grep -E "Duration|Compute \(SM\) Throughput|Issue Slots Busy|Eligible Warps|No Eligible|Stall|Registers Per" \
  "$base.txt" | head -30
