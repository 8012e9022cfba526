// Output encodings shared by the CUDA kernels, bit-identical to the CPU backend's (both use the
// scalar routines of core/numeric.h): e4m3 rounds to nearest even and saturates to +-448; nvfp4
// gives each block of 16 values the e4m3 scale sf = e4m3(o_sf_scale * amax / 6) and stores
// e2m1_rne(clamp(x * o_sf_scale / sf, -6, 6)) per value (0 when sf is 0).
#pragma once

#include <stdint.h>

#include "core/numeric.h"

namespace ctxattn {

__device__ __forceinline__ uint32_t e4m3x2_bits(float lo, float hi) {
  return static_cast<uint32_t>(float_to_e4m3(lo)) | (static_cast<uint32_t>(float_to_e4m3(hi)) << 8);
}

__device__ __forceinline__ uint8_t nvfp4_scale_code(float amax, float o_sf_scale) {
  return float_to_e4m3(o_sf_scale * amax / 6.0f);
}

// Two values of one block as one byte (first value in the low nibble); sf_code from
// nvfp4_scale_code for the block's amax.
__device__ __forceinline__ uint32_t nvfp4_pair_bits(float lo, float hi, uint8_t sf_code, float o_sf_scale) {
  const float sf = e4m3_to_float(sf_code);
  if (sf == 0.0f) return 0u;
  const float a = fminf(fmaxf(lo * o_sf_scale / sf, -6.0f), 6.0f);
  const float b = fminf(fmaxf(hi * o_sf_scale / sf, -6.0f), 6.0f);
  return static_cast<uint32_t>(float_to_e2m1(a)) | (static_cast<uint32_t>(float_to_e2m1(b)) << 4);
}

}  // namespace ctxattn
