#!/bin/bash
# Not run yet: the A/B planned for sm90-inner-loop.patch (docs/perf-notes.md "sm90 v22", last
# paragraphs). Expects .gpu/libs.tar.xz holding libMAIN/ and libINNER/ (main's build and the build of
# main with the patch applied), .gpu/ctxattn_gpu_bench and .gpu/ctxattn_tests.xz, as the run scripts
# beside it. Correctness first (the sweep covers windows and lying metadata, where the three loops'
# bounds matter), then the timings in rotating order; every log goes back in one tar file (a run
# returns at most eight files).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in MAIN INNER; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 60 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
export LD_LIBRARY_PATH=$PWD/.gpu/libINNER
CTXATTN_TEST_BACKEND=cuda_sm90 timeout 150 .gpu/ctxattn_tests --gtest_filter='CudaPortable*:CudaReliability*:CudaSplit*' > /tmp/o/gtest-sm90-INNER.log 2>&1; echo "rc $?" >> /tmp/o/gtest-sm90-INNER.log
timeout 120 .gpu/ctxattn_tests --gtest_filter='CudaSm90*:Sm90*' > /tmp/o/gtest-edges-INNER.log 2>&1; echo "rc $?" >> /tmp/o/gtest-edges-INNER.log
grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-*-INNER.log
CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 70 compute-sanitizer --tool racecheck --error-exitcode 1 .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSplit.ShortChunks*' > /tmp/o/racecheck-INNER.log 2>&1; echo "rc $?" >> /tmp/o/racecheck-INNER.log
tail -2 /tmp/o/racecheck-INNER.log
unset LD_LIBRARY_PATH
step tests
for v in MAIN INNER INNER MAIN; do run1 $v long_8k,fp8.long_8k,d256 64,16; done
for v in MAIN INNER INNER MAIN; do run1 $v chunk_long_tp8,fp8.d256,batch_1k,short_256,d64 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
true
