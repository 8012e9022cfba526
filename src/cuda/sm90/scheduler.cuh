// The Hopper kernel's tile scheduler: persistent CTAs (at most one an SM) that draw work items
// from a counter in the workspace, in the work list's order (cuda/common/split.cuh: request by
// request, m-blocks longest first), so that a CTA whose items were short takes more of them and
// the call ends within about one short item of perfect balance.
//
// The producer warp is the only one that draws. CTA c starts with item c; each further item is
// gridDim.x + a ticket from the counter. The producer decodes item j + 1 right after the first
// tile of item j is issued, from a ticket taken an item earlier, so neither the atomic's nor the
// metadata's latency reaches a critical path. Empty items (past a request's own m-blocks) are
// skipped where they are found: they come last in their request, so the first empty one moves
// the counter past the rest of the request. The producer publishes each item it will produce --
// its decoded Work, not just the index -- in a ring of shared-memory slots; the consumer warps
// (and the e4m3 wideners / transposers) read it from there, so only one warp of a CTA pays the
// metadata's latency. An index of num_tiles ends the walk.
//
// The counter and a count of finished CTAs live in the workspace header; the last CTA to finish
// resets both to zero, so every call (and graph replay) starts from zero without a host step.
// A workspace that was not zeroed before its first use (docs/api.md) can make a call skip or
// repeat items, but never read or write outside its buffers: an index is formed only below
// num_tiles.
#pragma once

#include <stdint.h>

#include "core/params.h"
#include "cuda/common/workspace.h"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

// The scheduler is a build option for now (-DCTXATTN_SM90_SCHEDULER=ON, docs/perf-notes.md "sm90
// v8"); the default build walks the items statically (kernel.cuh for_each_item).
#if defined(CTXATTN_SM90_SCHEDULER)
constexpr bool kDynamicScheduler = true;
#else
constexpr bool kDynamicScheduler = false;
#endif

// One slot of the ring: the item's decoded Work and its index (num_tiles: no more items).
struct alignas(16) ScheduledItem {
  Work w;
  int tile;
};

struct SchedulerCounters {
  unsigned int next;  // tickets handed out: item gridDim.x + next is the next undrawn one
  unsigned int done;  // CTAs whose producer has drawn past the end
};

__device__ __forceinline__ SchedulerCounters* scheduler_counters(const Params& p) {
  return reinterpret_cast<SchedulerCounters*>(static_cast<char*>(p.workspace) + kSchedulerOffset);
}

// The producer warp's side: draws and decodes items. All lanes call every function (lane 0
// alone touches the counters; the others get its values by shuffle). Static functions over the
// kernel's parameters, so the producer's 24 registers hold no scheduler state but a ticket.
template <int kBlockM, bool kSplit>
struct ItemSource {
  // Lane 0 takes a ticket; its value is read (index_of) only when it is needed, so the atomic's
  // latency overlaps whatever the warp does in between.
  __device__ static unsigned int take(const Params& p, int lane) {
    return lane == 0 ? atomicAdd(&scheduler_counters(p)->next, 1u) : 0u;
  }

  __device__ static int index_of(unsigned int ticket, int num_tiles) {
    const unsigned int t = __shfl_sync(0xffffffffu, ticket, 0);
    const unsigned int grid = gridDim.x;
    return t < static_cast<unsigned int>(num_tiles) - grid ? static_cast<int>(t + grid) : num_tiles;
  }

  // The first non-empty item from index `tile` on, taking tickets past empty ones.
  __device__ static ScheduledItem find(const Params& p, const SplitPlan& plan, int tile, int num_tiles, int lane) {
    ScheduledItem it{};
    for (;;) {
      it.tile = tile;
      if (tile >= num_tiles) return it;
      it.w = Work::make<kBlockM, kSplit>(p, plan, tile);
      if (!it.w.empty()) return it;
      // The rest of this request's items are empty too (m-block rank grows with the index).
      const int64_t end = static_cast<int64_t>(it.w.batch + 1) * plan.slots - gridDim.x;
      if (lane == 0 && end > 0) atomicMax(&scheduler_counters(p)->next, static_cast<unsigned int>(end));
      tile = index_of(take(p, lane), num_tiles);
    }
  }

  // After the producer's last draw: the last CTA of the grid resets the counters for the next call.
  __device__ static void retire(const Params& p, int lane) {
    SchedulerCounters* c = scheduler_counters(p);
    if (lane == 0 && atomicAdd(&c->done, 1u) == gridDim.x - 1) {
      atomicExch(&c->next, 0u);
      atomicExch(&c->done, 0u);
    }
  }
};

static_assert(sizeof(ScheduledItem) <= 64, "a slot of the item ring (traits.cuh kItemSlotBytes)");

// The ring between the producer warp and its readers, on named barriers (pipeline.cuh). Item j
// of the CTA goes to slot j % kSchedulerSlots. The producer waits until every reader is done with
// the slot's previous item (kItemEmptyBarrier: the readers arrive, the producer syncs), writes the
// item and arrives on the slot's kItemFullBarrier of each reader group; a group syncs on its own, so
// the consumer warpgroups (and the wideners) take an item without waiting for one another. A
// reader may wait early (for Q ahead) and read and release the slot later: it is its own until
// it releases it, so nothing of it is held in registers in between.
template <class Tr>
struct ItemRing {
  static constexpr bool kWideners = Tr::kKvFp8 || Tr::kQkvFp8;
  static constexpr int kGroups = kConsumerWarpgroups + (kWideners ? 1 : 0);
  static constexpr uint32_t kProducerThreads = 32;
  static constexpr uint32_t kReaderThreads =
      kConsumerWarpgroups * kWarpgroupThreads + (kWideners ? kWidenerWarps * 32 : 0);
  static_assert(kSchedulerSlots == 2 && kGroups <= 3, "pipeline.cuh numbers six full and two empty barriers");

  char* smem;  // the CTA's aligned shared memory (traits.cuh plan)

  __device__ ScheduledItem* slot(int j) const {
    return reinterpret_cast<ScheduledItem*>(smem + Tr::kSmemItems + (j % kSchedulerSlots) * Tr::kItemSlotBytes);
  }
  __device__ static uint32_t full_id(int j, int group) {
    return kItemFullBarrier + 3 * (j % kSchedulerSlots) + group;
  }
  __device__ static uint32_t empty_id(int j) {
    return kItemEmptyBarrier + j % kSchedulerSlots;
  }
  __device__ static uint32_t group_threads(int group) {
    return group < kConsumerWarpgroups ? kWarpgroupThreads : kWidenerWarps * 32;
  }

  // The producer warp, before decoding item j (holding a decoded item across the wait cost the
  // producer spills): the readers are done with item j - kSchedulerSlots.
  __device__ void acquire(int j) const {
    __syncwarp();  // bar.sync is warp-aligned
    if (j >= kSchedulerSlots) named_barrier_sync(empty_id(j), kProducerThreads + kReaderThreads);
  }
  __device__ void publish(const ScheduledItem& it, int j, int lane) const {
    if (lane == 0) *slot(j) = it;
    __syncwarp();
#pragma unroll
    for (int g = 0; g < kGroups; ++g) named_barrier_arrive(full_id(j, g), kProducerThreads + group_threads(g));
  }
  // After publishing the end of the walk as item j: the readers' release of item j - 1, the last
  // one they release (the end itself is not released), so that no barrier is left half arrived.
  __device__ void finish(int j) const {
    __syncwarp();
    if (j >= 1) named_barrier_sync(empty_id(j - 1), kProducerThreads + kReaderThreads);
  }

  // Reader group `group`: wait for item j, read it (any number of times), release it (every item
  // but the end of the walk). The producer reads its own items back with read.
  __device__ void wait(int j, int group) const {
    named_barrier_sync(full_id(j, group), kProducerThreads + group_threads(group));
  }
  __device__ const ScheduledItem& read(int j) const { return *slot(j); }
  __device__ void release(int j) const { named_barrier_arrive(empty_id(j), kProducerThreads + kReaderThreads); }
};

}  // namespace sm90
}  // namespace ctxattn
