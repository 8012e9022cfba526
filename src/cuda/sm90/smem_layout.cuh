// Byte offsets inside the swizzled shared-memory tiles of the Hopper kernel (traits.cuh gives the
// layout): used by the Q loads and e4m3 stages (load.cuh, fp8_stage.cuh) and the epilogue.
#pragma once

#include <stdint.h>

#include "cuda/sm90/traits.cuh"

namespace ctxattn {
namespace sm90 {

// Byte offset of element (row, col) in a swizzled tile of `rows` rows of 16-bit elements
// (traits.cuh).
__device__ __forceinline__ uint32_t swizzled_offset(int row, int col, int rows) {
  return (col / kChunkCols) * rows * kSwizzleBytes + row * kSwizzleBytes +
         ((((col % kChunkCols) / 8) ^ (row % 8)) * 16) + (col % 8) * 2;
}
// The same for byte `byte` of row `row` (any element size): chunks of 128-byte rows, or with
// kRowBytes 64 one chunk of 64-byte rows in the 64-byte swizzle.
template <int kRowBytes = kSwizzleBytes>
__device__ __forceinline__ uint32_t swizzled_byte_offset(int row, int byte, int rows) {
  static_assert(kRowBytes == 128 || kRowBytes == 64, "the 128- and 64-byte swizzles");
  if constexpr (kRowBytes == 64) return row * 64 + (((byte / 16) ^ ((row / 2) % 4)) * 16) + (byte % 16);
  return (byte / kSwizzleBytes) * rows * kSwizzleBytes + row * kSwizzleBytes +
         ((((byte % kSwizzleBytes) / 16) ^ (row % 8)) * 16) + (byte % 16);
}

}  // namespace sm90
}  // namespace ctxattn
