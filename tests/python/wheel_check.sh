#!/usr/bin/env bash
# Installs ctxattn the way a user does -- `pip install .` with CPU-only CMake arguments -- into a
# throw-away venv, then imports the installed package (no CTXATTN_LIBRARY, no PYTHONPATH) and
# runs one call against a float64 reference. torch is borrowed from the venv given as $1 through
# a .pth file, so the check costs a build, not a torch download.
set -euo pipefail
base_python=${1:?usage: wheel_check.sh PYTHON_OF_A_VENV_WITH_TORCH}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

start=$(date +%s)
"$base_python" -m venv "$tmp/venv"
purelib='import sysconfig; print(sysconfig.get_paths()["purelib"])'
"$base_python" -c "$purelib" > "$("$tmp/venv/bin/python" -c "$purelib")/borrowed-torch.pth"
"$tmp/venv/bin/python" -m pip install -q --disable-pip-version-check \
  --config-settings=cmake.define.CTXATTN_CUDA=OFF "$root"
cd "$tmp"
env -u CTXATTN_LIBRARY -u PYTHONPATH "$tmp/venv/bin/python" "$root/tests/python/wheel_smoke.py"
echo "wheel-check: passed in $(( $(date +%s) - start )) s"
