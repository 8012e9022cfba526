// The fast CPU path is bitwise deterministic: reruns, and runs on any number of threads (which
// changes the token blocks and which thread computes what), give the same bytes.
#include <gtest/gtest.h>

#include <cstring>
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
  }
}

}  // namespace
}  // namespace ctxattn_test
