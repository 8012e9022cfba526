#!/usr/bin/env bash
# The transformers integration on a GPU machine (docs/transformers.md): the CUDA cases of
# tests/python/test_transformers.py, the tensor-parallel example (when 2 GPUs are visible) and the
# generate_batch throughput bench. Logs, results and the plot go under ${OUT:-transformers-out}.
#
#   bash bench/gpu_transformers.sh fetch        # where pip reaches PyPI: wheels the GPU image may lack
#   CTXATTN_LIBRARY=$PWD/build-cuda/libctxattn.so bash bench/gpu_transformers.sh [STEPS]
#
# The library must be a CUDA build, made first on the GPU machine (on the 2-GPU machine too):
#   cmake -S . -B build-cuda -DCTXATTN_CUDA=ON -DCTXATTN_CUDA_ARCHS=90a -DCTXATTN_BUILD_TESTS=OFF \
#     -DCTXATTN_BUILD_TOOLS=OFF && cmake --build build-cuda -j --target ctxattn
# The image needs torch and transformers==5.17.0; tp_plan="auto" also needs accelerate (and
# psutil). `fetch` puts their wheels in .whl/transformers (about 1 MiB; carry it with the tree);
# this script installs them into $SITE when the image lacks them.
#
# STEPS: a comma list of tests, tp, bench (default: all three). Time limits: tests 300 s, tp 300 s,
# bench $BENCH_TIMEOUT (330 s; at the default size it needs about 4-5 minutes on an H200). For a
# 10-minute command, run tests,tp in one and bench in another. BENCH_ARGS adds to the bench's
# arguments (e.g. "--size 1b" or "--impl ctxattn,ctxattn-graphs,sdpa"). Exit status: the number of
# failed steps.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
OUT=${OUT:-transformers-out}
SITE=${SITE:-/tmp/ctxattn-transformers-site}
PY=${PYTHON:-python3}
WHEELS=.whl/transformers
ACCELERATE_VERSION=${ACCELERATE_VERSION:-1.15.0}
PSUTIL_VERSION=${PSUTIL_VERSION:-7.2.2}

if [ "${1:-}" = fetch ]; then
  mkdir -p "$WHEELS"
  platforms=()
  for tag in manylinux_2_28_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 any; do platforms+=(--platform "$tag"); done
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --abi cp312 --abi abi3 --abi none "${platforms[@]}" -d "$WHEELS" \
    "accelerate==$ACCELERATE_VERSION" "psutil==$PSUTIL_VERSION"
  ls -l "$WHEELS"
  exit 0
fi

STEPS=${1:-tests,tp,bench}
step() { case ",$STEPS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
mkdir -p "$OUT"
failed=0
record() {  # name status
  echo "== $1: $([ "$2" -eq 0 ] && echo PASS || echo "FAIL ($2)")" | tee -a "$OUT/summary.txt"
  [ "$2" -eq 0 ] || failed=$((failed + 1))
}

if [ -z "${CTXATTN_LIBRARY:-}" ] || [ ! -f "$CTXATTN_LIBRARY" ]; then
  echo "gpu_transformers.sh: set CTXATTN_LIBRARY to a CUDA build's libctxattn.so (see the top of this script)" >&2
  exit 1
fi
export CTXATTN_LIBRARY
export HF_HUB_OFFLINE=1  # no downloads: models are built from configs
export PYTHONPATH="$root/python:$root${PYTHONPATH:+:$PYTHONPATH}"

# Wheels the image lacks, from .whl/transformers (see `fetch`), into $SITE.
for module in accelerate psutil; do
  if ! "$PY" -c "import $module" 2>/dev/null; then
    if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
      "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$WHEELS"/*.whl \
        && export PYTHONPATH="$PYTHONPATH:$SITE"
    else
      echo "gpu_transformers.sh: $module is missing and $WHEELS has no wheels; the tp step will fail" >&2
    fi
    break
  fi
done

{
  nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  "$PY" - <<'EOF'
import importlib.metadata as md, torch, ctxattn
for name in ("torch", "transformers", "accelerate", "psutil"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
print("ctxattn", ctxattn.version(), "cuda" if ctxattn.has_cuda() else "NO CUDA BACKEND", ctxattn.library_path())
EOF
} 2>&1 | tee "$OUT/env.txt"

if step tests; then
  timeout 300 "$PY" -m pytest -q -rA tests/python/test_transformers.py > "$OUT/tests.log" 2>&1
  record tests $?
  grep -E "^(PASSED|FAILED|SKIPPED|ERROR)|passed|failed|UserWarning" "$OUT/tests.log"
fi

if step tp; then
  gpus=$("$PY" -c "import torch; print(torch.cuda.device_count())")
  if [ "$gpus" -ge 2 ]; then
    timeout 300 "$PY" -m torch.distributed.run --nproc-per-node 2 examples/transformers_tp.py --out "$OUT/tp" \
      > "$OUT/tp.log" 2>&1
    record tp $?
    grep -E "^\[rank" "$OUT/tp.log"
  else
    echo "== tp: skipped ($gpus GPU visible; it needs 2)" | tee -a "$OUT/summary.txt"
  fi
fi

if step bench; then
  # shellcheck disable=SC2086  # BENCH_ARGS is a list of arguments
  timeout "${BENCH_TIMEOUT:-330}" "$PY" -m bench.transformers_throughput --out "$OUT/bench" --budget-s 240 \
    ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" | grep -v "it/s\]\|request/s\]"
  record bench "${PIPESTATUS[0]}"
fi

cat "$OUT/summary.txt"
exit "$failed"
