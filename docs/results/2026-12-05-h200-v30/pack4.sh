#!/bin/bash
# Packs what run4.sh carries, on the CPU machine, from the repository root of a checkout of main
# after `make build`: .gpu30b/ (git ignores /.gpu*/) with libMAIN (main as built in build/),
# libGI (main with sm90-gather-ids-smem.patch, built in a worktree, about 5 minutes on 2 cores)
# and GI's tests and tool bench (the patch adds a host test).
#   bash docs/results/2026-12-05-h200-v30/pack4.sh [WORK_DIR]
# This session packed .gpu30b/ with libMAIN = 197164f and libGI = that commit with the patch.
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v30b}
cutlass="$ROOT/.deps/cutlass-4.2.0.0/include"
[ -d "$cutlass" ] || { echo "run make build first (CUTLASS headers under .deps/)"; exit 1; }
rm -rf "$W/stage" "$W/src_GI" && mkdir -p "$W/stage/libMAIN" "$W/stage/libGI" .gpu30b
git worktree add -f --detach "$W/src_GI" HEAD > /dev/null
git -C "$W/src_GI" apply "$ROOT/docs/results/2026-12-05-h200-v30/sm90-gather-ids-smem.patch"
cmake -S "$W/src_GI" -B "$W/b_GI" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUTLASS_INCLUDE="$cutlass" > "$W/b_GI.cfg" 2>&1
cmake --build "$W/b_GI" -j"$(nproc)" > "$W/b_GI.log" 2>&1
strip --strip-unneeded -o "$W/stage/libMAIN/libctxattn.so.0.1.0" build/libctxattn.so.0.1.0
strip --strip-unneeded -o "$W/stage/libGI/libctxattn.so.0.1.0" "$W/b_GI/libctxattn.so.0.1.0"
(cd "$W/stage" && tar cf - libMAIN libGI | xz -T"$(nproc)" -6 --lzma2=preset=6,dict=450MiB > "$ROOT/.gpu30b/libs.tar.xz")
cp "$W/b_GI/ctxattn_gpu_bench" .gpu30b/ && xz -T"$(nproc)" -6 -c "$W/b_GI/ctxattn_tests" > .gpu30b/ctxattn_tests.xz
git worktree remove --force "$W/src_GI"
du -sh .gpu30b
