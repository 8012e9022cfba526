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

// Element `i` of a buffer of fp16, bf16 or e4m3 values, as float (exact for every input dtype).
inline float load_element(const void* base, ctxattn_dtype_t dtype, int64_t i) {
  switch (dtype) {
    case CTXATTN_DTYPE_FLOAT16: return half_to_float(static_cast<const uint16_t*>(base)[i]);
    case CTXATTN_DTYPE_BFLOAT16: return bf16_to_float(static_cast<const uint16_t*>(base)[i]);
    default: return e4m3_to_float(static_cast<const uint8_t*>(base)[i]);
  }
}

inline int dtype_bytes(ctxattn_dtype_t dtype) { return dtype == CTXATTN_DTYPE_FLOAT8_E4M3 ? 1 : 2; }

// The bmm scales: a non-null pointer (host memory on the CPU) replaces the value.
inline float bmm1_scale(const Params& p) { return p.bmm1_scale_ptr ? *p.bmm1_scale_ptr : p.bmm1_scale; }
inline float bmm2_scale(const Params& p) { return p.bmm2_scale_ptr ? *p.bmm2_scale_ptr : p.bmm2_scale; }

// Element offset of query row (t, h).
inline int64_t q_offset(const Params& p, int64_t t, int32_t h) {
  return t * p.q_stride_token + static_cast<int64_t>(h) * p.q_stride_head;
}

// Page id holding logical KV token j of request b.
inline int64_t kv_page(const Params& p, int32_t b, int64_t j) {
  return p.block_tables[static_cast<int64_t>(b) * p.block_tables_stride + (j >> p.log2_page_size)];
}

// Element offsets of K / V row (request b, token j, kv head g).
inline int64_t k_offset(const Params& p, int32_t b, int64_t j, int32_t g) {
  return kv_page(p, b, j) * p.k_stride_page + static_cast<int64_t>(g) * p.k_stride_head +
         (j & (p.page_size - 1)) * p.k_stride_token;
}
inline int64_t v_offset(const Params& p, int32_t b, int64_t j, int32_t g) {
  return kv_page(p, b, j) * p.v_stride_page + static_cast<int64_t>(g) * p.v_stride_head +
         (j & (p.page_size - 1)) * p.v_stride_token;
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
