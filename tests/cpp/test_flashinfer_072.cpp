// The FlashInfer 0.7.2 fields of ctxattn_args_t through the C and C++ APIs on the CPU backends:
// an NVFP4 cache gives bitwise the result of the 16-bit cache holding its decoded values, the
// TensorRT-LLM form of separate K / V page indices gives bitwise the result of the shared table,
// skip-softmax's statistics agree between the fast path and the reference at every geometry, and
// each new field's bad values are refused with a message naming it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/numeric.h"
#include "cpu_harness.h"
#include "ctxattn/ctxattn.hpp"
#include "paged_cache.h"

namespace {

using ctxattn_test::KvForm;
using ctxattn_test::Outcome;
using ctxattn_test::PagedProblem;
using ctxattn_test::ProblemSpec;
using ctxattn_test::run_cpu;

ProblemSpec base_spec() {
  ProblemSpec s;
  s.q_lens = {9, 1, 30};
  s.kv_lens = {40, 70, 30};
  s.num_qo_heads = 10;
  s.num_kv_heads = 2;
  s.head_dim = 64;
  s.page_size = 16;
  s.with_lse = true;
  s.with_sinks = true;
  return s;
}

// The NVFP4 form of a problem's cache: random codes and e4m3 scales for every element, and the
// problem's own cache (bf16 or e4m3) overwritten with the decoded values, so both calls see the
// same numbers. The scales are powers of two: every decoded value is exact in e4m3 as in bf16.
struct Nvfp4Cache {
  std::vector<uint8_t> k_codes, v_codes, k_sf, v_sf;

  explicit Nvfp4Cache(PagedProblem& pb, uint64_t seed) {
    const ProblemSpec& s = pb.spec();
    const int64_t P = pb.args.num_pages, H = s.num_kv_heads, N = s.page_size, D = s.head_dim, S = D / 16;
    std::mt19937_64 rng(seed);
    const float scales[] = {0.25f, 0.5f, 1.0f, 2.0f};
    for (auto* codes : {&k_codes, &v_codes}) {
      codes->resize(P * H * N * D / 2);
      for (uint8_t& c : *codes) c = static_cast<uint8_t>(rng());
    }
    for (auto* sf : {&k_sf, &v_sf}) {
      sf->resize(P * H * N * S);
      for (uint8_t& c : *sf) c = ctxattn::float_to_e4m3(scales[rng() % 4]);
    }
    // Decoded values into the problem's cache (HND, unpadded tuple form): V's scale of (t, s) is
    // stored at tile position (t / 4) * 4S + 4s + t % 4.
    for (int kv = 0; kv < 2; ++kv) {
      uint8_t* dense = kv ? pb.v_cache.data() : pb.k_cache.data();
      const std::vector<uint8_t>& codes = kv ? v_codes : k_codes;
      const std::vector<uint8_t>& sf = kv ? v_sf : k_sf;
      for (int64_t tile = 0; tile < P * H; ++tile) {
        for (int64_t t = 0; t < N; ++t) {
          for (int64_t d = 0; d < D; ++d) {
            const int64_t s_at = kv ? (t / 4) * 4 * S + 4 * (d / 16) + t % 4 : t * S + d / 16;
            const uint8_t byte = codes[(tile * N + t) * D / 2 + d / 2];
            const float x = ctxattn::e2m1_to_float(d % 2 ? byte >> 4 : byte & 0xF) *
                            ctxattn::e4m3_to_float(sf[tile * N * S + s_at]);
            ctxattn_test::put_value(dense, s.kv_dtype, (tile * N + t) * D + d, x);
          }
        }
      }
    }
  }

  void point(ctxattn_args_t& a, const ProblemSpec& s) const {
    const int64_t H = s.num_kv_heads, N = s.page_size, D = s.head_dim;
    a.kv_dtype = CTXATTN_DTYPE_NVFP4;
    a.k_cache = k_codes.data();
    a.v_cache = v_codes.data();
    a.k_strides[0] = a.v_strides[0] = H * N * D / 2;
    a.k_strides[1] = a.v_strides[1] = N * D / 2;
    a.k_strides[2] = a.v_strides[2] = D / 2;
    a.k_cache_sf = k_sf.data();
    a.v_cache_sf = v_sf.data();
    a.k_sf_strides[0] = a.v_sf_strides[0] = H * N * D / 16;
    a.k_sf_strides[1] = a.v_sf_strides[1] = N * D / 16;
    a.k_sf_strides[2] = a.v_sf_strides[2] = D / 16;
  }
};

void expect_same_bits(const Outcome& a, const Outcome& b) {
  ASSERT_EQ(a.status, CTXATTN_STATUS_OK) << a.error;
  ASSERT_EQ(b.status, CTXATTN_STATUS_OK) << b.error;
  EXPECT_EQ(a.out_bytes, b.out_bytes);
  EXPECT_EQ(0, std::memcmp(a.lse_raw.data(), b.lse_raw.data(), a.lse_raw.size() * sizeof(float)));
}

TEST(FlashInfer072, Nvfp4CacheMatchesItsDecodedValuesBitwise) {
  for (ctxattn_dtype_t q : {CTXATTN_DTYPE_BFLOAT16, CTXATTN_DTYPE_FLOAT8_E4M3}) {
    ProblemSpec s = base_spec();
    s.q_dtype = q;
    s.kv_dtype = q;  // an e4m3 query reads an e4m3 cache; NVFP4 stands in for either
    PagedProblem pb(s);
    const Nvfp4Cache fp4(pb, 3);
    const Outcome dense = run_cpu(pb, CTXATTN_BACKEND_CPU);
    const ctxattn_args_t saved = pb.args;
    fp4.point(pb.args, s);
    expect_same_bits(run_cpu(pb, CTXATTN_BACKEND_CPU), dense);
    const Outcome ref = run_cpu(pb, CTXATTN_BACKEND_CPU_REFERENCE);
    pb.args = saved;
    expect_same_bits(ref, run_cpu(pb, CTXATTN_BACKEND_CPU_REFERENCE));
  }
}

TEST(FlashInfer072, AliasedPoolWithSeparateIndicesMatchesTheSharedTable) {
  ProblemSpec s = base_spec();
  PagedProblem pb(s);
  const Outcome shared = run_cpu(pb, CTXATTN_BACKEND_CPU);
  // One pool of 2P pages: K page p at 2p, V page p at 2p + 1 (TensorRT-LLM).
  const size_t page_bytes = pb.args.k_strides[0] * 2;  // bf16
  const int64_t P = pb.args.num_pages;
  std::vector<uint8_t> pool(2 * P * page_bytes);
  for (int64_t p = 0; p < P; ++p) {
    std::memcpy(&pool[2 * p * page_bytes], &pb.k_cache[p * page_bytes], page_bytes);
    std::memcpy(&pool[(2 * p + 1) * page_bytes], &pb.v_cache[p * page_bytes], page_bytes);
  }
  const int32_t B = pb.batch_size(), M = pb.args.max_pages_per_seq;
  std::vector<int32_t> table(static_cast<size_t>(B) * 2 * M);
  for (int32_t b = 0; b < B; ++b) {
    for (int32_t j = 0; j < M; ++j) {
      const int32_t id = pb.block_tables[b * M + j];
      const bool valid = id >= 0 && id < P;  // past a request's pages: garbage, kept outside the pool
      table[(b * 2 + 0) * M + j] = valid ? 2 * id : id;
      table[(b * 2 + 1) * M + j] = valid ? 2 * id + 1 : id;
    }
  }
  pb.args.k_cache = pb.args.v_cache = pool.data();
  pb.args.num_pages = 2 * P;
  pb.args.block_tables = table.data();
  pb.args.block_tables_stride = 2 * M;
  pb.args.block_tables_kv_stride = M;
  pb.args.uses_shared_paged_kv_idx = 0;
  expect_same_bits(run_cpu(pb, CTXATTN_BACKEND_CPU), shared);
  // A lying V page id is caught by the CPU's metadata check, naming the V row.
  table[(1 * 2 + 1) * M + 0] = static_cast<int32_t>(2 * P);
  const Outcome lying = run_cpu(pb, CTXATTN_BACKEND_CPU);
  EXPECT_EQ(lying.status, CTXATTN_STATUS_INVALID_METADATA);
  EXPECT_NE(lying.error.find("block_tables[1][1][0]"), std::string::npos) << lying.error;
}

uint64_t stat(const PagedProblem& pb, int i) {
  uint64_t v[2];
  std::memcpy(v, pb.workspace.data() + CTXATTN_WORKSPACE_SKIP_STATS_OFFSET, sizeof(v));
  return v[i];
}

TEST(FlashInfer072, SkipSoftmaxStatisticsAgreeAtEveryGeometry) {
  ProblemSpec s = base_spec();
  s.q_lens = {200, 17};
  s.kv_lens = {900, 400};
  PagedProblem pb(s);
  // Peaked attention: every query leans on dimension 0, and the first and last 64 keys of each
  // request carry a large component there (a logit bonus of 16 at scale 1/8). Tiles without them
  // sit far below the running max and are skipped at every geometry; tiles with them never are.
  const int64_t T = pb.args.num_tokens;
  for (int64_t t = 0; t < T; ++t) {
    for (int32_t h = 0; h < s.num_qo_heads; ++h) {
      ctxattn_test::put_value(pb.query.data(), s.q_dtype, t * pb.args.query_stride_token + h * pb.args.query_stride_head, 8.0f);
    }
  }
  for (int32_t b = 0; b < pb.batch_size(); ++b) {
    for (int64_t j = 0; j < s.kv_lens[b]; ++j) {
      if (j >= 64 && j < s.kv_lens[b] - 64) continue;
      const int64_t page = pb.block_tables[b * pb.args.block_tables_stride + j / s.page_size];
      for (int32_t g = 0; g < s.num_kv_heads; ++g) {
        const int64_t off = page * pb.args.k_strides[0] + g * pb.args.k_strides[1] + (j % s.page_size) * pb.args.k_strides[2];
        ctxattn_test::put_value(pb.k_cache.data(), s.kv_dtype, off, 16.0f);
      }
    }
  }
  const struct {
    int rows, keys, order;
  } geometries[] = {{0, 0, CTXATTN_TILE_ORDER_DEFAULT}, {16, 64, CTXATTN_TILE_ORDER_ASCENDING}, {128, 256, CTXATTN_TILE_ORDER_DESCENDING}};
  for (const auto& g : geometries) {
    pb.args.skip_softmax_threshold_scale_factor = 50.0f;
    pb.args.skip_softmax_rows = g.rows;
    pb.args.skip_softmax_keys = g.keys;
    pb.args.skip_softmax_order = g.order;
    const Outcome ref = run_cpu(pb, CTXATTN_BACKEND_CPU_REFERENCE);
    ASSERT_EQ(ref.status, CTXATTN_STATUS_OK) << ref.error;
    const uint64_t counted = stat(pb, 0), skipped = stat(pb, 1);
    const Outcome fast = run_cpu(pb, CTXATTN_BACKEND_CPU);
    ASSERT_EQ(fast.status, CTXATTN_STATUS_OK) << fast.error;
    EXPECT_EQ(stat(pb, 0), counted);
    EXPECT_EQ(stat(pb, 1), skipped);
    EXPECT_GT(skipped, 0u) << g.rows << "x" << g.keys;
    EXPECT_LT(skipped, counted);
    EXPECT_LE(ctxattn_test::lse_max_diff(pb, fast.lse, ref.lse), 1e-4);
  }
  // 0 is dense and reports nothing.
  pb.args.skip_softmax_threshold_scale_factor = 0.0f;
  ASSERT_EQ(run_cpu(pb, CTXATTN_BACKEND_CPU).status, CTXATTN_STATUS_OK);
  EXPECT_EQ(stat(pb, 0), 0u);
  EXPECT_EQ(stat(pb, 1), 0u);
}

// Each bad value of a new field: INVALID_ARGUMENT, the message naming the field, nothing written.
TEST(FlashInfer072, BadFieldsAreRefusedByName) {
  ProblemSpec s = base_spec();
  PagedProblem pb(s);
  const Nvfp4Cache fp4(pb, 5);
  const ctxattn_args_t good = pb.args;
  const struct {
    const char* name;
    std::function<void(ctxattn_args_t&)> breaks;
  } cases[] = {
      {"uses_shared_paged_kv_idx", [](ctxattn_args_t& a) { a.uses_shared_paged_kv_idx = 2; }},
      {"block_tables_kv_stride", [](ctxattn_args_t& a) { a.uses_shared_paged_kv_idx = 0; }},
      {"skip_softmax_rows", [](ctxattn_args_t& a) { a.skip_softmax_rows = 2000; }},
      {"skip_softmax_keys", [](ctxattn_args_t& a) { a.skip_softmax_keys = 100; }},
      {"skip_softmax_order", [](ctxattn_args_t& a) { a.skip_softmax_order = 3; }},
      {"use_fp16_softmax", [](ctxattn_args_t& a) { a.use_fp16_softmax = 1; }},
      {"uses_spcompress", [](ctxattn_args_t& a) { a.uses_spcompress = 1; }},
      {"kv_cache_sf must be provided", [&](ctxattn_args_t& a) { fp4.point(a, s); a.v_cache_sf = nullptr; }},
      {"kv_cache_sf (K)", [&](ctxattn_args_t& a) { fp4.point(a, s); a.k_sf_strides[1] = -1; }},
      {"kv_cache_sf (V)", [&](ctxattn_args_t& a) { fp4.point(a, s); a.v_sf_strides[0] = int64_t{1} << 62; }},
      {"head_dim a multiple of 64", [&](ctxattn_args_t& a) {
         fp4.point(a, s);
         a.head_dim = 48;
       }},
      {"page_size a multiple of 4", [&](ctxattn_args_t& a) {
         fp4.point(a, s);
         a.page_size = 2;
         a.max_kv_len = 2;
       }},
  };
  for (const auto& c : cases) {
    pb.args = good;
    c.breaks(pb.args);
    pb.poison_outputs();
    const std::vector<uint8_t> before = pb.out;
    const ctxattn_status_t status = ctxattn_batch_context_with_kv_cache(&pb.args);
    EXPECT_EQ(status, CTXATTN_STATUS_INVALID_ARGUMENT) << c.name;
    EXPECT_NE(std::string(ctxattn_last_error()).find(c.name), std::string::npos) << ctxattn_last_error();
    EXPECT_EQ(pb.out, before) << c.name;
  }
  // The C++ wrapper throws the same message.
  pb.args = good;
  pb.args.use_fp16_softmax = 1;
  try {
    ctxattn::batch_context_with_kv_cache(pb.args);
    ADD_FAILURE() << "expected ctxattn::Error";
  } catch (const ctxattn::Error& e) {
    EXPECT_EQ(e.status(), CTXATTN_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("SM107"), std::string::npos);
  }
}

TEST(FlashInfer072, MaxKvLenMayExceedTheTable) {
  // SGLang passes the model's context length: accepted; a request longer than its table row is
  // still caught.
  ProblemSpec s = base_spec();
  PagedProblem pb(s);
  const Outcome exact = run_cpu(pb, CTXATTN_BACKEND_CPU);
  pb.args.max_kv_len = 1 << 20;
  expect_same_bits(run_cpu(pb, CTXATTN_BACKEND_CPU), exact);
  pb.seq_lens[2] = pb.args.max_pages_per_seq * s.page_size + 1;
  const Outcome lying = run_cpu(pb, CTXATTN_BACKEND_CPU);
  EXPECT_EQ(lying.status, CTXATTN_STATUS_INVALID_METADATA);
  EXPECT_NE(lying.error.find("max_pages_per_seq"), std::string::npos) << lying.error;
}

}  // namespace
