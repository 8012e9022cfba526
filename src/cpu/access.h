// Host-side access to the inputs described by Params: element reads in any input dtype, KV row
// addressing through the block table, request bounds and the allowed-key interval of a query row.
// Shared by the reference loops and the tiled path so both read the problem the same way.
#pragma once

#include <stdint.h>

#include <algorithm>

#include "core/numeric.h"
#include "core/params.h"

namespace ctxattn {
namespace cpu {

// Element `i` of a buffer of fp16, bf16 or e4m3 values, as float (exact for every input dtype;
// NVFP4 K / V rows are read through load_kv_row).
inline float load_element(const void* base, ctxattn_dtype_t dtype, int64_t i) {
  switch (dtype) {
    case CTXATTN_DTYPE_FLOAT16: return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case CTXATTN_DTYPE_BFLOAT16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    default: return e4m3_to_float(static_cast<const uint8_t*>(base)[i]);
  }
}

inline int dtype_bytes(ctxattn_dtype_t dtype) {
  return dtype == CTXATTN_DTYPE_FLOAT8_E4M3 || dtype == CTXATTN_DTYPE_NVFP4 ? 1 : 2;
}

// The bmm scales: a non-null pointer (host memory on the CPU) replaces the value.
inline float bmm1_scale(const Params& p) { return p.bmm1_scale_ptr ? *p.bmm1_scale_ptr : p.bmm1_scale; }
inline float bmm2_scale(const Params& p) { return p.bmm2_scale_ptr ? *p.bmm2_scale_ptr : p.bmm2_scale; }

// Element offset of query row (t, h).
inline int64_t q_offset(const Params& p, int64_t t, int32_t h) {
  return t * p.q_stride_token + static_cast<int64_t>(h) * p.q_stride_head;
}

// Page ids holding logical KV token j of request b: K's, and V's (the same ids unless the call
// passed separate K / V page indices).
inline int64_t k_page(const Params& p, int32_t b, int64_t j) {
  return p.block_tables[static_cast<int64_t>(b) * p.block_tables_stride + (j >> p.log2_page_size)];
}
inline int64_t v_page(const Params& p, int32_t b, int64_t j) {
  return p.v_block_tables[static_cast<int64_t>(b) * p.block_tables_stride + (j >> p.log2_page_size)];
}

// Element offsets (bytes for NVFP4) of K / V row (request b, token j, kv head g).
inline int64_t k_offset(const Params& p, int32_t b, int64_t j, int32_t g) {
  return k_page(p, b, j) * p.k_stride_page + static_cast<int64_t>(g) * p.k_stride_head +
         (j & (p.page_size - 1)) * p.k_stride_token;
}
inline int64_t v_offset(const Params& p, int32_t b, int64_t j, int32_t g) {
  return v_page(p, b, j) * p.v_stride_page + static_cast<int64_t>(g) * p.v_stride_head +
         (j & (p.page_size - 1)) * p.v_stride_token;
}

// NVFP4 block scales of a K / V row: K's D/16 scales start at k_scale_offset and are
// consecutive; V's block s lives where nvfp4_v_scale_slot puts it inside the row's page x head
// tile, which starts at v_scale_tile.
inline int64_t k_scale_offset(const Params& p, int32_t b, int64_t j, int32_t g) {
  return k_page(p, b, j) * p.k_sf_stride_page + static_cast<int64_t>(g) * p.k_sf_stride_head +
         (j & (p.page_size - 1)) * p.k_sf_stride_token;
}
inline int64_t v_scale_tile(const Params& p, int32_t b, int64_t j, int32_t g) {
  return v_page(p, b, j) * p.v_sf_stride_page + static_cast<int64_t>(g) * p.v_sf_stride_head;
}
inline int64_t v_scale_offset(const Params& p, int64_t tile, int64_t slot, int64_t s) {
  const ScaleSlot at = nvfp4_v_scale_slot(slot, s, p.head_dim / kNvfp4BlockSize);
  return tile + at.slot * p.v_sf_stride_token + at.block;
}

// K or V row (request b, token j, kv head g) as D floats, for every KV dtype (NVFP4 decoded as
// e2m1 code x its block's e4m3 scale). The plain reading, for the reference loops.
inline void load_kv_row(const Params& p, bool is_v, int32_t b, int64_t j, int32_t g, float* row) {
  const int64_t off = is_v ? v_offset(p, b, j, g) : k_offset(p, b, j, g);
  const void* base = is_v ? p.v : p.k;
  if (p.kv_dtype != CTXATTN_DTYPE_NVFP4) {
    for (int32_t c = 0; c < p.head_dim; ++c) row[c] = load_element(base, p.kv_dtype, off + c);
    return;
  }
  const uint8_t* bytes = static_cast<const uint8_t*>(base) + off;
  const int64_t slot = j & (p.page_size - 1);
  for (int32_t c = 0; c < p.head_dim; ++c) {
    const int32_t s = c / kNvfp4BlockSize;
    const uint8_t sf = is_v ? p.v_sf[v_scale_offset(p, v_scale_tile(p, b, j, g), slot, s)]
                            : p.k_sf[k_scale_offset(p, b, j, g) + s];
    const uint8_t code = (c & 1) ? bytes[c / 2] >> 4 : bytes[c / 2] & 0xF;
    row[c] = e2m1_to_float(code) * e4m3_to_float(sf);
  }
}

// One request's rows and lengths (metadata already checked by cpu_check_metadata).
struct Request {
  int64_t q_begin;  // first query row t
  int32_t q_len;    // Lq
  int32_t kv_len;   // Lk
};

inline Request request(const Params& p, int32_t b) {
  const int64_t q0 = p.cum_seq_lens_q[b];
  return {q0, static_cast<int32_t>(p.cum_seq_lens_q[b + 1] - q0), p.seq_lens[b]};
}

// The keys query row i of a request may attend to form one interval [lo, hi] (empty when
// lo > hi). Causal: p = Lk - Lq + i (bottom-right alignment), keys j <= p and, with a window,
// j >= p - window_left. Non-causal: every key [0, Lk). In causal mode the diagonal key p is
// always allowed, so only a non-causal request with Lk = 0 has rows without keys.
struct KeyRange {
  int64_t lo;
  int64_t hi;
};

inline KeyRange allowed_keys(const Params& p, const Request& r, int64_t i) {
  if (!p.causal) return {0, static_cast<int64_t>(r.kv_len) - 1};
  const int64_t diag = static_cast<int64_t>(r.kv_len) - r.q_len + i;
  const int64_t lo = p.window_left >= 0 ? std::max<int64_t>(0, diag - p.window_left) : 0;
  return {lo, diag};
}

}  // namespace cpu
}  // namespace ctxattn
