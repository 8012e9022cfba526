#!/bin/bash
# Packs what run2.sh carries, on the CPU machine, from the repository root of a checkout of main
# after `make build`: .gpu30/ (git ignores /.gpu*/) with main's stripped library (libMAIN), its
# tests and the tool bench.
#   bash docs/results/2026-12-05-h200-v30/pack.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
ROOT=$PWD
W=${1:-/tmp/v30}
rm -rf "$W/stage" && mkdir -p "$W/stage/libMAIN" .gpu30
strip --strip-unneeded -o "$W/stage/libMAIN/libctxattn.so.0.1.0" build/libctxattn.so.0.1.0
(cd "$W/stage" && tar cf - libMAIN | xz -T"$(nproc)" -6 --lzma2=preset=6,dict=450MiB > "$ROOT/.gpu30/libs.tar.xz")
cp build/ctxattn_gpu_bench .gpu30/ && xz -T"$(nproc)" -6 -c build/ctxattn_tests > .gpu30/ctxattn_tests.xz
du -sh .gpu30
