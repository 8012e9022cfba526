#!/bin/bash
# Packs what run2.sh carries, on the CPU machine, from the repository root of a checkout of main
# after `make build` (GA = main, built in build/). NEW (d45b77f) comes from v27's pack
# (.gpu/libs.tar.xz) when it is still there, else it is built; XQ = main with sm90-xq.patch,
# built with -DCTXATTN_SM90_OVERLAP_ITEMS and its tests (about 6 minutes each on 2 cores; an
# existing build of it can be named by XQ_BUILD).
#   bash docs/results/2026-12-05-h200-v29/pack.sh [WORK_DIR]
#   PART=run5 bash docs/results/2026-12-05-h200-v29/pack.sh [WORK_DIR]   (only run5's .gpu29c/)
# Writes .gpu29/ (libs.tar.xz: libNEW, libGA, libXQ; XQ's bench and test binaries, its tests
# being main's and FQ's two e4m3 cases) for run2.sh, and .gpu29b/ (libs.tar.xz: libGAF, libGA4F,
# libFQ; FQ's bench and test binaries) for run4.sh; git ignores /.gpu*/, so each can be carried.
# run1.sh and run3.sh carry v28's .gpu28b/ (libGA.xz and main's tests: v28's pack.sh).
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v29}
mkdir -p "$W/stage"
cutlass="$ROOT/.deps/cutlass-4.2.0.0/include"
[ -d "$cutlass" ] || { echo "run make build first (CUTLASS headers under .deps/)"; exit 1; }
stage() {  # stage NAME BUILD_DIR: the stripped library under $W/stage/libNAME/
  mkdir -p "$W/stage/lib$1"
  strip --strip-unneeded -o "$W/stage/lib$1/libctxattn.so.0.1.0" "$2/libctxattn.so.0.1.0"
}
build() {  # build NAME REV PATCHES CUDA_FLAGS TESTS: the library of REV with PATCHES applied in order
  rm -rf "$W/src_$1"
  git worktree add -f --detach "$W/src_$1" "$2" > /dev/null
  for patch in $3; do git -C "$W/src_$1" apply "$ROOT/$patch"; done
  cmake -S "$W/src_$1" -B "$W/b_$1" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUTLASS_INCLUDE="$cutlass" \
    -DCMAKE_CUDA_FLAGS="$4" -DCTXATTN_BUILD_TESTS=$5 -DCTXATTN_BUILD_TOOLS=$5 > "$W/b_$1.cfg" 2>&1
  cmake --build "$W/b_$1" -j"$(nproc)" > "$W/b_$1.log" 2>&1
}
if [ "${PART:-}" = run5 ]; then
  # run5: MAIN = main as built in build/ (829bd72 or later), GP = MAIN with the gather's page ids
  # loaded four passes ahead, RR = MAIN with every raw-tile reader arriving; MAIN's tests and bench.
  stage MAIN build
  build GP HEAD docs/results/2026-12-05-h200-v29/sm90-gather-ids-ahead.patch "" OFF && stage GP "$W/b_GP"
  build RR HEAD docs/results/2026-12-05-h200-v29/sm90-raw-readers-arrive.patch "" OFF && stage RR "$W/b_RR"
  mkdir -p .gpu29c
  (cd "$W/stage" && tar cf - libMAIN libGP libRR | xz -T"$(nproc)" -6 --lzma2=preset=6,dict=450MiB > "$ROOT/.gpu29c/libs.tar.xz")
  cp build/ctxattn_gpu_bench .gpu29c/ && xz -T"$(nproc)" -6 -c build/ctxattn_tests > .gpu29c/ctxattn_tests.xz
  du -sh .gpu29c
  exit 0
fi
if [ -f .gpu/libs.tar.xz ] && [[ "$(xz -dc .gpu/libs.tar.xz | tar tf -)" == *libNEW/* ]]; then
  xz -dc .gpu/libs.tar.xz | tar xf - -C "$W/stage" libNEW
else
  build NEW d45b77f "" "" OFF && stage NEW "$W/b_NEW"
fi
stage GA build  # main at 040bd2c when these runs were packed
XQ_BUILD=${XQ_BUILD:-}
if [ -z "$XQ_BUILD" ]; then
  build XQ 040bd2c docs/results/2026-12-05-h200-v29/sm90-xq.patch -DCTXATTN_SM90_OVERLAP_ITEMS ON
  XQ_BUILD="$W/b_XQ"
fi
stage XQ "$XQ_BUILD"
mkdir -p .gpu29
(cd "$W/stage" && tar cf - libNEW libGA libXQ | xz -T"$(nproc)" -6 --lzma2=preset=6,dict=450MiB > "$ROOT/.gpu29/libs.tar.xz")
cp "$XQ_BUILD/ctxattn_gpu_bench" .gpu29/ && xz -T"$(nproc)" -6 -c "$XQ_BUILD/ctxattn_tests" > .gpu29/ctxattn_tests.xz
# run4's variants: GAF, GA4F (v28's patches), FQ (Q by TMA in the e4m3 short form, with tests).
R28=docs/results/2026-12-04-h200-v28
build GAF 040bd2c $R28/sm90-gather-wait-fence.patch "" OFF && stage GAF "$W/b_GAF"
build GA4F 040bd2c "$R28/sm90-gather-four-warps.patch $R28/sm90-gather-wait-fence.patch" "" OFF && stage GA4F "$W/b_GA4F"
build FQ 040bd2c docs/results/2026-12-05-h200-v29/sm90-q-tma-e4m3.patch "" ON && stage FQ "$W/b_FQ"
mkdir -p .gpu29b
(cd "$W/stage" && tar cf - libGAF libGA4F libFQ | xz -T"$(nproc)" -6 --lzma2=preset=6,dict=450MiB > "$ROOT/.gpu29b/libs.tar.xz")
cp "$W/b_FQ/ctxattn_gpu_bench" .gpu29b/ && xz -T"$(nproc)" -6 -c "$W/b_FQ/ctxattn_tests" > .gpu29b/ctxattn_tests.xz
du -sh .gpu29 .gpu29b
