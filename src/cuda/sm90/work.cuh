// What one CTA of the Hopper kernel computes: a work item of cuda/common/split.cuh -- (request,
// KV head, block of kBlockM packed rows, split piece) -- with the request's lengths made safe by
// cuda/common/request.cuh. Packed row r of a request is query row r / G of head kv_head * G +
// r % G: the query heads that share a KV head share the M tile, so each K/V tile is read once for
// all of them.
#pragma once

#include <stdint.h>

#include "core/params.h"
#include "cuda/common/band.cuh"
#include "cuda/common/split.cuh"
#include "cuda/sm90/traits.cuh"

namespace ctxattn {
namespace sm90 {

// Consumer warpgroup c's 64-row block of the work item (traits.cuh first_col_of has its columns;
// the column-split warpgroups share block 0).
template <class Tr>
__device__ __forceinline__ int row_block_of(int c) {
  return Tr::kColSplit ? 0 : c;
}

struct Work : WorkTile {
  // kTake (traits.cuh): the items of a request the kernel's form does not take are empty.
  template <int kBlockM, bool kSplit, int kTake = kTakeAll>
  __device__ static Work make(const Params& p, const SplitPlan& plan, int linear) {
    Work w;
    static_cast<WorkTile&>(w) = WorkTile::make<kBlockM, kSplit>(p, plan, linear);
    if constexpr (kTake != kTakeAll) {
      if ((w.kv_len >= kLongTileMinKv) != (kTake == kTakeLong)) w.m0 = w.packed_rows;
    }
    return w;
  }

  // Packed row `packed` (inside the request) as its query row and query head, by the call's
  // FastDiv by G.
  struct Row {
    int query;
    int head;
  };
  __device__ Row row(const Params& p, int packed) const {
    const int query = p.group_div.div(packed);
    return Row{query, kv_head * p.group_size + (packed - query * p.group_size)};
  }

  // The keys the CTA's rows attend (only for a non-empty CTA).
  template <int kBlockM>
  __device__ KeyBand band(const Params& p) const {
    const int last = (m0 + kBlockM < packed_rows ? m0 + kBlockM : packed_rows) - 1;
    return KeyBand(p, kv_len, q_len, m0, last);
  }

  // The key tiles of kBlockN keys this item visits, lo .. hi (none when hi < lo): the band's, or
  // the item's piece of them.
  template <int kBlockN>
  __device__ void key_tiles(const KeyBand& band, int* lo, int* hi) const {
    split_tiles(band.n_min<kBlockN>(), band.n_max<kBlockN>(), piece, pieces, lo, hi);
  }
};

}  // namespace sm90
}  // namespace ctxattn
