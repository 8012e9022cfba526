// Bodies of the fp32 kernels, written once with GCC/Clang vector extensions and compiled once per
// instruction set: each kernels_<isa>.cpp sets CTXATTN_VECTOR_BYTES to its native register width
// (64 AVX-512, 32 AVX2, 16 SSE / NEON) and includes this file after switching the target. Include
// only from those files; everything here has internal linkage so the copies never mix. Those
// files include every header this one includes *before* switching the target, so no inline
// function shared with the rest of the library is ever compiled for a wider instruction set.
#pragma once

#include <stdint.h>
#include <string.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "core/numeric.h"
#include "cpu/kernels.h"

// The baseline build passes 64-byte vectors between functions of this file only (all internal,
// mostly inlined), so GCC's note that their ABI differs from an AVX-512 build does not apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace ctxattn {
namespace cpu {
namespace {

#ifndef CTXATTN_VECTOR_BYTES
#define CTXATTN_VECTOR_BYTES 16
#endif

typedef float f32xN __attribute__((vector_size(CTXATTN_VECTOR_BYTES)));
typedef int32_t i32xN __attribute__((vector_size(CTXATTN_VECTOR_BYTES)));

constexpr int kLanes = CTXATTN_VECTOR_BYTES / 4;
constexpr int kTileVectors = kTileKeys / kLanes;

inline f32xN load(const float* p) {
  f32xN v;
  memcpy(&v, p, sizeof(v));
  return v;
}
inline void store(float* p, f32xN v) { memcpy(p, &v, sizeof(v)); }
inline f32xN splat(float x) { return f32xN{} + x; }

// Horizontal max / sum by halving: each step folds the upper half of the vector onto the lower.
template <int Bytes>
struct VectorOf {
  typedef float type __attribute__((vector_size(Bytes)));
};

template <int Bytes, bool Max>
inline float reduce(typename VectorOf<Bytes>::type v) {
  if constexpr (Bytes == 8) {
    return Max ? (v[0] > v[1] ? v[0] : v[1]) : v[0] + v[1];
  } else {
    typename VectorOf<Bytes / 2>::type lo, hi;
    memcpy(&lo, &v, sizeof(lo));
    memcpy(&hi, reinterpret_cast<const char*>(&v) + sizeof(lo), sizeof(hi));
    return reduce<Bytes / 2, Max>(Max ? (hi > lo ? hi : lo) : lo + hi);
  }
}
inline float reduce_max(f32xN v) { return reduce<sizeof(f32xN), true>(v); }
inline float reduce_sum(f32xN v) { return reduce<sizeof(f32xN), false>(v); }

// 2^x for x <= 0 (softmax arguments). x = n + f with n = round(x), |f| <= 1/2; 2^f from its
// degree-7 Taylor series in f*ln2 (truncation error < 1e-8 relative), 2^n added to the exponent
// bits. Inputs below -125 (including -inf, the masked keys) give exactly 0.
inline f32xN exp2_nonpositive(f32xN x) {
  const float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer in the low bits
  const f32xN xc = x < -125.0f ? splat(-125.0f) : x;
  const f32xN shifted = xc + kRound;
  const f32xN n = shifted - kRound;
  const f32xN f = xc - n;
  f32xN poly = splat(1.525273380405984e-05f);
  poly = poly * f + 1.5403530393381608e-04f;
  poly = poly * f + 1.3333558146428443e-03f;
  poly = poly * f + 9.6181291076284772e-03f;
  poly = poly * f + 5.5504108664821580e-02f;
  poly = poly * f + 2.4022650695910071e-01f;
  poly = poly * f + 6.9314718055994531e-01f;
  poly = poly * f + 1.0f;
  const i32xN exponent = ((i32xN)shifted - (i32xN)splat(kRound)) << 23;
  const f32xN result = (f32xN)((i32xN)poly + exponent);
  return x < -125.0f ? splat(0.0f) : result;
}

// Calls f(std::integral_constant<int, n>) for a runtime n in [1, M].
template <int M, typename F>
inline void with_count(int n, F&& f) {
  if constexpr (M > 0) {
    if (n == M) {
      f(std::integral_constant<int, M>{});
    } else {
      with_count<M - 1>(n, f);
    }
  }
}

// ---- S = Q K^T: MR rows x NV vectors of keys, accumulated over the padded head dim ----
template <int MR, int NV>
inline void qk_block(const float* q, int64_t ldq, const float* kt, int dp, int col, float* s) {
  f32xN acc[MR][NV] = {};
  for (int c = 0; c < dp; ++c) {
    f32xN k[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) k[v] = load(kt + static_cast<int64_t>(c) * kTileKeys + col + v * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float qv = q[r * ldq + c];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) acc[r][v] += qv * k[v];
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) store(s + r * kTileKeys + col + v * kLanes, acc[r][v]);
  }
}

template <int MR, int NV>
void qk_rows(const float* q, int64_t ldq, int rows, const float* kt, int dp, int col, float* s) {
  int r = 0;
  for (; r + MR <= rows; r += MR) qk_block<MR, NV>(q + r * ldq, ldq, kt, dp, col, s + r * kTileKeys);
  with_count<MR - 1>(rows - r, [&](auto m) {
    qk_block<decltype(m)::value, NV>(q + r * ldq, ldq, kt, dp, col, s + r * kTileKeys);
  });
}

template <int MR, int NV>
void qk_f32(const float* q, int64_t ldq, int rows, const float* kt, int dp, int keys, float* s) {
  const int cols = (keys + kKeyAlign - 1) / kKeyAlign * kKeyAlign;
  int col = 0;
  for (; col + NV * kLanes <= cols; col += NV * kLanes) qk_rows<MR, NV>(q, ldq, rows, kt, dp, col, s);
  with_count<NV - 1>((cols - col) / kLanes, [&](auto n) {
    qk_rows<MR, decltype(n)::value>(q, ldq, rows, kt, dp, col, s);
  });
}

// ---- online softmax, one row at a time ----
void softmax(float* s, const SoftmaxStep& step) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  i32xN lane;
  for (int i = 0; i < kLanes; ++i) lane[i] = i;
  for (int r = 0; r < step.rows; ++r) {
    float* row = s + static_cast<int64_t>(r) * kTileKeys;
    f32xN x[kTileVectors];
    for (int v = 0; v < kTileVectors; ++v) x[v] = load(row + v * kLanes) * step.scale_log2;
    if (step.masked) {
      // Allowed tile columns [lo, hi]; the clamps keep far-away bounds inside int32.
      const int64_t lo64 = step.key_lo[r] - step.first_key;
      const int64_t hi64 = step.key_hi[r] - step.first_key;
      const int32_t lo = static_cast<int32_t>(lo64 < 0 ? 0 : (lo64 > kTileKeys ? kTileKeys : lo64));
      const int32_t hi = static_cast<int32_t>(hi64 < -1 ? -1 : (hi64 >= kTileKeys ? kTileKeys - 1 : hi64));
      for (int v = 0; v < kTileVectors; ++v) {
        const i32xN col = lane + v * kLanes;
        x[v] = (col >= lo && col <= hi) ? x[v] : splat(kNegInf);
      }
    }
    f32xN vmax = x[0];
    for (int v = 1; v < kTileVectors; ++v) vmax = x[v] > vmax ? x[v] : vmax;
    const float m_old = step.row_max[r];
    const float tile_max = reduce_max(vmax);
    const float m_new = tile_max > m_old ? tile_max : m_old;
    if (m_new == kNegInf) {
      // Nothing seen yet (no key, no sink): the row stays empty.
      for (int v = 0; v < kTileVectors; ++v) store(row + v * kLanes, splat(0.0f));
      step.alpha[r] = 1.0f;
      continue;
    }
    f32xN sum = splat(0.0f);
    for (int v = 0; v < kTileVectors; ++v) {
      const f32xN e = exp2_nonpositive(x[v] - m_new);
      store(row + v * kLanes, e);
      sum += e;
    }
    const float alpha = std::exp2(m_old - m_new);
    step.alpha[r] = alpha;
    step.row_sum[r] = step.row_sum[r] * alpha + reduce_sum(sum);
    step.row_max[r] = m_new;
  }
}

// ---- O = alpha * O + P V: MR rows x NV vectors of head dim, accumulated over the tile's keys ----
template <int MR, int NV>
inline void pv_block(const float* p, int keys, const float* v, int dp, int col, const float* alpha, float* o) {
  f32xN acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    for (int w = 0; w < NV; ++w) acc[r][w] = load(o + static_cast<int64_t>(r) * dp + col + w * kLanes) * alpha[r];
  }
  for (int j = 0; j < keys; ++j) {
    f32xN vv[NV];
#pragma GCC unroll 4
    for (int w = 0; w < NV; ++w) vv[w] = load(v + static_cast<int64_t>(j) * dp + col + w * kLanes);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const float pv = p[r * kTileKeys + j];
#pragma GCC unroll 4
      for (int w = 0; w < NV; ++w) acc[r][w] += pv * vv[w];
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int w = 0; w < NV; ++w) store(o + static_cast<int64_t>(r) * dp + col + w * kLanes, acc[r][w]);
  }
}

template <int MR, int NV>
void pv_rows(const float* p, int rows, int keys, const float* v, int dp, int col, const float* alpha, float* o) {
  int r = 0;
  for (; r + MR <= rows; r += MR) {
    pv_block<MR, NV>(p + r * kTileKeys, keys, v, dp, col, alpha + r, o + static_cast<int64_t>(r) * dp);
  }
  with_count<MR - 1>(rows - r, [&](auto m) {
    pv_block<decltype(m)::value, NV>(p + r * kTileKeys, keys, v, dp, col, alpha + r, o + static_cast<int64_t>(r) * dp);
  });
}

template <int MR, int NV>
void pv_f32(const float* p, int rows, int keys, const float* v, int dp, const float* alpha, float* o) {
  int col = 0;
  for (; col + NV * kLanes <= dp; col += NV * kLanes) pv_rows<MR, NV>(p, rows, keys, v, dp, col, alpha, o);
  with_count<NV - 1>((dp - col) / kLanes, [&](auto n) {
    pv_rows<MR, decltype(n)::value>(p, rows, keys, v, dp, col, alpha, o);
  });
}

// ---- fp16 rows to fp32 ----
#if defined(CTXATTN_KERNELS_F16C)
void f16_to_f32(const uint16_t* src, int n, float* dst) {
  for (int i = 0; i < n; i += 8) {
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  }
}
#else
void f16_to_f32(const uint16_t* src, int n, float* dst) {
  for (int i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
}
#endif

}  // namespace
}  // namespace cpu
}  // namespace ctxattn
