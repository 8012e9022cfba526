// The resolved problem every backend receives: validated, layouts turned into strides, defaults
// filled in. Plain data, usable from host and device code (passed by value to kernels).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "core/fastdiv.h"
#include "core/host_device.h"
#include "ctxattn/ctxattn.h"

namespace ctxattn {

// The CPU backends' default skip-softmax vote geometry (SPEC 8.2): groups of 64 packed rows,
// 128-key tiles aligned at key 0, visited from the last (the diagonal) to the first: the
// geometry of the sm90 kernel's consumer warpgroups at 16-bit D <= 128.
constexpr int32_t kDefaultSkipRows = 64;
constexpr int32_t kDefaultSkipKeys = 128;

struct Params {
  // ---- sizes ----
  int64_t num_tokens;     // T
  int32_t num_qo_heads;   // Hq
  int32_t num_kv_heads;   // Hkv
  int32_t group_size;     // G = Hq / Hkv
  FastDiv group_div;      // division by G (packed rows -> query row, head)
  int32_t head_dim;       // D
  int32_t page_size;      // N, power of two
  int32_t log2_page_size;
  int64_t num_pages;      // P
  int32_t batch_size;     // B
  int32_t max_pages_per_seq;
  int32_t max_q_len;
  int32_t max_kv_len;       // min(the caller's max_kv_len, max_pages_per_seq * page_size)
  int32_t max_kv_len_arg;   // the caller's max_kv_len (metadata checks and their messages)

  // ---- query [T, Hq, D] ----
  const void* q;
  ctxattn_dtype_t q_dtype;
  int64_t q_stride_token;
  int64_t q_stride_head;

  // ---- KV: element (page, head, token, d) of K is k[page*k_stride_page + head*k_stride_head +
  //      token*k_stride_token + d]; the layout (HND / NHD) is folded into these strides. ----
  // NVFP4 KV: k / v hold bytes (two e2m1 codes each, even element low), strides in bytes.
  const void* k;
  const void* v;
  ctxattn_dtype_t kv_dtype;       // FLOAT16, BFLOAT16, FLOAT8_E4M3 or NVFP4
  int64_t k_stride_page, k_stride_head, k_stride_token;
  int64_t v_stride_page, v_stride_head, v_stride_token;

  // ---- NVFP4 KV block scales (e4m3 bytes, one per 16 elements of a token row): block s of K
  //      token (page, head, slot) is k_sf[page*k_sf_stride_page + head*k_sf_stride_head +
  //      slot*k_sf_stride_token + s]; V's are interleaved by 4 tokens (nvfp4_v_scale_slot). ----
  const uint8_t* k_sf;
  const uint8_t* v_sf;
  int64_t k_sf_stride_page, k_sf_stride_head, k_sf_stride_token;
  int64_t v_sf_stride_page, v_sf_stride_head, v_sf_stride_token;

  // ---- metadata (device or host memory, as the call) ----
  const int32_t* block_tables;   // K page ids (and V's when shared)
  const int32_t* v_block_tables; // V page ids: block_tables itself, or its V rows (separate form)
  int64_t block_tables_stride;   // between requests, for both
  bool separate_kv_idx;          // uses_shared_paged_kv_idx = 0
  const int32_t* seq_lens;        // uint32 input is read through the same bits; values above
                                  // INT32_MAX read as negative and count as invalid
  bool seq_lens_unsigned;         // seq_lens was given as uint32 (for messages: seq_lens_value)
  const int32_t* cum_seq_lens_q;

  // ---- math ----
  float bmm1_scale;
  float bmm2_scale;
  const float* bmm1_scale_ptr;    // when non-null, *ptr replaces bmm1_scale
  const float* bmm2_scale_ptr;
  int32_t window_left;            // < 0: none
  bool causal;
  const float* sinks;             // [Hq] or null
  // Skip-softmax (SPEC 8.2): 0 = dense; the CPU backends' vote geometry (always filled in).
  float skip_softmax_factor;
  int32_t skip_rows;              // packed rows of a vote group
  int32_t skip_keys;              // keys of a tile, a multiple of 64
  bool skip_descending;           // tiles visited from the last to the first

  // ---- output ----
  void* out;
  ctxattn_dtype_t out_dtype;      // FLOAT16, BFLOAT16, FLOAT8_E4M3 or NVFP4
  int64_t out_stride_token;       // elements (bytes for NVFP4)
  int64_t out_stride_head;
  uint8_t* out_scale;             // NVFP4 only
  int64_t out_scale_start_index;
  int64_t out_scale_cols;         // round_up(Hq*D/16, 4)
  float o_sf_scale;

  float* lse;                     // [T, Hq] or null
  int64_t lse_stride_token;
  int64_t lse_stride_head;

  // ---- execution ----
  void* workspace;
  size_t workspace_size;
  void* stream;
  int32_t device_index;
  bool enable_pdl;
  int32_t num_threads;
  bool check_metadata;
};

// seq_lens[b] as the caller wrote it, for messages: a uint32 value above INT32_MAX is the
// unsigned number it is, not the negative int32 the kernels read through the same bits.
inline int64_t seq_lens_value(const Params& p, int32_t raw) {
  return p.seq_lens_unsigned ? static_cast<int64_t>(static_cast<uint32_t>(raw)) : static_cast<int64_t>(raw);
}

// Where V's block scale s of token `slot` lives inside its page x head tile, as (slot', s'):
// the tile is stored as if it were a contiguous [N, S] array holding, at flat position
// (slot/4)*4*S + 4*s + slot%4, the scale of (slot, s) (S = D/16).
struct ScaleSlot {
  int64_t slot;
  int64_t block;
};
CTXATTN_HD ScaleSlot nvfp4_v_scale_slot(int64_t slot, int64_t s, int64_t blocks_per_row) {
  const int64_t f = (slot >> 2) * 4 * blocks_per_row + 4 * s + (slot & 3);
  return {f / blocks_per_row, f % blocks_per_row};
}

}  // namespace ctxattn
