#!/bin/bash
# Not run yet: the register-stamp timeline (sm90-timeline2.patch, perf notes "sm90 v23" item 8).
# Expects .gpu/libs.tar.xz holding libMAIN/ (main's build) and libTL2/ (main's build with the bf16
# and e4m3 D = 128 units rebuilt from main + the patch with -DCTXATTN_SM90_TIMELINE=1), and
# .gpu/ctxattn_gpu_bench. First the perturbation (MAIN and TL2 timed alike), then the timeline
# lines (stderr) of one call each of long_8k and fp8.long_8k at pages 64 and 16.
cd "$(dirname "$0")/../../.."
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN TL2; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
for v in MAIN TL2 TL2 MAIN; do
  LD_LIBRARY_PATH=.gpu/lib$v timeout 60 .gpu/ctxattn_gpu_bench long_8k,fp8.long_8k --backends cuda_sm90 --pages 64,16 --runs 5 2> /dev/null \
    | grep -v "^device\|^workload" | sed "s/^/$v /" | tee -a /tmp/o/bench.txt
done
for w in long_8k fp8.long_8k; do for pg in 64 16; do
  LD_LIBRARY_PATH=.gpu/libTL2 timeout 60 .gpu/ctxattn_gpu_bench $w --backends cuda_sm90 --pages $pg --runs 1 \
    > /tmp/o/tl-$w-p$pg.out 2> /tmp/o/tl-$w-p$pg.txt
  echo "$w p$pg: $(grep -c '^timeline' /tmp/o/tl-$w-p$pg.txt) lines"
done; done
xz -6 /tmp/o/tl-*.txt
tar cf $OUT/logs.tar -C /tmp/o .
true
