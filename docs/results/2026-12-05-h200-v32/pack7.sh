#!/bin/bash
# Packs what run7.sh carries, on the CPU machine, from the repository root of a checkout of main
# after `make build` (for the CUTLASS headers): .gpu32/ (git ignores /.gpu*/) with libMAIN (main)
# and one library for each variant below (main with its patches), each built in turn from a
# worktree at the same path, WORK_DIR/src (about 7 minutes each on 2 cores; a variant whose build
# in WORK_DIR came from the same patches is reused), and the tests and tool bench of the last
# variant (G2S40: its host tests are a superset of the others'; the GPU tests are the same in
# all). The one source path keeps the line tables of the units a variant does not change
# byte-identical across the libraries, so that xz stores each such unit once: MAIN alone
# compresses to about 25 MB, and each variant adds what it changes (5-9 MB here: a variant that
# edits a header every unit includes moves the line numbers of every unit).
#   bash docs/results/2026-12-05-h200-v32/pack7.sh [WORK_DIR]
# Variants: variants7.sh.
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v32}
VARIANTS=${VARIANTS:-"PR GI40 G2S40"}
ALL="MAIN $VARIANTS"
cutlass="$ROOT/.deps/cutlass-4.2.0.0/include"
[ -d "$cutlass" ] || { echo "run make build first (CUTLASS headers under .deps/)"; exit 1; }
. docs/results/2026-12-05-h200-v32/variants7.sh
mkdir -p "$W" .gpu32
rm -rf "$W/stage"
last=
for v in $ALL; do
  # shellcheck disable=SC2046
  { git rev-parse HEAD; cat $(patches $v) /dev/null; } > "$W/want_$v.patch"
  if ! cmp -s "$W/want_$v.patch" "$W/b_$v.patch" || [ ! -f "$W/b_$v/libctxattn.so.0.1.0" ]; then
    rm -rf "$W/src" "$W/b_$v" && git worktree prune && git worktree add -f --detach "$W/src" HEAD > /dev/null
    for p in $(patches $v); do git -C "$W/src" apply "$p"; done
    cmake -S "$W/src" -B "$W/b_$v" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUTLASS_INCLUDE="$cutlass" > "$W/b_$v.cfg" 2>&1
    cmake --build "$W/b_$v" -j"$(nproc)" > "$W/b_$v.log" 2>&1
    git worktree remove --force "$W/src"
    cp "$W/want_$v.patch" "$W/b_$v.patch"
  fi
  mkdir -p "$W/stage/lib$v"
  strip --strip-unneeded -o "$W/stage/lib$v/libctxattn.so.0.1.0" "$W/b_$v/libctxattn.so.0.1.0"
  last=$v
done
# shellcheck disable=SC2086
(cd "$W/stage" && tar cf - $(for v in $ALL; do echo lib$v; done) |
  xz -T"$(nproc)" -6 --lzma2=preset=6,dict=768MiB > "$ROOT/.gpu32/libs.tar.xz")
cp "$W/b_$last/ctxattn_gpu_bench" .gpu32/ && xz -T"$(nproc)" -6 -c "$W/b_$last/ctxattn_tests" > .gpu32/ctxattn_tests.xz
du -sh .gpu32
