#!/bin/bash
# Packs what run8.sh carries beside .whl/fa3only (fa3-fwd, 27 MB): .gpu32h/lib$VARIANT.xz = main
# with a variant of pack7.sh (G2S40, the default; GI40, PR, P40), built for sm_90a alone (the
# portable kernels too: no sm_80 copy), so that it fits one 64 MiB carry with FA3's wheel. About
# 5 minutes on 2 cores. The tool bench travels with it (run8.sh's profile).
#   VARIANT=G2S40 bash docs/results/2026-12-05-h200-v32/pack8.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v32}
V=${VARIANT:-G2S40}
. docs/results/2026-12-05-h200-v32/variants7.sh
patches=$(patches "$V")
cutlass="$ROOT/.deps/cutlass-4.2.0.0/include"
[ -d "$cutlass" ] || { echo "run make build first (CUTLASS headers under .deps/)"; exit 1; }
rm -rf "$W/src_h" "$W/b_h" && git worktree add -f --detach "$W/src_h" HEAD > /dev/null
for p in $patches; do git -C "$W/src_h" apply "$p"; done
cmake -S "$W/src_h" -B "$W/b_h" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUDA_ARCHS=90a \
  -DCTXATTN_CUTLASS_INCLUDE="$cutlass" > "$W/b_h.cfg" 2>&1
cmake --build "$W/b_h" -j"$(nproc)" --target ctxattn ctxattn_gpu_bench > "$W/b_h.log" 2>&1
rm -rf .gpu32h && mkdir -p .gpu32h
strip --strip-unneeded -o "$W/libctxattn.so.0.1.0" "$W/b_h/libctxattn.so.0.1.0"
xz -T"$(nproc)" -9 -c "$W/libctxattn.so.0.1.0" > .gpu32h/lib$V.xz
cp "$W/b_h/ctxattn_gpu_bench" .gpu32h/
git worktree remove --force "$W/src_h"
du -sh .gpu32h .whl/fa3only
