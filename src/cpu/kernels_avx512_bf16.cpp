// The avx512_bf16 form of Q K^T: vdpbf16ps multiplies pairs of bf16 exactly and accumulates in
// fp32, at twice the rate of fp32 FMA. The tiled path uses it when Q and K are exactly bf16 values
// (bf16 or e4m3 data), so only the fp32 summation order differs from the fp32 kernel.
// Register blocking as in the fp32 kernels: 6 rows x 4 vectors of keys.
#include <immintrin.h>
#include <stdint.h>

#include <type_traits>

#include "cpu/kernels.h"

#if defined(__x86_64__)

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16,fma")
#endif

namespace ctxattn {
namespace cpu {
namespace {

constexpr int kLanes = 16;
constexpr int kRowBlock = 6;
constexpr int kVectors = 4;

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

inline __m512bh as_bh(__m512i x) { return (__m512bh)x; }

template <int MR>
inline void qk_block(const uint32_t* q, int64_t ldq, const uint32_t* kt, int pairs, float* s) {
  __m512 acc[MR][kVectors];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_setzero_ps();
  }
  for (int c = 0; c < pairs; ++c) {
    __m512bh k[kVectors];
    for (int v = 0; v < kVectors; ++v) {
      k[v] = as_bh(_mm512_loadu_si512(kt + static_cast<int64_t>(c) * kTileKeys + v * kLanes));
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh qv = as_bh(_mm512_set1_epi32(static_cast<int>(q[r * ldq + c])));
      for (int v = 0; v < kVectors; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], qv, k[v]);
    }
  }
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < kVectors; ++v) _mm512_storeu_ps(s + r * kTileKeys + v * kLanes, acc[r][v]);
  }
}

void qk_bf16(const uint32_t* q, int64_t ldq, int rows, const uint32_t* kt, int dp, float* s) {
  const int pairs = dp / 2;
  int r = 0;
  for (; r + kRowBlock <= rows; r += kRowBlock) qk_block<kRowBlock>(q + r * ldq, ldq, kt, pairs, s + r * kTileKeys);
  with_count<kRowBlock - 1>(rows - r, [&](auto m) {
    qk_block<decltype(m)::value>(q + r * ldq, ldq, kt, pairs, s + r * kTileKeys);
  });
}

}  // namespace
}  // namespace cpu
}  // namespace ctxattn

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace ctxattn {
namespace cpu {

const Kernels& kernels_avx512_bf16() {
  static const Kernels table = [] {
    Kernels k = kernels_avx512();
    k.isa = "avx512_bf16";
    k.qk_bf16 = &qk_bf16;
    return k;
  }();
  return table;
}

}  // namespace cpu
}  // namespace ctxattn

#else

namespace ctxattn {
namespace cpu {
const Kernels& kernels_avx512_bf16() { return kernels_avx512(); }
}  // namespace cpu
}  // namespace ctxattn

#endif
