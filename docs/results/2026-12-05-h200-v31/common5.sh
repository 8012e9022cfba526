# Sourced by run5.sh and run5b.sh from the repository root: the log folder, step / save, the
# unpacked .gpu31/ (pack5.sh) and `san TOOL VARIANT` (compute-sanitizer on the small-page test).
T0=$(date +%s)
rm -rf /tmp/o; mkdir -p /tmp/o
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
save() { tar cf $OUT/logs.tar -C /tmp/o .; }
san() {
  LD_LIBRARY_PATH=.gpu31/lib$2 timeout 60 compute-sanitizer --tool $1 --error-exitcode 1 .gpu31/ctxattn_tests \
    --gtest_filter='CudaSm90.SmallPages*' > /tmp/o/$1-$2.log 2>&1
  echo "rc $?" >> /tmp/o/$1-$2.log; echo "$1 $2: $(tail -2 /tmp/o/$1-$2.log | tr '\n' ' ')"
  save
}
xz -dc .gpu31/libs.tar.xz | tar xf - -C .gpu31
for v in MAIN GI G2 G2S; do
  ln -sf libctxattn.so.0.1.0 .gpu31/lib$v/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu31/lib$v/libctxattn.so
done
xz -dc .gpu31/ctxattn_tests.xz > .gpu31/ctxattn_tests; chmod +x .gpu31/ctxattn_tests
step unpacked
