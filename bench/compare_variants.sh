#!/usr/bin/env bash
# Several builds of the library against a baseline in one GPU call: each build's GPU tests (and
# memcheck) first, a failing build is not timed; then ctxattn_gpu_bench in rounds, every round
# running each build once in a shuffled order on the same workloads, so that clock drift and the
# order hit all alike; then the medians and the median per-round ratio to the baseline.
#
#   bench/compare_variants.sh OUT_DIR WORKLOADS NAME=DIR [NAME=DIR ...]
#
# The first NAME=DIR is the baseline. Each DIR holds libctxattn.so (+ .so.0) of one build, and
# ctxattn_tests and ctxattn_gpu_bench where it has its own (a library from bench/variant_build.sh
# has none: the first DIR's are used, which load whichever library LD_LIBRARY_PATH names).
# WORKLOADS: a comma list of ctxattn_gpu_bench workloads.
# Environment (defaults): TESTS (none) a gtest filter run on every build first; MEMCHECK (none) a
# gtest filter run under compute-sanitizer memcheck on every build; ROUNDS (2); PAGES (64);
# RUNS (5, ctxattn_gpu_bench --runs); BACKEND (cuda_sm90); LIMIT (540 s: no round starts that
# the last one's time says would end past it). Writes OUT_DIR/bench.txt (every bench line,
# prefixed by build and round), OUT_DIR/tests.txt and OUT_DIR/summary.txt
# (bench/variants_summary.py). Exit status: the number of builds that failed a step.
set -u
OUT=${1:?out dir}
WORKLOADS=${2:?workloads}
shift 2
[ "$#" -ge 1 ] || { echo "give at least one NAME=DIR"; exit 2; }
ROUNDS=${ROUNDS:-2}
PAGES=${PAGES:-64}
RUNS=${RUNS:-5}
BACKEND=${BACKEND:-cuda_sm90}
LIMIT=${LIMIT:-540}
HERE=$(cd "$(dirname "$0")" && pwd)
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
mkdir -p "$OUT"
: > "$OUT/bench.txt"
: > "$OUT/tests.txt"

names=()
declare -A dir_of
for arg in "$@"; do
  name=${arg%%=*}
  dir=${arg#*=}
  if [ "$name" = "$arg" ] || [ ! -f "$dir/libctxattn.so" ]; then
    echo "not NAME=DIR with a libctxattn.so: $arg"
    exit 2
  fi
  names+=("$name")
  dir_of[$name]=$(cd "$dir" && pwd)
done
base=${names[0]}
binary() {  # build, program: the build's own program, else the baseline's
  local own="${dir_of[$1]}/$2"
  [ -x "$own" ] && echo "$own" || echo "${dir_of[$base]}/$2"
}

nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader 2>/dev/null | tee -a "$OUT/bench.txt"
failed=0
timed=()
for name in "${names[@]}"; do
  ok=1
  if [ -n "${TESTS:-}" ]; then
    LD_LIBRARY_PATH="${dir_of[$name]}" CTXATTN_TEST_BACKEND="$BACKEND" timeout 300 "$(binary "$name" ctxattn_tests)" \
      --gtest_filter="$TESTS" > "$OUT/gtest-$name.log" 2>&1
    status=$?
    echo "$name tests rc $status: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]' "$OUT/gtest-$name.log" | tr '\n' ' ')" |
      tee -a "$OUT/tests.txt"
    [ "$status" -eq 0 ] || ok=0
  fi
  if [ "$ok" -eq 1 ] && [ -n "${MEMCHECK:-}" ]; then
    LD_LIBRARY_PATH="${dir_of[$name]}" CTXATTN_TEST_BACKEND="$BACKEND" timeout 300 compute-sanitizer --tool memcheck \
      --error-exitcode 1 "$(binary "$name" ctxattn_tests)" --gtest_filter="$MEMCHECK" > "$OUT/memcheck-$name.log" 2>&1
    status=$?
    echo "$name memcheck rc $status: $(grep -E 'ERROR SUMMARY' "$OUT/memcheck-$name.log" | tail -1)" | tee -a "$OUT/tests.txt"
    [ "$status" -eq 0 ] || ok=0
  fi
  if [ "$ok" -eq 1 ]; then timed+=("$name"); else failed=$((failed + 1)); fi
done
echo "tests done [$(elapsed) s]"

last=0
for round in $(seq 1 "$ROUNDS"); do
  if [ "$round" -gt 1 ] && [ $(( $(elapsed) + last )) -gt "$LIMIT" ]; then
    echo "round $round not started: the last took $last s, $(elapsed) s of $LIMIT spent" | tee -a "$OUT/bench.txt"
    break
  fi
  round_start=$(date +%s)
  for name in $(printf '%s\n' "${timed[@]}" | shuf); do
    LD_LIBRARY_PATH="${dir_of[$name]}" timeout 300 "$(binary "$name" ctxattn_gpu_bench)" "$WORKLOADS" \
      --backends "$BACKEND" --pages "$PAGES" --runs "$RUNS" 2>&1 |
      grep -E "^[A-Za-z0-9_.]+ +[0-9]+ +$BACKEND " | sed "s/^/$name r$round /" | tee -a "$OUT/bench.txt"
  done
  last=$(( $(date +%s) - round_start ))
done
python3 "$HERE/variants_summary.py" "$OUT/bench.txt" --base "$base" | tee "$OUT/summary.txt"
echo "done [$(elapsed) s]"
exit "$failed"
