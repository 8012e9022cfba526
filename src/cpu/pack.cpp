#include "cpu/pack.h"

#include <string.h>

#include <type_traits>

#include "core/numeric.h"

namespace ctxattn {
namespace cpu {
namespace {

// e4m3 has 256 codes: one table lookup per element.
struct E4m3Table {
  float value[256];
  uint16_t bf16[256];  // exact: e4m3 values are bf16 values
  E4m3Table() {
    for (int c = 0; c < 256; ++c) {
      value[c] = e4m3_to_float(static_cast<uint8_t>(c));
      bf16[c] = static_cast<uint16_t>(f32_bits(value[c]) >> 16);
    }
  }
};
const E4m3Table& e4m3_table() {
  static const E4m3Table table;
  return table;
}

// n elements at element offset `offset` of an input tensor, as fp32.
void row_to_f32(const Kernels& k, const void* base, ctxattn_dtype_t dtype, int64_t offset, int n, float* dst) {
  switch (dtype) {
    case CTXATTN_DTYPE_FLOAT16:
      k.f16_to_f32(static_cast<const uint16_t*>(base) + offset, n, dst);
      break;
    case CTXATTN_DTYPE_BFLOAT16: {
      const uint16_t* src = static_cast<const uint16_t*>(base) + offset;
      for (int i = 0; i < n; ++i) dst[i] = f32_from_bits(static_cast<uint32_t>(src[i]) << 16);
      break;
    }
    default: {
      const uint8_t* src = static_cast<const uint8_t*>(base) + offset;
      const float* table = e4m3_table().value;
      for (int i = 0; i < n; ++i) dst[i] = table[src[i]];
      break;
    }
  }
}

// n elements (n even) of a bf16 or e4m3 tensor as bf16 pairs.
void row_to_bf16_pairs(const void* base, ctxattn_dtype_t dtype, int64_t offset, int n, uint32_t* dst) {
  if (dtype == CTXATTN_DTYPE_BFLOAT16) {
    memcpy(dst, static_cast<const uint16_t*>(base) + offset, n * sizeof(uint16_t));
    return;
  }
  const uint8_t* src = static_cast<const uint8_t*>(base) + offset;
  const uint16_t* table = e4m3_table().bf16;
  for (int i = 0; i < n / 2; ++i) dst[i] = table[src[2 * i]] | static_cast<uint32_t>(table[src[2 * i + 1]]) << 16;
}

}  // namespace

void pack_q_f32(const Params& p, const Kernels& k, const int64_t* offsets, int rows, int dp, float* q) {
  for (int r = 0; r < rows; ++r) {
    float* dst = q + static_cast<int64_t>(r) * dp;
    row_to_f32(k, p.q, p.q_dtype, offsets[r], p.head_dim, dst);
    for (int c = p.head_dim; c < dp; ++c) dst[c] = 0.0f;
  }
}

void pack_q_bf16(const Params& p, const int64_t* offsets, int rows, int dp, uint32_t* q) {
  for (int r = 0; r < rows; ++r) {
    uint32_t* dst = q + static_cast<int64_t>(r) * (dp / 2);
    row_to_bf16_pairs(p.q, p.q_dtype, offsets[r], p.head_dim, dst);
    for (int c = p.head_dim / 2; c < dp / 2; ++c) dst[c] = 0;
  }
}

void pack_k_f32(const Params& p, const Kernels& k, const int64_t* offsets, int keys, int dp, float* kt) {
  const int d = p.head_dim;
  float row[kMaxPackedDim];
  for (int j = 0; j < keys; ++j) {
    row_to_f32(k, p.k, p.kv_dtype, offsets[j], d, row);
    for (int c = 0; c < d; ++c) kt[c * kTileKeys + j] = row[c];
  }
  for (int c = 0; c < dp; ++c) {
    const int from = c < d ? keys : 0;
    if (from < kTileKeys) memset(kt + c * kTileKeys + from, 0, (kTileKeys - from) * sizeof(float));
  }
}

void pack_k_bf16(const Params& p, const int64_t* offsets, int keys, int dp, uint32_t* kt) {
  const int half = p.head_dim / 2;
  uint32_t row[kMaxPackedDim / 2];
  for (int j = 0; j < keys; ++j) {
    row_to_bf16_pairs(p.k, p.kv_dtype, offsets[j], p.head_dim, row);
    for (int c = 0; c < half; ++c) kt[c * kTileKeys + j] = row[c];
  }
  for (int c = 0; c < dp / 2; ++c) {
    const int from = c < half ? keys : 0;
    if (from < kTileKeys) memset(kt + c * kTileKeys + from, 0, (kTileKeys - from) * sizeof(uint32_t));
  }
}

void pack_v_f32(const Params& p, const Kernels& k, const int64_t* offsets, int keys, int dp, float* v) {
  for (int j = 0; j < keys; ++j) {
    float* dst = v + static_cast<int64_t>(j) * dp;
    row_to_f32(k, p.v, p.kv_dtype, offsets[j], p.head_dim, dst);
    for (int c = p.head_dim; c < dp; ++c) dst[c] = 0.0f;
  }
  if (keys < kTileKeys) memset(v + static_cast<int64_t>(keys) * dp, 0, (kTileKeys - keys) * dp * sizeof(float));
}

}  // namespace cpu
}  // namespace ctxattn
