// ctxattn_demo (`make run`): one representative prefill batch on the best available backend,
// checked against the reference backend.
//
// The batch: 8 requests with ragged new-token chunks over cached prefixes (chunked prefill),
// GQA 32 query / 8 KV heads, head dim 128, bf16, page size 16, pages permuted in an
// over-allocated pool. Prints backend, shape, time, TFLOP/s (exact causal FLOPs) and the largest
// absolute error against the reference; exits 1 when the result is outside the SPEC tolerance
// for bf16 (|err| <= 1e-2 + 1e-2 * |ref|) or a call fails.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench_util.h"
#include "ctxattn/ctxattn.h"
#include "dense_reference.h"
#include "paged_cache.h"
#if defined(CTXATTN_WITH_CUDA)
#include <memory>

#include "device_problem.h"
#endif

namespace {

ctxattn_test::ProblemSpec demo_batch() {
  ctxattn_test::ProblemSpec s;
  s.q_lens = {600, 333, 128, 97, 17, 1, 250, 64};
  const std::vector<int32_t> cached = {0, 512, 1024, 64, 900, 2000, 128, 300};
  for (size_t b = 0; b < s.q_lens.size(); ++b) s.kv_lens.push_back(cached[b] + s.q_lens[b]);
  s.num_qo_heads = 32, s.num_kv_heads = 8, s.head_dim = 128, s.page_size = 16;
  s.q_dtype = s.kv_dtype = s.out_dtype = CTXATTN_DTYPE_BFLOAT16;
  s.extra_pages = 16;
  s.seed = 2024;
  return s;
}

std::string shape_string(const ctxattn_test::ProblemSpec& s, int64_t tokens) {
  int64_t kv = 0;
  for (int32_t l : s.kv_lens) kv += l;
  char buf[160];
  std::snprintf(buf, sizeof(buf), "B=%zu q=%lld kv=%lld H=%d/%d D=%d bf16 N=%d", s.q_lens.size(),
                static_cast<long long>(tokens), static_cast<long long>(kv), s.num_qo_heads, s.num_kv_heads, s.head_dim,
                s.page_size);
  return buf;
}

bool call(ctxattn_args_t* args, ctxattn_backend_t backend) {
  args->backend = backend;
  const ctxattn_status_t st = ctxattn_batch_context_with_kv_cache(args);
  if (st != CTXATTN_STATUS_OK) {
    std::fprintf(stderr, "ctxattn (%s) failed: %s: %s\n", ctxattn_backend_name(backend), ctxattn_status_string(st),
                 ctxattn_last_error());
    return false;
  }
  return true;
}

}  // namespace

int main() {
  const ctxattn_test::ProblemSpec spec = demo_batch();
  ctxattn_test::PagedProblem pb(spec);
  const double flops = ctxattn_tools::attention_flops(spec);
  const std::string shape = shape_string(spec, pb.num_tokens());

  std::printf("ctxattn %s on %s; CUDA device %s\n", ctxattn_version(), ctxattn_tools::cpu_description().c_str(),
              ctxattn_has_cuda() ? "present" : "absent or not built");

  // The batch runs where the best backend is: on the GPU when ctxattn sees one (its buffers
  // mirrored in device memory), else on the CPU. AUTO picks the backend in both cases.
  ctxattn_args_t* args = &pb.args;
#if defined(CTXATTN_WITH_CUDA)
  std::unique_ptr<ctxattn_test::DeviceProblem> dev;
  if (ctxattn_has_cuda()) {
    dev = std::make_unique<ctxattn_test::DeviceProblem>(pb);
    if (!dev->ok()) {
      std::fprintf(stderr, "copying the batch to the GPU failed: %s\n", cudaGetErrorString(cudaGetLastError()));
      return 1;
    }
    args = &dev->args;
  }
#endif
  ctxattn_backend_t chosen = CTXATTN_BACKEND_AUTO;
  args->backend = CTXATTN_BACKEND_AUTO;
  if (ctxattn_select_backend(args, &chosen) != CTXATTN_STATUS_OK) {
    std::fprintf(stderr, "backend selection failed: %s\n", ctxattn_last_error());
    return 1;
  }

  bool ok = true;
  const auto run_best = [&] {
    ok = call(args, CTXATTN_BACKEND_AUTO) && ok;
#if defined(CTXATTN_WITH_CUDA)
    if (dev) ok = cudaDeviceSynchronize() == cudaSuccess && ok;  // GPU calls are asynchronous
#endif
  };
  const std::vector<double> fast_ms = ctxattn_tools::time_runs(run_best, 2, 10);
#if defined(CTXATTN_WITH_CUDA)
  if (dev && !dev->download()) ok = false;
#endif
  if (!ok) return 1;
  const std::vector<double> got = ctxattn_test::decode_out(pb);

  const std::vector<double> ref_ms = ctxattn_tools::time_runs([&] { ok = call(&pb.args, CTXATTN_BACKEND_CPU_REFERENCE) && ok; }, 0, 1);
  if (!ok) return 1;
  const std::vector<double> want = ctxattn_test::decode_out(pb);

  const int64_t n = pb.q_begin(pb.batch_size()) * spec.num_qo_heads * spec.head_dim;
  double max_err = 0.0;
  int64_t outside = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= max_err)) max_err = err;
    if (!(err <= 1e-2 + 1e-2 * std::fabs(want[i]))) ++outside;
  }

  std::printf("\n%-14s  %-52s  %10s  %8s  %13s\n", "backend", "shape", "time (ms)", "TFLOP/s", "max abs error");
  const double fast = ctxattn_tools::median(fast_ms), ref = ctxattn_tools::median(ref_ms);
  std::printf("%-14s  %-52s  %10.2f  %8.3f  %13.3g\n", ctxattn_backend_name(chosen), shape.c_str(), fast,
              flops / fast / 1e9, max_err);
  std::printf("%-14s  %-52s  %10.2f  %8.3f  %13s\n", ctxattn_backend_name(CTXATTN_BACKEND_CPU_REFERENCE), shape.c_str(),
              ref, flops / ref / 1e9, "(oracle)");
  if (outside > 0) {
    std::printf("\nFAILED: %lld of %lld values outside rtol = atol = 1e-2\n", static_cast<long long>(outside),
                static_cast<long long>(n));
    return 1;
  }
  std::printf("\nOK: %lld values within rtol = atol = 1e-2 of the reference (%.1fx faster)\n", static_cast<long long>(n),
              ref / fast);
  return 0;
}
