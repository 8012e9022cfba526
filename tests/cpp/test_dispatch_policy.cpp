// AUTO's rule for pages of fewer than 8 tokens (src/core/dispatch.h): the sm90 gather with an e4m3
// operand or at D = 256, the portable kernel for 16-bit Q and K/V at D = 64 and 128.
// Host-only: the rule reads host integers and dtypes, so it is checked here on every machine; the
// GPU test AutoChoosesByTheDispatchPolicy checks the whole choice on a Hopper GPU.
#include <gtest/gtest.h>

#include <string>

#include "core/dispatch.h"

namespace ctxattn_test {
namespace {

ctxattn::Params call(int head_dim, ctxattn_dtype_t q, ctxattn_dtype_t kv, int max_kv_len) {
  ctxattn::Params p{};
  p.head_dim = head_dim;
  p.q_dtype = q;
  p.kv_dtype = kv;
  p.out_dtype = CTXATTN_DTYPE_BFLOAT16;
  p.page_size = 1;
  p.max_q_len = 512;
  p.max_kv_len = max_kv_len;
  return p;
}

TEST(DispatchPolicy, SmallPagesGoToTheGatherWithE4m3OrAtD256AndUp) {
  constexpr ctxattn_dtype_t bf16 = CTXATTN_DTYPE_BFLOAT16, f16 = CTXATTN_DTYPE_FLOAT16, e4m3 = CTXATTN_DTYPE_FLOAT8_E4M3;
  struct Case {
    int head_dim;
    ctxattn_dtype_t q, kv;
    bool sm90;
  };
  for (const Case c : {Case{128, bf16, bf16, false}, Case{128, f16, f16, false}, Case{64, bf16, bf16, false},
                       Case{64, f16, f16, false}, Case{256, bf16, bf16, true}, Case{256, f16, f16, true},
                       Case{128, e4m3, e4m3, true}, Case{64, e4m3, e4m3, true}, Case{256, e4m3, e4m3, true},
                       Case{128, bf16, e4m3, true}, Case{64, f16, e4m3, true}, Case{512, bf16, bf16, true}}) {
    // The lengths never matter: a request gets the same backend alone and in any batch.
    for (int max_kv_len : {1, 4096, 8192, 131072}) {
      SCOPED_TRACE("D " + std::to_string(c.head_dim) + " q " + std::to_string(c.q) + " kv " + std::to_string(c.kv) +
                   " max_kv_len " + std::to_string(max_kv_len));
      EXPECT_EQ(ctxattn::sm90_takes_small_pages(call(c.head_dim, c.q, c.kv, max_kv_len)), c.sm90);
    }
  }
}

}  // namespace
}  // namespace ctxattn_test
