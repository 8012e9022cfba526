// One request's lengths and offset, read from the device metadata and made safe whatever it
// holds (SPEC section 5: any 32-bit value at all). Every GPU backend takes its per-request values
// from here, so a kernel can trust them to address its buffers:
//   q_len   in [0, min(max_q_len, T - q_start)], and q_start in [0, T) whenever q_len > 0;
//   kv_len  in [0, max_kv_len] (Params::max_kv_len: the caller's bound, lowered to what the block
//           table holds, so every page a request reads has a column).
// A request whose start lies outside [0, T), or whose end lies before its start, is empty.
// seq_lens given as uint32 is read through the same bits: values above INT32_MAX read negative
// and count as 0.
//
// The arithmetic is in int64 from the first read: the difference of two int32 values needs 33
// bits, and every clamp only lowers a value that is already known to be positive, so no step can
// wrap. The results fit int32 because max_q_len and max_kv_len do (host ints).
#pragma once

#include <stdint.h>

#include "core/params.h"

namespace ctxattn {

struct RequestSpan {
  int64_t q_start;  // first token row of the request (0 when the request is empty)
  int32_t q_len;
  int32_t kv_len;
};

__device__ __forceinline__ RequestSpan load_request_span(const Params& p, int batch) {
  const int64_t q0 = p.cum_seq_lens_q[batch];
  const int64_t q1 = p.cum_seq_lens_q[batch + 1];
  RequestSpan r;
  r.q_start = 0;
  r.q_len = 0;
  if (q0 >= 0 && q0 < p.num_tokens && q1 > q0) {
    int64_t len = q1 - q0;                        // in [1, 2^32 - 1]
    const int64_t rows_left = p.num_tokens - q0;  // in [1, T]
    if (len > rows_left) len = rows_left;
    if (len > p.max_q_len) len = p.max_q_len;     // max_q_len >= 0 (checked on the host)
    r.q_start = q0;
    r.q_len = static_cast<int32_t>(len);
  }
  const int32_t kv = p.seq_lens[batch];
  r.kv_len = kv < 0 ? 0 : (kv > p.max_kv_len ? p.max_kv_len : kv);
  return r;
}

}  // namespace ctxattn
