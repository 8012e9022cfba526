"""python -m bench: ctxattn against its peers on the standard suite, in one run.

See docs/benchmarks.md for the method, the columns and the commands that reproduce published
numbers.
"""

import argparse
import math
import os
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _csv(text):
    return [t for t in (s.strip() for s in text.split(",")) if t]


def parse_args(argv):
    from bench.peers import all_peer_names
    from bench.workloads import WORKLOAD_NAMES

    names = all_peer_names()
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Time ctxattn and its peers on the standard suite (shared/BENCH.md) after checking "
                    "each against a float64 reference; print a table and write results.csv, "
                    "results.json and results.png to --out.",
        epilog=f"workloads: {', '.join(WORKLOAD_NAMES)}. implementations on cuda: {names['cuda']}; "
               f"on cpu: {names['cpu']}.")
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="cuda: the suite at its true size; cpu: the same names at 2-core sizes "
                        "(default: cuda when available)")
    p.add_argument("-w", "--workloads", type=_csv, default=None, metavar="A,B",
                   help="workload names (default: all)")
    p.add_argument("--dtype", type=_csv, default=["bf16"], metavar="bf16,fp16",
                   help="16-bit dtype(s) of the run; fp8 workloads keep e4m3 inputs and use it for output")
    p.add_argument("--page-size", type=lambda s: [int(x) for x in _csv(s)], default=None, metavar="64,16",
                   help="page sizes (default: each workload's own, 64 and 16; page1 always uses 1)")
    p.add_argument("--impl", type=_csv, default=None, metavar="A,B",
                   help="implementations to run (default: all for the device)")
    p.add_argument("--out", default=None, help="output folder (default: bench-out/<device>)")
    p.add_argument("--dry-run", action="store_true",
                   help="on the CPU: build every selected GPU-suite workload shrunk by --shrink, check "
                        "the CPU implementations on it, report which GPU peers import; no GPU needed")
    p.add_argument("--shrink", type=int, default=64, help="length divisor of --dry-run (default 64)")
    p.add_argument("--list", action="store_true",
                   help="print the selected cases (true GPU sizes, or the CPU suite's with --device cpu) "
                        "and implementations, then exit without building or running anything")
    p.add_argument("--checks-only", action="store_true",
                   help="run the reference checks (and so FlashInfer's JIT builds) without timing")
    p.add_argument("--no-check", action="store_true", help="time without the reference checks")
    p.add_argument("--quick", action="store_true", help="few timing iterations (a smoke test, not numbers)")
    p.add_argument("--deadline-s", type=float, default=None,
                   help="start no new case after this many seconds; the rest are reported as skipped")
    p.add_argument("--threads", type=int, default=None,
                   help="CPU threads for every implementation (default: all cores)")
    p.add_argument("--rounds", type=int, default=1,
                   help="interleaved rounds (BENCH.md's method; 5 or more for figures that count): each "
                        "case's implementations are timed once a round in a shuffled order, and the "
                        "ratio against the best peer is the median of the per-round ratios")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--library", default=None, help="path of libctxattn.so (sets CTXATTN_LIBRARY)")
    p.add_argument("--flashinfer-cache", default=None,
                   help="FlashInfer JIT cache folder (sets FLASHINFER_WORKSPACE_BASE; "
                        "default: $FLASHINFER_WORKSPACE_BASE, else bench-out/flashinfer-cache)")
    return p.parse_args(argv)


def setup_environment(args, device):
    """Variables read at import time by ctxattn and FlashInfer; set before either is imported."""
    if args.library:
        os.environ["CTXATTN_LIBRARY"] = os.path.abspath(args.library)
    try:
        import ctxattn  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(REPO, "python"))
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
        os.environ["CTXATTN_NUM_THREADS"] = str(args.threads)
    if device.type == "cuda":
        import torch

        cache = args.flashinfer_cache or os.environ.get("FLASHINFER_WORKSPACE_BASE") or \
            os.path.join(REPO, "bench-out", "flashinfer-cache")
        os.makedirs(cache, exist_ok=True)
        os.environ["FLASHINFER_WORKSPACE_BASE"] = os.path.abspath(cache)
        major, minor = torch.cuda.get_device_capability(device)
        os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", f"{major}.{minor}{'a' if major >= 9 else ''}")


def select(args, device):
    from bench.workloads import cpu_suite, gpu_suite, select_cases, shrink

    if args.dry_run:
        suite = [shrink(w, args.shrink) for w in gpu_suite()]
    else:
        suite = gpu_suite() if device.type == "cuda" else cpu_suite()
    return select_cases(suite, args.workloads, args.dtype, args.page_size)


def true_sizes(args, suite=None, title="# true sizes of the selected cases (built on CUDA only):"):
    """Lines naming each selected case at its true GPU size (or in `suite`), for a dry run to show."""
    from bench.workloads import gpu_suite, select_cases

    lines = [title]
    for c in select_cases(suite or gpu_suite(), args.workloads, args.dtype, args.page_size):
        w = c.workload
        lines.append(f"#   {c.id:<40} batch {w.batch_size:>3}  q {sum(w.q_lens):>7}  kv {sum(w.kv_lens):>7}  "
                     f"{c.flops() / 1e9:>10.1f} GFLOP")
    return "\n".join(lines)


def measure_ceilings(timer, device, cases, quick):
    from bench.timing import gemm_ceiling

    wanted = {c.dtype for c in cases}
    if device.type == "cuda":
        wanted |= {"fp8" for c in cases if c.in_dtype == "fp8"}
    else:
        wanted.add("fp32")
    ceilings = {}
    for key in sorted(wanted):
        if quick:
            continue
        try:
            ceilings[key] = gemm_ceiling(timer, device, key)
        except Exception as e:
            print(f"# ceiling {key}: not measured ({type(e).__name__}: {e})")
    return ceilings


def summary(rows):
    """One line per ctxattn variant: geometric mean, minimum and maximum of vs_best."""
    from bench.runner import is_ctxattn

    lines = []
    for impl in dict.fromkeys(r["impl"] for r in rows if is_ctxattn(r["impl"])):
        ratios = [r["vs_best"] for r in rows if r["impl"] == impl and "vs_best" in r]
        if ratios:
            geo = math.exp(sum(math.log(x) for x in ratios) / len(ratios))
            lines.append(f"{impl} vs best peer over {len(ratios)} cases: geomean {geo:.2f}x, "
                         f"min {min(ratios):.2f}x, max {max(ratios):.2f}x (>1: {impl} faster)")
    return "\n".join(lines) or "no case has both ctxattn and a peer timed"


def list_selection(args):
    """--list: the cases and implementations a run with these arguments would cover."""
    from bench.peers import make_peers
    from bench.workloads import cpu_suite

    device_type = "cpu" if args.device == "cpu" else "cuda"
    suite = cpu_suite() if device_type == "cpu" else None
    try:
        print(true_sizes(args, suite, f"# cases ({'CPU suite' if suite else 'true GPU sizes'}):"))
        impls = make_peers(device_type, args.impl)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"# implementations on {device_type}: {', '.join(p.name for p in impls)}")
    return 0


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.list:
        return list_selection(args)
    import torch

    if args.dry_run or args.device == "cpu" or (args.device == "auto" and not torch.cuda.is_available()):
        device = torch.device("cpu")
    else:
        device = torch.device("cuda", torch.cuda.current_device() if torch.cuda.is_available() else 0)
        if not torch.cuda.is_available():
            print("error: --device cuda but torch sees no CUDA device", file=sys.stderr)
            return 2
    setup_environment(args, device)

    from bench import envinfo, report
    from bench.peers import make_peers
    from bench.runner import Runner
    from bench.timing import make_timer

    try:
        cases = select(args, device)
        peers = make_peers(device.type, args.impl)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    out = args.out or os.path.join(REPO, "bench-out", "dry-run" if args.dry_run else device.type)
    os.makedirs(out, exist_ok=True)

    info = envinfo.collect(device, argv)
    if args.dry_run:
        info["mode"] = (f"dry run: GPU-suite shapes with lengths divided by {args.shrink}, built on the "
                        "CPU; CPU implementations checked and timed briefly (not numbers)")
        info["gpu_peers"] = {p.name: (p.available() or "importable") for p in make_peers("cuda")
                             if p.name != "ctxattn"}
    elif device.type == "cpu":
        info["mode"] = ("CPU suite (BENCH.md names at 2-core sizes). ctxattn takes no fp32 inputs: it "
                        "runs the case's 16-bit dtype (fp8 cases: e4m3); torch_sdpa runs the same 16-bit "
                        "values, torch_sdpa_fp32 the same values upcast to fp32")
    timer = make_timer(device, quick=args.quick or args.dry_run)
    ceilings = measure_ceilings(timer, device, cases, args.quick or args.dry_run)
    print(report.format_header(info, ceilings), flush=True)
    if args.dry_run:
        print(true_sizes(args), flush=True)

    csv_path, json_path = os.path.join(out, "results.csv"), os.path.join(out, "results.json")

    def on_case_done(case, case_rows, all_rows):
        print(report.format_case(case_rows), flush=True)
        report.write_csv(csv_path, all_rows)
        report.write_json(json_path, info, ceilings, all_rows)

    deadline = time.monotonic() + args.deadline_s if args.deadline_s else None
    runner = Runner(device, peers, timer, {k: v[0] for k, v in ceilings.items()}, seed=args.seed,
                    check=not args.no_check, time_calls=not args.checks_only,
                    true_size=device.type == "cuda", deadline=deadline, on_case_done=on_case_done,
                    log=lambda msg: print(msg, file=sys.stderr, flush=True), rounds=args.rounds)
    unavailable = {k: v for k, v in runner.availability.items() if v}
    for name, reason in unavailable.items():
        print(f"# {name}: {reason}", flush=True)
    rows = runner.run(cases)

    if device.type == "cuda":
        info["gpu_at_end"] = envinfo.gpu_state()
    report.write_csv(csv_path, rows)
    report.write_json(json_path, info, ceilings, rows)
    why_not = report.write_plot(os.path.join(out, "results.png"), info, ceilings, rows)
    print(summary(rows))
    print(why_not or f"wrote {csv_path}, {json_path}, {os.path.join(out, 'results.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
