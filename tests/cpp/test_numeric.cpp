// The scalar conversions of core/numeric.h against oracles written here from the formats'
// definitions: decoding every code from sign / exponent / mantissa, and rounding by searching the
// decoded values for the nearest one (ties to the even code). Exact midpoints between
// neighbours, values next to them, saturation, overflow and NaN get their own checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/numeric.h"
#include "dense_reference.h"

namespace {

using namespace ctxattn;

// A binary float format: exponent bits, mantissa bits, and whether the all-ones exponent is
// inf/NaN (IEEE) or, as in e4m3fn, ordinary values with only S.1111.111 being NaN.
struct Format {
  int exp_bits;
  int mant_bits;
  bool ieee_specials;
  uint32_t max_finite_code;  // largest positive finite code
};
const Format kHalf{5, 10, true, 0x7bff};
const Format kBf16{8, 7, true, 0x7f7f};
const Format kE4m3{4, 3, false, 0x7e};

double decode(const Format& f, uint32_t code) {
  const uint32_t sign = code >> (f.exp_bits + f.mant_bits);
  const uint32_t exp = (code >> f.mant_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t mant = code & ((1u << f.mant_bits) - 1);
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  double v;
  if (exp == 0) {
    v = std::ldexp(static_cast<double>(mant), 1 - bias - f.mant_bits);
  } else {
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -f.mant_bits), static_cast<int>(exp) - bias);
  }
  return sign ? -v : v;
}

// Nearest positive finite code to a >= 0 (ties to the even code); a must not exceed the largest
// finite value.
uint32_t nearest_code(const Format& f, double a) {
  uint32_t lo = 0, hi = f.max_finite_code;
  while (hi - lo > 1) {  // decode(lo) <= a < decode(hi) once narrowed
    const uint32_t mid = (lo + hi) / 2;
    if (decode(f, mid) <= a) lo = mid; else hi = mid;
  }
  const double dl = a - decode(f, lo), dh = decode(f, hi) - a;
  if (dl < dh) return lo;
  if (dh < dl) return hi;
  return (lo % 2 == 0) ? lo : hi;
}

// Test values: every exact midpoint between neighbouring codes, one float step either side of
// it, every representable value, plus random floats spread over the format's range.
std::vector<float> probes(const Format& f, uint64_t seed) {
  std::vector<float> xs;
  for (uint32_t c = 0; c < f.max_finite_code; ++c) {
    const float mid = static_cast<float>((decode(f, c) + decode(f, c + 1)) / 2);  // exact in fp32
    xs.push_back(mid);
    xs.push_back(std::nextafter(mid, 0.0f));
    xs.push_back(std::nextafter(mid, INFINITY));
    xs.push_back(static_cast<float>(decode(f, c)));
  }
  std::mt19937_64 rng(seed);
  const double max_log2 = std::log2(decode(f, f.max_finite_code));
  const double min_log2 = std::log2(decode(f, 1)) - 2;
  std::uniform_real_distribution<double> e(min_log2, max_log2);
  for (int i = 0; i < 20000; ++i) xs.push_back(static_cast<float>(std::exp2(e(rng))));
  return xs;
}

template <typename Encode>
void expect_rounds_like_oracle(const Format& f, Encode encode, int code_bits) {
  const uint32_t sign_bit = 1u << (code_bits - 1);
  for (float x : probes(f, 7)) {
    const uint32_t want = nearest_code(f, x);
    ASSERT_EQ(encode(x), want) << "x = " << x;
    ASSERT_EQ(encode(-x), want | sign_bit) << "x = " << -x;
  }
}

TEST(Numeric, HalfDecodesEveryCode) {
  for (uint32_t c = 0; c < 0x10000; ++c) {
    const uint32_t exp = (c >> 10) & 0x1f;
    const float got = half_to_float(static_cast<uint16_t>(c));
    if (exp == 31) {
      EXPECT_TRUE((c & 0x3ff) ? std::isnan(got) : std::isinf(got)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), decode(kHalf, c)) << c;
    }
  }
}

TEST(Numeric, HalfRoundsToNearestEven) {
  expect_rounds_like_oracle(kHalf, [](float x) { return float_to_half(x); }, 16);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65519.996f), 0x7bff);  // below the overflow midpoint
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);    // the midpoint rounds to even: inf
  EXPECT_EQ(float_to_half(1e30f), 0x7c00);
  EXPECT_EQ(float_to_half(-INFINITY), 0xfc00);
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -25)), 0x0000);      // half the smallest subnormal: tie to 0
  EXPECT_EQ(float_to_half(std::ldexp(3.0f, -25)), 0x0002);      // 1.5 subnormal steps: tie to 2
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(NAN))));
}

TEST(Numeric, Bf16DecodesEveryCode) {
  for (uint32_t c = 0; c < 0x10000; ++c) {
    const float got = bf16_to_float(static_cast<uint16_t>(c));
    if (((c >> 7) & 0xff) == 0xff) {
      EXPECT_TRUE((c & 0x7f) ? std::isnan(got) : std::isinf(got)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), decode(kBf16, c)) << c;
    }
  }
}

TEST(Numeric, Bf16RoundsToNearestEven) {
  expect_rounds_like_oracle(kBf16, [](float x) { return float_to_bf16(x); }, 16);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);       // tie to even
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);   // tie to even (up)
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the max: inf
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7f80);
  const uint16_t nan = float_to_bf16(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16_to_float(nan)));
  // A signalling NaN whose payload sits only in the low bits must stay NaN, not become inf.
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(f32_from_bits(0x7f800001u)))));
}

TEST(Numeric, E4m3DecodesEveryCode) {
  for (uint32_t c = 0; c < 0x100; ++c) {
    const float got = e4m3_to_float(static_cast<uint8_t>(c));
    if ((c & 0x7f) == 0x7f) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ(static_cast<double>(got), decode(kE4m3, c)) << c;
    }
  }
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
}

TEST(Numeric, E4m3RoundsToNearestEvenAndSaturates) {
  expect_rounds_like_oracle(kE4m3, [](float x) { return float_to_e4m3(x); }, 8);
  EXPECT_EQ(float_to_e4m3(1.0f + 1.0f / 16), 0x38);  // tie between 1 and 1.125: even
  EXPECT_EQ(float_to_e4m3(1.0f + 3.0f / 16), 0x3a);  // tie between 1.125 and 1.25: even
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);
  for (float big : {448.0f, 449.0f, 464.0f, 480.0f, 1e6f, INFINITY}) {
    EXPECT_EQ(float_to_e4m3(big), 0x7e) << big;
    EXPECT_EQ(float_to_e4m3(-big), 0xfe) << big;
  }
  EXPECT_EQ(float_to_e4m3(NAN) & 0x7f, 0x7f);
}

TEST(Numeric, E2m1GridAndTies) {
  const double grid[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
  for (int i = 0; i <= 6400; ++i) {
    const float x = static_cast<float>(i) / 1000.0f;
    int best = 0;
    for (int c = 1; c < 8; ++c) {
      const double d = std::fabs(x - grid[c]), db = std::fabs(x - grid[best]);
      if (d < db || (d == db && c % 2 == 0)) best = c;
    }
    if (x > 6.0f) best = 7;
    ASSERT_EQ(float_to_e2m1(x), best) << x;
    ASSERT_EQ(float_to_e2m1(-x), best | 8) << -x;
    ASSERT_EQ(e2m1_to_float(static_cast<uint8_t>(best)), static_cast<float>(grid[best]));
  }
  EXPECT_EQ(float_to_e2m1(0.25f), 0);
  EXPECT_EQ(float_to_e2m1(0.75f), 2);
  EXPECT_EQ(float_to_e2m1(1.25f), 2);
  EXPECT_EQ(float_to_e2m1(1.75f), 4);
  EXPECT_EQ(float_to_e2m1(2.5f), 4);
  EXPECT_EQ(float_to_e2m1(3.5f), 6);
  EXPECT_EQ(float_to_e2m1(5.0f), 6);
  EXPECT_EQ(float_to_e2m1(100.0f), 7);
}

// The nvfp4 encoder divides by the block scale through its reciprocal (numeric.h); the quotient
// must be the division's, bit for bit, for every e4m3 divisor, including ties of the e2m1 grid.
TEST(Numeric, DivisionByReciprocalIsTheDivision) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-140, 127);
  const float grid[] = {0.25f, 0.5f, 0.75f, 1.0f, 1.25f, 1.5f, 1.75f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f, 5.0f, 6.0f};
  for (int code = 1; code < 0x7f; ++code) {
    const float d = e4m3_to_float(static_cast<uint8_t>(code));
    const float rcp = 1.0f / d;
    auto check = [&](float t) {
      for (float x : {t, -t}) {
        const float want = x / d, got = divide_by_reciprocal(x, d, rcp);
        if (std::fabs(x) >= std::ldexp(1.0f, -100) || x == 0.0f) {
          ASSERT_EQ(f32_bits(got), f32_bits(want)) << x << " / " << d;
        } else {
          // A dividend below 2^-100: the remainder may underflow and the quotient be an ulp off;
          // it is below 2^-90 either way (the e2m1 code 0), with the sign of the division.
          ASSERT_LE(std::fabs(got), std::ldexp(1.0f, -90)) << x << " / " << d;
          ASSERT_EQ(f32_bits(got) >> 31, f32_bits(want) >> 31) << x << " / " << d;
        }
      }
    };
    for (int i = 0; i < 20000; ++i) check(std::ldexp(mant(rng), expo(rng)));
    for (float g : grid) {  // ties of the e2m1 rounding and their neighbours
      const float t = g * d;
      check(t);
      check(std::nextafter(t, 0.0f));
      check(std::nextafter(t, INFINITY));
    }
    for (float t : {0.0f, 1e-45f, 1e-40f, 1.17549435e-38f, 3.4e38f, 3.402823466e38f, INFINITY}) check(t);
    for (int i = 0; i < 4000; ++i) check(std::ldexp(mant(rng), -149 + i % 60));  // tiny and subnormal dividends
    const float nan_q = divide_by_reciprocal(NAN, d, rcp);
    EXPECT_TRUE(nan_q != nan_q);
  }
}

TEST(Numeric, Nvfp4ValueCodesFollowTheFormula) {
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  for (float o_sf_scale : {1.0f, 0.37f, 6.0f, 1000.0f}) {
    for (int i = 0; i < 20000; ++i) {
      float block[kNvfp4BlockSize];
      float amax = 0.0f;
      const float spread = std::ldexp(1.0f, i % 60 - 40 - (i % 7 == 0 ? 100 : 0));  // (also subnormal blocks)
      for (float& v : block) {
        v = normal(rng) * spread;
        amax = std::max(amax, std::fabs(v));
      }
      const Nvfp4Scale s = nvfp4_scale(amax, o_sf_scale);
      ASSERT_EQ(s.code, float_to_e4m3(o_sf_scale * amax / 6.0f));
      const float sf = e4m3_to_float(s.code);
      for (float v : block) {
        const uint8_t want = sf == 0.0f ? 0 : float_to_e2m1(fminf(fmaxf(v * o_sf_scale / sf, -6.0f), 6.0f));
        ASSERT_EQ(nvfp4_value_code(v, o_sf_scale, s), want) << v << " scale " << sf;
      }
    }
    for (float v : {0.0f, -0.0f, 1e-45f, -1e-45f, 3e38f, -3e38f, INFINITY, -INFINITY}) {
      const Nvfp4Scale s = nvfp4_scale(std::fabs(v), o_sf_scale);
      const float sf = e4m3_to_float(s.code);
      const uint8_t want = sf == 0.0f ? 0 : float_to_e2m1(fminf(fmaxf(v * o_sf_scale / sf, -6.0f), 6.0f));
      EXPECT_EQ(nvfp4_value_code(v, o_sf_scale, s), want) << v;
    }
  }
}

TEST(Numeric, Nvfp4ScaleOffsetMatchesNestedTiling) {
  for (int64_t cols : {4, 8, 12, 40, 256}) {
    for (int64_t r = 0; r < 300; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        ASSERT_EQ(nvfp4_scale_offset(r, c, cols), ctxattn_test::swizzled_scale_byte(r, c, cols))
            << "row " << r << " col " << c << " cols " << cols;
      }
    }
  }
}

}  // namespace
