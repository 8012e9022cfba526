# Sourced by run7.sh and run7b.sh from the repository root: the log folder, step / save, the
# unpacked .gpu32/ (pack7.sh: libMAIN and one library a variant), `edges VARIANT FILTER LIMIT`
# (gtest on a variant's library) and `san TOOL VARIANT` (compute-sanitizer on the small-page and
# Q-by-TMA tests, sm90 forced).
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
save() { tar cf $OUT/logs.tar -C /tmp/o .; }
[ -d .gpu32/libMAIN ] || xz -dc .gpu32/libs.tar.xz | tar xf - -C .gpu32
for d in .gpu32/lib*/; do
  ln -sf libctxattn.so.0.1.0 $d/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 $d/libctxattn.so
done
[ -x .gpu32/ctxattn_tests ] || { xz -dc .gpu32/ctxattn_tests.xz > .gpu32/ctxattn_tests; chmod +x .gpu32/ctxattn_tests; }
edges() {  # edges VARIANT NAME FILTER LIMIT [backend]
  LD_LIBRARY_PATH=$PWD/.gpu32/lib$1 CTXATTN_TEST_BACKEND=$5 timeout $4 .gpu32/ctxattn_tests --gtest_filter="$3" \
    > /tmp/o/gtest-$2-$1.log 2>&1
  echo "rc $?" >> /tmp/o/gtest-$2-$1.log
  echo "$1 $2: $(grep -hE "^\[  (PASSED|FAILED) |^sweep:|^rc" /tmp/o/gtest-$2-$1.log | tr '\n' ' ')"
}
san() {
  LD_LIBRARY_PATH=$PWD/.gpu32/lib$2 CTXATTN_TEST_BACKEND=cuda_sm90 CTXATTN_GPU_SWEEP=4:small timeout 80 \
    compute-sanitizer --tool $1 --error-exitcode 1 .gpu32/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*:CudaPortable.RandomSweep*:CudaSm90.QueriesByTma*' > /tmp/o/$1-$2.log 2>&1
  echo "rc $?" >> /tmp/o/$1-$2.log; echo "$1 $2: $(tail -2 /tmp/o/$1-$2.log | tr '\n' ' ')"
  save
}
bench() {  # bench TAG WORKLOADS PAGES VARIANT... : one round over the variants, appended to bench-TAG.txt
  local tag=$1 w=$2 pg=$3; shift 3
  for v in "$@"; do
    LD_LIBRARY_PATH=$PWD/.gpu32/lib$v timeout 90 .gpu32/ctxattn_gpu_bench $w --backends cuda_sm90 --pages $pg --runs 3 \
      2>/dev/null | grep -v "^device\|^workload" | sed "s/^/$v /" | tee -a /tmp/o/bench-$tag.txt
  done
}
step unpacked
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee /tmp/o/gpu.txt
