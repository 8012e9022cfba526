"""Runs the selected cases: for each implementation, the reference check on the small ragged
instance (once per distinct configuration), then the timed call on the case's inputs.

Interleaved rounds (rounds > 1, BENCH.md's method): every implementation of a case is prepared
once on the same inputs, then each round times each of them once, in an order shuffled per round;
a row's median_us is the median of its round medians, and each ctxattn row's vs_best is the
median over the rounds of (best peer's time / its time) in that round.

Every failure is caught and becomes the row's status, so one broken peer or case never stops the
run; rows are handed to `on_case_done` as each case finishes, so partial runs still leave results.
"""

import dataclasses
import random
import statistics
import time

import torch

from bench.inputs import build, check_case
from bench.peer_base import Unsupported
from bench.reference import compare, reference

CTXATTN = "ctxattn"


def describe(e):
    """One line: exception type and the first line of its message, shortened."""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}"[:300]


# Errors after which the CUDA context is unusable: every later call in the process would fail.
FATAL_CUDA_ERRORS = ("illegal memory access", "unspecified launch failure", "device-side assert",
                     "misaligned address", "illegal instruction", "an illegal")


def is_fatal(e):
    text = str(e).lower()
    return any(marker in text for marker in FATAL_CUDA_ERRORS)


def case_fields(case):
    w = case.workload
    return {
        "case": case.id, "workload": w.name, "variant": w.variant, "in_dtype": case.in_dtype,
        "kv_dtype": case.kv_dtype,
        "out_dtype": case.out_dtype, "page_size": case.page_size, "batch": w.batch_size,
        "q_tokens": sum(w.q_lens), "kv_tokens": sum(w.kv_lens), "qo_heads": w.num_qo_heads,
        "kv_heads": w.num_kv_heads, "head_dim": w.head_dim, "window_left": w.window_left,
        "sinks": w.sinks, "gflop": case.flops() / 1e9,
    }


def ceiling_key(case, row):
    """Which GEMM ceiling a row is compared with: its own arithmetic precision."""
    if "fp32" in row.get("note", ""):
        return "fp32"
    return "fp8" if case.in_dtype == "fp8" and row.get("exact") else case.dtype


class Runner:
    def __init__(self, device, peers, timer, ceilings, seed=0, check=True, time_calls=True,
                 true_size=True, deadline=None, on_case_done=None, log=print, rounds=1):
        self.device = torch.device(device)
        self.rounds = max(1, rounds)
        self._order = random.Random(seed)
        self.peers = peers
        self.timer = timer
        self.ceilings = ceilings
        self.seed = seed
        self.check = check
        self.time_calls = time_calls
        self.true_size = true_size
        self.deadline = deadline
        self.on_case_done = on_case_done
        self.log = log
        self.availability = {}
        for p in peers:
            if self.device.type not in p.device_types:
                self.availability[p.name] = f"runs on {'/'.join(p.device_types)} only"
            else:
                self.availability[p.name] = p.available()
        self._check_inputs = {}
        self._check_results = {}
        self._timed = {}
        # Set once a call breaks the CUDA context; every later row is skipped with this reason.
        self.fatal = None

    def run(self, cases):
        rows = []
        for i, case in enumerate(cases):
            self.log(f"[{i + 1}/{len(cases)}] {case.id}")
            case_rows = self.run_case(case)
            rows.extend(case_rows)
            if self.on_case_done is not None:
                self.on_case_done(case, case_rows, rows)
        return rows

    def _sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def run_case(self, case):
        base = case_fields(case)
        if self.deadline is not None and time.monotonic() > self.deadline:
            return [dict(base, impl=p.name, status="skip: time budget (--deadline-s) spent") for p in self.peers]
        if self.fatal:
            return [dict(base, impl=p.name, status=f"skip: {self.fatal}") for p in self.peers]
        try:
            inp = build(case, self.device, seed=self.seed, true_size=self.true_size)
        except Exception as e:
            return [dict(base, impl=p.name, status=f"error: building inputs: {describe(e)}") for p in self.peers]
        if self.rounds > 1 and self.time_calls:
            rows = self.run_rounds(case, inp, base)
        else:
            rows = [self.run_peer(p, case, inp, base) for p in self.peers]
        del inp
        if self.device.type == "cuda" and not self.fatal:
            torch.cuda.empty_cache()
        add_ratios(case, rows, self.ceilings)
        return rows

    # ---- check ----

    def _check_instance(self, case, no_prefix=False):
        ccase = check_case(case, no_prefix)
        if ccase not in self._check_inputs:
            cinp = build(ccase, self.device, seed=self.seed + 1000, check=True, true_size=False)
            self._check_inputs[ccase] = (cinp, reference(cinp))
        return self._check_inputs[ccase]

    def checked(self, peer, case):
        """(strategy or None, message): the first calling strategy that matches the reference."""
        ccase = check_case(case, peer.causal_top_left)
        key = (peer.name, ccase if peer.paged else dataclasses.replace(ccase, page_size=0))
        if key not in self._check_results:
            self._check_results[key] = self._run_check(peer, case)
        return self._check_results[key]

    def _run_check(self, peer, case):
        if peer.causal_top_left and any(k != q for q, k in zip(case.workload.q_lens, case.workload.kv_lens)):
            return None, "skip: its causal mask is top-left aligned and this workload has cached prefixes"
        try:
            cinp, ref = self._check_instance(case, peer.causal_top_left)
        except Exception as e:
            return None, f"error: building the check instance: {describe(e)}"
        failures = []
        for strategy in peer.strategies(case):
            tag = f"[{strategy}] " if strategy else ""
            try:
                prepared = peer.prepare(cinp, strategy, check=True)
                result = prepared.result(prepared.run())
                self._sync()
                ok, msg = compare(result, ref, cinp)
            except Unsupported as e:
                return None, f"skip: {e}"
            except Exception as e:
                self._note_fatal(peer, e)
                failures.append(f"{tag}error: {describe(e)}")
                if self.fatal:
                    break
                continue
            if ok:
                return strategy, f"ok, {msg}"
            failures.append(f"{tag}{msg}")
        if all("error: " in f for f in failures):
            return None, "error: " + "; ".join(f.replace("error: ", "", 1) for f in failures)
        return None, "FAIL check: " + "; ".join(failures)

    def _note_fatal(self, peer, e):
        if self.device.type == "cuda" and is_fatal(e):
            self.fatal = (f"CUDA context lost after {peer.name} ({describe(e)}); rerun without it "
                          f"(--impl) for the remaining rows")
            self.log(f"# {self.fatal}")

    # ---- timing ----

    def _admit(self, peer, case, row):
        """The calling strategy to time, or None with the row's status set (skipped, failed check)."""
        if self.fatal:
            row["status"] = f"skip: {self.fatal}"
            return None
        reason = self.availability.get(peer.name)
        if reason:
            row["status"] = f"skip: {reason}"
            return None
        strategies = peer.strategies(case)
        strategy = strategies[0]
        if self.check:
            strategy, message = self.checked(peer, case)
            row["check"] = message
            if strategy is None:
                row["status"] = message if message.startswith(("skip", "FAIL")) else f"error in check: {message[7:]}"
                return None
        return strategy

    def run_rounds(self, case, inp, base):
        """Every admitted implementation prepared once, then `rounds` rounds, each timing every one
        once in a shuffled order; rows carry the round medians (round_us)."""
        rows, ready = [], []
        for peer in self.peers:
            row = dict(base, impl=peer.name)
            rows.append(row)
            strategy = self._admit(peer, case, row)
            if strategy is None:
                continue
            try:
                prepared = peer.prepare(inp, strategy)
            except Unsupported as e:
                row["status"] = f"skip: {e}"
                continue
            except Exception as e:
                row["status"] = f"error: {describe(e)}"
                self._note_fatal(peer, e)
                continue
            first = peer.strategies(case)[0]
            row.update(exact=prepared.exact,
                       note="; ".join(n for n in (prepared.note, "" if strategy == first else strategy) if n))
            ready.append((row, prepared, peer, []))
        for _ in range(self.rounds):
            order = list(ready)
            self._order.shuffle(order)
            for row, prepared, peer, times in order:
                if "status" in row or self.fatal:
                    continue
                try:
                    times.append(self.timer.time(prepared.run).median_us)
                except Exception as e:
                    row["status"] = f"error: {describe(e)}"
                    self._note_fatal(peer, e)
        for row, _, _, times in ready:
            if "status" in row:
                continue
            if len(times) < self.rounds:
                row["status"] = f"skip: {self.fatal}" if self.fatal else "error: a round was not timed"
                continue
            ordered = sorted(times)
            row.update(status="ok", median_us=statistics.median(times), p10_us=ordered[0], p90_us=ordered[-1],
                       samples=len(times), round_us=times)
        return rows

    def run_peer(self, peer, case, inp, base):
        row = dict(base, impl=peer.name)
        strategy = self._admit(peer, case, row)
        if strategy is None:
            return row
        strategies = peer.strategies(case)
        if not self.time_calls:
            row["status"] = "checked"
            return row
        reuse_key = None if peer.paged else (peer.name, case.workload, case.dtype)
        if reuse_key in self._timed:
            earlier = self._timed[reuse_key]
            for k in ("status", "median_us", "p10_us", "p90_us", "samples", "exact"):
                if k in earlier:
                    row[k] = earlier[k]
            row["note"] = "; ".join(n for n in (earlier.get("note", ""),
                                                f"reads no pages: same call as p{earlier['page_size']}") if n)
            return row
        try:
            prepared = peer.prepare(inp, strategy)
            timing = self.timer.time(prepared.run)
        except Unsupported as e:
            row["status"] = f"skip: {e}"
            return row
        except Exception as e:
            row["status"] = f"error: {describe(e)}"
            self._note_fatal(peer, e)
            if self.device.type == "cuda" and not self.fatal:
                torch.cuda.empty_cache()
            return row
        row.update(status="ok", median_us=timing.median_us, p10_us=timing.p10_us, p90_us=timing.p90_us,
                   samples=timing.samples, exact=prepared.exact,
                   note="; ".join(n for n in (prepared.note, "" if strategy == strategies[0] else strategy) if n))
        if reuse_key is not None:
            self._timed[reuse_key] = dict(row)
        return row


def is_ctxattn(impl):
    """ctxattn itself or one of its forced-backend variants (ctxattn_portable, ctxattn_sm90, ...)."""
    return impl == CTXATTN or impl.startswith(CTXATTN + "_")


def add_ratios(case, rows, ceilings):
    """TFLOP/s, share of the GEMM ceiling, each ctxattn variant against the best peer, and each
    peer against ctxattn (the library's own choice). ctxattn variants are never anyone's peer."""
    for r in rows:
        if r.get("status") != "ok":
            continue
        r["tflops"] = r["gflop"] * 1e9 / (r["median_us"] * 1e-6) / 1e12
        key = ceiling_key(case, r)
        key = key if key in ceilings else case.dtype
        if key in ceilings:
            r["ceiling"] = key
            r["pct_ceiling"] = 100.0 * r["tflops"] / ceilings[key]
    ours = [r for r in rows if is_ctxattn(r["impl"]) and r.get("status") == "ok"]
    peers = [r for r in rows if not is_ctxattn(r["impl"]) and r.get("status") == "ok"]
    if not ours or not peers:
        return
    same = [r for r in peers if r.get("exact")]
    best = min(same or peers, key=lambda r: r["median_us"])
    for r in ours:
        r["vs_best"] = best["median_us"] / r["median_us"]
        r["best_peer"] = best["impl"] + ("" if same else " (other precision)")
        if "round_us" in r and "round_us" in best:
            # Interleaved rounds: the median of the per-round ratios is the figure that counts.
            r["vs_best"] = statistics.median(b / o for b, o in zip(best["round_us"], r["round_us"]))
            r["vs_best_rounds"] = len(r["round_us"])
    auto = next((r for r in ours if r["impl"] == CTXATTN), None)
    if auto is not None:
        for r in peers:
            r["ctxattn_speedup"] = r["median_us"] / auto["median_us"]
