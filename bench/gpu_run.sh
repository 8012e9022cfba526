#!/usr/bin/env bash
# The GPU benchmark on a machine without network, in stages that each fit one 10-minute command:
#
#   bash bench/gpu_run.sh setup            install the peers' wheel groups found under .whl/ (each
#                                          into bench-out/sites/<group>) and build libctxattn with
#                                          its CUDA backends into build-gpu/
#   bash bench/gpu_run.sh checks [ARGS]    setup, then the reference checks only: FlashInfer
#                                          compiles its JIT modules into its cache here, so a
#                                          later `run` spends its time timing
#   bash bench/gpu_run.sh run [ARGS]       setup, then checks and the timed suite
#   bash bench/gpu_run.sh all [ARGS]       the same as run
#
# ARGS go to `python -m bench` (e.g. -w long_8k,ragged --impl ctxattn,ctxattn_sm90,fa3). Wheels:
# bench/fetch_wheels.sh makes the groups .whl/fa3 (FlashInfer, tvm-ffi, fa3-fwd) and .whl/cudnn
# (cuDNN frontend), bench/build_fmha_v2.sh the group .whl/fmha (FMHAv2's prebuilt modules,
# FlashInfer's Python side and tvm-ffi, 13 MiB: peer fmha_v2); a command carries the group(s) it
# needs within the 64 MiB limit, and this
# script uses every group it finds, or only those WHEELS names (e.g. WHEELS=.whl/fa3; several
# separated by commas); wheels lying directly in .whl/ count as one more group.
# Every stage is idempotent and everything it builds lives in git-ignored folders, so on a machine
# that stayed warm the next command reuses the build, the installed wheels and FlashInfer's JIT cache.
# Results: $OUT/bench/results.{csv,json,png} and $OUT/bench.log ($OUT defaults to bench-out/).
# The run stage stops starting new cases once BENCH_BUDGET_S (default 540) seconds have passed
# since this script began, less a reserve for the case in flight; the rest are listed as skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
sites=$root/bench-out/sites
build=${BENCH_GPU_BUILD:-$root/build-gpu}
out=${OUT:-$root/bench-out}
py=${PYTHON:-python3}
budget=${BENCH_BUDGET_S:-540}
reserve=120

export PYTHONUNBUFFERED=1
export PYTHONPATH=$root/python${PYTHONPATH:+:$PYTHONPATH}
# BENCH_LIBRARY: a libctxattn.so built elsewhere (with 90a, configure needs the CUTLASS headers:
# pip reaches PyPI, or .deps/ is carried, 27 MB, which does not fit beside .whl/fa3 in one 64 MiB
# carry); setup then builds nothing.
export CTXATTN_LIBRARY=${BENCH_LIBRARY:-$build/libctxattn.so}
export FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE:-$root/bench-out/flashinfer-cache}
mkdir -p "$out" "$sites" "$FLASHINFER_WORKSPACE_BASE"

wheel_groups() {
  # The folders of wheels to install: $WHEELS, else .whl/ (when wheels lie in it) and its subfolders.
  if [ -n "${WHEELS:-}" ]; then
    tr ',' '\n' <<<"$WHEELS" | sed '/^$/d; s|/*$||'
    return
  fi
  ls .whl/*.whl >/dev/null 2>&1 && echo .whl
  for d in .whl/*/; do
    [ -d "$d" ] && echo "${d%/}"
  done
}

install_group() {
  # Installs the wheels of folder $1 into bench-out/sites/<its name> (once per set of wheels) and
  # puts that folder on PYTHONPATH. A group with FMHAv2's manifest (.whl/fmha, made by
  # bench/build_fmha_v2.sh) also holds FlashInfer's Python side as a tarball, unpacked there, and
  # the prebuilt modules, copied there; FMHA_V2_MODULES then names that folder.
  local dir=$1 wheels name target stamp tarball
  wheels=$(ls "$dir"/*.whl 2>/dev/null | sort)
  if [ -z "$wheels" ]; then
    echo "gpu_run.sh: no wheels in $dir" >&2
    return 1
  fi
  name=$(basename "$dir")
  name=${name#.}
  target=$sites/$name
  stamp=$wheels
  if [ -f "$dir/fmha_v2.json" ]; then
    stamp="$stamp
$(cd "$dir" && cksum fmha_v2.json ./*.tar.xz modules/*.so lib/* 2>/dev/null)"
  fi
  if [ "$stamp" != "$(cat "$target/.installed" 2>/dev/null)" ]; then
    rm -rf "$target"
    if ! "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$target" $wheels; then
      echo "gpu_run.sh: installing $dir/*.whl failed; continuing without those peers" >&2
      return 1
    fi
    if [ -f "$dir/fmha_v2.json" ]; then
      for tarball in "$dir"/*.tar.xz; do
        [ -f "$tarball" ] || continue
        tar -xJf "$tarball" -C "$target" || { echo "gpu_run.sh: unpacking $tarball failed" >&2; return 1; }
      done
      if ! cp -r "$dir/fmha_v2.json" "$dir/modules" "$target/" ||
          { [ -d "$dir/lib" ] && ! cp -r "$dir/lib" "$target/"; }; then
        echo "gpu_run.sh: copying the FMHAv2 modules of $dir failed; continuing without them" >&2
        return 1
      fi
    fi
    echo "$stamp" > "$target/.installed"
  fi
  export PYTHONPATH=$PYTHONPATH:$target
  if [ -f "$target/fmha_v2.json" ]; then
    export FMHA_V2_MODULES=$target
  fi
  echo "gpu_run.sh: wheels of $dir: $(echo $wheels | xargs -n1 basename | cut -d- -f1,2 | tr '\n' ' ')"
}

setup() {
  local groups group
  groups=$(wheel_groups)
  if [ -z "$groups" ]; then
    echo "gpu_run.sh: no wheels under .whl/ (run bench/fetch_wheels.sh where pip reaches PyPI, and" \
         "carry .whl/fa3 or .whl/cudnn); the fa3, FlashInfer and cuDNN-frontend rows will say they" \
         "could not import" >&2
  fi
  for group in $groups; do
    install_group "$group"
  done
  if [ -n "${BENCH_LIBRARY:-}" ]; then
    echo "gpu_run.sh: using BENCH_LIBRARY=$BENCH_LIBRARY (no build); setup done after ${SECONDS}s"
    return 0
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
