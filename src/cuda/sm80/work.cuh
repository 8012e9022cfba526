// What one CTA computes: (request, KV head, block of packed rows). The request's lengths come
// from load_request_span (cuda/common/request.cuh), clamped so that whatever the metadata holds,
// nothing outside the buffers is touched.
#pragma once

#include <stdint.h>

#include "core/params.h"
#include "cuda/common/split.cuh"

namespace ctxattn {
namespace sm80 {

// What one CTA computes: a work item of cuda/common/split.cuh, CTA blockIdx.x of a grid of
// batch_size * plan.slots. Inside a request the m-blocks go longest first, the KV head fastest,
// and requests follow each other: longest-first keeps the tail of each request short; request by
// request keeps the K/V the running CTAs read small enough to stay in L2 (measured on an H200 with
// 16 x 1024-token requests: longest-first over the whole batch ran 20% slower, groups of 7
// requests 10% slower than request by request; docs/perf.md, portable v4 and v5).
using CtaWork = WorkTile;

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
