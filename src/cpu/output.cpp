#include "cpu/output.h"

#include <algorithm>
#include <cmath>

#include "core/numeric.h"

namespace ctxattn {
namespace cpu {
namespace {

// One nvfp4 block of kNvfp4BlockSize values: returns the e4m3 scale and writes the packed codes.
uint8_t quantize_nvfp4_block(const float* x, float o_sf_scale, uint8_t* packed) {
  float amax = 0.0f;
  for (int i = 0; i < kNvfp4BlockSize; ++i) amax = std::max(amax, std::fabs(x[i]));
  const Nvfp4Scale sf = nvfp4_scale(amax, o_sf_scale);
  for (int i = 0; i < kNvfp4BlockSize / 2; ++i) {
    packed[i] = static_cast<uint8_t>(nvfp4_value_code(x[2 * i], o_sf_scale, sf) |
                                     (nvfp4_value_code(x[2 * i + 1], o_sf_scale, sf) << 4));
  }
  return sf.code;
}

}  // namespace

void store_output_row(const Params& p, int64_t t, int32_t h, const float* o) {
  const int64_t offset = t * p.out_stride_token + static_cast<int64_t>(h) * p.out_stride_head;
  const int d = p.head_dim;
  switch (p.out_dtype) {
    case CTXATTN_DTYPE_FLOAT16: {
      uint16_t* dst = static_cast<uint16_t*>(p.out) + offset;
      for (int i = 0; i < d; ++i) dst[i] = float_to_half(o[i]);
      break;
    }
    case CTXATTN_DTYPE_BFLOAT16: {
      uint16_t* dst = static_cast<uint16_t*>(p.out) + offset;
      for (int i = 0; i < d; ++i) dst[i] = float_to_bf16(o[i]);
      break;
    }
    case CTXATTN_DTYPE_FLOAT8_E4M3: {
      uint8_t* dst = static_cast<uint8_t*>(p.out) + offset;
      for (int i = 0; i < d; ++i) dst[i] = float_to_e4m3(o[i]);
      break;
    }
    default: {  // NVFP4: offsets are in bytes, each byte holds two values
      uint8_t* dst = static_cast<uint8_t*>(p.out) + offset;
      const int blocks = d / kNvfp4BlockSize;
      const int64_t row = p.out_scale_start_index + t;
      for (int k = 0; k < blocks; ++k) {
        const uint8_t sf = quantize_nvfp4_block(o + k * kNvfp4BlockSize, p.o_sf_scale,
                                                dst + k * (kNvfp4BlockSize / 2));
        const int64_t col = static_cast<int64_t>(h) * blocks + k;
        p.out_scale[nvfp4_scale_offset(row, col, p.out_scale_cols)] = sf;
      }
      break;
    }
  }
}

}  // namespace cpu
}  // namespace ctxattn
