#!/bin/bash
# Builds and packs what run3.sh, run4.sh and run5.sh carry, on the CPU machine, from the
# repository root of a checkout of main after `make build` (which fetched CUTLASS into .deps/).
# NEW = d45b77f; FIN = 5d25fb9 (main when this was written; since 043be83 main holds the
# small-page gather, so FIN is built from its commit); XI, FQ, TL3 = FIN with a patch each (see
# README.md). Each library build takes about 5 minutes on 2 cores; packing with xz about 2-4
# minutes a tarball.
#   bash docs/results/2026-12-04-h200-v27/pack.sh [WORK_DIR]
# Writes .gpu/libs.tar.xz (libNEW, libFIN: run3), .gpu4/ (libFIN.xz: run4), .gpu5/libs.tar.xz
# (libFIN, libXI, libFQ, libTL3: run5), and the bench and test binaries beside each (run5's test
# binary from the FQ tree, which holds its e4m3 test cases); git ignores /.gpu*/, so each can be
# carried.
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v27}
R=docs/results/2026-12-04-h200-v27
mkdir -p "$W/stage"
cutlass="$ROOT/.deps/cutlass-4.2.0.0/include"
[ -d "$cutlass" ] || { echo "run make build first (CUTLASS headers under .deps/)"; exit 1; }
build() {  # build NAME REV PATCH CUDA_FLAGS TESTS(ON|OFF)
  local name=$1 rev=$2 patch=$3 flags=$4 tests=$5
  rm -rf "$W/src_$name"
  git worktree add -f --detach "$W/src_$name" "$rev" > /dev/null
  if [ -n "$patch" ]; then git -C "$W/src_$name" apply "$ROOT/$patch"; fi
  cmake -S "$W/src_$name" -B "$W/b_$name" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUTLASS_INCLUDE="$cutlass" \
    -DCMAKE_CUDA_FLAGS="$flags" -DCTXATTN_BUILD_TESTS=$tests -DCTXATTN_BUILD_TOOLS=$tests > "$W/b_$name.cfg" 2>&1
  cmake --build "$W/b_$name" -j"$(nproc)" > "$W/b_$name.log" 2>&1
  stage "$name" "$W/b_$name"
}
stage() {  # stage NAME BUILD_DIR: the stripped library under $W/stage/libNAME/
  mkdir -p "$W/stage/lib$1"
  strip --strip-unneeded -o "$W/stage/lib$1/libctxattn.so.0.1.0" "$2/libctxattn.so.0.1.0"
}
pack() {  # pack OUT_TARBALL LIBS...
  local out=$1; shift
  (cd "$W/stage" && tar cf - "$@" | xz -T"$(nproc)" -6 --lzma2=preset=6,dict=450MiB > "$out")
}
build FIN 5d25fb9 "" "" ON
build NEW d45b77f "" "" OFF
build XI 5d25fb9 "$R/sm90-overlap-items.patch" "-DCTXATTN_SM90_OVERLAP_ITEMS" OFF
build FQ 5d25fb9 "$R/sm90-q-tma-e4m3.patch" "" ON
build TL3 5d25fb9 "docs/results/2026-12-04-h200-v26/sm90-timeline-three-consumers.patch" "-DCTXATTN_SM90_TIMELINE" OFF
mkdir -p .gpu .gpu4 .gpu5
pack "$ROOT/.gpu/libs.tar.xz" libNEW libFIN
cp "$W/b_FIN/ctxattn_gpu_bench" .gpu/ && xz -T"$(nproc)" -6 -c "$W/b_FIN/ctxattn_tests" > .gpu/ctxattn_tests.xz
xz -T"$(nproc)" -6 -c "$W/stage/libFIN/libctxattn.so.0.1.0" > .gpu4/libFIN.xz && cp .gpu/ctxattn_tests.xz .gpu4/
pack "$ROOT/.gpu5/libs.tar.xz" libFIN libXI libFQ libTL3
cp "$W/b_FQ/ctxattn_gpu_bench" .gpu5/ && xz -T"$(nproc)" -6 -c "$W/b_FQ/ctxattn_tests" > .gpu5/ctxattn_tests.xz
du -sh .gpu .gpu4 .gpu5
