#!/bin/bash
# v23 run 4: source counters with the stall reasons of each instruction, one long_8k launch at page
# 64 of main's library (tests/gpu/profile_sm90.sh) and of FA3 (fa3-fwd 0.0.3, contiguous KV), for
# an offline map of where a consumer warp's cycles go in the tile loop.
cd "$(dirname "$0")/../../.."
T0=$(date +%s)
mkdir -p /tmp/o
xz -dc .gpu/libs.tar.xz | tar xf - -C .gpu
ln -sf libctxattn.so.0.1.0 .gpu/libMAIN/libctxattn.so.0; ln -sf libctxattn.so.0.1.0 .gpu/libMAIN/libctxattn.so
cp .gpu/ctxattn_gpu_bench .gpu/libMAIN/
step() { echo "$1 $(( $(date +%s)-T0 ))s" | tee -a /tmp/o/steps.txt; }
timeout 200 bash tests/gpu/profile_sm90.sh .gpu/libMAIN /tmp/o/ours long_8k 64 2>&1 | tee /tmp/o/ours-summary.txt
step ours
pip install --no-deps --no-index --target /tmp/fa3 .whl/fa3only/*.whl > /dev/null 2>&1
PYTHONPATH=/tmp/fa3 timeout 200 ncu --clock-control none -k regex:"device_kernel" --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
  --import-source no -f -o /tmp/fa3 python3 docs/results/2026-12-02-h200-v15/run9-fa3_prof.py > /tmp/o/fa3.log 2>&1
echo "fa3 rc $?"
ncu -i /tmp/fa3.ncu-rep --page details > /tmp/o/fa3.txt 2>&1
ncu -i /tmp/fa3.ncu-rep --page source --csv --print-source sass > /tmp/o/fa3.source.csv 2>&1
step fa3
rm -f /tmp/o/ours/*.ncu-rep
head -c 600 /tmp/o/fa3.source.csv | head -3
xz -6 -T8 /tmp/o/ours/*.source.csv /tmp/o/fa3.source.csv
tar cf $OUT/logs.tar -C /tmp/o .
ls -la /tmp/o /tmp/o/ours
true
