// Row arithmetic both GPU kernels share: their MMA accumulators give a row to the four lanes of
// a quad (mma.sync m16n8 and WGMMA m64 have the same per-warp layout), so row maxima and sums are
// two shuffles; exp2 on the special-function unit; the end of the online softmax; and the
// bank-spreading layout of the output staging tile.
#pragma once

#include <math_constants.h>
#include <stdint.h>

namespace ctxattn {

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// After the last key tile: a row's denominator l (its lanes' sums plus the sink) and its LSE in
// base 2, from the lane's part of the sum and the running maximum (scaled, base 2; -inf: no key
// and no sink seen). An empty row (no key, no sink) has l = 0: O = 0 and LSE = -inf.
__device__ __forceinline__ void finish_row(float lane_sum, float row_max, float sink_log2, float& l, float& lse) {
  float total = quad_sum(lane_sum);
  if (row_max != -CUDART_INF_F) total += fast_exp2(sink_log2 - row_max);
  l = total;
  lse = total == 0.0f ? -CUDART_INF_F : row_max + log2f(total);
}

// Byte offset of 16-byte chunk `chunk` of row `row` in an output staging tile of `chunks` chunks
// a row (a power of two), XOR-swizzled by the row so that quad-strided writes spread over banks.
__device__ __forceinline__ uint32_t out_chunk(int row, int chunk, int chunks) {
  const int mask = (chunks < 8 ? chunks : 8) - 1;
  return (row * chunks + (chunk ^ (row & mask))) * 16;
}

}  // namespace ctxattn
