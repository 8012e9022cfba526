// Skip-softmax's vote in the Hopper kernel's consumer warpgroups (SPEC 8.2; docs/sm90.md): what a
// warpgroup decides per key tile and what it reports. Used by consume_tile (kernel.cuh) in the
// kernels compiled with kSkip.
#pragma once

#include <math_constants.h>
#include <stdint.h>

#include "core/params.h"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

// Skip-softmax (SPEC 8.2) in one consumer warpgroup: a vote per key tile (kBlockN keys, visited
// from the last to the first) of the warpgroup's 64 packed rows, which skips the tile when
// exp(tile_max - seen_max) < lambda = f / kv_len holds for each of them (on base-2 scaled logits:
// tile_max - seen_max < log2 lambda). seen_max is the maximum of the keys processed so far (no
// sink; a split piece's own), so a row meeting its first key never agrees; a row with no allowed
// key in the tile, or past the request, agrees. Every tile but the item's first is voted on; the
// first is counted only. counted / skipped: the item's (tiles with an allowed key of the
// warpgroup's rows, skipped), which its first thread adds to the call's statistics at the end of
// the item (CTXATTN_WORKSPACE_SKIP_STATS_OFFSET) with reductions nothing waits for.
struct SkipVote {
  float log2_lambda;
  float seen_max[2];
  uint32_t counted;
  uint32_t skipped;

  __device__ void begin(const Params& p, const Work& w) {
    // As the CPU backends compute it (float of the double log2), so both vote on the same threshold.
    const double lambda = static_cast<double>(p.skip_softmax_factor) / static_cast<double>(w.kv_len);
    log2_lambda = lambda > 0.0 ? static_cast<float>(log2(lambda)) : -CUDART_INF_F;
    seen_max[0] = seen_max[1] = -CUDART_INF_F;
    counted = skipped = 0;
  }

  // The warpgroup's verdict on a tile whose row maxima are tile_max; `first`: counted, never skipped.
  // Each warp reduces its rows (a vote), then one barrier counts the warps: lanes 1-31 of a warp
  // whose rows all agree and lane 0 of a warp with an allowed key, so the count is 31 A + K with
  // A, K <= 4 the agreeing warps and the warps with a key. The barrier is the warpgroup's own
  // (warpgroup_sync's), its index taken from the thread index here rather than held through the loop.
  __device__ __forceinline__ bool decide(const float (&tile_max)[2], const int (&rows)[2], int packed_rows, bool first,
                                         int t) {
    bool agree = true, key = false;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const bool live = rows[h] < packed_rows && tile_max[h] != -CUDART_INF_F;
      key = key || live;
      agree = agree && (!live || tile_max[h] - seen_max[h] < log2_lambda);
    }
    const bool warp_agrees = __all_sync(0xffffffffu, agree);
    const bool warp_has_key = __any_sync(0xffffffffu, key);
    const int consumer = static_cast<int>(threadIdx.x) / kWarpgroupThreads - kProducerWarpgroups;
    const uint32_t count = warpgroup_count(t % 32 == 0 ? warp_has_key : warp_agrees, consumer);
    constexpr uint32_t kWarps = kWarpgroupThreads / 32;
    constexpr uint32_t kAllAgree = 31 * kWarps;  // 31 A + K >= 31 * 4 exactly when A = 4 (K <= 4 < 31)
    const bool skip = !first && count >= kAllAgree;
    const bool has_key = count % 31 != 0;
    counted += has_key ? 1u : 0u;
    skipped += has_key && skip ? 1u : 0u;
    if (!skip) {
      seen_max[0] = fmaxf(seen_max[0], tile_max[0]);
      seen_max[1] = fmaxf(seen_max[1], tile_max[1]);
    }
    return skip;
  }

  // The item's counts into the call's statistics (the warpgroup's first thread).
  __device__ void publish(const Params& p, int t) const {
    if (t != 0 || counted == 0) return;
    const char* stats = static_cast<const char*>(p.workspace) + CTXATTN_WORKSPACE_SKIP_STATS_OFFSET;
    asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(stats), "l"(static_cast<uint64_t>(counted)) : "memory");
    asm volatile("red.relaxed.gpu.global.add.u64 [%0], %1;" ::"l"(stats + 8), "l"(static_cast<uint64_t>(skipped))
                 : "memory");
  }
};

}  // namespace sm90
}  // namespace ctxattn
