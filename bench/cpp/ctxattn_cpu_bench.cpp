// Times the CPU backends on a dense-shaped causal batch (B requests of q = kv = L tokens, no
// cached prefix, so torch's top-left causal SDPA computes the same thing; see bench/cpu/).
//
//   ctxattn_cpu_bench [--batch B] [--len L] [--heads HQ/HKV] [--dim D] [--page N]
//                     [--dtype bf16|fp16|e4m3] [--threads T] [--runs R] [--reference]
//
// Prints one "RESULT key=value ..." line per backend: median and min time of R runs after one
// warm-up, and GFLOP/s from the exact causal FLOPs. --reference also times the plain reference
// once and reports the fast path's speedup over it.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "bench_util.h"
#include "ctxattn/ctxattn.h"
#include "paged_cache.h"

namespace {

struct Options {
  int batch = 1, len = 1024, heads_q = 32, heads_kv = 8, dim = 128, page = 16, threads = 0, runs = 10;
  ctxattn_dtype_t dtype = CTXATTN_DTYPE_BFLOAT16;
  bool reference = false;
};

const char* dtype_name(ctxattn_dtype_t d) {
  return d == CTXATTN_DTYPE_FLOAT16 ? "fp16" : d == CTXATTN_DTYPE_BFLOAT16 ? "bf16" : "e4m3";
}

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    if (a == "--reference") {
      o->reference = true;
      continue;
    }
    if (v == nullptr) return false;
    ++i;
    if (a == "--batch") o->batch = std::atoi(v);
    else if (a == "--len") o->len = std::atoi(v);
    else if (a == "--dim") o->dim = std::atoi(v);
    else if (a == "--page") o->page = std::atoi(v);
    else if (a == "--threads") o->threads = std::atoi(v);
    else if (a == "--runs") o->runs = std::atoi(v);
    else if (a == "--heads") {
      if (std::sscanf(v, "%d/%d", &o->heads_q, &o->heads_kv) != 2) return false;
    } else if (a == "--dtype") {
      const std::string d = v;
      if (d == "bf16") o->dtype = CTXATTN_DTYPE_BFLOAT16;
      else if (d == "fp16") o->dtype = CTXATTN_DTYPE_FLOAT16;
      else if (d == "e4m3") o->dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
      else return false;
    } else {
      return false;
    }
  }
  return o->batch > 0 && o->len > 0 && o->runs > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, &o)) {
    std::fprintf(stderr,
                 "usage: %s [--batch B] [--len L] [--heads HQ/HKV] [--dim D] [--page N] "
                 "[--dtype bf16|fp16|e4m3] [--threads T] [--runs R] [--reference]\n",
                 argv[0]);
    return 2;
  }
  ctxattn_test::ProblemSpec s;
  s.q_lens.assign(o.batch, o.len);
  s.kv_lens.assign(o.batch, o.len);
  s.num_qo_heads = o.heads_q, s.num_kv_heads = o.heads_kv, s.head_dim = o.dim, s.page_size = o.page;
  s.q_dtype = s.kv_dtype = o.dtype;
  // fp8 inputs write bf16, as serving engines do; 16-bit inputs write their own dtype.
  s.out_dtype = o.dtype == CTXATTN_DTYPE_FLOAT8_E4M3 ? CTXATTN_DTYPE_BFLOAT16 : o.dtype;
  s.extra_pages = 0;
  ctxattn_test::PagedProblem pb(s);
  pb.args.num_threads = o.threads;
  const double flops = ctxattn_tools::attention_flops(s);
  std::printf("# %s, ctxattn %s, CTXATTN_CPU_ISA=%s\n", ctxattn_tools::cpu_description().c_str(), ctxattn_version(),
              std::getenv("CTXATTN_CPU_ISA") ? std::getenv("CTXATTN_CPU_ISA") : "(best)");

  auto call = [&](ctxattn_backend_t backend) {
    pb.args.backend = backend;
    if (ctxattn_batch_context_with_kv_cache(&pb.args) != CTXATTN_STATUS_OK) {
      std::fprintf(stderr, "call failed: %s\n", ctxattn_last_error());
      std::exit(1);
    }
  };
  auto report = [&](const char* backend, const std::vector<double>& ms) {
    const double med = ctxattn_tools::median(ms);
    std::printf("RESULT backend=%s batch=%d len=%d heads=%d/%d dim=%d page=%d dtype=%s threads=%d runs=%zu "
                "median_ms=%.3f min_ms=%.3f gflops=%.1f\n",
                backend, o.batch, o.len, o.heads_q, o.heads_kv, o.dim, o.page, dtype_name(o.dtype), o.threads,
                ms.size(), med, ms.front(), flops / med / 1e6);
    return med;
  };
  const double fast = report("cpu", ctxattn_tools::time_runs([&] { call(CTXATTN_BACKEND_CPU); }, 1, o.runs));
  if (o.reference) {
    const double ref = report("cpu_reference", ctxattn_tools::time_runs([&] { call(CTXATTN_BACKEND_CPU_REFERENCE); }, 0, 1));
    std::printf("RESULT speedup_over_reference=%.1f\n", ref / fast);
  }
  return 0;
}
