// What one CTA computes: (request, KV head, block of packed rows). The request's lengths come
// from load_request_span (cuda/common/request.cuh), clamped so that whatever the metadata holds,
// nothing outside the buffers is touched.
#pragma once

#include <stdint.h>

#include "core/params.h"
#include "cuda/common/request.cuh"

namespace ctxattn {
namespace sm80 {

// The order CTAs start in: request by request; inside a request the m-blocks go longest first
// (reverse order), the KV head fastest. Longest-first keeps the tail of each request short;
// request by request keeps the K/V the running CTAs read small enough to stay in L2 (measured
// on an H200 with 16 x 1024-token requests: longest-first over the whole batch ran 20% slower,
// groups of 7 requests 10% slower than request by request; docs/perf-notes.md, v4 and v5).
struct GridOrder {
  int m_blocks;  // m-blocks of max_q_len * G packed rows
};

struct CtaWork {
  int batch;
  int kv_head;
  int64_t q_start;  // first token row of the request
  int q_len;
  int kv_len;
  int packed_rows;  // q_len * G
  int m0;           // first packed row of this CTA

  // 1-D grid of batch_size * m_blocks * num_kv_heads CTAs, in GridOrder.
  template <int kBlockM>
  __device__ static CtaWork make(const Params& p, const GridOrder& order) {
    CtaWork w;
    const int linear = static_cast<int>(blockIdx.x);
    w.kv_head = linear % p.num_kv_heads;
    const int rest = linear / p.num_kv_heads;
    w.batch = rest / order.m_blocks;
    const RequestSpan span = load_request_span(p, w.batch);
    w.q_start = span.q_start;
    w.q_len = span.q_len;
    w.kv_len = span.kv_len;
    w.packed_rows = w.q_len * p.group_size;  // q_len <= T, so <= T * Hq, which the gate keeps within int32
    // The m-block's first row can pass int32 when max_q_len * G is large (the grid allows up to
    // INT32_MAX m-blocks); a block past the request's rows starts at packed_rows, which is empty.
    const int64_t m0 = static_cast<int64_t>(order.m_blocks - 1 - rest % order.m_blocks) * kBlockM;
    w.m0 = m0 < w.packed_rows ? static_cast<int>(m0) : w.packed_rows;
    return w;
  }

  __device__ bool empty() const { return m0 >= packed_rows; }
};

// Packed row of accumulator row r of a thread (row r: m16 atom r / 2, lane/4 + 8 * (r % 2)).
// Query row = packed / G, query head = kv_head * G + packed % G. Recomputed where needed rather
// than kept in registers through the main loop.
template <int kWarpRows>
__device__ __forceinline__ int packed_row(const CtaWork& w, int warp, int lane, int r) {
  return w.m0 + warp * kWarpRows + (r / 2) * 16 + (lane >> 2) + 8 * (r % 2);
}

// The packed rows first, first + step, first + 2 * step, ... of a CTA, walked as byte offsets
// into a [token, head] tensor (Q or out) with one division at construction instead of one a row:
// each step adds step / G tokens and step % G heads, and carries a head past G into the next
// token. The Q load and the output store each walk a thread's rows this way.
struct PackedRowWalk {
  int packed;           // current packed row (CTA rows are m0 + tile row)
  int head_in_group;    // packed % G
  int64_t offset;       // bytes: (q_start + packed / G) * stride_token + (kv_head * G + packed % G) * stride_head
  int group;
  int step;
  int step_heads;       // step % G
  int64_t step_offset;  // bytes of (step / G) tokens and (step % G) heads
  int64_t carry_offset; // bytes of one token forward, G heads back

  // Strides in bytes.
  __device__ PackedRowWalk(const CtaWork& w, int group_size, int first, int step_rows, int64_t stride_token,
                           int64_t stride_head) {
    group = group_size;
    step = step_rows;
    packed = w.m0 + first;
    head_in_group = packed % group;
    offset = (w.q_start + packed / group) * stride_token + (static_cast<int64_t>(w.kv_head) * group + head_in_group) * stride_head;
    step_heads = step % group;
    step_offset = (step / group) * stride_token + step_heads * stride_head;
    carry_offset = stride_token - group * stride_head;
  }

  __device__ __forceinline__ void next() {
    packed += step;
    head_in_group += step_heads;
    offset += step_offset;
    if (head_in_group >= group) {
      head_in_group -= group;
      offset += carry_offset;
    }
  }
};

}  // namespace sm80
}  // namespace ctxattn
