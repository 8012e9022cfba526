// The Hopper kernel's tile scheduler: persistent CTAs (at most one an SM) that draw work items
// from a counter in the workspace, in the work list's order (cuda/common/split.cuh: request by
// request, m-blocks longest first), so that a CTA whose items were short takes more of them and
// the call ends within about one short item of perfect balance.
//
// The producer warp is the only one that draws. CTA c starts with item c; each further item is
// gridDim.x + a ticket from the counter. The producer decodes item j + 1 once the loads of item j
// are issued, from a ticket taken an item earlier, so the atomic's latency is hidden and the
// metadata's runs under the consumers' last tiles and epilogue. Empty items (past a request's
// own m-blocks) are skipped where they are found: they come last in their request, so the first
// empty one moves the counter past the rest of the request. The producer publishes each item it will produce --
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

// Calls over keys longer than kPersistentMaxKv that do not split run this scheduler where the
// kernel's traits take it (Traits::kSchedulerWalk; run.cuh chooses). Shorter calls walk their items
// statically (walk.cuh for_each_item), striped over one CTA an SM: there every item is a tile or
// two, and the static stripes measured faster than drawing from the counter (short_256 162 against
// 167 us on the H200), while longer calls gain from the balance and from the next item's metadata
// loading under the current one (long_8k 855 -> 834 us, d64 1276 -> 1211; docs/perf.md
// "sm90 v13").
constexpr int32_t kPersistentMaxKv = 1024;

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
template <int kBlockM, bool kSplit, int kTake>
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
      it.w = Work::make<kBlockM, kSplit, kTake>(p, plan, tile);
      if (!it.w.empty()) return it;
      // The rest of this request's items are empty too (m-block rank grows with the index; a
      // request the kernel's form does not take has no item at all).
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

// The ring between the producer warp and its readers, on mbarriers (two a slot, in the ring's own
// shared memory). Item j of the CTA goes to slot j % kSchedulerSlots, in the slot's phase
// j / kSchedulerSlots. The producer waits until every reader is done with the slot's previous item
// (empty: one arrival by each reader thread, after its own last read), writes the item from lane 0
// and arrives on the slot's full barrier (one arrival, release); a reader waits on full (acquire)
// by itself, so no role waits for another to reach the ring. A reader may wait early (for Q ahead)
// and read and release the slot later: it is its own until it releases it, so nothing of it is
// held in registers in between. Every reader thread arrives (rather than one lane a warp after a
// __syncwarp) so that each read is ordered before the producer's next write by the thread's own
// release.
template <class Tr>
struct ItemRing {
  static constexpr bool kWideners = Tr::kKvFp8 || Tr::kQkvFp8;
  static constexpr uint32_t kReaderThreads =
      Tr::kConsumerWarpgroups * kWarpgroupThreads + (kWideners ? kWidenerWarps * 32 : 0);

  char* smem;  // the CTA's aligned shared memory (traits.cuh plan)

  __device__ ScheduledItem* slot(int j) const {
    return reinterpret_cast<ScheduledItem*>(smem + Tr::kSmemItems + (j % kSchedulerSlots) * Tr::kItemSlotBytes);
  }
  __device__ uint64_t* full(int j) const {
    return reinterpret_cast<uint64_t*>(smem + Tr::kSmemItemBarriers) + j % kSchedulerSlots;
  }
  __device__ uint64_t* empty(int j) const {
    return reinterpret_cast<uint64_t*>(smem + Tr::kSmemItemBarriers) + kSchedulerSlots + j % kSchedulerSlots;
  }
  __device__ static uint32_t parity(int j) { return static_cast<uint32_t>(j / kSchedulerSlots) & 1u; }

  // One thread, with the pipeline's barriers (before their fence and the CTA barrier).
  __device__ void init() const {
    for (int s = 0; s < kSchedulerSlots; ++s) {
      cutlass::arch::ClusterBarrier::init(full(s), 1);
      cutlass::arch::ClusterBarrier::init(empty(s), kReaderThreads);
    }
  }

  // The producer warp, before decoding item j (holding a decoded item across the wait cost the
  // producer spills): the readers are done with item j - kSchedulerSlots. A fresh barrier
  // completes the phase "before 0", so the first wait on parity 1 passes.
  __device__ void acquire(int j) const { wait_acquire(empty(j), parity(j) ^ 1u); }
  __device__ void publish(const ScheduledItem& it, int j, int lane) const {
    if (lane == 0) {
      *slot(j) = it;
      arrive_release(full(j));
    }
    __syncwarp();  // the producer's other lanes read the item back (read)
  }

  // A reader thread: wait for item j, read it (any number of times), release it (every item but
  // the end of the walk, after which nothing is published). The producer reads its own items back
  // with read.
  __device__ void wait(int j) const { wait_acquire(full(j), parity(j)); }
  __device__ const ScheduledItem& read(int j) const { return *slot(j); }
  __device__ void release(int j) const { arrive_release(empty(j)); }
};

}  // namespace sm90
}  // namespace ctxattn
