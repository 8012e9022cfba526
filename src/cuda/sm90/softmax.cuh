// Online softmax of one consumer thread's two rows (g = lane / 4 and g + 8 of its warp's 16), in
// fp32 and base 2. A score s becomes s * scale with scale = |bmm1_scale| * log2(e) (Q is negated
// when bmm1_scale < 0, so scale > 0 and the maximum of s * scale is the maximum of s times scale);
// exp(s - m) is one FFMA and one ex2. The four lanes of a quad share a row: maxima take two
// shuffles a tile, sums are kept per lane and combined once at the end.
//
// Lazy rescaling (kLazy): the maximum a row's probabilities are taken against moves only when a tile's
// maximum exceeds it by more than kRescaleLog2. In between, probabilities are at most
// 2^kRescaleLog2, well inside fp32 and the 16-bit P operand, and O and the denominator keep the
// same reference, so the result is exact; O is rescaled only on the tiles where a row moved.
//
// A sink (natural-log logit, zero value vector) starts the running maximum, and its exp2 joins
// the denominator at the end, which equals adding it at the start.
#pragma once

#include <math_constants.h>

#include "cuda/common/rows.cuh"

namespace ctxattn {
namespace sm90 {

constexpr float kLog2e = 1.4426950408889634f;
// Largest growth of a row's maximum absorbed without rescaling: probabilities stay <= 2^8.
constexpr float kRescaleLog2 = 8.0f;

// kRegs accumulator registers a thread holds of a 64 x N tile: for 8-column block j, row half h
// (0: row g, 1: row g + 8) and column e of the pair, register 4j + 2h + e.
// kLazy: rescale lazily (above); otherwise the reference moves with every new maximum.
// kPLog2: the probabilities left in s are 2^kPLog2 p (the scale folded into the exponent, for the
// e4m3 P of mma.cuh); the denominator sums p itself.
template <int kRegs, bool kLazy, int kPLog2 = 0>
struct RowSoftmax {
  static constexpr int kBlocks = kRegs / 4;
  float row_max[2];  // maximum the probabilities are relative to (scaled, base 2); -inf: none yet
  float row_sum[2];  // this lane's part of the denominator, relative to row_max

  __device__ explicit RowSoftmax(const float (&sink_log2)[2]) {
    row_max[0] = sink_log2[0];
    row_max[1] = sink_log2[1];
    row_sum[0] = row_sum[1] = 0.0f;
  }

  // Folds a tile of raw scores (masked entries -inf) in: s becomes the probabilities, and
  // correction[h] is the factor the accumulated O of row half h must be multiplied by. row_scale:
  // each row's scale (one value unless Q was stored scaled by row, load.cuh). In two steps, which
  // the kernel may separate: the maxima (prepare: the new reference `base` of each row and the
  // correction), then the probabilities and their sums (exponentiate).
  __device__ __forceinline__ void update(float (&s)[kRegs], const float (&row_scale)[2], float (&correction)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      float base;
      prepare_half(h, s, row_scale[h], correction[h], base);
      exponentiate_half(h, s, row_scale[h], base, correction[h]);
    }
  }

  __device__ __forceinline__ void prepare(const float (&s)[kRegs], const float (&row_scale)[2], float (&correction)[2],
                                          float (&base)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) prepare_half(h, s, row_scale[h], correction[h], base[h]);
  }

  __device__ __forceinline__ void exponentiate(float (&s)[kRegs], const float (&row_scale)[2], const float (&base)[2],
                                               const float (&correction)[2]) {
#pragma unroll
    for (int h = 0; h < 2; ++h) exponentiate_half(h, s, row_scale[h], base[h], correction[h]);
  }

  // The tile's scaled maximum of each row (base 2; -inf where every key is masked), as prepare
  // takes them; the skip-softmax vote reads them first (kernel.cuh).
  __device__ __forceinline__ void tile_maxima(const float (&s)[kRegs], const float (&row_scale)[2],
                                              float (&tile_max)[2]) const {
#pragma unroll
    for (int h = 0; h < 2; ++h) tile_max[h] = tile_max_half(h, s, row_scale[h]);
  }

  // update, from the maxima tile_maxima gave: both rows' references first, then the probabilities.
  __device__ __forceinline__ void update_from(const float (&tile_max)[2], float (&s)[kRegs],
                                              const float (&row_scale)[2], float (&correction)[2]) {
    float base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) prepare_from_max(h, tile_max[h], correction[h], base[h]);
    exponentiate(s, row_scale, base, correction);
  }

  __device__ __forceinline__ static float tile_max_half(int h, const float (&s)[kRegs], float scale) {
    float m0 = s[2 * h], m1 = s[2 * h + 1];
#pragma unroll
    for (int j = 1; j < kBlocks; ++j) {
      m0 = fmaxf(m0, s[4 * j + 2 * h]);
      m1 = fmaxf(m1, s[4 * j + 2 * h + 1]);
    }
    return quad_max(fmaxf(m0, m1)) * scale;
  }

  // Row half h of prepare and exponentiate (update runs them half by half, the order its kernels
  // were tuned with).
  __device__ __forceinline__ void prepare_half(int h, const float (&s)[kRegs], float scale, float& correction,
                                               float& base) {
    prepare_from_max(h, tile_max_half(h, s, scale), correction, base);
  }

  __device__ __forceinline__ void prepare_from_max(int h, float tile_max, float& correction, float& base) {
    // With every key masked so far the maximum is -inf; subtracting 0 instead keeps
    // exp2(-inf - m) = 0 rather than NaN.
    if constexpr (kLazy) {
      correction = 1.0f;
      // A row with nothing seen yet (-inf + 8 = -inf) grows as soon as a tile allows it a key.
      if (tile_max > row_max[h] + kRescaleLog2) {
        correction = fast_exp2(row_max[h] - tile_max);
        row_max[h] = tile_max;
      }
      base = row_max[h] == -CUDART_INF_F ? 0.0f : row_max[h];
    } else {
      const float new_max = fmaxf(row_max[h], tile_max);
      base = new_max == -CUDART_INF_F ? 0.0f : new_max;
      correction = fast_exp2(row_max[h] - base);
      row_max[h] = new_max;
    }
  }

  __device__ __forceinline__ void exponentiate_half(int h, float (&s)[kRegs], float scale, float base,
                                                    float correction) {
    float sum0 = 0.0f, sum1 = 0.0f;
    const float offset = kPLog2 == 0 ? -base : static_cast<float>(kPLog2) - base;
#pragma unroll
    for (int j = 0; j < kBlocks; ++j) {
      float& a = s[4 * j + 2 * h];
      float& b = s[4 * j + 2 * h + 1];
      a = fast_exp2(fmaf(a, scale, offset));
      b = fast_exp2(fmaf(b, scale, offset));
      sum0 += a;
      sum1 += b;
    }
    // Scaling by a power of two is exact: the sum is the one of the unscaled p.
    const float sum = kPLog2 == 0 ? sum0 + sum1 : (sum0 + sum1) * (1.0f / static_cast<float>(1 << kPLog2));
    row_sum[h] = row_sum[h] * correction + sum;
  }

  // After the last tile: the row's denominator (sink included) and LSE in base 2. An empty row
  // (no key, no sink) has l = 0: the caller writes O = 0 and LSE = -inf.
  __device__ __forceinline__ void finish(const float (&sink_log2)[2], float (&l)[2], float (&lse)[2]) const {
    finish_row(row_sum[0], row_max[0], sink_log2[0], l[0], lse[0]);
    finish_row(row_sum[1], row_max[1], sink_log2[1], l[1], lse[1]);
  }
};

}  // namespace sm90
}  // namespace ctxattn
