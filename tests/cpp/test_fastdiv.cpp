// FastDiv (src/core/fastdiv.h), the division the GPU kernels use for the work decode and the
// packed-row decode (query row and head of a packed row): exact for every 0 <= n < 2^31.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/fastdiv.h"

namespace ctxattn_test {
namespace {

TEST(FastDiv, MatchesIntegerDivisionOverTheWholeRange) {
  std::vector<int> divisors;
  for (int d = 1; d <= 300; ++d) divisors.push_back(d);
  for (int d : {511, 512, 513, 1000, 4096, 65535, 65536, 65537, 1 << 20, (1 << 30) + 1, INT32_MAX}) {
    divisors.push_back(d);
  }
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> any(0, INT32_MAX);
  for (int d : divisors) {
    const ctxattn::FastDiv f = ctxattn::FastDiv::make(d);
    std::vector<int> ns;
    for (int n = 0; n < 2048; ++n) ns.push_back(n);
    for (int k = 0; k < 2048; ++k) ns.push_back(INT32_MAX - k);
    for (int m = 1; m < 64; ++m) {  // around multiples of d
      const int64_t base = static_cast<int64_t>(d) * m * 1021;
      for (int64_t n = base - 2; n <= base + 2; ++n) {
        if (n >= 0 && n <= INT32_MAX) ns.push_back(static_cast<int>(n));
      }
    }
    for (int k = 0; k < 4096; ++k) ns.push_back(any(rng));
    for (int n : ns) {
      ASSERT_EQ(f.div(n), n / d) << n << " / " << d;
      ASSERT_EQ(f.mod(n), n % d) << n << " % " << d;
    }
  }
}

}  // namespace
}  // namespace ctxattn_test
