"""bench/compare_variants.sh and its table (bench/variants_summary.py), without a GPU: the table's
medians and per-round ratios on a hand-made bench.txt, and the script end to end over stand-in
programs that print ctxattn_gpu_bench's lines (each build's time set by its library's name)."""
import os
import stat
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "bench"))

import variants_summary  # noqa: E402

BENCH = """NVIDIA H100 80GB HBM3, 700.00 W, 1980 MHz
main r1 d512              64 cuda_sm90          2346.0     468.0      0.0039
v49 r1 d512              64 cuda_sm90          2100.0     522.8      0.0039
main r1 long_8k           64 cuda_sm90           900.0     611.0      0.0020
v49 r1 long_8k           64 cuda_sm90           909.0     605.0      0.0020
v49 r2 d512              64 cuda_sm90          2080.0     527.8      0.0039
main r2 d512              64 cuda_sm90          2360.0     465.2      0.0039
v49 r2 long_8k           64 cuda_sm90           891.0     617.2      0.0020
round 3 not started: the last took 40 s, 530 s of 540 spent
"""


def test_the_table_takes_medians_and_per_round_ratios():
    rows = variants_summary.parse(BENCH.splitlines())
    assert len(rows) == 7
    table = {(w, p, b): (med, tf, ratio, n) for w, p, b, med, tf, ratio, n in variants_summary.summarize(rows)}
    med, tflops, ratio, n = table[("d512", 64, "v49")]
    assert med == pytest.approx(2090.0)
    assert n == 2
    # rounds 1 and 2: 2100 / 2346 and 2080 / 2360; the median of two is their mean
    assert ratio == pytest.approx((2100 / 2346 + 2080 / 2360) / 2)
    assert tflops == pytest.approx(2346 * 468.0 / 2090.0, rel=1e-3)
    assert table[("d512", 64, "main")][2] == pytest.approx(1.0)
    # long_8k: the baseline ran in round 1 only, so v49 has one ratio (round 2 has no baseline)
    assert table[("long_8k", 64, "v49")][2] == pytest.approx(909.0 / 900.0)
    assert table[("long_8k", 64, "v49")][3] == 2


def test_the_baseline_can_be_named():
    rows = variants_summary.parse(BENCH.splitlines())
    table = {(w, p, b): ratio for w, p, b, _, _, ratio, _ in variants_summary.summarize(rows, base="v49")}
    assert table[("d512", 64, "v49")] == pytest.approx(1.0)
    assert table[("d512", 64, "main")] == pytest.approx((2346 / 2100 + 2360 / 2080) / 2)


FAKE_BENCH = """#!/usr/bin/env bash
# Stands in for ctxattn_gpu_bench: its time is set by the library LD_LIBRARY_PATH names.
us=$(cat "${LD_LIBRARY_PATH}/us")
echo "device: stand-in, 132 SMs"
printf '%-16s %5s %-14s %10s %9s %12s\\n' workload page backend us TFLOP/s 'max|diff|'
IFS=, read -ra ws <<< "$1"
for w in "${ws[@]}"; do printf '%-16s %5d %-14s %10.1f %9.1f %12.3g\\n' "$w" 64 cuda_sm90 "$us" 100.0 0.001; done
"""

FAKE_TESTS = """#!/usr/bin/env bash
# Stands in for ctxattn_tests: fails where the library's folder holds a file named fail.
if [ -f "${LD_LIBRARY_PATH}/fail" ]; then echo "[  FAILED  ] 1 test"; exit 1; fi
echo "[  PASSED  ] 3 tests."
"""


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


@pytest.mark.skipif(subprocess.run(["which", "shuf"], capture_output=True).returncode != 0, reason="no shuf")
def test_the_script_times_every_build_that_passes_its_tests(tmp_path):
    builds = {"main": 1000.0, "fast": 900.0, "broken": 500.0}
    for name, us in builds.items():
        d = tmp_path / name
        d.mkdir()
        (d / "libctxattn.so").write_text("")
        (d / "us").write_text(str(us))
    (tmp_path / "broken" / "fail").write_text("")
    executable(tmp_path / "main" / "ctxattn_gpu_bench", FAKE_BENCH)
    executable(tmp_path / "main" / "ctxattn_tests", FAKE_TESTS)
    out = tmp_path / "out"
    env = dict(os.environ, TESTS="CudaSm90.*", ROUNDS="3")
    result = subprocess.run(
        ["bash", os.path.join(ROOT, "bench", "compare_variants.sh"), str(out), "d512,long_8k"]
        + [f"{n}={tmp_path / n}" for n in builds],
        capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 1, result.stdout + result.stderr  # one build failed its tests
    tests = (out / "tests.txt").read_text()
    assert "main tests rc 0" in tests and "broken tests rc 1" in tests
    lines = [l for l in (out / "bench.txt").read_text().splitlines() if " cuda_sm90 " in l]
    assert len(lines) == 2 * 2 * 3  # two builds, two workloads, three rounds
    assert not any(l.startswith("broken ") for l in lines)
    table = {(w, b): ratio for w, _, b, _, _, ratio, _ in
             variants_summary.summarize(variants_summary.parse(lines), base="main")}
    assert table[("d512", "fast")] == pytest.approx(0.9)
    assert table[("long_8k", "main")] == pytest.approx(1.0)
    assert "fast" in (out / "summary.txt").read_text()
