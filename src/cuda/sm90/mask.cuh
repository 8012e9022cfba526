// Masking of one tile of a consumer thread's scores (layout of softmax.cuh), for the boundary
// tiles KeyBand::needs_mask reports: a score whose key lies outside its row's band becomes -inf
// (replaced, not added, so a NaN read from an unused K slot never survives).
#pragma once

#include <math_constants.h>

#include "cuda/common/band.cuh"

namespace ctxattn {
namespace sm90 {

// tokens[h]: query row (inside the request) of row half h; lane: the thread's lane.
//
// The bounds are brought into the tile once a row: relative to the tile start, lo and hi fit in
// 32 bits (0 <= n * kBlockN <= key_end < 2^31, -1 <= hi, 0 <= lo) and, clamped to the tile
// ([0, kBlockN] and [-1, kBlockN]), stay there after subtracting the thread's column offset. Each score then costs one compare
// against a constant and a select; the lower bound exists only under a sliding window, so
// without one (a uniform branch) it is not compared at all.
template <int kBlockN, int kRegs>
__device__ __forceinline__ void apply_mask(float (&s)[kRegs], const KeyBand& band, int n, int lane,
                                           const int (&tokens)[2]) {
  const int k0 = n * kBlockN;
  const int col = 2 * (lane & 3);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    // The allowed tile-relative columns of this row half, less `col`: [first, last].
    const int last = min(max(band.hi(tokens[h]) - k0, -1), kBlockN) - col;
    if (band.window < 0) {
#pragma unroll
      for (int j = 0; j < kRegs / 4; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (8 * j + e > last) s[4 * j + 2 * h + e] = -CUDART_INF_F;
        }
      }
    } else {
      const int first = min(max(band.lo(tokens[h]) - k0, 0), kBlockN) - col;
#pragma unroll
      for (int j = 0; j < kRegs / 4; ++j) {
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          if (8 * j + e < first || 8 * j + e > last) s[4 * j + 2 * h + e] = -CUDART_INF_F;
        }
      }
    }
  }
}

}  // namespace sm90
}  // namespace ctxattn
