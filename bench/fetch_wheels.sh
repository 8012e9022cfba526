#!/usr/bin/env bash
# Downloads the wheels of the peers that a GPU machine without network lacks, for Python 3.12 on
# manylinux x86_64, into groups under .whl/ at the repository root. What a GPU command can carry
# is limited (64 MiB), and the wheels together are larger, so each group is sized to travel alone:
#
#   .whl/fa3/     FlashInfer (slimmed, bench/slim_wheel.py), apache-tvm-ffi (FlashInfer needs it),
#                 fa3-fwd (FlashAttention-3's forward)     -> peers flashinfer_fa3, fa3   (~59 MiB)
#   .whl/cudnn/   nvidia-cudnn-frontend                    -> peer cudnn_paged            (~11 MiB)
#
# The group .whl/fmha (peer fmha_v2: FMHAv2's modules, prebuilt) comes from bench/build_fmha_v2.sh.
#
# Carry one group per GPU command (carry [".whl/fa3"]); bench/gpu_run.sh installs every group it
# finds under .whl/ (or those named by WHEELS) and puts each on the path. By hand:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/fa3/*.whl && export PYTHONPATH=/tmp/site
#
# Versions are pinned so that a run can be repeated; override with FLASHINFER_VERSION,
# TVM_FFI_VERSION, FA3_FWD_VERSION, CUDNN_FRONTEND_VERSION. Each wheel is fetched with --no-deps:
# the GPU image already holds torch, numpy, click, einops, ninja, nvidia-ml-py, packaging,
# requests, tabulate and tqdm, which are the rest of what these packages import.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${WHEEL_DIR:-$root/.whl}"
py="${PYTHON:-python3}"

flashinfer_version="${FLASHINFER_VERSION:-0.7.2.post1}"
tvm_ffi_version="${TVM_FFI_VERSION:-0.1.15.post2}"
fa3_fwd_version="${FA3_FWD_VERSION:-0.0.3}"
cudnn_frontend_version="${CUDNN_FRONTEND_VERSION:-1.32.0}"

# The largest group a GPU command can carry.
carry_limit_bytes=$((64 * 1024 * 1024))

. "$root/bench/wheel_platforms.sh"

fetch() {  # fetch GROUP REQUIREMENT
  mkdir -p "$dest/$1"
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --abi cp312 --abi abi3 --abi none "${platforms[@]}" --platform any -d "$dest/$1" "$2"
}

# An earlier layout kept every wheel directly in .whl/; gpu_run.sh would install those as one more
# group, and carrying .whl would carry them all.
if ls "$dest"/*.whl >/dev/null 2>&1; then
  echo "fetch_wheels.sh: removing wheels of the earlier flat layout from $dest (now in groups)" >&2
  rm -f "$dest"/*.whl
fi

fetch fa3 "flashinfer-python==$flashinfer_version"
fetch fa3 "apache-tvm-ffi==$tvm_ffi_version"
fetch fa3 "fa3-fwd==$fa3_fwd_version"
fetch cudnn "nvidia-cudnn-frontend==$cudnn_frontend_version"

# The whole FlashInfer wheel is too large to travel with the others; drop the kernel sources of
# unrelated operators (see bench/slim_wheel.py for what is kept and why).
"$py" "$root/bench/slim_wheel.py" "$dest/fa3/flashinfer_python-$flashinfer_version-py3-none-any.whl"

status=0
for group in "$dest"/*/; do
  group=${group%/}
  # Two versions of one package in a group would make the offline install fail; say so early.
  dupes="$(ls "$group"/*.whl | xargs -n1 basename | cut -d- -f1 | sort | uniq -d)"
  if [ -n "$dupes" ]; then
    echo "fetch_wheels.sh: more than one version of: $dupes in $group; remove the stale wheels" >&2
    status=1
  fi
  bytes=$(cat "$group"/*.whl | wc -c)
  if [ "$bytes" -gt "$carry_limit_bytes" ]; then
    echo "fetch_wheels.sh: $group holds $((bytes / 1048576)) MiB, more than one GPU command carries" >&2
    status=1
  fi
  du -ch "$group"/*.whl | sed "s|$dest/||"
done
exit $status
