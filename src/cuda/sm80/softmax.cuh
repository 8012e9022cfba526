// Online softmax over the key tiles, in fp32 and base 2: scores are multiplied by
// bmm1_scale * log2(e), so exp(s - m) becomes exp2(s' - m') on the special-function unit.
// A thread holds two rows of each m16 atom (lane/4 and lane/4 + 8); the four lanes of a quad share a row, so row
// maxima are combined with two shuffles per tile, row sums only once at the end.
//
// A sink is a raw logit of its own (natural-log domain, zero value vector): it starts the running
// maximum, and its exp2 joins the denominator at the end, which equals adding it at the start.
#pragma once

#include <math_constants.h>

#include "cuda/sm80/ptx.cuh"

namespace ctxattn {
namespace sm80 {

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

template <int kAtoms, int kSBlocks, int kOBlocks>
struct OnlineSoftmax {
  static constexpr int kRows = 2 * kAtoms;  // row r: atom r / 2, half r % 2 (lane/4 + 8 * half)
  float row_max[kRows];  // running maximum (scaled, base 2); -inf while nothing was seen
  float row_sum[kRows];  // this lane's part of the running denominator, relative to row_max

  // sink_log2: sink logits (scaled, base 2), -inf without sinks.
  __device__ explicit OnlineSoftmax(const float (&sink_log2)[kRows]) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      row_max[r] = sink_log2[r];
      row_sum[r] = 0.0f;
    }
  }

  // Raw dot products -> base-2 logits (the kernel masks after this, so -inf survives).
  __device__ __forceinline__ void scale(float (&s)[kAtoms][kSBlocks][4], float scale_log2) const {
#pragma unroll
    for (int at = 0; at < kAtoms; ++at)
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[at][nb][e] *= scale_log2;
  }

  // Folds one tile of logits into the running maximum and sum, rescales o, and leaves the
  // probabilities (relative to the new maximum) in s.
  __device__ __forceinline__ void update(float (&s)[kAtoms][kSBlocks][4], float (&o)[kAtoms][kOBlocks][4]) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int at = r / 2;
      const int e0 = 2 * (r % 2);
      float tile_max = s[at][0][e0];
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) tile_max = fmaxf(tile_max, fmaxf(s[at][nb][e0], s[at][nb][e0 + 1]));
      const float new_max = fmaxf(row_max[r], quad_max(tile_max));
      // With every key masked so far the maximum is -inf; subtracting 0 instead keeps
      // exp2(-inf - m) = 0 rather than NaN.
      const float base = new_max == -CUDART_INF_F ? 0.0f : new_max;
      const float correction = fast_exp2(row_max[r] - base);
      row_max[r] = new_max;
      float sum = 0.0f;
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) {
        s[at][nb][e0] = fast_exp2(s[at][nb][e0] - base);
        s[at][nb][e0 + 1] = fast_exp2(s[at][nb][e0 + 1] - base);
        sum += s[at][nb][e0] + s[at][nb][e0 + 1];
      }
      row_sum[r] = row_sum[r] * correction + sum;
#pragma unroll
      for (int ob = 0; ob < kOBlocks; ++ob) {
        o[at][ob][e0] *= correction;
        o[at][ob][e0 + 1] *= correction;
      }
    }
  }

  // After the last tile: the row's denominator (sink included) and LSE in base 2.
  // An empty row (no key, no sink) has l = 0: the caller writes O = 0 and LSE = -inf.
  __device__ __forceinline__ void finish(const float (&sink_log2)[kRows], float (&l)[kRows], float (&lse)[kRows]) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      float total = quad_sum(row_sum[r]);
      if (row_max[r] != -CUDART_INF_F) total += fast_exp2(sink_log2[r] - row_max[r]);
      l[r] = total;
      lse[r] = total == 0.0f ? -CUDART_INF_F : row_max[r] + log2f(total);
    }
  }
};

}  // namespace sm80
}  // namespace ctxattn
