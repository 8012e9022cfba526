// Online softmax over the key tiles, in fp32 and base 2: scores are multiplied by
// bmm1_scale * log2(e), so exp(s - m) becomes exp2(s' - m') on the special-function unit.
// A thread holds two rows (lane/4 and lane/4 + 8); the four lanes of a quad share a row, so row
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

template <int kSBlocks, int kOBlocks>
struct OnlineSoftmax {
  float row_max[2];  // running maximum (scaled, base 2); -inf while nothing was seen
  float row_sum[2];  // this lane's part of the running denominator, relative to row_max
  float sink[2];     // sink logits (scaled, base 2), -inf without sinks

  __device__ explicit OnlineSoftmax(const float (&sink_log2)[2]) {
    for (int r = 0; r < 2; ++r) {
      sink[r] = sink_log2[r];
      row_max[r] = sink_log2[r];
      row_sum[r] = 0.0f;
    }
  }

  // Raw dot products -> base-2 logits (the kernel masks after this, so -inf survives).
  __device__ __forceinline__ void scale(float (&s)[kSBlocks][4], float scale_log2) const {
#pragma unroll
    for (int nb = 0; nb < kSBlocks; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nb][e] *= scale_log2;
  }

  // Folds one tile of logits into the running maximum and sum, rescales o, and leaves the
  // probabilities (relative to the new maximum) in s.
  __device__ __forceinline__ void update(float (&s)[kSBlocks][4], float (&o)[kOBlocks][4]) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float tile_max = s[0][2 * r];
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) tile_max = fmaxf(tile_max, fmaxf(s[nb][2 * r], s[nb][2 * r + 1]));
      const float new_max = fmaxf(row_max[r], quad_max(tile_max));
      // With every key masked so far the maximum is -inf; subtracting 0 instead keeps
      // exp2(-inf - m) = 0 rather than NaN.
      const float base = new_max == -CUDART_INF_F ? 0.0f : new_max;
      const float correction = fast_exp2(row_max[r] - base);
      row_max[r] = new_max;
      float sum = 0.0f;
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) {
        s[nb][2 * r] = fast_exp2(s[nb][2 * r] - base);
        s[nb][2 * r + 1] = fast_exp2(s[nb][2 * r + 1] - base);
        sum += s[nb][2 * r] + s[nb][2 * r + 1];
      }
      row_sum[r] = row_sum[r] * correction + sum;
#pragma unroll
      for (int ob = 0; ob < kOBlocks; ++ob) {
        o[ob][2 * r] *= correction;
        o[ob][2 * r + 1] *= correction;
      }
    }
  }

  // After the last tile: the row's denominator (sink included) and LSE in base 2.
  // An empty row (no key, no sink) has l = 0: the caller writes O = 0 and LSE = -inf.
  __device__ __forceinline__ void finish(float (&l)[2], float (&lse)[2]) const {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float total = quad_sum(row_sum[r]);
      if (row_max[r] != -CUDART_INF_F) total += fast_exp2(sink[r] - row_max[r]);
      l[r] = total;
      lse[r] = total == 0.0f ? -CUDART_INF_F : row_max[r] + log2f(total);
    }
  }
};

}  // namespace sm80
}  // namespace ctxattn
