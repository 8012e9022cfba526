"""The offline readers of Nsight Compute output in bench/profiling (no GPU needed): each parses a
small file of the shape ncu writes and must cut and count it as documented."""
import csv
import io
import lzma
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "profiling"))

import ncu_loop_regions  # noqa: E402
import ncu_stalls  # noqa: E402

REASONS = ["stall_wait", "stall_barrier", "stall_selected"]

# A kernel of a prologue, a tile loop with every landmark, and an epilogue:
# (address, source, executions, samples, {reason: samples}).
LOOP = [
    (0x00, "MOV R1, c[0x0][0x28]", 1, 1, {"stall_wait": 1}),
    (0x10, "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R2", 10, 4, {"stall_wait": 4}),
    (0x20, "BAR.SYNC.DEFER_BLOCKING R3, 0x100", 10, 6, {"stall_barrier": 6}),
    (0x30, "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], RZ, !UPT", 10, 2, {"stall_selected": 2}),
    (0x40, "HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24, gsb0", 10, 2, {"stall_selected": 2}),
    (0x50, "BAR.ARV R5, 0x100", 10, 1, {"stall_selected": 1}),
    (0x60, "WARPGROUP.DEPBAR.LE gsb0, 0x1", 10, 8, {"stall_barrier": 8}),
    (0x70, "FMNMX R6, R24, R25, !PT", 10, 3, {"stall_wait": 3}),
    (0x80, "WARPGROUP.DEPBAR.LE gsb0, 0x0", 10, 5, {"stall_barrier": 5}),
    (0x90, "MUFU.EX2 R24, R24", 10, 7, {"stall_wait": 7}),
    (0xA0, "@P1 BRA 0x10", 10, 1, {"stall_selected": 1}),
    (0xB0, "EXIT", 1, 0, {}),
]


def source_csv(path, compress):
    out = io.StringIO()
    out.write('"Kernel Name","attention_kernel"\n')  # ncu's header lines before the table
    w = csv.writer(out, quoting=csv.QUOTE_ALL)
    w.writerow(["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"] + REASONS
               + [r + " (Not Issued)" for r in REASONS])
    for address, source, executed, samples, by in LOOP:
        w.writerow([hex(address), source, samples, executed] + [by.get(r, 0) for r in REASONS] + [0] * len(REASONS))
    data = out.getvalue()
    if compress:
        with lzma.open(path, "wt") as f:
            f.write(data)
    else:
        path.write_text(data)


@pytest.mark.parametrize("compress", [False, True])
def test_loop_regions_cut_the_tile_loop_at_its_landmarks(tmp_path, compress):
    path = tmp_path / ("k.source.csv.xz" if compress else "k.source.csv")
    source_csv(path, compress)
    rows = ncu_loop_regions.load(str(path))
    cuts, tiles, (first, last) = ncu_loop_regions.regions(rows)
    assert tiles == 10
    spans = {name: (a, b) for name, a, b in cuts}
    # Row indices: the loop is rows 1 .. 10 (the branch back to 0x10), the GMMAs rows 3 and 4.
    assert spans == {"top": (1, 2), "issue": (3, 5), "S wait": (6, 6), "P V wait": (7, 8), "softmax": (9, 10)}
    assert (first, last) == (6, 10)


def test_loop_regions_report_counts_samples_by_region(tmp_path, capsys):
    path = tmp_path / "k.source.csv"
    source_csv(path, False)
    ncu_loop_regions.report("k", str(path), 100.0, listing=False)
    out = capsys.readouterr().out
    total = sum(row[3] for row in LOOP)  # 40
    assert f"{total} stall samples" in out
    assert f"{100 * 39 / total:.1f}% in the tile loop" in out  # all but the prologue's one
    softmax = next(line for line in out.splitlines() if line.strip().startswith("softmax"))
    assert "executed a tile    2.0" in softmax
    assert f"samples {100 * 8 / total:5.1f}%" in softmax
    assert "wait 17.5" in softmax  # 7 of 40 samples
    top = next(line for line in out.splitlines() if line.strip().startswith("top"))
    assert "barrier 15.0, wait 10.0" in top


def test_loop_regions_reject_a_kernel_without_gmma(tmp_path):
    path = tmp_path / "k.source.csv"
    path.write_text('"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed"\n'
                    '"0x0","EXIT","0","1"\n')
    with pytest.raises(SystemExit):
        ncu_loop_regions.regions(ncu_loop_regions.load(str(path)))


def test_stalls_reads_the_first_launch_of_a_raw_csv(tmp_path, capsys):
    stall = ncu_stalls.STALL_PREFIX + "%s" + ncu_stalls.STALL_SUFFIX
    header = ["ID", "Kernel Name", "gpu__time_duration.sum", stall % "wait", stall % "barrier"]
    units = ["", "", "nsecond", "", ""]
    first = ["0", "kernel", "847,328", "1.54", "1.04"]
    second = ["1", "kernel", "1", "9", "9"]
    lines = ["==PROF== Connected to process 1"] + [",".join(f'"{x}"' for x in row) for row in (header, units, first, second)]
    path = tmp_path / "a.csv"
    path.write_text("\n".join(lines) + "\n")
    values = ncu_stalls.load(str(path))
    assert ncu_stalls.number(values["gpu__time_duration.sum"]) == 847328.0
    assert ncu_stalls.number(values[stall % "wait"]) == 1.54
    sys.argv = ["ncu_stalls.py", f"A={path}"]
    assert ncu_stalls.main() == 0
    out = capsys.readouterr().out
    assert "wait" in out and "1.540" in out and "1.040" in out and "9.000" not in out
