#!/usr/bin/env bash
# Downloads the wheels of the peers that a GPU machine without network lacks (FlashInfer and the
# cuDNN frontend) into .whl/ at the repository root, for Python 3.12 on manylinux x86_64.
#
# On the GPU machine:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
#       --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
#
# Versions are pinned so that a run can be repeated; override with FLASHINFER_VERSION,
# TVM_FFI_VERSION, CUDNN_FRONTEND_VERSION. Each wheel is fetched with --no-deps: the GPU image
# already holds torch, numpy, click, einops, ninja, nvidia-ml-py, packaging, requests, tabulate
# and tqdm, which are the rest of what these packages import.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="${WHEEL_DIR:-$root/.whl}"
py="${PYTHON:-python3}"

flashinfer_version="${FLASHINFER_VERSION:-0.7.2.post1}"
tvm_ffi_version="${TVM_FFI_VERSION:-0.1.15.post2}"
cudnn_frontend_version="${CUDNN_FRONTEND_VERSION:-1.32.0}"

# pip matches each manylinux tag exactly, so list every glibc level the wheels are published for.
platforms=()
for tag in manylinux_2_39_x86_64 manylinux_2_35_x86_64 manylinux_2_34_x86_64 manylinux_2_31_x86_64 \
           manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 \
           manylinux2014_x86_64 manylinux1_x86_64; do
  platforms+=(--platform "$tag")
done

mkdir -p "$dest"
fetch() {
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --abi cp312 --abi abi3 --abi none "${platforms[@]}" --platform any -d "$dest" "$1"
}

fetch "flashinfer-python==$flashinfer_version"
fetch "apache-tvm-ffi==$tvm_ffi_version"
fetch "nvidia-cudnn-frontend==$cudnn_frontend_version"

# The whole FlashInfer wheel is too large to travel with the others; drop the kernel sources of
# unrelated operators (see bench/slim_wheel.py for what is kept and why).
"$py" "$root/bench/slim_wheel.py" "$dest/flashinfer_python-$flashinfer_version-py3-none-any.whl"

# Two versions of one package in .whl/ would make the offline install fail; say so early.
dupes="$(ls "$dest"/*.whl | xargs -n1 basename | cut -d- -f1 | sort | uniq -d)"
if [ -n "$dupes" ]; then
  echo "fetch_wheels.sh: more than one version of: $dupes in $dest; remove the stale wheels" >&2
  exit 1
fi
du -ch "$dest"/*.whl
