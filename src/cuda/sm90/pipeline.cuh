// Synchronisation of the Hopper kernel: the mbarrier pipelines between the producer warp and the
// consumer warpgroups (CUTLASS's barrier wrappers), and the named barriers, each listed here.
//
// Per stage s of kStages: full_k[s] / full_v[s] complete when a tile's K / V bytes have landed
// (one arrival with the expected transaction bytes, by the producer; pages gathered by cp.async:
// one arrival a producer lane, kGatherArrivals), empty_k[s] / empty_v[s]
// when every consumer warp is done reading the tile (one arrival per consumer warp). v_tail is
// the producer's own barrier for the V tile that crosses the end of the keys (its tail rows are
// zeroed before the consumers are released).
#pragma once

#include <stdint.h>

#include <cutlass/arch/barrier.h>

#include "cuda/sm90/traits.cuh"

namespace ctxattn {
namespace sm90 {

// Named barrier ids (CUTLASS's NamedBarrier adds the 8 ids it reserves; 0 is __syncthreads).
enum class NamedBarrier : uint32_t {
  kConsumer0 = 1,  // consumer warpgroup c's 128 threads at kConsumer0 + c (Q ready, output staging)
  kTurn0 = 1 + kMaxConsumerWarpgroups,  // ping-pong: consumer warpgroup c may issue its GEMMs at
                                        // kTurn0 + c (it and the warpgroup handing over, 256)
  // The S exchange of the column-split kernel (traits.cuh kColSplit, which has no turns): warp w
  // of each consumer warpgroup at kXchg0 + w (64 threads). Four ids from kTurn0 on: the turns'
  // three and the last of the 8 CUTLASS leaves (ids 0-7 are its reserved ones).
  kXchg0 = kTurn0,
};
static_assert(static_cast<uint32_t>(NamedBarrier::kXchg0) + 3 + cutlass::arch::NamedBarrier::ReservedNamedBarrierCount <= 15,
              "16 hardware barriers");

// mbarrier arrive (release) and wait (acquire) at CTA scope for data written and read with plain
// shared-memory stores and loads (the scheduler's item ring): volatile, with a memory clobber, so
// that the compiler keeps the accesses on their side of the barrier as the hardware does.
__device__ __forceinline__ void arrive_release(uint64_t* bar) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" : : "r"(addr) : "memory");
}
__device__ __forceinline__ void wait_acquire(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(bar));
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n\t.reg .pred p;\n\t"
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64 p, [%1], %2;\n\t"
        "selp.u32 %0, 1, 0, p;\n\t}"
        : "=r"(done)
        : "r"(addr), "r"(parity)
        : "memory");
  } while (done == 0);
}

__device__ __forceinline__ void warpgroup_sync(int consumer) {
  cutlass::arch::NamedBarrier::sync(kWarpgroupThreads, static_cast<uint32_t>(NamedBarrier::kConsumer0) + consumer);
}

// How many of consumer warpgroup c's 128 threads hold `pred`, on its warpgroup_sync barrier (every
// thread of the warpgroup passes each of its barriers in the same order, so the id is shared).
__device__ __forceinline__ uint32_t warpgroup_count(bool pred, int consumer) {
  uint32_t count;
  asm volatile(
      "{\n\t.reg .pred p;\n\t"
      "setp.ne.u32 p, %1, 0;\n\t"
      "barrier.cta.red.popc.u32 %0, %2, %3, p;\n\t}"
      : "=r"(count)
      : "r"(static_cast<uint32_t>(pred)),
        "r"(static_cast<uint32_t>(NamedBarrier::kConsumer0) + consumer +
            static_cast<uint32_t>(cutlass::arch::NamedBarrier::ReservedNamedBarrierCount)),
        "n"(kWarpgroupThreads)
      : "memory");
  return count;
}

// Ping-pong between the consumer warpgroups (a build with CTXATTN_SM90_PINGPONG): each issues the
// GEMMs of a step only in its turn and then hands the turn to the next (0, 1, .., 0), so that one
// warpgroup's softmax runs while the others' GEMMs hold the tensor cores.
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
template <int kConsumers>
__device__ __forceinline__ void pass_turn(int consumer) {
  if constexpr (kPingPong) {
    const int next = consumer + 1 == kConsumers ? 0 : consumer + 1;
    cutlass::arch::NamedBarrier::arrive(2 * kWarpgroupThreads, static_cast<uint32_t>(NamedBarrier::kTurn0) + next);
  }
}

// Warp w of both consumer warpgroups of the column-split kernel (kernel.cuh exchange_s).
__device__ __forceinline__ void exchange_sync(int warp) {
  cutlass::arch::NamedBarrier::sync(64, static_cast<uint32_t>(NamedBarrier::kXchg0) + warp);
}

// Warps of the producer warpgroup that widen e4m3 tiles (all but the TMA warp).
constexpr int kWidenerWarps = kProducerWarpgroups * kWarpgroupThreads / 32 - 1;
// Arrivals on a barrier of tiles the producer warp gathers (load.cuh KvProducer::gather): one a
// lane, each when its cp.async copies have landed.
constexpr int kGatherArrivals = 32;

// Arrivals that release a raw stage: every thread of the widener / transposing warps.
constexpr int kRawReaders = kWidenerWarps * 32;

// The mbarriers of a CTA (traits.cuh reserves their shared memory): 2 (kStages + kVStages) + 1, with
// e4m3 KV four more per raw stage, and with Q by TMA one a Q region (q_full: one arrival plus
// the bytes, by the consumer thread that issues the boxes).
// With kKvFp8 the 16-bit stages are filled by the widener warps (full_k /
// full_v count one arrival per widener warp) from raw tiles that TMA fills (raw_full_*: one
// arrival plus the bytes) and the wideners release (raw_empty_*: kRawReaders, one arrival a
// widener thread after its own reads of the raw tile; with one a warp after a __syncwarp,
// racecheck reported the reads against the next cp.async gather into the stage, as it counts an
// arrival as releasing the arriving thread's own accesses).
// kQkvFp8: K is loaded by TMA straight into its stage; V goes through the raw stages, and the
// transposing warps fill full_v (one arrival per warp).
template <int kStages, int kConsumerWarps, bool kKvFp8 = false, int kRawStages = 1, bool kQkvFp8 = false,
          int kQBarriers = 0, int kVStages = kStages>
struct Barriers {
  static constexpr int kKv = 2 * (kStages + kVStages);  // full and empty, K's then V's
  static constexpr int kQBase = kKv + 1 + (kKvFp8 || kQkvFp8 ? 4 * kRawStages : 0);
  uint64_t* base;
  __device__ uint64_t* full_k(int s) const { return base + s; }
  __device__ uint64_t* full_v(int s) const { return base + kStages + s; }
  __device__ uint64_t* empty_k(int s) const { return base + kStages + kVStages + s; }
  __device__ uint64_t* empty_v(int s) const { return base + 2 * kStages + kVStages + s; }
  __device__ uint64_t* v_tail() const { return base + kKv; }
  __device__ uint64_t* raw_full_k(int r) const { return base + kKv + 1 + r; }
  __device__ uint64_t* raw_full_v(int r) const { return base + kKv + 1 + kRawStages + r; }
  __device__ uint64_t* raw_empty_k(int r) const { return base + kKv + 1 + 2 * kRawStages + r; }
  __device__ uint64_t* raw_empty_v(int r) const { return base + kKv + 1 + 3 * kRawStages + r; }
  // Q by TMA: Q region i (buffer * consumer warpgroups + warpgroup) has landed.
  __device__ uint64_t* q_full(int i) const { return base + kQBase + i; }

  // One thread, before the roles split (followed by a CTA barrier). `gathered`: the call's pages
  // are gathered, so the barriers the loads complete count kGatherArrivals instead of one.
  __device__ void init(bool gathered) const {
    const int loads = gathered ? kGatherArrivals : 1;
    const int k_fills = kKvFp8 ? kWidenerWarps : loads;
    const int v_fills = kKvFp8 || kQkvFp8 ? kWidenerWarps : loads;
    for (int s = 0; s < kStages; ++s) {
      cutlass::arch::ClusterBarrier::init(full_k(s), k_fills);
      cutlass::arch::ClusterBarrier::init(empty_k(s), kConsumerWarps);
    }
    for (int s = 0; s < kVStages; ++s) {
      cutlass::arch::ClusterBarrier::init(full_v(s), v_fills);
      cutlass::arch::ClusterBarrier::init(empty_v(s), kConsumerWarps);
    }
    cutlass::arch::ClusterBarrier::init(v_tail(), 1);
    for (int i = 0; i < kQBarriers; ++i) cutlass::arch::ClusterBarrier::init(q_full(i), 1);
    if constexpr (kKvFp8 || kQkvFp8) {
      for (int r = 0; r < kRawStages; ++r) {
        cutlass::arch::ClusterBarrier::init(raw_full_k(r), loads);
        cutlass::arch::ClusterBarrier::init(raw_full_v(r), loads);
        cutlass::arch::ClusterBarrier::init(raw_empty_k(r), kRawReaders);
        cutlass::arch::ClusterBarrier::init(raw_empty_v(r), kRawReaders);
      }
    }
    cutlass::arch::fence_barrier_init();
  }
};

template <class Tr>
using BarriersOf = Barriers<Tr::kStages, Tr::kConsumerWarpgroups * kWarpgroupThreads / 32, Tr::kKvFp8,
                            Tr::kRawStages, Tr::kQkvFp8, Tr::kQBarriers, Tr::kVStages>;

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
