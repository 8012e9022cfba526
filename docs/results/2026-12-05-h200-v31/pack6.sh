#!/bin/bash
# Packs what run6.sh carries beside .whl/fa3only (fa3-fwd, 27 MB): .gpu31h/lib$VARIANT.xz = main
# with the variant's patch (G2S, the default: sm90-gather-two-warps-static.patch; G2:
# sm90-gather-two-warps.patch), built for sm_90a alone (the portable kernels too: no sm_80 copy),
# so that it fits one 64 MiB carry with FA3's wheel. About 5 minutes on 2 cores. This session
# packed G2S.
#   VARIANT=G2S bash docs/results/2026-12-05-h200-v31/pack6.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v31}
V=${VARIANT:-G2S}
case $V in
  G2) patch="$ROOT/docs/results/2026-12-05-h200-v31/sm90-gather-two-warps.patch" ;;
  G2S) patch="$ROOT/docs/results/2026-12-05-h200-v31/sm90-gather-two-warps-static.patch" ;;
  *) echo "VARIANT: G2 or G2S"; exit 1 ;;
esac
cutlass="$ROOT/.deps/cutlass-4.2.0.0/include"
[ -d "$cutlass" ] || { echo "run make build first (CUTLASS headers under .deps/)"; exit 1; }
rm -rf "$W/src_G2h" "$W/b_G2h" && git worktree add -f --detach "$W/src_G2h" HEAD > /dev/null
git -C "$W/src_G2h" apply "$patch"
cmake -S "$W/src_G2h" -B "$W/b_G2h" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUDA_ARCHS=90a \
  -DCTXATTN_CUTLASS_INCLUDE="$cutlass" > "$W/b_G2h.cfg" 2>&1
cmake --build "$W/b_G2h" -j"$(nproc)" --target ctxattn > "$W/b_G2h.log" 2>&1
rm -rf .gpu31h && mkdir -p .gpu31h
strip --strip-unneeded -o "$W/libctxattn.so.0.1.0" "$W/b_G2h/libctxattn.so.0.1.0"
xz -T"$(nproc)" -9 -c "$W/libctxattn.so.0.1.0" > .gpu31h/lib$V.xz
git worktree remove --force "$W/src_G2h"
du -sh .gpu31h .whl/fa3only
