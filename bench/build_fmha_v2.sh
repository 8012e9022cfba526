#!/usr/bin/env bash
# Builds the FMHAv2 modules that the fmha_v2 peer loads (TensorRT-LLM's open warp-specialised
# Hopper context kernels, as FlashInfer 0.7.2 compiles them for `trtllm_fmha_v2_prefill`), on a
# machine with nvcc and PyPI but no GPU, into .whl/fmha/, a group that a GPU command carries alone:
#
#   .whl/fmha/fmha_v2.json                       which module is which (dtypes, head dims, kernels)
#   .whl/fmha/modules/trtllm_fmha_v2_*.so        one module per (input, output) dtype pair, sm_90a
#   .whl/fmha/flashinfer-py-<version>.tar.xz     FlashInfer's Python side (no data/: no JIT there)
#   .whl/fmha/apache_tvm_ffi-*-cp312-*.whl       what loads the modules, for the GPU's Python 3.12
#   .whl/fmha/lib/libcudart.so.13                the CUDA runtime the modules were linked against
#
#   bash bench/build_fmha_v2.sh                  (about 80 s per module on 2 cores)
#
# Carry it with carry [".whl/fmha"] (about 13 MiB); bench/gpu_run.sh installs it into
# bench-out/sites/fmha and points FMHA_V2_MODULES there. Stock, FlashInfer's generator instantiates
# 176 kernels per module (11 head dims x softcap x softmax stats x skip-softmax x ALiBi); the
# unpacked copy's generator (jit/attention/fmha_v2/fmha_library.py, generate_jit_sources) is
# limited to FMHA_V2_HEAD_DIMS, without softcap, softmax stats and ALiBi, with and without
# skip-softmax: 2 kernels per head dim. The sm_90 generator has no head dim above 256.
#
# Settings (environment): FMHA_V2_HEAD_DIMS (64,128,256), FMHA_V2_DTYPES (input:output pairs,
# bf16:bf16,e4m3:bf16; fp16:fp16 and e4m3:e4m3 build too), FLASHINFER_VERSION (0.7.2.post1),
# TVM_FFI_VERSION (the one bench/fetch_wheels.sh pins), MAX_JOBS (2: parallel nvcc jobs),
# PYTHON (an interpreter with torch; default .venv/bin/python, else python3), FMHA_V2_WORK (the
# scratch folder: wheels, the unpacked package, the JIT build; default /tmp/ctxattn-fmha-v2),
# WHEEL_DIR (.whl). Every step is idempotent: a second run rebuilds nothing that is up to date.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
wheels="${WHEEL_DIR:-$root/.whl}"
dest="$wheels/fmha"
work="${FMHA_V2_WORK:-/tmp/ctxattn-fmha-v2}"
if [ -n "${PYTHON:-}" ]; then
  py=$PYTHON
elif [ -x "$root/.venv/bin/python" ]; then
  py=$root/.venv/bin/python
else
  py=python3
fi
flashinfer_version="${FLASHINFER_VERSION:-0.7.2.post1}"
tvm_ffi_version="${TVM_FFI_VERSION:-$(sed -n 's/^tvm_ffi_version="\${TVM_FFI_VERSION:-\(.*\)}"$/\1/p' \
  "$root/bench/fetch_wheels.sh")}"
head_dims="${FMHA_V2_HEAD_DIMS:-64,128,256}"
dtypes="${FMHA_V2_DTYPES:-bf16:bf16,e4m3:bf16}"
export MAX_JOBS="${MAX_JOBS:-2}"
carry_limit_bytes=$((30 * 1024 * 1024))

die() { echo "build_fmha_v2.sh: $*" >&2; exit 1; }
[ -n "$tvm_ffi_version" ] || die "could not read the tvm-ffi version from bench/fetch_wheels.sh"
"$py" -c "import torch" 2>/dev/null || die "$py cannot import torch (set PYTHON to an interpreter with torch)"
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || die "no nvcc (CUDA 12.3+ with sm_90a)"
command -v nvcc >/dev/null || export PATH=/usr/local/cuda/bin:$PATH
command -v ninja >/dev/null || die "no ninja on PATH (apt-get install ninja-build)"
mkdir -p "$work/wheels" "$dest/modules" "$dest/lib"

# 1. The wheels: FlashInfer whole (the slimmed one in .whl/fa3 lacks csrc/fmha_v2), tvm-ffi for
#    the GPU machine's Python 3.12 (as fetch_wheels.sh fetches it) and for this interpreter.
. "$root/bench/wheel_platforms.sh"
fi_wheel="$work/wheels/flashinfer_python-$flashinfer_version-py3-none-any.whl"
if [ ! -f "$fi_wheel" ]; then
  "$py" -m pip download -q --no-deps --only-binary=:all: -d "$work/wheels" "flashinfer-python==$flashinfer_version"
fi
tvm_wheel=$(ls "$wheels"/fa3/apache_tvm_ffi-"$tvm_ffi_version"-cp312-*.whl 2>/dev/null | head -n1 || true)
if [ -z "$tvm_wheel" ]; then
  mkdir -p "$work/wheels/cp312"
  "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --abi cp312 --abi abi3 --abi none "${platforms[@]}" -d "$work/wheels/cp312" "apache-tvm-ffi==$tvm_ffi_version"
  tvm_wheel=$(ls "$work"/wheels/cp312/apache_tvm_ffi-"$tvm_ffi_version"-cp312-*.whl | head -n1)
fi
host_site="$work/hostsite"
if ! PYTHONPATH="$host_site" "$py" -c "
import importlib.metadata as m, sys
sys.exit(m.version('apache-tvm-ffi') != '$tvm_ffi_version')" 2>/dev/null; then
  rm -rf "$host_site" "$work/wheels/host"
  "$py" -m pip download -q --no-deps --only-binary=:all: -d "$work/wheels/host" "apache-tvm-ffi==$tvm_ffi_version"
  "$py" -m pip install -q --no-index --no-deps --no-compile --target "$host_site" "$work"/wheels/host/*.whl
fi

# 2. The package unpacked in the scratch folder, its generator limited, the modules built there.
export FLASHINFER_CUDA_ARCH_LIST=9.0a
export FLASHINFER_WORKSPACE_BASE="$work/jit"
PYTHONPATH="$host_site" "$py" - "$fi_wheel" "$work/src" "$dest" "$head_dims" "$dtypes" "$tvm_ffi_version" <<'EOF'
import glob
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import types
import zipfile

wheel, src, dest, head_dims, dtype_pairs, tvm_ffi_version = sys.argv[1:]
head_dims = [int(d) for d in head_dims.split(",")]
pairs = [tuple(p.split(":")) for p in dtype_pairs.split(",")]
LIBRARY = "flashinfer/jit/attention/fmha_v2/fmha_library.py"

stamp = os.path.join(src, ".wheel")
digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
if not os.path.exists(stamp) or open(stamp).read() != digest:
    shutil.rmtree(src, ignore_errors=True)
    with zipfile.ZipFile(wheel) as z:
        z.extractall(src)
    with open(stamp, "w") as fh:
        fh.write(digest)

# The generator's lists, from the wheel's own text each time (so that the limits can change).
with zipfile.ZipFile(wheel) as z:
    text = z.read(LIBRARY).decode()
limits = {
    r"head_size_qk_warpspec_values = \[[0-9, ]+\]": f"head_size_qk_warpspec_values = {head_dims}",
    r"enable_attn_logit_softcapping_values = \[True, False\]": "enable_attn_logit_softcapping_values = [False]",
    r"return_softmax_values = \[True, False\]": "return_softmax_values = [False]",
    r"alibi_values = \[True, False\]": "alibi_values = [False]",
}
for pattern, repl in limits.items():
    text, n = re.subn(pattern, repl, text)
    if n != 1:
        sys.exit(f"build_fmha_v2.sh: {LIBRARY} has {n} matches of {pattern!r} (another FlashInfer "
                 "version?); the generator was not limited, nothing is built")
path = os.path.join(src, LIBRARY)
if open(path).read() != text:
    with open(path, "w") as fh:
        fh.write(text)

# Import the JIT side without the package __init__ (it imports every operator family); requests
# is only used to download artifacts, which these modules do not have.
sys.path.insert(0, src)
sys.modules.setdefault("requests", types.ModuleType("requests"))
package = types.ModuleType("flashinfer")
package.__path__ = [os.path.join(src, "flashinfer")]
sys.modules["flashinfer"] = package
import torch  # noqa: E402
from flashinfer.jit.attention.modules import gen_fmha_v2_module  # noqa: E402

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "e4m3": torch.float8_e4m3fn}
LAYOUT = "Q_PAGED_KV_HND"
entries = []
for in_dt, out_dt in pairs:
    spec = gen_fmha_v2_module(LAYOUT, DTYPES[in_dt], DTYPES[out_dt])
    kernels = sorted(os.path.basename(str(s)) for s in spec.sources
                     if os.path.basename(str(s)) not in ("fmha_v2_run.cu", "fmha_v2_jit_binding.cu"))
    expected = 2 * len(head_dims)
    if len(kernels) != expected:
        sys.exit(f"build_fmha_v2.sh: {spec.name} would compile {len(kernels)} kernels, not {expected} "
                 f"(head dims {head_dims} x skip-softmax off/on): the limits are wrong, nothing is built")
    print(f"build_fmha_v2.sh: building {spec.name} ({len(kernels)} kernels, MAX_JOBS={os.environ['MAX_JOBS']})",
          flush=True)
    spec.build(verbose=False)
    so = f"modules/{spec.name}.so"
    shutil.copy2(spec.get_library_path(), os.path.join(dest, so))
    entries.append(dict(file=so, name=spec.name, input_layout=LAYOUT, input_dtype=in_dt,
                        output_dtype=out_dt, head_dims=head_dims, skip_softmax=[False, True],
                        softcap=False, softmax_stats=False, alibi=False, kernels=kernels))

# FlashInfer's Python side for the GPU machine: everything but data/ (sources, headers).
version = os.path.basename(wheel).split("-")[1]
tar_name = f"flashinfer-py-{version}.tar.xz"
tar_path = os.path.join(dest, tar_name)
tar_stamp = tar_path + ".sha256"
if not os.path.exists(tar_path) or not os.path.exists(tar_stamp) or open(tar_stamp).read() != digest:
    with zipfile.ZipFile(wheel) as z, tarfile.open(tar_path + ".tmp", "w:xz") as tar:
        for info in z.infolist():
            if info.is_dir() or info.filename.startswith("flashinfer/data/"):
                continue
            data = z.read(info.filename)
            ti = tarfile.TarInfo(info.filename)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 0
            tar.addfile(ti, io.BytesIO(data))
    os.replace(tar_path + ".tmp", tar_path)
    with open(tar_stamp, "w") as fh:
        fh.write(digest)

# The CUDA runtime the modules name (a GPU machine's torch usually has it loaded already).
needed = subprocess.run(["readelf", "-d", os.path.join(dest, entries[0]["file"])], capture_output=True,
                        text=True, check=True).stdout
cudart = re.search(r"\[(libcudart\.so\.[0-9]+)\]", needed).group(1)
toolkit = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("nvcc"))))
for old in glob.glob(os.path.join(dest, "lib", "libcudart.so*")):
    os.remove(old)
shutil.copy2(os.path.realpath(os.path.join(toolkit, "lib64", cudart)), os.path.join(dest, "lib", cudart))

nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
manifest = dict(flashinfer=version, tvm_ffi=tvm_ffi_version, cuda_arch="9.0a", nvcc=nvcc,
                python_side=tar_name, cudart=f"lib/{cudart}", modules=entries)
with open(os.path.join(dest, "fmha_v2.json"), "w") as fh:
    json.dump(manifest, fh, indent=1)
    fh.write("\n")
EOF

# 3. tvm-ffi for the GPU machine's Python.
rm -f "$dest"/apache_tvm_ffi-*.whl
cp "$tvm_wheel" "$dest/"
# Modules of pairs no longer asked for would be listed nowhere; drop them.
for so in "$dest"/modules/*.so; do
  grep -q "\"modules/$(basename "$so")\"" "$dest/fmha_v2.json" || rm -f "$so"
done
bytes=$(du -sb "$dest" | cut -f1)
du -ah "$dest" | sed "s|$wheels/||"
[ "$bytes" -le "$carry_limit_bytes" ] || die "$dest holds $((bytes / 1048576)) MiB, more than it should carry"
