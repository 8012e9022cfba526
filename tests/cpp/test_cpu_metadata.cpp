// Metadata that lies: each case breaks one metadata value of a valid problem; both CPU backends
// must answer INVALID_METADATA with a message naming the argument, the first offending request
// and the values, and leave out and lse exactly as they were.
#include <gtest/gtest.h>

#include <cstdint>
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
       {"seq_lens", "request 0", "seq_lens[0] = 2147483648;"}},
      {"seq_len_uint32_max",
       [](PagedProblem& pb) {
         pb.args.seq_lens_dtype = CTXATTN_DTYPE_UINT32;
         pb.seq_lens[2] = -1;  // 0xFFFFFFFF
       },
       {"seq_lens", "request 2", "seq_lens[2] = 4294967295;", "max_kv_len = 20"}},
      {"seq_len_int32_max", [](PagedProblem& pb) { pb.seq_lens[0] = INT32_MAX; },
       {"seq_lens", "request 0", "seq_lens[0] = 2147483647;"}},
      {"seq_len_int32_min", [](PagedProblem& pb) { pb.seq_lens[3] = INT32_MIN; },
       {"seq_lens", "request 3", "seq_lens[3] = -2147483648;"}},
      {"seq_len_minus_one", [](PagedProblem& pb) { pb.seq_lens[1] = -1; }, {"seq_lens", "request 1", "seq_lens[1] = -1;"}},
      {"cum_q_int32_max", [](PagedProblem& pb) { pb.cu_q[2] = INT32_MAX; },
       {"cum_seq_lens_q", "request 1", "query length 2147483642", "max_q_len = 7"}},
      {"cum_q_int32_max_last", [](PagedProblem& pb) { pb.cu_q[4] = INT32_MAX; },
       {"cum_seq_lens_q", "request 3", "query length 2147483632"}},
      {"cum_q_int32_min_first", [](PagedProblem& pb) { pb.cu_q[0] = INT32_MIN; },
       {"cum_seq_lens_q", "request 0", "cum_seq_lens_q[0] = -2147483648"}},
      {"cum_q_int32_min_inside", [](PagedProblem& pb) { pb.cu_q[2] = INT32_MIN; },
       {"cum_seq_lens_q", "request 1", "cum_seq_lens_q[2] = -2147483648", "non-decreasing"}},
      {"page_int32_max", [](PagedProblem& pb) { pb.block_tables[0] = INT32_MAX; },
       {"block_tables", "request 0", "block_tables[0][0] = 2147483647"}},
      {"page_int32_min", [](PagedProblem& pb) { pb.block_tables[3 * pb.args.block_tables_stride] = INT32_MIN; },
       {"block_tables", "request 3", "block_tables[3][0] = -2147483648"}},
      {"page_past_pool_plus_one",
       [](PagedProblem& pb) { pb.block_tables[2 * pb.args.block_tables_stride + 3] = static_cast<int32_t>(pb.args.num_pages + 1); },
       {"block_tables", "request 2", "block_tables[2][3] = 15"}},
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

// The 32-bit extremes and the neighbours of the sizes, at every position of every metadata array
// a call reads: each is refused with a message that names the array (quoting the value as the
// caller wrote it, uint32 included), and nothing is written.
TEST(CpuMetadata, ExtremeValuesAnywhereAreRefusedWithoutWriting) {
  PagedProblem base(valid_spec());
  const int64_t T = base.num_tokens(), P = base.args.num_pages;
  const int32_t max_kv = base.args.max_kv_len;
  const int32_t B = base.batch_size();
  struct Position {
    std::string array;  // the argument the message must name first
    std::string quote;  // what it must quote ("" = only the name)
    std::function<void(PagedProblem&)> corrupt;
  };
  std::vector<Position> positions;
  // Every value here is invalid at any position of cum_seq_lens_q (outside [0, T]).
  const std::vector<int64_t> offsets = {INT32_MIN, INT32_MIN + 1LL, -1, -T, T + 1, INT32_MAX - 1LL, INT32_MAX};
  for (int32_t b = 0; b <= B; ++b) {
    for (int64_t v : offsets) {
      positions.push_back({"cum_seq_lens_q", "", [=](PagedProblem& pb) { pb.cu_q[b] = static_cast<int32_t>(v); }});
    }
  }
  const std::vector<int64_t> lengths = {INT32_MIN, INT32_MIN + 1LL, -1, -T, max_kv + 1LL, INT32_MAX - 1LL, INT32_MAX};
  const std::vector<int64_t> unsigned_lengths = {1LL << 31, (1LL << 31) + 1, (1LL << 32) - 1, (1LL << 32) - 2,
                                                 (1LL << 31) + max_kv};
  for (int32_t b = 0; b < B; ++b) {
    const std::string quote = "seq_lens[" + std::to_string(b) + "] = ";
    for (int64_t v : lengths) {
      positions.push_back({"seq_lens", quote + std::to_string(v) + ";",
                           [=](PagedProblem& pb) { pb.seq_lens[b] = static_cast<int32_t>(v); }});
    }
    for (int64_t u : unsigned_lengths) {
      positions.push_back({"seq_lens", quote + std::to_string(u) + ";", [=](PagedProblem& pb) {
                             pb.args.seq_lens_dtype = CTXATTN_DTYPE_UINT32;
                             pb.seq_lens[b] = static_cast<int32_t>(static_cast<uint32_t>(u));
                           }});
    }
  }
  const std::vector<int64_t> pages = {INT32_MIN, INT32_MIN + 1LL, -1, -P, P, P + 1, INT32_MAX - 1LL, INT32_MAX};
  for (int32_t b = 0; b < B; ++b) {
    const int64_t used = (base.seq_lens[b] + base.args.page_size - 1) / base.args.page_size;
    for (int64_t j = 0; j < used; ++j) {
      for (int64_t v : pages) {
        const std::string quote = "block_tables[" + std::to_string(b) + "][" + std::to_string(j) + "] = " + std::to_string(v);
        positions.push_back({"block_tables", quote, [=](PagedProblem& pb) {
                               pb.block_tables[b * pb.args.block_tables_stride + j] = static_cast<int32_t>(v);
                             }});
      }
    }
  }
  for (const Position& pos : positions) {
    for (ctxattn_backend_t backend : {CTXATTN_BACKEND_CPU, CTXATTN_BACKEND_CPU_REFERENCE}) {
      PagedProblem pb(valid_spec());
      pos.corrupt(pb);
      pb.poison_outputs();
      const std::vector<uint8_t> out_before = pb.out;
      const std::vector<float> lse_before = pb.lse;
      pb.args.backend = backend;
      const std::string where = pos.array + " " + pos.quote + " (" + ctxattn_backend_name(backend) + ")";
      ASSERT_EQ(ctxattn_batch_context_with_kv_cache(&pb.args), CTXATTN_STATUS_INVALID_METADATA) << where;
      const std::string message = ctxattn_last_error();
      EXPECT_EQ(message.rfind(pos.array + ":", 0), 0u) << where << ": " << message;
      EXPECT_NE(message.find(pos.quote), std::string::npos) << where << ": " << message;
      EXPECT_EQ(pb.out, out_before) << where;
      EXPECT_EQ(0, memcmp(pb.lse.data(), lse_before.data(), pb.lse.size() * sizeof(float))) << where;
    }
  }
}

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
