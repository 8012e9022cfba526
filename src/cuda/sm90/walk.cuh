// The work items a CTA of the Hopper kernel takes, in order: the static walk (items striped over
// the grid) or the scheduler's (items its producer draws, scheduler.cuh).
#pragma once

#include "core/params.h"
#include "cuda/common/split.cuh"
#include "cuda/sm90/scheduler.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

// The static walk: calls f(w, tile) for each non-empty work item of this
// CTA, in order: items blockIdx.x, blockIdx.x + gridDim.x, ... of num_tiles. Every role walks
// the same items. The loop's control depends on blockIdx and gridDim alone, so the compiler keeps
// what the roles carry from item to item (pipeline stages, shared-memory addresses) in uniform
// registers; a walk whose next index came from the metadata (find_work) moved the consumers'
// stages and WGMMA descriptors to per-thread registers (an R2UR before every WGMMA;
// chunk_prefix measured 4% slower).
template <class Tr, bool kSplit, class F>
__device__ __forceinline__ void for_each_item(const Params& p, const SplitPlan& plan, int num_tiles, F&& f) {
  for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
    const Work w = Work::make<Tr::kBlockM, kSplit, Tr::kTake>(p, plan, tile);
    if (!w.empty()) f(w, tile);
  }
}

// The first non-empty work item of this CTA from `tile` on (tiles tile, tile + grid, ...), or
// tile num_tiles when none is left: the item for_each_item reaches next.
struct FoundWork {
  Work w;
  int tile;
};
template <int kBlockM, bool kSplit, int kTake>
__device__ __forceinline__ FoundWork find_work(const Params& p, const SplitPlan& plan, int tile, int num_tiles) {
  FoundWork f;
  for (; tile < num_tiles; tile += static_cast<int>(gridDim.x)) {
    f.w = Work::make<kBlockM, kSplit, kTake>(p, plan, tile);
    if (!f.w.empty()) break;
  }
  f.tile = tile < num_tiles ? tile : num_tiles;
  return f;
}

// The scheduler's walk (run.cuh says which calls take it): calls f(w) for each item the CTA's producer
// publishes (scheduler.cuh), in order. The item is read from its slot, released after f (the
// producer reuses the slot two items later), so that it holds no registers across f.
template <class Tr, class F>
__device__ __forceinline__ void walk_items(const ItemRing<Tr>& ring, int num_tiles, F&& f) {
  for (int j = 0;; ++j) {
    ring.wait(j);
    if (ring.read(j).tile >= num_tiles) break;  // the end of the walk is not released (scheduler.cuh)
    f(ring.read(j).w);
    ring.release(j);
  }
}

}  // namespace sm90
}  // namespace ctxattn
