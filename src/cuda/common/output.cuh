// Output encodings shared by the CUDA kernels, bit-identical to the CPU backend's: e4m3 rounds to
// nearest even and saturates to +-448 (the hardware conversion, as float_to_e4m3 does); nvfp4
// gives each block of 16 values the e4m3 scale sf = e4m3(o_sf_scale * amax / 6) and stores
// e2m1_rne(clamp(x * o_sf_scale / sf, -6, 6)) per value (0 when sf is 0), through the routines
// of core/numeric.h that the CPU backend uses too.
#pragma once

#include <stdint.h>

#include <cuda_fp8.h>

#include "core/numeric.h"

namespace ctxattn {

// The hardware conversion (round to nearest even, saturating to +-448: float_to_e4m3's rounding);
// NaN keeps its sign bit as float_to_e4m3 does.
__device__ __forceinline__ uint32_t e4m3x2_bits(float lo, float hi) {
  uint32_t bits = __nv_cvt_float2_to_fp8x2(make_float2(lo, hi), __NV_SATFINITE, __NV_E4M3);
  if (lo != lo) bits = (bits & 0xff00u) | float_to_e4m3(lo);
  if (hi != hi) bits = (bits & 0x00ffu) | (static_cast<uint32_t>(float_to_e4m3(hi)) << 8);
  return bits;
}

// Two values of one block as one byte (first value in the low nibble).
__device__ __forceinline__ uint32_t nvfp4_pair_bits(float lo, float hi, const Nvfp4Scale& s, float o_sf_scale) {
  return static_cast<uint32_t>(nvfp4_value_code(lo, o_sf_scale, s)) |
         (static_cast<uint32_t>(nvfp4_value_code(hi, o_sf_scale, s)) << 4);
}

// A thread's four values of one nvfp4 block (pairs a and b) given the block's amax: the byte of
// pair a (bits 0-7), of pair b (bits 8-15) and the block's scale code (bits 16-23).
__device__ __forceinline__ uint32_t nvfp4_block_bits(float a0, float a1, float b0, float b1, float amax,
                                                     float o_sf_scale) {
  const Nvfp4Scale s = nvfp4_scale(amax, o_sf_scale);
  return nvfp4_pair_bits(a0, a1, s, o_sf_scale) | (nvfp4_pair_bits(b0, b1, s, o_sf_scale) << 8) |
         (static_cast<uint32_t>(s.code) << 16);
}

}  // namespace ctxattn
