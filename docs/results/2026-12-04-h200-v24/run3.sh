#!/bin/bash
# v24 run 3: PR2 (as PR, but the probes of the next K and V stages taken right after S lands, before
# the P V wait, where the warps would wait anyway; all fifteen sm90 units) against MAIN: sm90 gtest
# step, sm90 edge and torture tests, memcheck, racecheck and synccheck on the reduced sweep; the
# timeline of PR2 (TLPR2: bf16 and e4m3 D = 128 units); ctxattn_gpu_bench in rotating order.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN PR2 TLPR2; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$4 timeout 200 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step start
gt PR2 sm90 'CudaPortable*:CudaReliability*:CudaSplit*' cuda_sm90
gt PR2 edges 'CudaSm90*:Sm90*:CudaTorture*'
step tests
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu/libPR2 CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 90 compute-sanitizer --tool $t --error-exitcode 1 \
    .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaPortable.LyingMetadata*:CudaSplit.ShortChunks*' > /tmp/o/$t-PR2.log 2>&1
  echo "rc $?" >> /tmp/o/$t-PR2.log; echo "$t: $(tail -2 /tmp/o/$t-PR2.log | tr '\n' ' ')"
done
step sanitizers
for pg in 64 16; do for w in long_8k fp8.long_8k; do
  LD_LIBRARY_PATH=.gpu/libTLPR2 timeout 60 .gpu/ctxattn_gpu_bench $w --backends cuda_sm90 --pages $pg --runs 3 > /tmp/o/tl-TLPR2-$w-p$pg.out 2> /tmp/o/tl-TLPR2-$w-p$pg.txt
  echo "TLPR2 $w p$pg: $(grep -c '^timeline' /tmp/o/tl-TLPR2-$w-p$pg.txt) lines, $(tail -1 /tmp/o/tl-TLPR2-$w-p$pg.out)"
done; done
step timeline
W=long_8k,fp8.long_8k,chunk_long_tp8,d64,batch_1k,short_256
for v in MAIN PR2 PR2 MAIN; do run1 $v $W 64,16; done
for v in MAIN PR2; do run1 $v chunk_prefix,d256,kv8.long_8k,fp8.batch_1k,fp8out.long_8k 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
