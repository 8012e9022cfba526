// Scalar conversions shared by every backend (host and device): fp16, bf16, float8_e4m3fn,
// e2m1 (nvfp4 values) and the nvfp4 scale-factor layout. Written on bit patterns so the CPU
// build needs no CUDA headers; GPU kernels may use the hardware instructions instead, which
// round the same way (round to nearest even; e4m3 saturating to +-448).
#pragma once

#include <stdint.h>
#include <string.h>

#include <cfloat>
#include <cmath>

#include "core/host_device.h"

namespace ctxattn {

CTXATTN_HD uint32_t f32_bits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof(u));
  return u;
}
CTXATTN_HD float f32_from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof(x));
  return x;
}

// ---- fp16 (1-5-10, bias 15) ----
CTXATTN_HD float half_to_float(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = (float)mant * 5.9604644775390625e-8f;  // mant * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return f32_from_bits(sign | 0x7f800000u | (mant << 13));
  return f32_from_bits(sign | ((exp + (127 - 15)) << 23) | (mant << 13));
}

CTXATTN_HD uint16_t float_to_half(float x) {
  const uint32_t u = f32_bits(x);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (a < 0x38800000u) {                                      // below 2^-14: subnormal
    const float scaled = f32_from_bits(a) * 16777216.0f;     // in units of 2^-24, exact
    return (uint16_t)(sign | (uint16_t)rintf(scaled));       // 1024 lands on the min normal
  }
  const uint32_t r = a + 0xfffu + ((a >> 13) & 1u);          // round to nearest even
  return (uint16_t)(sign | ((r - ((127u - 15u) << 23)) >> 13));
}

// ---- bf16 (1-8-7) ----
CTXATTN_HD float bf16_to_float(uint16_t b) { return f32_from_bits((uint32_t)b << 16); }

CTXATTN_HD uint16_t float_to_bf16(float x) {
  const uint32_t u = f32_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);  // quiet NaN
  return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

// ---- float8_e4m3fn (1-4-3, bias 7, no inf, S.1111.111 is NaN, max 448) ----
CTXATTN_HD float e4m3_to_float(uint8_t b) {
  const uint32_t exp = (b >> 3) & 0xfu;
  const uint32_t mant = b & 0x7u;
  float v;
  if (exp == 15 && mant == 7) {
    v = f32_from_bits(0x7fc00000u);
  } else if (exp == 0) {
    v = (float)mant * 0.001953125f;  // mant * 2^-9
  } else {
    v = f32_from_bits(((exp + (127 - 7)) << 23) | (mant << 20));
  }
  return (b & 0x80u) ? -v : v;
}

CTXATTN_HD uint8_t float_to_e4m3(float x) {
  const uint32_t u = f32_bits(x);
  const uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint8_t)(sign | 0x7fu);  // NaN
  if (a >= 0x43e00000u) return (uint8_t)(sign | 0x7eu);  // >= 448 (and inf) saturate
  if (a < 0x3c800000u) {                                  // below 2^-6: subnormal
    const float scaled = f32_from_bits(a) * 512.0f;       // units of 2^-9
    return (uint8_t)(sign | (uint8_t)rintf(scaled));      // 8 lands on the min normal
  }
  const uint32_t r = a + 0x7ffffu + ((a >> 20) & 1u);
  return (uint8_t)(sign | ((r - ((127u - 7u) << 23)) >> 20));
}

// ---- e2m1 (nvfp4 values): grid {0, .5, 1, 1.5, 2, 3, 4, 6}, code = sign<<3 | magnitude ----
// Ties go to the even code (0, 1.0, 2.0, 4.0); NaN gives magnitude 7 (e2m1 has none). A sum of
// comparisons, no branches: the GPU epilogues run it for every output value.
CTXATTN_HD uint8_t float_to_e2m1(float x) {
  const uint8_t sign = (f32_bits(x) >> 31) ? 0x8u : 0x0u;
  const float a = fabsf(x);
  int m = (a > 0.25f) + (a >= 0.75f) + (a > 1.25f) + (a >= 1.75f) + (a > 2.5f) + (a >= 3.5f) + (a > 5.0f);
  if (a != a) m = 7;
  return (uint8_t)(sign | m);
}

// nvfp4 block quantisation, one routine for every backend. A block of kNvfp4BlockSize values with
// absolute maximum amax gets the e4m3 scale code e4m3(o_sf_scale * amax / 6); each value x the
// e2m1 code of clamp(x * o_sf_scale / sf, -6, 6) (0 when sf is 0), sf the scale's value.
struct Nvfp4Scale {
  uint8_t code;
  float value;  // e4m3_to_float(code)
  float rcp;    // 1 / value, rounded to nearest
};

CTXATTN_HD Nvfp4Scale nvfp4_scale(float amax, float o_sf_scale) {
  Nvfp4Scale s;
  s.code = float_to_e4m3(o_sf_scale * amax / 6.0f);
  s.value = e4m3_to_float(s.code);
  s.rcp = 1.0f / s.value;
  return s;
}

// t / d rounded to nearest without a division, given rcp = 1 / d rounded to nearest: q0 = t * rcp
// is within an ulp of the quotient, and one correction by the exact remainder (fma) rounds it
// correctly (Markstein's theorem) as long as the remainder stays normal: for every e4m3 divisor
// that holds for |t| >= 2^-100 (tests/cpp/test_numeric.cpp checks it against the division);
// below, the quotient is under 2^-90 and may be an ulp off, which no e2m1 code can tell. Where q0
// is not finite (the quotient overflows, or t is not finite) q0 is the answer; copysignf keeps
// the sign of a zero t (the correction would give +0 for -0).
CTXATTN_HD float divide_by_reciprocal(float t, float d, float rcp) {
  const float q0 = t * rcp;
  const float q = fmaf(fmaf(-q0, d, t), rcp, q0);
  return copysignf(fabsf(q0) <= FLT_MAX ? q : q0, t);
}

CTXATTN_HD uint8_t nvfp4_value_code(float x, float o_sf_scale, const Nvfp4Scale& s) {
  if (s.value == 0.0f) return 0;
  const float q = divide_by_reciprocal(x * o_sf_scale, s.value, s.rcp);
  return float_to_e2m1(fminf(fmaxf(q, -6.0f), 6.0f));
}

CTXATTN_HD float e2m1_to_float(uint8_t code) {
  const float mag[8] = {0.f, 0.5f, 1.f, 1.5f, 2.f, 3.f, 4.f, 6.f};
  const float v = mag[code & 7u];
  return (code & 8u) ? -v : v;
}

// Values per nvfp4 scale factor.
constexpr int kNvfp4BlockSize = 16;

// Byte offset of scale factor (row r, column c) in the 128x4 swizzled layout whose padded
// column count is cols_padded (a multiple of 4): 128 rows x 4 columns form one 512-byte tile;
// inside it row r%32 picks a 16-byte line, (r%128)/32 a 4-byte group, c%4 the byte.
CTXATTN_HD int64_t nvfp4_scale_offset(int64_t r, int64_t c, int64_t cols_padded) {
  return ((r / 128) * (cols_padded / 4) + c / 4) * 512 + (r % 32) * 16 + ((r % 128) / 32) * 4 + (c % 4);
}

}  // namespace ctxattn
