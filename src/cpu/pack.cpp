#include "cpu/pack.h"

#include <string.h>

#include <type_traits>

#include "core/numeric.h"
#include "cpu/access.h"

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

// An NVFP4 byte holds two e2m1 codes, the even element in the low nibble: one lookup gives both
// values (before their block's scale).
struct E2m1PairTable {
  float value[256][2];
  E2m1PairTable() {
    for (int c = 0; c < 256; ++c) {
      value[c][0] = e2m1_to_float(static_cast<uint8_t>(c & 0xF));
      value[c][1] = e2m1_to_float(static_cast<uint8_t>(c >> 4));
    }
  }
};
const E2m1PairTable& e2m1_pair_table() {
  static const E2m1PairTable table;
  return table;
}

// The e4m3 scale of block s of NVFP4 row j of a K or V tile.
inline uint8_t nvfp4_scale(const Params& p, bool is_v, const TileRows& rows, int j, int s) {
  return is_v ? p.v_sf[v_scale_offset(p, rows.scale[j], rows.slot[j], s)] : p.k_sf[rows.scale[j] + s];
}

// Row j of an NVFP4 tile: emit(i, lo, hi) for each of its D/2 bytes with the two values it holds
// (element 2i in the low nibble), each scaled by its block's e4m3 scale.
template <typename Emit>
void nvfp4_row(const Params& p, bool is_v, const TileRows& rows, int j, Emit&& emit) {
  const uint8_t* codes = static_cast<const uint8_t*>(is_v ? p.v : p.k) + rows.data[j];
  const auto& pairs = e2m1_pair_table().value;
  const float* e4m3 = e4m3_table().value;
  constexpr int kBytes = kNvfp4BlockSize / 2;
  for (int s = 0; s < p.head_dim / kNvfp4BlockSize; ++s) {
    const float scale = e4m3[nvfp4_scale(p, is_v, rows, j, s)];
    for (int i = s * kBytes; i < (s + 1) * kBytes; ++i) emit(i, pairs[codes[i]][0] * scale, pairs[codes[i]][1] * scale);
  }
}

// As D floats, or as D/2 bf16 pairs (exact: see exact_in_bf16).
void nvfp4_row_to_f32(const Params& p, bool is_v, const TileRows& rows, int j, float* dst) {
  nvfp4_row(p, is_v, rows, j, [dst](int i, float lo, float hi) {
    dst[2 * i] = lo;
    dst[2 * i + 1] = hi;
  });
}
void nvfp4_row_to_bf16_pairs(const Params& p, const TileRows& rows, int j, uint32_t* dst) {
  nvfp4_row(p, false, rows, j, [dst](int i, float lo, float hi) {
    dst[i] = (f32_bits(lo) >> 16) | (f32_bits(hi) & 0xFFFF0000u);
  });
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

void pack_k_f32(const Params& p, const Kernels& k, const TileRows& rows, int dp, float* kt) {
  const int d = p.head_dim, keys = rows.keys;
  const bool nvfp4 = p.kv_dtype == CTXATTN_DTYPE_NVFP4;
  float row[kMaxPackedDim];
  for (int j = 0; j < keys; ++j) {
    if (nvfp4) {
      nvfp4_row_to_f32(p, false, rows, j, row);
    } else {
      row_to_f32(k, p.k, p.kv_dtype, rows.data[j], d, row);
    }
    for (int c = 0; c < d; ++c) kt[c * kTileKeys + j] = row[c];
  }
  for (int c = 0; c < dp; ++c) {
    const int from = c < d ? keys : 0;
    if (from < kTileKeys) memset(kt + c * kTileKeys + from, 0, (kTileKeys - from) * sizeof(float));
  }
}

void pack_k_bf16(const Params& p, const TileRows& rows, int dp, uint32_t* kt) {
  const int half = p.head_dim / 2, keys = rows.keys;
  const bool nvfp4 = p.kv_dtype == CTXATTN_DTYPE_NVFP4;
  uint32_t row[kMaxPackedDim / 2];
  for (int j = 0; j < keys; ++j) {
    if (nvfp4) {
      nvfp4_row_to_bf16_pairs(p, rows, j, row);
    } else {
      row_to_bf16_pairs(p.k, p.kv_dtype, rows.data[j], p.head_dim, row);
    }
    for (int c = 0; c < half; ++c) kt[c * kTileKeys + j] = row[c];
  }
  for (int c = 0; c < dp / 2; ++c) {
    const int from = c < half ? keys : 0;
    if (from < kTileKeys) memset(kt + c * kTileKeys + from, 0, (kTileKeys - from) * sizeof(uint32_t));
  }
}

void pack_v_f32(const Params& p, const Kernels& k, const TileRows& rows, int dp, float* v) {
  const int keys = rows.keys;
  const bool nvfp4 = p.kv_dtype == CTXATTN_DTYPE_NVFP4;
  for (int j = 0; j < keys; ++j) {
    float* dst = v + static_cast<int64_t>(j) * dp;
    if (nvfp4) {
      nvfp4_row_to_f32(p, true, rows, j, dst);
    } else {
      row_to_f32(k, p.v, p.kv_dtype, rows.data[j], p.head_dim, dst);
    }
    for (int c = p.head_dim; c < dp; ++c) dst[c] = 0.0f;
  }
  if (keys < kTileKeys) memset(v + static_cast<int64_t>(keys) * dp, 0, (kTileKeys - keys) * dp * sizeof(float));
}

}  // namespace cpu
}  // namespace ctxattn
