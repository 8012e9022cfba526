#!/bin/bash
# Packs what run5.sh carries, on the CPU machine, from the repository root of a checkout of main
# after `make build`: .gpu31/ (git ignores /.gpu*/) with libMAIN (main as built in build/), libGI
# (main with ../2026-12-05-h200-v30/sm90-gather-ids-smem.patch), libG2 (main with
# sm90-gather-two-warps.patch, GI included), libG2S (main with
# sm90-gather-two-warps-static.patch, GI included), each built in a worktree (about 5 minutes
# each on 2 cores; a variant whose build in WORK_DIR came from the same patch is reused), and
# G2S's tests and tool bench (its host tests are a superset of GI's and the same as G2's; the GPU
# tests are the same in all four).
#   bash docs/results/2026-12-05-h200-v31/pack5.sh [WORK_DIR]
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v31}
cutlass="$ROOT/.deps/cutlass-4.2.0.0/include"
[ -d "$cutlass" ] || { echo "run make build first (CUTLASS headers under .deps/)"; exit 1; }
rm -rf "$W/stage" && mkdir -p "$W/stage/libMAIN" .gpu31
strip --strip-unneeded -o "$W/stage/libMAIN/libctxattn.so.0.1.0" build/libctxattn.so.0.1.0
for v in GI G2 G2S; do
  case $v in
    GI) patch="$ROOT/docs/results/2026-12-05-h200-v30/sm90-gather-ids-smem.patch" ;;
    G2) patch="$ROOT/docs/results/2026-12-05-h200-v31/sm90-gather-two-warps.patch" ;;
    G2S) patch="$ROOT/docs/results/2026-12-05-h200-v31/sm90-gather-two-warps-static.patch" ;;
  esac
  if ! cmp -s "$patch" "$W/b_$v.patch" || [ ! -f "$W/b_$v/libctxattn.so.0.1.0" ]; then
    rm -rf "$W/src_$v" "$W/b_$v" && git worktree add -f --detach "$W/src_$v" HEAD > /dev/null
    git -C "$W/src_$v" apply "$patch"
    cmake -S "$W/src_$v" -B "$W/b_$v" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUTLASS_INCLUDE="$cutlass" > "$W/b_$v.cfg" 2>&1
    cmake --build "$W/b_$v" -j"$(nproc)" > "$W/b_$v.log" 2>&1
    git worktree remove --force "$W/src_$v"
    cp "$patch" "$W/b_$v.patch"
  fi
  mkdir -p "$W/stage/lib$v"
  strip --strip-unneeded -o "$W/stage/lib$v/libctxattn.so.0.1.0" "$W/b_$v/libctxattn.so.0.1.0"
done
(cd "$W/stage" && tar cf - libMAIN libGI libG2 libG2S | xz -T"$(nproc)" -6 --lzma2=preset=6,dict=450MiB > "$ROOT/.gpu31/libs.tar.xz")
cp "$W/b_G2S/ctxattn_gpu_bench" .gpu31/ && xz -T"$(nproc)" -6 -c "$W/b_G2S/ctxattn_tests" > .gpu31/ctxattn_tests.xz
du -sh .gpu31
