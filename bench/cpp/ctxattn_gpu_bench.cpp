// ctxattn_gpu_bench: times the CUDA backends of this build on the BENCH.md workloads, side by
// side, with nothing but the library (the peers live in bench/, through Python).
//
//   ctxattn_gpu_bench [workload,...] [--backends cuda_portable,cuda_sm90] [--pages 16,64] [--runs N]
//
// Each workload runs on every backend that serves it; outputs are compared with the first
// backend's (max |diff|), L2 is flushed before every timed call, the median of N CUDA-event
// timings is reported with exact causal FLOPs. A CPU-only build prints that it has no GPU.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/numeric.h"
#include "ctxattn/ctxattn.h"
#include "paged_cache.h"
#if defined(CTXATTN_WITH_CUDA)
#include <cuda_runtime.h>

#include "device_problem.h"
#endif

namespace {

using ctxattn_test::ProblemSpec;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t comma = s.find(',', start);
    const size_t end = comma == std::string::npos ? s.size() : comma;
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// The BENCH.md suite (GQA 32/8, D = 128, bf16, causal unless noted).
std::map<std::string, ProblemSpec> workloads() {
  std::map<std::string, ProblemSpec> w;
  auto base = [](std::vector<int32_t> q, std::vector<int32_t> kv) {
    ProblemSpec s;
    s.q_lens = std::move(q);
    s.kv_lens = std::move(kv);
    s.num_qo_heads = 32;
    s.num_kv_heads = 8;
    s.head_dim = 128;
    s.extra_pages = 0;
    return s;
  };
  w["long_8k"] = base({8192}, {8192});
  w["long_32k"] = base({32768}, {32768});
  w["batch_4k"] = base(std::vector<int32_t>(4, 4096), std::vector<int32_t>(4, 4096));
  w["batch_1k"] = base(std::vector<int32_t>(16, 1024), std::vector<int32_t>(16, 1024));
  w["short_256"] = base(std::vector<int32_t>(64, 256), std::vector<int32_t>(64, 256));
  w["chunk_prefix"] = base(std::vector<int32_t>(8, 512), std::vector<int32_t>(8, 4096));
  {
    // The harness's ragged batch (bench/workloads.py: ragged_lengths(32, 16, 4096, RAGGED_SEED)),
    // q = kv; its page1 row runs it at page size 1.
    const std::vector<int32_t> lens = {18,  664, 38,  3318, 143, 864, 1596, 47,   19,  232, 21,
                                       130, 279, 1250, 561, 169, 16,  365,  1233, 2756, 468, 17,
                                       245, 140, 18,  180,  3881, 16, 244,  337,  377,  451};
    w["ragged"] = base(lens, lens);
  }
  {
    ProblemSpec s = base({512}, {131072});
    s.num_qo_heads = 8;
    s.num_kv_heads = 1;
    w["chunk_long_tp8"] = s;
    s.q_lens = {512, 512, 512, 512};
    s.kv_lens = {32768, 65536, 98304, 131072};
    w["chunk_long_tp8_batch"] = s;
  }
  {
    ProblemSpec s = base({8192}, {8192});
    s.num_qo_heads = 64;
    s.head_dim = 64;
    w["d64"] = s;
    s.with_sinks = true;
    w["d64_sinks"] = s;
    s.window_left = 127;
    w["d64_sinks_swa"] = s;
  }
  // The short shapes at D = 64 with d64's 64 / 8 heads (the Hopper kernel there has 192-row tiles).
  for (const char* name : {"batch_1k", "short_256", "chunk_prefix"}) {
    ProblemSpec s = w[name];
    s.num_qo_heads = 64;
    s.head_dim = 64;
    w[std::string("d64.") + name] = s;
  }
  {
    ProblemSpec s = base({8192}, {8192});
    s.num_qo_heads = 16;
    s.num_kv_heads = 4;
    s.head_dim = 256;
    w["d256"] = s;
    s.head_dim = 512;  // Gemma-4's full-attention layers (BENCH.md d512)
    w["d512"] = s;
    s.q_dtype = s.kv_dtype = s.out_dtype = CTXATTN_DTYPE_FLOAT16;
    w["f16.d512"] = s;
  }
  // chunk_long_tp8 (8 / 1 heads, split) at D = 64 and 256 (AUTO's choice for small pages).
  for (int d : {64, 256}) {
    ProblemSpec s = w["chunk_long_tp8"];
    s.head_dim = d;
    w["d" + std::to_string(d) + ".chunk_long_tp8"] = s;
  }
  // bf16 queries over an e4m3 cache (KV scale folded into bmm1 / bmm2 as the SPEC says).
  for (const char* name : {"long_8k", "batch_1k", "d64", "d256", "d512", "chunk_long_tp8"}) {
    ProblemSpec s = w[name];
    s.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    w[std::string("kv8.") + name] = s;
    s.q_dtype = CTXATTN_DTYPE_FLOAT16;  // fp16 queries: e4m3 widens to fp16 in one conversion a pair
    w[std::string("kv8h.") + name] = s;
  }
  // e4m3 queries and cache (bf16 output): the FP8 tensor-core path (D = 512 too; with
  // CTXATTN_SM90_FP8_MMA=0 the fp16 kernel over the widened cache, the queries widened too).
  for (const char* name : {"long_8k", "batch_1k", "d64", "d256", "d512", "chunk_long_tp8"}) {
    ProblemSpec s = w[name];
    s.q_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.kv_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    w[std::string("fp8.") + name] = s;
  }
  // The same with nvfp4 output (the harness's nvfp4_out) and with e4m3 output.
  for (const char* name : {"long_8k", "batch_1k"}) {
    ProblemSpec s = w[std::string("fp8.") + name];
    s.out_dtype = CTXATTN_DTYPE_NVFP4;
    s.o_sf_scale = 0.5f;
    w[std::string("nvfp4.") + name] = s;
    s.out_dtype = CTXATTN_DTYPE_FLOAT8_E4M3;
    s.o_sf_scale = 1.0f;
    w[std::string("fp8out.") + name] = s;
  }
  // e4m3 queries over an NVFP4 cache (SPEC 8.1; bf16 output), HND: the harness's nvfp4_kv rows;
  // fp4kvb: the same under bf16 queries.
  for (const char* name : {"long_8k", "batch_1k", "chunk_long_tp8", "d256"}) {
    ProblemSpec s = w[std::string("fp8.") + name];
    s.kv_dtype = CTXATTN_DTYPE_NVFP4;
    s.kv_layout = CTXATTN_KV_LAYOUT_HND;
    w[std::string("fp4kv.") + name] = s;
    s.q_dtype = CTXATTN_DTYPE_BFLOAT16;
    w[std::string("fp4kvb.") + name] = s;
  }
  // Sliding windows of 127, 255 and 511 keys on each kernel family (AUTO's choice of backend for
  // short windows, core/dispatch.cpp).
  for (const char* name : {"long_8k", "batch_1k", "d64", "d256", "fp8.long_8k", "fp8.d64", "kv8.d64", "kv8.long_8k"}) {
    for (int window : {127, 255, 511}) {
      ProblemSpec s = w[name];
      s.window_left = window;
      w["swa" + std::to_string(window) + "." + name] = s;
    }
  }
  // Skip-softmax's vote with a factor that skips nothing (its cost over dense: SPEC 8.2).
  for (const char* name : {"long_8k", "d256", "d512", "kv8.long_8k", "kv8.d256", "fp4kv.long_8k", "fp8.d512"}) {
    ProblemSpec s = w[name];
    s.skip_factor = 1e-30f;
    w[std::string("skip0.") + name] = s;
  }
  return w;
}

ctxattn_backend_t backend_code(const std::string& name) {
  if (name == "cuda_sm90") return CTXATTN_BACKEND_CUDA_SM90;
  if (name == "auto") return CTXATTN_BACKEND_AUTO;
  return CTXATTN_BACKEND_CUDA_PORTABLE;
}

}  // namespace

int main(int argc, char** argv) {
#if !defined(CTXATTN_WITH_CUDA)
  (void)argc;
  (void)argv;
  std::printf("ctxattn_gpu_bench: this build has no CUDA backends\n");
  return 0;
#else
  if (!ctxattn_has_cuda()) {
    std::printf("ctxattn_gpu_bench: no CUDA GPU on this machine\n");
    return 0;
  }
  std::vector<std::string> names = {"long_8k", "batch_1k", "chunk_prefix", "short_256", "d64", "d256"};
  std::vector<std::string> backends = {"cuda_portable", "cuda_sm90"};
  std::vector<int> pages = {16, 64};
  int runs = 20;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--backends" && i + 1 < argc) {
      backends = split(argv[++i]);
    } else if (a == "--pages" && i + 1 < argc) {
      pages.clear();
      for (const std::string& p : split(argv[++i])) pages.push_back(std::atoi(p.c_str()));
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else {
      names = split(a);
    }
  }
  const auto all = workloads();
  cudaDeviceProp prop;
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device: %s, %d SMs\n", prop.name, prop.multiProcessorCount);
  // L2 flush: a write over a buffer twice the L2 before every timed call.
  const size_t flush_bytes = 2 * static_cast<size_t>(prop.l2CacheSize);
  void* flush = nullptr;
  if (cudaMalloc(&flush, flush_bytes) != cudaSuccess) return 1;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::printf("%-16s %5s %-14s %10s %9s %12s\n", "workload", "page", "backend", "us", "TFLOP/s", "max|diff|");
  for (const std::string& name : names) {
    auto it = all.find(name);
    if (it == all.end()) {
      std::printf("%-16s unknown workload\n", name.c_str());
      continue;
    }
    for (int page : pages) {
      ProblemSpec spec = it->second;
      spec.page_size = page;
      ctxattn_test::PagedProblem pb(spec);
      pb.poison_outputs();
      ctxattn_test::DeviceProblem dev(pb);
      if (!dev.ok()) {
        std::printf("%-16s %5d device allocation failed\n", name.c_str(), page);
        continue;
      }
      const double flops = ctxattn_tools::attention_flops(spec);
      std::vector<uint8_t> first_out;
      for (const std::string& backend : backends) {
        dev.args.backend = backend_code(backend);
        if (!dev.fit_workspace()) return 1;  // each backend sizes its split partials
        if (dev.run() != CTXATTN_STATUS_OK) {
          std::printf("%-16s %5d %-14s not served: %s\n", name.c_str(), page, backend.c_str(), ctxattn_last_error());
          continue;
        }
        if (!dev.download()) return 1;
        double max_diff = 0.0;  // (bf16 outputs only)
        if (first_out.empty() || spec.out_dtype != CTXATTN_DTYPE_BFLOAT16) {
          first_out = pb.out;
        } else {
          const size_t n = pb.out.size() / 2;
          for (size_t e = 0; e < n; ++e) {
            uint16_t a, b;
            std::memcpy(&a, &first_out[2 * e], 2);
            std::memcpy(&b, &pb.out[2 * e], 2);
            const float fa = ctxattn::bf16_to_float(a), fb = ctxattn::bf16_to_float(b);
            double d = std::fabs(static_cast<double>(fa) - fb);
            if (std::isnan(fa) || std::isnan(fb)) d = std::isnan(fa) && std::isnan(fb) ? 0.0 : INFINITY;
            max_diff = std::max(max_diff, d);
          }
        }
        std::vector<double> ms;
        for (int r = 0; r < runs + 3; ++r) {
          cudaMemsetAsync(flush, r & 0xFF, flush_bytes);
          cudaEventRecord(start);
          dev.run();
          cudaEventRecord(stop);
          cudaEventSynchronize(stop);
          float t = 0;
          cudaEventElapsedTime(&t, start, stop);
          if (r >= 3) ms.push_back(t);
        }
        std::sort(ms.begin(), ms.end());
        const double med = ctxattn_tools::median(ms);
        std::printf("%-16s %5d %-14s %10.1f %9.1f %12.3g\n", name.c_str(), page, backend.c_str(), med * 1e3,
                    flops / (med * 1e-3) / 1e12, max_diff);
      }
    }
  }
  cudaFree(flush);
  return 0;
#endif
}
