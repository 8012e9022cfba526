// The GPU metadata torture's cases (metadata_torture_cases.h), checked on the host: every case
// lies (changes the honest metadata), names itself uniquely within its family, and, in every
// family but the one where no request is honest, leaves the metadata of the honest requests 0, 4
// and 6 as it was, so that the GPU test always has requests to compare with the reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "metadata_torture_cases.h"

namespace ctxattn_test {
namespace {

using namespace torture;

// The honest metadata of the torture problem at one page size, as the GPU test builds it: the
// requests' rows back to back, a few spare rows, pages given out in order with spare pages and
// spare block-table columns.
Sizes honest_sizes(int32_t page_size) {
  const int B = static_cast<int>(kQLens.size());
  Sizes z{};
  z.page_size = page_size;
  z.honest.cu_q.assign(B + 1, 0);
  std::partial_sum(kQLens.begin(), kQLens.end(), z.honest.cu_q.begin() + 1);
  z.num_tokens = z.honest.cu_q[B] + 3;
  z.honest.seq_lens = kKvLens;
  z.max_kv_len = *std::max_element(kKvLens.begin(), kKvLens.end());
  z.cols = pages_of(z.max_kv_len, page_size) + 2;
  z.honest.tables.assign(static_cast<size_t>(B * z.cols), 0);
  int32_t next = 0;
  for (int b = 0; b < B; ++b) {
    for (int64_t c = 0; c < pages_of(kKvLens[b], page_size); ++c) z.honest.tables[b * z.cols + c] = next++;
  }
  z.num_pages = next + 3;
  return z;
}

bool same_metadata(const Metadata& a, const Metadata& b) {
  return a.cu_q == b.cu_q && a.seq_lens == b.seq_lens && a.tables == b.tables && a.seq_lens_uint32 == b.seq_lens_uint32;
}

struct Family {
  const char* name;
  CaseFamily make;
  bool keeps_honest;  // requests 0, 4 and 6 keep their metadata
};

TEST(MetadataTortureCases, EveryCaseLiesAndTheHonestRequestsStayHonest) {
  const Family families[] = {{"cum_seq_lens_q", cum_seq_lens_q_cases, true},
                             {"seq_lens", seq_lens_cases, true},
                             {"block_tables", block_table_cases, true},
                             {"mixed", mixed_cases, true},
                             {"alone", alone_cases, false}};
  for (int32_t page_size : {1, 4, 16, 128, 1024}) {
    const Sizes z = honest_sizes(page_size);
    for (const Family& f : families) {
      for (uint32_t seed : {1u, 7u, 12345u}) {
        SCOPED_TRACE(std::string(f.name) + " page " + std::to_string(page_size) + " seed " + std::to_string(seed));
        std::mt19937 rng(seed);
        const std::vector<Case> cases = f.make(z, rng);
        ASSERT_FALSE(cases.empty());
        std::set<std::string> names;
        for (const Case& c : cases) {
          EXPECT_TRUE(names.insert(c.name).second) << "two cases named " << c.name;
          Metadata m = z.honest;
          c.apply(m);
          ASSERT_EQ(m.cu_q.size(), z.honest.cu_q.size()) << c.name;
          ASSERT_EQ(m.seq_lens.size(), z.honest.seq_lens.size()) << c.name;
          ASSERT_EQ(m.tables.size(), z.honest.tables.size()) << c.name;
          EXPECT_FALSE(same_metadata(m, z.honest)) << c.name << " changes nothing";
          if (f.keeps_honest) {
            for (int b : {0, 4, 6}) EXPECT_TRUE(same_request(m, z.honest, z, b)) << c.name << ": request " << b;
          }
        }
      }
    }
  }
}

// The honest requests own disjoint rows, and request_rows clamps any bounds into [0, T) and to
// max_q_len, as the kernels' load_request_span does.
TEST(MetadataTortureCases, RequestRowsClampLyingBounds) {
  const Sizes z = honest_sizes(16);
  const int64_t T = z.num_tokens, max_q = 37;
  for (int b = 0; b < static_cast<int>(kQLens.size()); ++b) {
    const Rows r = request_rows(z.honest, b, T, max_q);
    EXPECT_EQ(r.begin, kQLens[b] == 0 ? 0 : z.honest.cu_q[b]);
    EXPECT_EQ(r.end - r.begin, kQLens[b]);
  }
  Metadata m = z.honest;
  m.cu_q[2] = INT32_MAX;
  m.cu_q[3] = INT32_MIN;
  EXPECT_TRUE(request_rows(m, 2, T, max_q).empty());
  m.cu_q[2] = static_cast<int32_t>(T - 1);
  m.cu_q[3] = INT32_MAX;
  const Rows tail = request_rows(m, 2, T, max_q);
  EXPECT_EQ(tail.begin, T - 1);
  EXPECT_EQ(tail.end, T);
  m.cu_q[2] = 0;
  const Rows capped = request_rows(m, 2, T, max_q);
  EXPECT_EQ(capped.end - capped.begin, max_q);
  EXPECT_TRUE(capped.overlaps(request_rows(z.honest, 0, T, max_q)));
}

}  // namespace
}  // namespace ctxattn_test
