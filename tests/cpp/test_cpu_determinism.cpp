// The fast CPU path is bitwise deterministic: reruns, and runs on any number of threads (which
// changes the token blocks and which thread computes what), give the same bytes. So does the
// reference, whose row blocks run on the same threads.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "cpu_harness.h"
#include "paged_cache.h"

namespace ctxattn_test {
namespace {

ProblemSpec medium_spec(ctxattn_dtype_t in, ctxattn_dtype_t out) {
  ProblemSpec s;
  ragged_lengths(&s, 5, {1, 17, 113, 239, 300}, 200, 11);
  s.num_qo_heads = 20, s.num_kv_heads = 4, s.head_dim = 128, s.page_size = 16;
  s.q_dtype = s.kv_dtype = in, s.out_dtype = out;
  s.with_lse = true, s.with_sinks = true;
  return s;
}

void expect_same_bytes(const Outcome& a, const Outcome& b, const char* what) {
  EXPECT_EQ(a.out_bytes, b.out_bytes) << what;
  ASSERT_EQ(a.lse_raw.size(), b.lse_raw.size());
  EXPECT_EQ(0, memcmp(a.lse_raw.data(), b.lse_raw.data(), a.lse_raw.size() * sizeof(float))) << what;
}

TEST(CpuDeterminism, RerunsAndThreadCounts) {
  for (const ProblemSpec& spec : {medium_spec(CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16),
                                  medium_spec(CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT16),
                                  medium_spec(CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4)}) {
    PagedProblem pb(spec);
    const Outcome first = run_cpu(pb, CTXATTN_BACKEND_CPU, 2);
    ASSERT_EQ(first.status, CTXATTN_STATUS_OK) << first.error;
    ASSERT_EQ(first.coverage, "");
    for (int rerun = 0; rerun < 2; ++rerun) expect_same_bytes(first, run_cpu(pb, CTXATTN_BACKEND_CPU, 2), "rerun");
    for (int threads : {1, 3, 7, 64}) expect_same_bytes(first, run_cpu(pb, CTXATTN_BACKEND_CPU, threads), "threads");
    setenv("CTXATTN_NUM_THREADS", "5", 1);  // num_threads = 0 reads it
    expect_same_bytes(first, run_cpu(pb, CTXATTN_BACKEND_CPU, 0), "CTXATTN_NUM_THREADS");
    unsetenv("CTXATTN_NUM_THREADS");
  }
}

TEST(CpuDeterminism, ReferenceOnAnyNumberOfThreads) {
  for (ProblemSpec spec : {medium_spec(CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16),
                           medium_spec(CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4)}) {
    spec.num_qo_heads = 8, spec.num_kv_heads = 2;  // the reference's double loops are slow
    PagedProblem pb(spec);
    const Outcome one = run_cpu(pb, CTXATTN_BACKEND_CPU_REFERENCE, 1);
    ASSERT_EQ(one.status, CTXATTN_STATUS_OK) << one.error;
    ASSERT_EQ(one.coverage, "");
    for (int threads : {3, 64}) {
      expect_same_bytes(one, run_cpu(pb, CTXATTN_BACKEND_CPU_REFERENCE, threads), "reference threads");
    }
  }
}

// Several user threads calling at once share the worker pool; each still gets its own answer.
TEST(CpuDeterminism, ConcurrentCallers) {
  const std::vector<ProblemSpec> specs = {medium_spec(CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_BFLOAT16),
                                          medium_spec(CTXATTN_DTYPE_FLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3),
                                          medium_spec(CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_DTYPE_NVFP4)};
  std::vector<std::unique_ptr<PagedProblem>> problems;
  std::vector<Outcome> alone;
  for (const ProblemSpec& s : specs) {
    problems.push_back(std::make_unique<PagedProblem>(s));
    alone.push_back(run_cpu(*problems.back(), CTXATTN_BACKEND_CPU, 2));
    ASSERT_EQ(alone.back().status, CTXATTN_STATUS_OK) << alone.back().error;
  }
  std::vector<std::vector<Outcome>> together(specs.size());
  std::vector<std::thread> callers;
  for (size_t i = 0; i < specs.size(); ++i) {
    callers.emplace_back([&, i] {
      for (int rep = 0; rep < 3; ++rep) together[i].push_back(run_cpu(*problems[i], CTXATTN_BACKEND_CPU, 2));
    });
  }
  for (std::thread& t : callers) t.join();
  for (size_t i = 0; i < specs.size(); ++i) {
    for (const Outcome& o : together[i]) {
      ASSERT_EQ(o.status, CTXATTN_STATUS_OK) << o.error;
      expect_same_bytes(alone[i], o, "concurrent");
    }
  }
}

}  // namespace
}  // namespace ctxattn_test
