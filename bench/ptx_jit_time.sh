#!/usr/bin/env bash
# How long a first call takes when the driver must JIT the portable kernels from their PTX, as on
# a card newer than the SASS the library carries (the default build has SASS for sm_80 and sm_90a
# and PTX for compute_80 only; docs/perf.md "Library size and first-call JIT"). On an H100 the
# JIT is forced with CUDA_FORCE_PTX_JIT=1; the sm_90a kernels have no PTX, so every call here runs
# the portable backend.
#
#   bash bench/ptx_jit_time.sh [BUILD_DIR] [WORKLOAD] [PAGE]
#
# BUILD_DIR (default build) holds libctxattn.so and ctxattn_gpu_bench of a CUDA build (`make
# build`); WORKLOAD (default long_8k, one bf16 D = 128 kernel family) and PAGE (default 16) go to
# `ctxattn_gpu_bench WORKLOAD --backends cuda_portable --pages PAGE --runs 1`, timed as a whole:
#   native       the SASS as built, an empty JIT cache (the baseline: process, context, data, calls)
#   forced       CUDA_FORCE_PTX_JIT=1, an empty JIT cache: the driver JITs the PTX of each module
#                the call loads (lazy loading: the translation units of the kernels it launches)
#   forced-warm  the same with the cache the forced run left (no JIT: the cache answers)
#   eager        CUDA_FORCE_PTX_JIT=1 and CUDA_MODULE_LOADING=EAGER, an empty cache: every module's
#                PTX at start-up, the worst case (may fail if the runtime refuses the sm_90a-only
#                modules; the line says so)
# The first-call JIT is forced - forced-warm. Writes the lines to stdout and, when OUT is set, to
# $OUT/ptx_jit.txt beside each run's log. Exit status 0 when both forced runs gave a time.
set -u
BUILD=${1:-build}
W=${2:-long_8k}
PAGE=${3:-16}
bench=$BUILD/ctxattn_gpu_bench
[ -x "$bench" ] || { echo "ptx_jit_time.sh: $bench not found (make build with nvcc on the PATH)" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
report=${OUT:+$OUT/ptx_jit.txt}
[ -n "$report" ] && mkdir -p "$OUT" && : > "$report"
say() { echo "$*"; [ -z "$report" ] || echo "$*" >> "$report"; }

# run NAME CACHE_DIR [VAR=VALUE ...]: says the bench's wall time in seconds (kept in NAME.t), or
# FAIL with its status.
run() {
  local name=$1 cache=$2 t0 t1 status row
  shift 2
  mkdir -p "$cache"
  t0=$(date +%s.%N)
  env CUDA_CACHE_PATH="$cache" CUDA_CACHE_MAXSIZE=4294967296 "$@" LD_LIBRARY_PATH="$BUILD" \
    "$bench" "$W" --backends cuda_portable --pages "$PAGE" --runs 1 > "$scratch/$name.log" 2>&1
  status=$?
  t1=$(date +%s.%N)
  [ -z "$report" ] || cp "$scratch/$name.log" "$OUT/ptx_jit-$name.log"
  row=$(grep -E "^$W +$PAGE +cuda_portable +[0-9]" "$scratch/$name.log" | head -1)
  if [ "$status" -ne 0 ] || [ -z "$row" ]; then
    say "$name: FAIL (status $status): $(tail -1 "$scratch/$name.log")"
    return
  fi
  say "$name: $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s   $row"
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }' > "$scratch/$name.t"
}

say "$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1); $W, page $PAGE"
run native "$scratch/cache-native"
run forced "$scratch/cache-forced" CUDA_FORCE_PTX_JIT=1
run forced-warm "$scratch/cache-forced" CUDA_FORCE_PTX_JIT=1
run eager "$scratch/cache-eager" CUDA_FORCE_PTX_JIT=1 CUDA_MODULE_LOADING=EAGER
if [ -f "$scratch/forced.t" ] && [ -f "$scratch/forced-warm.t" ]; then
  say "first-call JIT (forced - forced-warm): $(awk -v a="$(cat "$scratch/forced.t")" \
    -v b="$(cat "$scratch/forced-warm.t")" 'BEGIN { printf "%.1f", a - b }') s"
fi
if [ -f "$scratch/eager.t" ] && [ -f "$scratch/forced-warm.t" ]; then
  say "whole-library JIT (eager - forced-warm): $(awk -v a="$(cat "$scratch/eager.t")" \
    -v b="$(cat "$scratch/forced-warm.t")" 'BEGIN { printf "%.1f", a - b }') s"
fi
[ -f "$scratch/forced.t" ] && [ -f "$scratch/forced-warm.t" ]
