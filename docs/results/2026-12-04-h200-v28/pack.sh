#!/bin/bash
# Packs what run1.sh, run2.sh and run3.sh carry, on the CPU machine, from the repository root of
# a checkout of main after `make build` (GA = main with the small-page gather, 043be83 or later,
# built in build/). NEW (d45b77f) and FIN (5d25fb9) come from v27's pack (.gpu/libs.tar.xz) when it
# is still there, else they are built (about 5 minutes each on 2 cores).
#   bash docs/results/2026-12-04-h200-v28/pack.sh [WORK_DIR]
# GAF = GA with sm90-gather-wait-fence.patch (about 5 minutes more).
# Writes .gpu28/ (libs.tar.xz: libNEW, libFIN, libGA, libGAF; the bench and test binaries of GA's build)
# and .gpu28b/ (libGA.xz and the test binary); git ignores /.gpu*/, so each can be carried.
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v28}
mkdir -p "$W/stage"
cutlass="$ROOT/.deps/cutlass-4.2.0.0/include"
[ -d "$cutlass" ] || { echo "run make build first (CUTLASS headers under .deps/)"; exit 1; }
stage() {  # stage NAME BUILD_DIR: the stripped library under $W/stage/libNAME/
  mkdir -p "$W/stage/lib$1"
  strip --strip-unneeded -o "$W/stage/lib$1/libctxattn.so.0.1.0" "$2/libctxattn.so.0.1.0"
}
build() {  # build NAME REV [PATCH]: the library of REV (with PATCH applied), without tests and tools
  rm -rf "$W/src_$1"
  git worktree add -f --detach "$W/src_$1" "$2" > /dev/null
  if [ -n "${3:-}" ]; then git -C "$W/src_$1" apply "$ROOT/$3"; fi
  cmake -S "$W/src_$1" -B "$W/b_$1" -DCMAKE_BUILD_TYPE=Release -DCTXATTN_CUTLASS_INCLUDE="$cutlass" \
    -DCTXATTN_BUILD_TESTS=OFF -DCTXATTN_BUILD_TOOLS=OFF > "$W/b_$1.cfg" 2>&1
  cmake --build "$W/b_$1" -j"$(nproc)" > "$W/b_$1.log" 2>&1
  stage "$1" "$W/b_$1"
}
if [ -f .gpu/libs.tar.xz ] && [[ "$(xz -dc .gpu/libs.tar.xz | tar tf -)" == *libFIN/* ]]; then
  xz -dc .gpu/libs.tar.xz | tar xf - -C "$W/stage" libNEW libFIN
else
  build NEW d45b77f
  build FIN 5d25fb9
fi
stage GA build
build GAF HEAD docs/results/2026-12-04-h200-v28/sm90-gather-wait-fence.patch
mkdir -p .gpu28 .gpu28b
(cd "$W/stage" && tar cf - libNEW libFIN libGA libGAF | xz -T"$(nproc)" -6 --lzma2=preset=6,dict=450MiB > "$ROOT/.gpu28/libs.tar.xz")
cp build/ctxattn_gpu_bench .gpu28/ && xz -T"$(nproc)" -6 -c build/ctxattn_tests > .gpu28/ctxattn_tests.xz
xz -T"$(nproc)" -6 -c "$W/stage/libGA/libctxattn.so.0.1.0" > .gpu28b/libGA.xz && cp .gpu28/ctxattn_tests.xz .gpu28b/
du -sh .gpu28 .gpu28b
