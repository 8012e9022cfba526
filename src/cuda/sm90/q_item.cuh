// A work item's Q into a consumer warpgroup's buffer: by TMA where the kernel and the call allow
// it, else by cp.async through a row table (load.cuh does the copies); issued ahead for the next
// item where the traits say so.
#pragma once

#include <stdint.h>

#include <cutlass/arch/barrier.h>

#include "core/params.h"
#include "cuda/sm90/epilogue.cuh"
#include "cuda/sm90/launch.h"
#include "cuda/sm90/load.cuh"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

// Byte offset of consumer warpgroup c's Q region in buffer `buf`, and its row table.
template <class Tr>
__device__ __forceinline__ int q_region(int buf, int c) {
  return (buf * Tr::kConsumerWarpgroups + c) * Tr::kQWarpgroupBytes;
}
template <class Tr>
__device__ __forceinline__ int64_t* row_table_of(char* smem, int buf, int c) {
  return reinterpret_cast<int64_t*>(smem + Tr::kSmemRows) + (buf * Tr::kConsumerWarpgroups + c) * kRowsPerWarpgroup;
}

// Q by TMA (kQTma: Traits::kQByTma in the static walk without the split code, the kernel of
// short requests, where a Q load is a large part of a work item: short_256 166 -> 155 us, batch_1k
// 317 -> 307 on the H200; the other kernels measured 1-4% slower with it, d64.short_256 +3% and
// chunk_prefix and long_8k at page 16 +1-2%, their main loops scheduled differently) and the
// call's Q map described: a uniform choice.
template <bool kQTma>
__device__ __forceinline__ bool q_by_tma(const TmaMaps& maps) {
  if constexpr (kQTma) {
    return maps.q_tma != 0;
  } else {
    return false;
  }
}

// Starts the load of work item w's Q into buffer `buf`: by TMA (one thread), or its row table
// then cp.async; finish_item_q waits for it.
template <class Tr, bool kQTma>
__device__ __forceinline__ void issue_item_q(const Params& p, const TmaMaps& maps, const BarriersOf<Tr>& bars,
                                             const Work& w, char* smem, uint32_t smem_base, int buf, int c, int t) {
  if (q_by_tma<kQTma>(maps)) {
    if (t == 0) {
      release_staging(t);  // the region's last output stores have read it (epilogue.cuh)
      cutlass::arch::fence_view_async_shared();  // after the region's generic accesses (epilogue.cuh)
      issue_q_tma<Tr>(p, maps, w, bars.q_full(buf * Tr::kConsumerWarpgroups + c),
                      smem + Tr::kSmemQ + q_region<Tr>(buf, c), c);
    }
    return;
  }
  int64_t* table = row_table_of<Tr>(smem, buf, c);
  release_staging(t);  // the region's last output stores have read it (epilogue.cuh)
  const int q_rows = fill_row_table(p, w, table, p.q_stride_token, p.q_stride_head, c, row_block_of<Tr>(c), t);
  issue_q<Tr>(p, table, q_rows, smem_base + Tr::kSmemQ + q_region<Tr>(buf, c), t, first_col_of<Tr>(c));
}

// Waits for the Q issue_item_q started in buffer `buf` and makes it ready for WGMMA. q_phase: the
// parities of this warpgroup's Q barriers, a bit a buffer.
template <class Tr, bool kQTma>
__device__ __forceinline__ void finish_item_q(const TmaMaps& maps, const BarriersOf<Tr>& bars, char* q_ptr, int buf,
                                              int c, int t, bool negate, uint32_t& q_phase) {
  if (q_by_tma<kQTma>(maps)) {
    finish_q_tma<Tr>(bars.q_full(buf * Tr::kConsumerWarpgroups + c), (q_phase >> buf) & 1u, q_ptr, c, t, negate);
    q_phase ^= 1u << buf;
  } else {
    finish_q<Tr>(q_ptr, c, t, negate);
  }
}

}  // namespace sm90
}  // namespace ctxattn
