// The one place where CPU results leave fp32: the reference loops and the tiled path both hand a
// finished row of D floats to store_output_row, so every output kind is converted identically.
#pragma once

#include <stdint.h>

#include "core/params.h"

namespace ctxattn {
namespace cpu {

// Writes O[t, h, 0:D) in p.out_dtype:
//   fp16 / bf16: round to nearest even (fp16 overflows to inf);
//   e4m3: round to nearest even, saturating to +-448;
//   nvfp4: D/16 blocks of 16 values, each with the scale sf = e4m3(o_sf_scale * amax / 6) stored
//          in the 128x4 swizzled scale tensor at row out_scale_start_index + t, column
//          h*(D/16) + k, and values e2m1_rne(clamp(x * o_sf_scale / sf, -6, 6)) (0 when sf is 0),
//          two per byte with the even element in the low nibble.
void store_output_row(const Params& p, int64_t t, int32_t h, const float* o);

// Writes LSE[t, h] when an LSE tensor was given.
inline void store_lse(const Params& p, int64_t t, int32_t h, float value) {
  if (p.lse != nullptr) p.lse[t * p.lse_stride_token + static_cast<int64_t>(h) * p.lse_stride_head] = value;
}

}  // namespace cpu
}  // namespace ctxattn
