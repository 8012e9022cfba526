// The producer warpgroup of the Hopper kernel over one work item (kernel.cuh walks the items):
//   produce_tile    warp 0: K and V of each key tile by TMA (load.cuh KvProducer; pages of 1-4
//                   tokens gathered by cp.async), in the order the consumers read them
//   widen_tile      e4m3 KV: warps 1-3 widen each raw tile into the 16-bit stage
//   transpose_tile  e4m3 Q/K/V: warps 1-3 transpose each raw V tile into V^T
// Pipeline states and barrier phases carry from one item to the next.
#pragma once

#include <cutlass/arch/barrier.h>

#include "core/params.h"
#include "cuda/common/band.cuh"
#include "cuda/sm90/load.cuh"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

// Whether the producer issues V a tile behind K (produce_tile). The consumers read K(n) together
// with V(n + 1) (consume_tile), so V(n + 1) is needed a tile after K(n + 1), and a producer that
// issues V(n) right after K(n) holds K(n - 1) back until V(n)'s stage is free, which the later
// consumer warpgroup frees only at the end of its tile n + 2: K then has under a tile to arrive.
// With V(n + 1) issued after K(n), K's loads wait for K's stages alone. The first tile's V still
// follows its K, so items of one or two tiles load as before. On the H200 (docs/perf.md
// "sm90 v18"), 16-bit D <= 128: chunk_long_tp8 at page 16 416 -> 404 us (page 64 flat), long_8k
// at page 16 860 -> 855 (page 64 +0.6%), d64 at page 64 -1 to -2% (page 16 +1 to +3%),
// short_256 +1%; the nvfp4-output e4m3 kernel (two-term P): nvfp4.long_8k 1120 -> 1098. Not for
// 16-bit D = 256 (64-key tiles, V waited for after the Q K^T issue: d256 +1%), the one-term e4m3
// Q/K/V kernels (fp8.long_8k 747 -> 777, fp8.d64 +1-3%, fp8.batch_1k +1-2%: the transposing
// warps then wait for a raw V that comes a tile later), nor over an e4m3 cache, whose wideners
// take K and V of one tile in turn. The 16-bit column-split kernel at D = 512 takes it: d512 -1
// to -2% on the H100 (docs/perf.md, v47).
template <class Tr>
constexpr bool kVBehindK =
    (Tr::kQkvFp8 && Tr::kTwoTermP) || (!Tr::kQkvFp8 && !Tr::kKvFp8 && (Tr::kHeadDim <= 128 || Tr::kColSplit));

// The producer warp over one work tile: K and V of each key tile (V a tile behind K where
// kVBehindK), a tile's page ids read one tile ahead (kGather: pages gathered by cp.async, which
// read their ids as they copy); V's ids are K's unless the call passed separate K / V page
// indices. `state` (K / V stages), `raw` (raw stages) and `tail_phase` carry across the CTA's
// work tiles.
template <typename T, class Tr, bool kGather>
__device__ __forceinline__ void produce_tile_as(const Params& p, const Work& w, const KeyBand& band, char* smem,
                                                const BarriersOf<Tr>& bars, const KvProducer<Tr>& kv,
                                                PipeState& state, PipeState& raw, uint32_t& tail_phase, int lane) {
  constexpr bool kBehind = kVBehindK<Tr>;
  static_assert(Tr::kKvFp8 || Tr::kQkvFp8 || Tr::kVStages == Tr::kStages, "V shares K's stage index here");
  int n_min, n;
  w.key_tiles<Tr::kBlockN>(band, &n_min, &n);
  if (n < n_min) return;
  const int n_top = n;
  const bool separate = p.separate_kv_idx;
  int32_t page = kv.template page_of<kGather>(p, w, n, p.block_tables);
  int32_t vpage = separate ? kv.template page_of<kGather>(p, w, n, p.v_block_tables) : page;
  // kBehind: K(n + 1)'s stage and V(n + 1)'s page ids, where V(n + 1) goes after K(n). One more
  // step after the last K issues the last V.
  PipeState behind = state;
  int32_t behind_vpage = vpage;
  for (; n >= n_min - (kBehind ? 1 : 0); --n) {
    const int32_t next_page = n > n_min ? kv.template page_of<kGather>(p, w, n - 1, p.block_tables) : 0;
    const int32_t next_vpage =
        separate && n > n_min ? kv.template page_of<kGather>(p, w, n - 1, p.v_block_tables) : next_page;
    if constexpr (Tr::kKvFp8) {
      // Into the next raw K and V stages, once the wideners have read what they held.
      const int r = raw.stage;
      wait_barrier(bars.raw_empty_k(r), raw.phase ^ 1u);
      kv.template load_k<kGather>(p, w, smem + Tr::kSmemRawK + r * Tr::kRawTileBytes, bars.raw_full_k(r), n, page,
                                  lane);
      wait_barrier(bars.raw_empty_v(r), raw.phase ^ 1u);
      kv.template load_v<kGather>(p, w, smem + Tr::kSmemRawV + r * Tr::kRawTileBytes, bars.raw_full_v(r),
                                  bars.v_tail(), tail_phase, n, vpage, lane);
      raw.advance(Tr::kRawStages);
    } else {
      // K straight into its stage (e4m3 Q/K/V: read as loaded). A fresh barrier completes its
      // phase "before 0", so the first wait on parity 1 passes.
      const PipeState k_at = state;
      if (n >= n_min) {
        wait_barrier(bars.empty_k(state.stage), state.phase ^ 1u);
        kv.template load_k<kGather>(p, w, smem + Tr::kSmemK + state.stage * Tr::kKvTileBytes, bars.full_k(state.stage),
                                    n, page, lane);
        state.advance(Tr::kStages);
      }
      // V of this tile (kBehind: only for the first), else of the tile before it (none after the
      // first, which took its own).
      const bool own = !kBehind || n == n_top;
      if (own || n < n_top - 1) {
        const int v_tile = own ? n : n + 1;
        const int32_t v_page = own ? vpage : behind_vpage;
        if constexpr (Tr::kQkvFp8) {  // into the next raw stage, which the transposing warps turn into V^T
          const int r = raw.stage;
          wait_barrier(bars.raw_empty_v(r), raw.phase ^ 1u);
          kv.template load_v<kGather>(p, w, smem + Tr::kSmemRawV + r * Tr::kRawTileBytes, bars.raw_full_v(r),
                                      bars.v_tail(), tail_phase, v_tile, v_page, lane);
          raw.advance(Tr::kRawStages);
        } else {  // where K of the same tile went
          const PipeState v_at = own ? k_at : behind;
          wait_barrier(bars.empty_v(v_at.stage), v_at.phase ^ 1u);
          kv.template load_v<kGather>(p, w, smem + Tr::kSmemV + v_at.stage * Tr::kKvTileBytes, bars.full_v(v_at.stage),
                                      bars.v_tail(), tail_phase, v_tile, v_page, lane);
        }
      }
      behind = k_at;
      behind_vpage = vpage;
    }
    page = next_page;
    vpage = next_vpage;
  }
}

template <typename T, class Tr>
__device__ __forceinline__ void produce_tile(const Params& p, const Work& w, const KeyBand& band, char* smem,
                                             const BarriersOf<Tr>& bars, const KvProducer<Tr>& kv, PipeState& state,
                                             PipeState& raw, uint32_t& tail_phase, int lane) {
  // NVFP4 caches are read by TMA alone (hopper.cpp sends their smaller pages to cuda_portable):
  // no gathering instance.
  if constexpr (!Tr::kKvFp4) {
    if (kv.gathers()) {
      produce_tile_as<T, Tr, true>(p, w, band, smem, bars, kv, state, raw, tail_phase, lane);
      return;
    }
  }
  produce_tile_as<T, Tr, false>(p, w, band, smem, bars, kv, state, raw, tail_phase, lane);
}

// One raw tile into one stage by warps 1-3 of the producer warpgroup: wait for the raw tile and
// for the stage to be free, `fill` it (each thread its share), make it visible to WGMMA (async
// proxy), then release the raw tile (every thread after its own reads: Barriers kRawReaders) and
// hand the stage to the consumers (one arrival a warp).
template <class Fill>
__device__ __forceinline__ void stage_from_raw(uint64_t* raw_full, uint32_t raw_phase, uint64_t* empty, uint32_t phase,
                                               uint64_t* full, uint64_t* raw_empty, int u, Fill&& fill) {
  wait_barrier(raw_full, raw_phase);
  wait_barrier(empty, phase ^ 1u);
  fill();
  arrive_barrier(raw_empty);
  cutlass::arch::fence_view_async_shared();
  __syncwarp();
  if (u % 32 == 0) arrive_barrier(full);
}

// e4m3 / NVFP4 KV: the widener warps over one work tile, in the producer's tile order: each raw K / V
// tile into the next fp16 stage. `state` (fp16 K stages, and V's where they are as many), `v_state`
// (V's where they are not: Traits::kVStages) and `raw` carry across work tiles.
template <class Tr>
__device__ __forceinline__ void widen_tile(const Work& w, const KeyBand& band, char* smem,
                                           const BarriersOf<Tr>& bars, PipeState& state, PipeState& v_state,
                                           PipeState& raw, int u) {
  int n_min, n;
  w.key_tiles<Tr::kBlockN>(band, &n_min, &n);
  for (; n >= n_min; --n) {
    const int64_t left = static_cast<int64_t>(w.kv_len) - static_cast<int64_t>(n) * Tr::kBlockN;
    const int valid_rows = left < Tr::kBlockN ? static_cast<int>(left) : Tr::kBlockN;
    const PipeState vs = Tr::kVStages != Tr::kStages ? v_state : state;
    const int r = raw.stage, s = state.stage, sv = vs.stage;
    // K rows past kv_len are masked to -inf whatever they hold; V rows past it become zeros.
    stage_from_raw(bars.raw_full_k(r), raw.phase, bars.empty_k(s), state.phase, bars.full_k(s), bars.raw_empty_k(r), u,
                   [&] {
                     const char* raw_k = smem + Tr::kSmemRawK + r * Tr::kRawTileBytes;
                     char* k_stage = smem + Tr::kSmemK + s * Tr::kKvTileBytes;
                     if constexpr (Tr::kKvFp4) {
                       Nvfp4Widener<Tr>::template widen<false>(raw_k, k_stage, Tr::kBlockN, u);
                     } else {
                       KvWidener<Tr>::widen(raw_k, k_stage, Tr::kBlockN, u);
                     }
                   });
    stage_from_raw(bars.raw_full_v(r), raw.phase, bars.empty_v(sv), vs.phase, bars.full_v(sv),
                   bars.raw_empty_v(r), u, [&] {
                     const char* raw_v = smem + Tr::kSmemRawV + r * Tr::kRawTileBytes;
                     char* v_stage = smem + Tr::kSmemV + sv * Tr::kKvTileBytes;
                     if constexpr (Tr::kKvFp4) {
                       Nvfp4Widener<Tr>::template widen<true>(raw_v, v_stage, valid_rows, u);
                     } else {
                       KvWidener<Tr>::widen(raw_v, v_stage, valid_rows, u);
                     }
                   });
    state.advance(Tr::kStages);
    if constexpr (Tr::kVStages != Tr::kStages) v_state.advance(Tr::kVStages);
    raw.advance(Tr::kRawStages);
  }
}

// e4m3 Q/K/V: the transposing warps over one work tile, in the producer's tile order: each raw V
// tile into the next V^T stage (fp8_stage.cuh VTransposer). `state` (V stages) and `raw` carry across
// work tiles.
template <class Tr>
__device__ __forceinline__ void transpose_tile(const Work& w, const KeyBand& band, char* smem, const BarriersOf<Tr>& bars,
                                               PipeState& state, PipeState& raw, int u) {
  int n_min, n;
  w.key_tiles<Tr::kBlockN>(band, &n_min, &n);
  for (; n >= n_min; --n) {
    const int64_t left = static_cast<int64_t>(w.kv_len) - static_cast<int64_t>(n) * Tr::kBlockN;
    const int valid_rows = left < Tr::kBlockN ? static_cast<int>(left) : Tr::kBlockN;
    const int r = raw.stage;
    wait_barrier(bars.raw_full_v(r), raw.phase);
    wait_barrier(bars.empty_v(state.stage), state.phase ^ 1u);
    VTransposer<Tr>::transpose(smem + Tr::kSmemRawV + r * Tr::kRawTileBytes,
                               smem + Tr::kSmemV + state.stage * Tr::kKvTileBytes, valid_rows, u);
    arrive_barrier(bars.raw_empty_v(r));  // every thread, after its own reads (Barriers kRawReaders)
    cutlass::arch::fence_view_async_shared();  // read by WGMMA (async proxy)
    __syncwarp();
    if (u % 32 == 0) arrive_barrier(bars.full_v(state.stage));
    state.advance(Tr::kVStages);
    raw.advance(Tr::kRawStages);
  }
}

}  // namespace sm90
}  // namespace ctxattn
