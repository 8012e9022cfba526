// The mask rule of SPEC §3 for a block of packed query rows (packed row = query row * G + head in
// group): bottom-right causal (query row i sees key p = kv_len - q_len + i and earlier), an
// optional sliding window [p - window_left, p], or every key when not causal, always below
// kv_len. It answers which key tiles the block visits and whether a tile needs masking (only
// tiles that cross some row's band do; inner tiles run without predicates).
#pragma once

#include <stdint.h>

#include "core/params.h"

namespace ctxattn {

struct KeyBand {
  int kv_len;
  int diag;    // kv_len - q_len: key index of query row 0's diagonal
  int window;  // < 0: none (always < 0 when not causal)
  bool causal;
  int hi_first, lo_last;  // band ends of the block's first and last query rows
  int key_begin;          // first key any row attends (lo of the first row)
  int key_end;            // last key any row attends (hi of the last row); < 0: none

  // Allowed keys of query row i: [lo(i), hi(i)] (empty when hi < lo).
  __device__ __forceinline__ int hi(int i) const {
    if (!causal) return kv_len - 1;
    const int p = diag + i;
    return p < kv_len - 1 ? p : kv_len - 1;
  }
  __device__ __forceinline__ int lo(int i) const {
    if (window < 0) return 0;
    const int p = diag + i;
    return p > window ? p - window : 0;  // written so that p - window cannot overflow
  }

  // first_packed .. last_packed (inclusive, 0 <= first <= last) are the block's packed rows inside
  // the request (query row = packed row / G, by the call's FastDiv). kv_len and q_len lie in
  // [0, INT32_MAX], so diag + i = kv_len - (q_len - i) cannot overflow for i < q_len.
  __device__ KeyBand(const Params& p, int kv_len_, int q_len, int first_packed, int last_packed) {
    kv_len = kv_len_;
    diag = kv_len_ - q_len;
    causal = p.causal;
    window = p.causal ? p.window_left : -1;
    const int first = p.group_div.div(first_packed);
    const int last = p.group_div.div(last_packed);
    hi_first = hi(first);
    lo_last = lo(last);
    key_begin = lo(first);
    key_end = hi(last);
  }

  // Key tiles of kBlockN keys visited: n_min() .. n_max() (none when n_max < n_min).
  template <int kBlockN>
  __device__ __forceinline__ int n_max() const { return key_end >= 0 ? key_end / kBlockN : -1; }
  template <int kBlockN>
  __device__ __forceinline__ int n_min() const { return key_begin / kBlockN; }

  // A tile needs no mask when it lies inside the band of every row of the block.
  template <int kBlockN>
  __device__ __forceinline__ bool needs_mask(int n) const {
    const int64_t k0 = static_cast<int64_t>(n) * kBlockN;  // kv_len may lie near INT32_MAX
    return !(k0 + kBlockN - 1 <= hi_first && k0 >= lo_last);
  }
};

}  // namespace ctxattn
