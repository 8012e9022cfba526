// Metadata that lies: each case breaks one metadata value of a valid problem; both CPU backends
// must answer INVALID_METADATA with a message naming the argument, the first offending request
// and the values, and leave out and lse exactly as they were.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cpu_harness.h"
#include "paged_cache.h"

namespace ctxattn_test {
namespace {

ProblemSpec valid_spec() {
  ProblemSpec s;
  s.q_lens = {5, 7, 3, 0};
  s.kv_lens = {9, 7, 20, 4};
  s.num_qo_heads = 4, s.num_kv_heads = 2, s.head_dim = 16, s.page_size = 4, s.with_lse = true;
  return s;
}

struct Lie {
  std::string name;
  std::function<void(PagedProblem&)> corrupt;
  std::vector<std::string> message_parts;  // all must appear in the error message
};

std::vector<Lie> lies() {
  return {
      {"page_past_pool", [](PagedProblem& pb) { pb.block_tables[1 * pb.args.block_tables_stride + 1] = static_cast<int32_t>(pb.args.num_pages); },
       {"block_tables", "request 1", "block_tables[1][1]"}},
      {"negative_page", [](PagedProblem& pb) { pb.block_tables[2 * pb.args.block_tables_stride + 4] = -1; },
       {"block_tables", "request 2", "= -1"}},
      {"seq_len_above_max", [](PagedProblem& pb) { pb.seq_lens[2] = pb.args.max_kv_len + 1; },
       {"seq_lens", "request 2", "21", "max_kv_len = 20"}},
      {"seq_len_uint32_huge",
       [](PagedProblem& pb) {
         pb.args.seq_lens_dtype = CTXATTN_DTYPE_UINT32;
         pb.seq_lens[0] = static_cast<int32_t>(0x80000000u);
       },
       {"seq_lens", "request 0"}},
      {"cum_q_decreasing", [](PagedProblem& pb) { pb.cu_q[2] = pb.cu_q[1] - 1; },
       {"cum_seq_lens_q", "request 1", "non-decreasing"}},
      {"q_len_above_max", [](PagedProblem& pb) { pb.args.max_q_len = 6; },
       {"cum_seq_lens_q", "request 1", "query length 7", "max_q_len = 6"}},
      {"cum_q_negative_start", [](PagedProblem& pb) { pb.cu_q[0] = -1; }, {"cum_seq_lens_q", "request 0", "-1"}},
      {"cum_q_past_tokens", [](PagedProblem& pb) { pb.args.num_tokens = pb.cu_q.back() - 1; },
       {"cum_seq_lens_q", "request 3", "num_tokens = 14"}},
      {"kv_shorter_than_q", [](PagedProblem& pb) { pb.seq_lens[1] = 6; },
       {"seq_lens", "request 1", "6", "query length 7"}},
  };
}

class LyingMetadata : public ::testing::TestWithParam<Lie> {};

TEST_P(LyingMetadata, RejectedWithoutWriting) {
  for (ctxattn_backend_t backend : {CTXATTN_BACKEND_CPU, CTXATTN_BACKEND_CPU_REFERENCE}) {
    PagedProblem pb(valid_spec());
    GetParam().corrupt(pb);
    pb.poison_outputs();
    const std::vector<uint8_t> out_before = pb.out;
    const std::vector<float> lse_before = pb.lse;
    pb.args.backend = backend;
    EXPECT_EQ(ctxattn_batch_context_with_kv_cache(&pb.args), CTXATTN_STATUS_INVALID_METADATA)
        << ctxattn_backend_name(backend);
    const std::string message = ctxattn_last_error();
    for (const std::string& part : GetParam().message_parts) {
      EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' missing from: " << message;
    }
    EXPECT_EQ(pb.out, out_before);
    EXPECT_EQ(0, memcmp(pb.lse.data(), lse_before.data(), pb.lse.size() * sizeof(float)));
  }
}

INSTANTIATE_TEST_SUITE_P(Cpu, LyingMetadata, ::testing::ValuesIn(lies()),
                         [](const ::testing::TestParamInfo<Lie>& info) { return info.param.name; });

// What is not a lie: garbage block-table entries past a request's pages (paged_cache.h writes
// them for every problem), Lq = 0 requests, and Lk < Lq without causality.
TEST(CpuMetadata, AcceptsWhatTheContractAllows) {
  ProblemSpec s = valid_spec();
  s.causal = false;
  s.kv_lens = {2, 7, 1, 4};
  PagedProblem pb(s);
  for (ctxattn_backend_t backend : {CTXATTN_BACKEND_CPU, CTXATTN_BACKEND_CPU_REFERENCE}) {
    const Outcome o = run_cpu(pb, backend);
    EXPECT_EQ(o.status, CTXATTN_STATUS_OK) << o.error;
    EXPECT_EQ(o.coverage, "");
  }
}

}  // namespace
}  // namespace ctxattn_test
