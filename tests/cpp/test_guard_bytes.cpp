// Guard bytes: out, lse, nvfp4 scales and the workspace sit inside larger poisoned buffers, with
// gaps between rows (padded strides). After a call, every byte the contract does not name as an
// output must still hold the poison: nothing before, after or between the rows was touched.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ctxattn/ctxattn.hpp"

namespace {

constexpr uint8_t kPoison = 0x5A;
constexpr size_t kGuard = 4096;

struct Guarded {
  std::vector<uint8_t> bytes;
  size_t body;
  explicit Guarded(size_t body_bytes) : bytes(body_bytes + 2 * kGuard, kPoison), body(body_bytes) {}
  uint8_t* ptr() { return bytes.data() + kGuard; }
};

uint16_t bf16_bits(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return static_cast<uint16_t>(u >> 16);
}

struct Case {
  ctxattn_dtype_t out_dtype;
  ctxattn_backend_t backend;
};

class GuardBytes : public ::testing::TestWithParam<Case> {};

TEST_P(GuardBytes, NothingOutsideTheOutputsIsWritten) {
  const Case c = GetParam();
  const int B = 3, Hq = 6, Hkv = 2, D = 32, N = 8, P = 12, M = 4;
  const std::vector<int32_t> q_lens{5, 0, 9}, kv_lens{13, 3, 30};
  std::vector<int32_t> cu_q{0}, cu_kv{0};
  for (int b = 0; b < B; ++b) {
    cu_q.push_back(cu_q.back() + q_lens[b]);
    cu_kv.push_back(cu_kv.back() + kv_lens[b]);
  }
  const int T = cu_q.back();
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  std::vector<uint16_t> q(static_cast<size_t>(T) * Hq * D), kv(static_cast<size_t>(P) * 2 * Hkv * N * D);
  for (auto& x : q) x = bf16_bits(normal(rng));
  for (auto& x : kv) x = bf16_bits(normal(rng));
  std::vector<int32_t> tables{11, 3, 0, 0, 7, 0, 0, 0, 1, 9, 5, 2};

  const bool nvfp4 = c.out_dtype == CTXATTN_DTYPE_NVFP4;
  const int64_t elem = nvfp4 ? 1 : (c.out_dtype == CTXATTN_DTYPE_FLOAT8_E4M3 ? 1 : 2);
  const int64_t row = nvfp4 ? D / 2 : D;
  const int64_t out_sh = row + 8, out_st = Hq * out_sh + 16;  // gaps between heads and tokens
  Guarded out(static_cast<size_t>(T * out_st * elem));
  const int64_t lse_sh = 2, lse_st = Hq * lse_sh + 1;
  Guarded lse(static_cast<size_t>(T * lse_st * 4));
  const int64_t cols = (Hq * D / 16 + 3) / 4 * 4, start = 3;
  Guarded scale(static_cast<size_t>((start + T + 127) / 128 * 128 * cols));

  ctxattn::Args a;
  a.backend = c.backend;
  a.num_tokens = T;
  a.num_qo_heads = Hq;
  a.num_kv_heads = Hkv;
  a.head_dim = D;
  a.page_size = N;
  a.num_pages = P;
  a.batch_size = B;
  a.max_pages_per_seq = M;
  a.max_q_len = 9;
  a.max_kv_len = 30;
  a.query = q.data();
  a.query_stride_token = Hq * D;
  a.query_stride_head = D;
  a.k_cache = kv.data();
  a.v_cache = kv.data() + Hkv * N * D;  // one tensor [P, 2, Hkv, N, D]
  a.k_strides[0] = a.v_strides[0] = 2 * Hkv * N * D;
  a.k_strides[1] = a.v_strides[1] = N * D;
  a.k_strides[2] = a.v_strides[2] = D;
  a.block_tables = tables.data();
  a.block_tables_stride = M;
  a.seq_lens = kv_lens.data();
  a.cum_seq_lens_q = cu_q.data();
  a.cum_seq_lens_kv = cu_kv.data();
  a.bmm1_scale = 0.17f;
  a.out_dtype = c.out_dtype;
  a.out = out.ptr();
  a.out_stride_token = out_st;
  a.out_stride_head = out_sh;
  if (nvfp4) {
    a.out_scale = scale.ptr();
    a.out_scale_size_bytes = static_cast<int64_t>(scale.body);
    a.out_scale_start_index = start;
    a.o_sf_scale = 4.0f;
  }
  a.lse = reinterpret_cast<float*>(lse.ptr());
  a.lse_stride_token = lse_st;
  a.lse_stride_head = lse_sh;
  const size_t ws_bytes = ctxattn::workspace_size(a);
  Guarded ws(ws_bytes);
  a.workspace = ws.ptr();
  a.workspace_size = ws_bytes;
  ctxattn::batch_context_with_kv_cache(a);

  // out: only [t*out_st + h*out_sh, + row) elements may change.
  std::vector<bool> may_write(out.bytes.size(), false);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < Hq; ++h)
      for (int64_t e = 0; e < row * elem; ++e) may_write[kGuard + (t * out_st + h * out_sh) * elem + e] = true;
  bool any_written = false;
  for (size_t i = 0; i < out.bytes.size(); ++i) {
    if (!may_write[i]) ASSERT_EQ(out.bytes[i], kPoison) << "out byte " << static_cast<int64_t>(i - kGuard);
    any_written |= may_write[i] && out.bytes[i] != kPoison;
  }
  EXPECT_TRUE(any_written);

  std::vector<bool> lse_ok(lse.bytes.size(), false);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < Hq; ++h)
      for (int e = 0; e < 4; ++e) lse_ok[kGuard + (t * lse_st + h * lse_sh) * 4 + e] = true;
  for (size_t i = 0; i < lse.bytes.size(); ++i) {
    if (!lse_ok[i]) ASSERT_EQ(lse.bytes[i], kPoison) << "lse byte " << static_cast<int64_t>(i - kGuard);
  }

  for (size_t i = 0; i < kGuard; ++i) {
    ASSERT_EQ(ws.bytes[i], kPoison) << "workspace underrun";
    ASSERT_EQ(ws.bytes[ws.bytes.size() - 1 - i], kPoison) << "workspace overrun";
    ASSERT_EQ(scale.bytes[i], kPoison) << "scale underrun";
    ASSERT_EQ(scale.bytes[scale.bytes.size() - 1 - i], kPoison) << "scale overrun";
  }
  if (nvfp4) {
    // Rows before scale_start_index belong to earlier tokens: untouched.
    for (int64_t r = 0; r < start; ++r)
      for (int64_t col = 0; col < cols; ++col) {
        const int64_t off = ((r / 128) * (cols / 4) + col / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + col % 4;
        ASSERT_EQ(scale.bytes[kGuard + off], kPoison) << "scale row " << r;
      }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Outputs, GuardBytes,
    ::testing::Values(Case{CTXATTN_DTYPE_BFLOAT16, CTXATTN_BACKEND_CPU}, Case{CTXATTN_DTYPE_FLOAT16, CTXATTN_BACKEND_CPU},
                      Case{CTXATTN_DTYPE_FLOAT8_E4M3, CTXATTN_BACKEND_CPU}, Case{CTXATTN_DTYPE_NVFP4, CTXATTN_BACKEND_CPU},
                      Case{CTXATTN_DTYPE_BFLOAT16, CTXATTN_BACKEND_CPU_REFERENCE},
                      Case{CTXATTN_DTYPE_NVFP4, CTXATTN_BACKEND_CPU_REFERENCE}));

}  // namespace
