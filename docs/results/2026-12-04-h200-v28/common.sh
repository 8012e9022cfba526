# What run1.sh and run2.sh share, sourced from the repository root: the log folder and step
# timer, .gpu28/ unpacked, `run1` (the tool bench of one library) and `gt` (a gtest filter on one
# library, its summary lines printed).
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
xz -dc .gpu28/libs.tar.xz | tar xf - -C .gpu28
for v in NEW FIN GA GAF; do ln -sf libctxattn.so.0.1.0 .gpu28/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu28/lib$v/libctxattn.so; done
xz -dc .gpu28/ctxattn_tests.xz > .gpu28/ctxattn_tests; chmod +x .gpu28/ctxattn_tests
run1() {  # run1 VARIANT WORKLOADS PAGES [RUNS] [BACKENDS]
  LD_LIBRARY_PATH=.gpu28/lib$1 timeout 120 .gpu28/ctxattn_gpu_bench $2 --backends ${5:-cuda_sm90} --pages $3 \
    --runs ${4:-5} 2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$1 /" | tee -a /tmp/o/bench.txt
}
gt() {  # gt VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu28/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu28/ctxattn_tests --gtest_filter="$3" \
    > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log
  grep -hE "^\[  (PASSED|FAILED) |^\[  FAILED|^sweep:|^rc" /tmp/o/gtest-$2-$1.log | sed "s/^/$1 $2: /"
}
