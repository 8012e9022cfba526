#!/bin/bash
# The second call after run5.sh (same carry, .gpu31): the gtest step with sm90 forced, racecheck
# and synccheck on G2 (both walks); then the portable kernel against G2S (or, with VARIANT=G2,
# G2) at pages 1 and 4 on the 16-bit D = 64 / 128 shapes AUTO keeps on the portable kernel
# (core/dispatch.h sm90_takes_small_pages), for the rule's next form. About 6 minutes.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
save() { tar cf $OUT/logs.tar -C /tmp/o .; }
xz -dc .gpu31/libs.tar.xz | tar xf - -C .gpu31
for v in MAIN GI G2 G2S; do
  ln -sf libctxattn.so.0.1.0 .gpu31/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu31/lib$v/libctxattn.so
done
xz -dc .gpu31/ctxattn_tests.xz > .gpu31/ctxattn_tests; chmod +x .gpu31/ctxattn_tests
step unpacked
V=${VARIANT:-G2S}
san() {  # san TOOL VARIANT
  LD_LIBRARY_PATH=.gpu31/lib$2 timeout 60 compute-sanitizer --tool $1 --error-exitcode 1 .gpu31/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*' > /tmp/o/$1-$2.log 2>&1
  echo "rc $?" >> /tmp/o/$1-$2.log; echo "$1 $2: $(tail -2 /tmp/o/$1-$2.log | tr '\n' ' ')"
  save
}
LD_LIBRARY_PATH=.gpu31/libG2 CTXATTN_TEST_BACKEND=cuda_sm90 timeout 120 .gpu31/ctxattn_tests \
  --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-G2.log 2>&1
echo "rc $?" >> /tmp/o/gtest-sm90-G2.log; grep -hE "^\[  (PASSED|FAILED) |^sweep:|^rc" /tmp/o/gtest-sm90-G2.log
save
san racecheck G2
san synccheck G2
step G2-checks
S=long_8k,batch_4k,ragged,chunk_prefix,chunk_long_tp8_batch,batch_1k,short_256,d64.batch_1k,d64.short_256,d64.chunk_long_tp8
LD_LIBRARY_PATH=.gpu31/lib$V timeout 150 .gpu31/ctxattn_gpu_bench $S --backends cuda_portable,cuda_sm90 --pages 1,4 \
  --runs 3 2>/dev/null | grep -v "^device" | tee /tmp/o/bench-small-pages-$V.txt
step done
save
true
