// Synchronisation of the Hopper kernel: the mbarrier pipelines between the producer warp and the
// consumer warpgroups (CUTLASS's barrier wrappers), and the named barriers, each listed here.
//
// Per stage s of kStages: full_k[s] / full_v[s] complete when a tile's K / V bytes have landed
// (one arrival with the expected transaction bytes, by the producer), empty_k[s] / empty_v[s]
// when every consumer warp is done reading the tile (one arrival per consumer warp). v_tail is
// the producer's own barrier for the V tile that crosses the end of the keys (its tail rows are
// zeroed before the consumers are released).
#pragma once

#include <stdint.h>

#include <cutlass/arch/barrier.h>

#include "cuda/sm90/traits.cuh"

namespace ctxattn {
namespace sm90 {

// Named barrier ids. 0 is __syncthreads. The first four go through CUTLASS's NamedBarrier, which
// adds the 8 ids it reserves for itself (hardware ids 9 - 12); the item ring's are hardware ids
// used as they are by named_barrier_sync / named_barrier_arrive (1 - 8, ids CUTLASS reserves
// for parts of it this kernel does not use).
enum class NamedBarrier : uint32_t {
  kConsumer0 = 1,  // consumer warpgroup 0's 128 threads (Q ready, output staging)
  kConsumer1 = 2,  // consumer warpgroup 1's
  kTurn0 = 3,      // ping-pong: consumer warpgroup 0 may issue its GEMMs (both warpgroups, 256)
  kTurn1 = 4,      // ... consumer warpgroup 1 may
};
// The scheduler's item ring (scheduler.cuh), hardware ids: per slot s, kItemFullBarrier + 3 s + g,
// the slot holds an item for reader group g (consumer warpgroup 0 or 1, the e4m3 wideners);
// kItemEmptyBarrier + s, every reader is done with it.
constexpr uint32_t kItemFullBarrier = 1;   // 1 .. 6
constexpr uint32_t kItemEmptyBarrier = 7;  // 7, 8
static_assert(kItemEmptyBarrier + 1 <
                  cutlass::arch::NamedBarrier::ReservedNamedBarrierCount + static_cast<uint32_t>(NamedBarrier::kConsumer0),
              "the ring's hardware ids stay below those of the CUTLASS-offset ids");

// Named-barrier arrive and sync that also order the compiler's shared-memory accesses (the
// scheduler's ring is written and read with plain stores and loads).
__device__ __forceinline__ void named_barrier_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;" : : "r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_barrier_arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;" : : "r"(id), "r"(threads) : "memory");
}

__device__ __forceinline__ void warpgroup_sync(int consumer) {
  cutlass::arch::NamedBarrier::sync(kWarpgroupThreads, static_cast<uint32_t>(NamedBarrier::kConsumer0) + consumer);
}

// Ping-pong between the consumer warpgroups (a build with CTXATTN_SM90_PINGPONG): each issues the
// GEMMs of a step only in its turn and then hands the turn over, so that one warpgroup's softmax
// runs while the other's GEMMs hold the tensor cores.
#if defined(CTXATTN_SM90_PINGPONG)
constexpr bool kPingPong = true;
#else
constexpr bool kPingPong = false;
#endif
__device__ __forceinline__ void wait_turn(int consumer) {
  if constexpr (kPingPong) {
    cutlass::arch::NamedBarrier::sync(2 * kWarpgroupThreads, static_cast<uint32_t>(NamedBarrier::kTurn0) + consumer);
  }
}
__device__ __forceinline__ void pass_turn(int consumer) {
  if constexpr (kPingPong) {
    cutlass::arch::NamedBarrier::arrive(2 * kWarpgroupThreads,
                                        static_cast<uint32_t>(NamedBarrier::kTurn0) + (consumer ^ 1));
  }
}

constexpr int kConsumerWarps = kConsumerWarpgroups * kWarpgroupThreads / 32;

// Warps of the producer warpgroup that widen e4m3 tiles (all but the TMA warp).
constexpr int kWidenerWarps = kProducerWarpgroups * kWarpgroupThreads / 32 - 1;

// The mbarriers of a CTA (traits.cuh reserves their shared memory): 4 * kStages + 1, and with
// e4m3 KV four more per raw stage. With kKvFp8 the 16-bit stages are filled by the widener warps (full_k /
// full_v count one arrival per widener warp) from raw tiles that TMA fills (raw_full_*: one
// arrival plus the bytes) and the wideners release (raw_empty_*: one arrival per widener warp).
// kQkvFp8: K is loaded by TMA straight into its stage; V goes through the raw stages, and the
// transposing warps fill full_v (one arrival per warp).
template <int kStages, bool kKvFp8 = false, int kRawStages = 1, bool kQkvFp8 = false>
struct Barriers {
  uint64_t* base;
  __device__ uint64_t* full_k(int s) const { return base + s; }
  __device__ uint64_t* full_v(int s) const { return base + kStages + s; }
  __device__ uint64_t* empty_k(int s) const { return base + 2 * kStages + s; }
  __device__ uint64_t* empty_v(int s) const { return base + 3 * kStages + s; }
  __device__ uint64_t* v_tail() const { return base + 4 * kStages; }
  __device__ uint64_t* raw_full_k(int r) const { return base + 4 * kStages + 1 + r; }
  __device__ uint64_t* raw_full_v(int r) const { return base + 4 * kStages + 1 + kRawStages + r; }
  __device__ uint64_t* raw_empty_k(int r) const { return base + 4 * kStages + 1 + 2 * kRawStages + r; }
  __device__ uint64_t* raw_empty_v(int r) const { return base + 4 * kStages + 1 + 3 * kRawStages + r; }

  // One thread, before the roles split (followed by a CTA barrier).
  __device__ void init() const {
    const int k_fills = kKvFp8 ? kWidenerWarps : 1;
    const int v_fills = kKvFp8 || kQkvFp8 ? kWidenerWarps : 1;
    for (int s = 0; s < kStages; ++s) {
      cutlass::arch::ClusterBarrier::init(full_k(s), k_fills);
      cutlass::arch::ClusterBarrier::init(full_v(s), v_fills);
      cutlass::arch::ClusterBarrier::init(empty_k(s), kConsumerWarps);
      cutlass::arch::ClusterBarrier::init(empty_v(s), kConsumerWarps);
    }
    cutlass::arch::ClusterBarrier::init(v_tail(), 1);
    if constexpr (kKvFp8 || kQkvFp8) {
      for (int r = 0; r < kRawStages; ++r) {
        cutlass::arch::ClusterBarrier::init(raw_full_k(r), 1);
        cutlass::arch::ClusterBarrier::init(raw_full_v(r), 1);
        cutlass::arch::ClusterBarrier::init(raw_empty_k(r), kWidenerWarps);
        cutlass::arch::ClusterBarrier::init(raw_empty_v(r), kWidenerWarps);
      }
    }
    cutlass::arch::fence_barrier_init();
  }
};

template <class Tr>
using BarriersOf = Barriers<Tr::kStages, Tr::kKvFp8, Tr::kRawStages, Tr::kQkvFp8>;

__device__ __forceinline__ void wait_barrier(uint64_t* bar, uint32_t phase) {
  cutlass::arch::ClusterBarrier::wait(bar, phase);
}
__device__ __forceinline__ void arrive_barrier(uint64_t* bar) { cutlass::arch::ClusterBarrier::arrive(bar); }
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  cutlass::arch::ClusterTransactionBarrier::arrive_and_expect_tx(bar, bytes);
}

// Position in a kStages-deep ring: stage index and the parity of its current phase.
struct PipeState {
  int stage = 0;
  uint32_t phase = 0;
  __device__ void advance(int stages) {
    if (++stage == stages) {
      stage = 0;
      phase ^= 1u;
    }
  }
};

}  // namespace sm90
}  // namespace ctxattn
