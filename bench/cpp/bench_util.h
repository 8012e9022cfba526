// Shared by the demo and the CPU timing tool: exact attention FLOPs of a test problem (BENCH.md),
// a median-of-runs timer, and a one-line description of the host CPU.
#pragma once

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "paged_cache.h"

namespace ctxattn_tools {

// 4 * D per allowed (query, key) pair, summed over requests, rows and query heads; the allowed
// keys of row i are the bottom-right causal band (clipped by the window), or all keys.
inline double attention_flops(const ctxattn_test::ProblemSpec& s) {
  double pairs = 0.0;
  for (size_t b = 0; b < s.q_lens.size(); ++b) {
    const int64_t lq = s.q_lens[b], lk = s.kv_lens[b];
    for (int64_t i = 0; i < lq; ++i) {
      int64_t first = 0, last = lk - 1;
      if (s.causal) {
        last = lk - lq + i;
        if (s.window_left >= 0) first = std::max<int64_t>(0, last - s.window_left);
      }
      pairs += static_cast<double>(std::max<int64_t>(0, last - first + 1));
    }
  }
  return 4.0 * s.head_dim * s.num_qo_heads * pairs;
}

// Runs `call` `warmup` times untimed, then `runs` times; returns the sorted times in ms.
inline std::vector<double> time_runs(const std::function<void()>& call, int warmup, int runs) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

inline double median(const std::vector<double>& sorted) {
  const size_t n = sorted.size();
  return n == 0 ? 0.0 : (n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]));
}

// "model name" from /proc/cpuinfo and the number of online CPUs, where available.
inline std::string cpu_description() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  int cpus = 0;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0 && model == "unknown CPU") model = line.substr(line.find(':') + 2);
    if (line.rfind("processor", 0) == 0) ++cpus;
  }
  return model + " (" + std::to_string(cpus) + " CPUs)";
}

}  // namespace ctxattn_tools
