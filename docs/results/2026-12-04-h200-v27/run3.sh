#!/bin/bash
# Session v27 run 3 (prepared; no GPU was lent after run 2): FIN = the merged form (Q by TMA in
# the 16-bit D = 128 kernel of short requests only; SW: calls that may split take the scheduler
# at every page size). The GPU tests (with the Q-by-TMA test), the sanitizers, the tool bench
# NEW / FIN rotating, the harness against cuDNN SDPA and cuDNN paged, an ncu profile of
# short_256 on FIN. Expects .gpu/libs.tar.xz (libNEW/ = main at d45b77f, libFIN/),
# .gpu/ctxattn_gpu_bench and .gpu/ctxattn_tests.xz from FIN's build, .whl/cudnn (README.md).
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
for v in NEW FIN; do ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/lib$v/libctxattn.so; done
xz -dc .gpu/ctxattn_tests.xz > .gpu/ctxattn_tests; chmod +x .gpu/ctxattn_tests
run1() { LD_LIBRARY_PATH=.gpu/lib$1 timeout 90 .gpu/ctxattn_gpu_bench $2 --backends cuda_sm90 --pages $3 --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt; }
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu/ctxattn_tests --gtest_filter="$3" > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log; grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
step unpacked
gt FIN sm90 'CudaPortable*:CudaReliability*:CudaSplit*' 150 cuda_sm90
gt FIN edges 'CudaSm90*:Sm90*' 120
step tests
for t in memcheck racecheck synccheck; do
  LD_LIBRARY_PATH=$PWD/.gpu/libFIN CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 80 compute-sanitizer --tool $t --error-exitcode 1 \
    .gpu/ctxattn_tests --gtest_filter='CudaPortable.RandomSweep*:CudaSm90.QueriesByTma*:CudaSm90.PersistentGrid*' > /tmp/o/$t-FIN.log 2>&1
  echo "rc $?" >> /tmp/o/$t-FIN.log; echo "$t: $(tail -2 /tmp/o/$t-FIN.log | tr '\n' ' ')"
done
step sanitizers
tar cf $OUT/logs.tar -C /tmp/o .
W=short_256,batch_1k,chunk_prefix,long_8k,batch_4k,d256,d64,d64_sinks_swa,fp8.d64,chunk_long_tp8,d64.short_256,d64.batch_1k
for v in NEW FIN FIN NEW; do run1 $v $W 64,16; done
step bench
tar cf $OUT/logs.tar -C /tmp/o .
WHEELS=.whl/cudnn BENCH_LIBRARY=$PWD/.gpu/libFIN/libctxattn.so BENCH_BUDGET_S=200 OUT=/tmp/h \
  bash bench/gpu_run.sh run -w short_256,batch_1k,d64_sinks_swa,d64_sinks \
  --page-size 64,16 --impl ctxattn,cudnn_sdpa,cudnn_paged > /tmp/h.log 2>&1
echo "harness rc $?" >> /tmp/o/steps.txt
cp /tmp/h/bench/results.csv /tmp/o/harness.csv; grep -v "^\s*$" /tmp/h.log > /tmp/o/harness.log
grep -E "^\[|ctxattn |cudnn" /tmp/o/harness.log | head -60
step harness
tar cf $OUT/logs.tar -C /tmp/o .
cp .gpu/ctxattn_gpu_bench .gpu/libFIN/  # profile_sm90.sh wants the bench beside the library
bash tests/gpu/profile_sm90.sh .gpu/libFIN /tmp/o/ncu-FIN short_256 64 2>&1 | tee /tmp/o/ncu-FIN-summary.txt
rm -f /tmp/o/ncu-FIN/*.ncu-rep
step ncu
tar cf $OUT/logs.tar -C /tmp/o .
true
