// What one CTA of the Hopper kernel computes: (request, KV head, block of kBlockM packed rows),
// with the request's lengths made safe by cuda/common/request.cuh. Packed row r of a request is
// query row r / G of head kv_head * G + r % G: the query heads that share a KV head share the M
// tile, so each K/V tile is read once for all of them.
#pragma once

#include <stdint.h>

#include "core/params.h"
#include "cuda/common/band.cuh"
#include "cuda/common/request.cuh"

namespace ctxattn {
namespace sm90 {

struct Work {
  int batch;
  int kv_head;
  int64_t q_start;
  int q_len;
  int kv_len;
  int packed_rows;  // q_len * G, <= T * Hq, which the gate keeps within int32
  int m0;           // first packed row of the CTA

  // Work tile `linear` of batch_size * m_blocks * num_kv_heads: request by request, inside a
  // request the m-blocks longest first (the last rows see the most keys), the KV head fastest, so
  // the CTAs running together read the same request's K/V from L2.
  template <int kBlockM>
  __device__ static Work make(const Params& p, int m_blocks, int linear) {
    Work w;
    w.kv_head = linear % p.num_kv_heads;
    const int rest = linear / p.num_kv_heads;
    w.batch = rest / m_blocks;
    const RequestSpan span = load_request_span(p, w.batch);
    w.q_start = span.q_start;
    w.q_len = span.q_len;
    w.kv_len = span.kv_len;
    w.packed_rows = span.q_len * p.group_size;
    // m_blocks * kBlockM may pass INT32_MAX for a huge host max_q_len; such a block has no rows.
    const int64_t m0 = static_cast<int64_t>(m_blocks - 1 - rest % m_blocks) * kBlockM;
    w.m0 = m0 < w.packed_rows ? static_cast<int>(m0) : w.packed_rows;
    return w;
  }

  __device__ bool empty() const { return m0 >= packed_rows; }

  // The keys the CTA's rows attend (only for a non-empty CTA).
  template <int kBlockM>
  __device__ KeyBand band(const Params& p) const {
    const int last = (m0 + kBlockM < packed_rows ? m0 + kBlockM : packed_rows) - 1;
    return KeyBand(p, kv_len, q_len, m0, last, p.group_size);
  }
};

}  // namespace sm90
}  // namespace ctxattn
