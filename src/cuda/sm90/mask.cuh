// Masking of one tile of a consumer thread's scores (layout of softmax.cuh), for the boundary
// tiles KeyBand::needs_mask reports: a score whose key lies outside its row's band becomes -inf
// (replaced, not added, so a NaN read from an unused K slot never survives).
#pragma once

#include <math_constants.h>

#include "cuda/common/band.cuh"

namespace ctxattn {
namespace sm90 {

// tokens[h]: query row (inside the request) of row half h; lane: the thread's lane.
template <int kBlockN, int kRegs>
__device__ __forceinline__ void apply_mask(float (&s)[kRegs], const KeyBand& band, int n, int lane,
                                           const int (&tokens)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int lo = band.lo(tokens[h]);
    const int hi = band.hi(tokens[h]);
    // Keys relative to the tile start, so that no sum can overflow near INT32_MAX.
    const int64_t k0 = static_cast<int64_t>(n) * kBlockN;
    const int64_t rel_lo = static_cast<int64_t>(lo) - k0;
    const int64_t rel_hi = static_cast<int64_t>(hi) - k0;
    const int col = 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < kRegs / 4; ++j) {
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = col + 8 * j + e;
        if (c < rel_lo || c > rel_hi) s[4 * j + 2 * h + e] = -CUDART_INF_F;
      }
    }
  }
}

}  // namespace sm90
}  // namespace ctxattn
