// Online softmax over the key tiles, in fp32 and base 2: a score s becomes s * scale with
// scale = |bmm1_scale| * log2(e) (the kernel negates Q when bmm1_scale < 0, so scale >= 0 and
// the maximum of s * scale is the maximum of s times scale), and exp(s - m) becomes one FFMA and
// one exp2 on the special-function unit.
//
// Lazy rescaling: the running maximum m a row's probabilities are taken against only moves when
// a tile's maximum exceeds it by more than kRescaleLog2 (or m is still -inf). In between,
// probabilities are exp2(s * scale - m) <= 2^kRescaleLog2, well inside fp32 and the 16-bit P
// operand, and O and the denominator keep using the same m, so the result is exact; the O
// rescale (a multiply per accumulator) then runs only on the rare tiles where some row of the
// warp moved far (a warp-uniform vote).
//
// A thread holds two rows of each m16 atom (lane/4 and lane/4 + 8); the four lanes of a quad
// share a row, so row maxima are combined with two shuffles per tile, row sums once at the end.
// A sink is a raw logit of its own (natural-log domain, zero value vector): it starts the running
// maximum, and its exp2 joins the denominator at the end, which equals adding it at the start.
#pragma once

#include <math_constants.h>

#include "cuda/common/rows.cuh"
#include "cuda/sm80/ptx.cuh"

namespace ctxattn {
namespace sm80 {

// Largest growth of the maximum absorbed without rescaling: probabilities stay <= 2^8.
constexpr float kRescaleLog2 = 8.0f;

// Reduces x[0..kN) pairwise (depth log2 kN rather than a chain of kN - 1 dependent operations:
// with two warps a scheduler, the chain's latency is not hidden). kN is a power of two.
template <int kN, typename Op>
__device__ __forceinline__ float tree_reduce(float (&x)[kN], Op op) {
  static_assert((kN & (kN - 1)) == 0, "a power of two");
#pragma unroll
  for (int width = kN / 2; width >= 1; width /= 2) {
#pragma unroll
    for (int i = 0; i < width; ++i) x[i] = op(x[i], x[i + width]);
  }
  return x[0];
}

template <int kAtoms, int kSBlocks, int kOBlocks>
struct OnlineSoftmax {
  static constexpr int kRows = 2 * kAtoms;  // row r: atom r / 2, half r % 2 (lane/4 + 8 * half)
  float row_max[kRows];  // maximum the probabilities are relative to (scaled, base 2); -inf: none
  float row_sum[kRows];  // this lane's part of the running denominator, relative to row_max

  // sink_log2: sink logits (scaled, base 2), -inf without sinks.
  __device__ explicit OnlineSoftmax(const float (&sink_log2)[kRows]) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      row_max[r] = sink_log2[r];
      row_sum[r] = 0.0f;
    }
  }

  // Folds one tile of raw scores (masked entries -inf) into the running state, rescaling o when
  // needed, and leaves the probabilities in s.
  __device__ __forceinline__ void update(float (&s)[kAtoms][kSBlocks][4], float (&o)[kAtoms][kOBlocks][4],
                                         float scale) {
    float tile_max[kRows];
    bool grow = false;
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int at = r / 2;
      const int e0 = 2 * (r % 2);
      float part[kSBlocks];
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) part[nb] = fmaxf(s[at][nb][e0], s[at][nb][e0 + 1]);
      tile_max[r] = quad_max(tree_reduce<kSBlocks>(part, [](float a, float b) { return fmaxf(a, b); })) * scale;
      // A row with nothing seen (-inf + 8 = -inf) grows as soon as a tile allows it a key.
      grow |= tile_max[r] > row_max[r] + kRescaleLog2;
    }
    if (__any_sync(0xffffffffu, grow)) {
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        const int at = r / 2;
        const int e0 = 2 * (r % 2);
        const float new_max = fmaxf(row_max[r], tile_max[r]);
        // With every key masked so far the maximum is -inf; subtracting 0 instead keeps
        // exp2(-inf - m) = 0 rather than NaN.
        const float correction = fast_exp2(row_max[r] - (new_max == -CUDART_INF_F ? 0.0f : new_max));
        row_max[r] = new_max;
        row_sum[r] *= correction;
#pragma unroll
        for (int ob = 0; ob < kOBlocks; ++ob) {
          o[at][ob][e0] *= correction;
          o[at][ob][e0 + 1] *= correction;
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      const int at = r / 2;
      const int e0 = 2 * (r % 2);
      const float neg_base = row_max[r] == -CUDART_INF_F ? 0.0f : -row_max[r];
      float part[kSBlocks];
#pragma unroll
      for (int nb = 0; nb < kSBlocks; ++nb) {
        s[at][nb][e0] = fast_exp2(fmaf(s[at][nb][e0], scale, neg_base));
        s[at][nb][e0 + 1] = fast_exp2(fmaf(s[at][nb][e0 + 1], scale, neg_base));
        part[nb] = s[at][nb][e0] + s[at][nb][e0 + 1];
      }
      row_sum[r] += tree_reduce<kSBlocks>(part, [](float a, float b) { return a + b; });
    }
  }

  // After the last tile: the row's denominator (sink included) and LSE in base 2.
  // An empty row (no key, no sink) has l = 0: the caller writes O = 0 and LSE = -inf.
  __device__ __forceinline__ void finish(const float (&sink_log2)[kRows], float (&l)[kRows], float (&lse)[kRows]) const {
#pragma unroll
    for (int r = 0; r < kRows; ++r) finish_row(row_sum[r], row_max[r], sink_log2[r], l[r], lse[r]);
  }
};

}  // namespace sm80
}  // namespace ctxattn
