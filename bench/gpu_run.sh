#!/usr/bin/env bash
# The GPU benchmark on a machine without network, in stages that each fit one 10-minute command:
#
#   bash bench/gpu_run.sh setup            install .whl/*.whl into bench-out/site and build
#                                          libctxattn with its CUDA backends into build-gpu/
#   bash bench/gpu_run.sh checks [ARGS]    setup, then the reference checks only: FlashInfer
#                                          compiles its JIT modules into its cache here, so a
#                                          later `run` spends its time timing
#   bash bench/gpu_run.sh run [ARGS]       setup, then checks and the timed suite
#   bash bench/gpu_run.sh all [ARGS]       the same as run
#
# ARGS go to `python -m bench` (e.g. -w long_8k,ragged --impl ctxattn,flashinfer_fa3). Every stage
# is idempotent and everything it builds lives in git-ignored folders, so on a machine that stayed
# warm the next command reuses the build, the installed wheels and FlashInfer's JIT cache.
# Results: $OUT/bench/results.{csv,json,png} and $OUT/bench.log ($OUT defaults to bench-out/).
# The run stage stops starting new cases once BENCH_BUDGET_S (default 540) seconds have passed
# since this script began, less a reserve for the case in flight; the rest are listed as skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
site=$root/bench-out/site
build=${BENCH_GPU_BUILD:-$root/build-gpu}
out=${OUT:-$root/bench-out}
py=${PYTHON:-python3}
budget=${BENCH_BUDGET_S:-540}
reserve=120

export PYTHONUNBUFFERED=1
export PYTHONPATH=$root/python:$site${PYTHONPATH:+:$PYTHONPATH}
export CTXATTN_LIBRARY=$build/libctxattn.so
export FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE:-$root/bench-out/flashinfer-cache}
mkdir -p "$out" "$site" "$FLASHINFER_WORKSPACE_BASE"

setup() {
  local wheels stamp
  wheels=$(ls .whl/*.whl 2>/dev/null | sort)
  stamp=$site/.installed
  if [ -z "$wheels" ]; then
    echo "gpu_run.sh: no wheels in .whl/ (run bench/fetch_wheels.sh where pip reaches PyPI, and carry" \
         ".whl); the FlashInfer and cuDNN-frontend rows will say they could not import" >&2
  elif [ "$wheels" != "$(cat "$stamp" 2>/dev/null)" ]; then
    if "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" $wheels; then
      echo "$wheels" > "$stamp"
    else
      echo "gpu_run.sh: installing .whl/*.whl failed; continuing without those peers" >&2
    fi
  fi
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUDA=ON \
    -DCTXATTN_CUDA_ARCHS="${CTXATTN_CUDA_ARCHS:-90a}" -DCTXATTN_BUILD_TESTS=OFF \
    -DCTXATTN_BUILD_TOOLS=OFF >"$out/build.log" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" --target ctxattn >>"$out/build.log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    tail -n 40 "$out/build.log" >&2
    echo "gpu_run.sh: building libctxattn with CUDA failed (full log: $out/build.log)" >&2
    return $rc
  fi
  echo "gpu_run.sh: setup done after ${SECONDS}s"
}

bench() {
  local dest=$1
  shift
  "$py" -m bench --out "$dest" "$@" 2>&1 | tee -a "$out/bench.log"
}

run_stage() {
  local left=$((budget - SECONDS - reserve))
  [ "$left" -lt 60 ] && left=60
  bench "$out/bench" --deadline-s "$left" "$@"
}

stage=${1:-all}
[ $# -gt 0 ] && shift
case "$stage" in
  setup) setup ;;
  checks) setup && bench "$root/bench-out/checks" --checks-only "$@" ;;
  run | all) setup && run_stage "$@" ;;
  *) echo "usage: bash bench/gpu_run.sh setup|checks|run|all [python -m bench arguments]" >&2; exit 2 ;;
esac
