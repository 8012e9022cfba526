// The Hopper (sm90a) attention kernel: orchestration only. The pieces:
//   work.cuh      a work item: (request, KV head, packed rows), lengths made safe
//   scheduler.cuh persistent CTAs drawing work items from a counter; the item ring
//   walk.cuh      the items each CTA takes: the static walk or the scheduler's
//   load.cuh      K/V by TMA (or cp.async for pages of 1-4 tokens) from the paged pool
//                 (producer), Q by cp.async or TMA (consumers)
//   q_item.cuh    a work item's Q into the consumer's buffer (by TMA or cp.async), ahead or not
//   fp8_stage.cuh e4m3 raw tiles widened to fp16 (e4m3 KV) or V transposed to V^T (e4m3 Q/K/V)
//   producer.cuh  the producer warpgroup over one work item: loads, e4m3 widening / transposing
//   pipeline.cuh  mbarrier stages between producer and consumers, named barriers
//   mma.cuh       S = Q K^T and O += P V on WGMMA
//   mask.cuh      masking of boundary tiles (the rule: cuda/common/band.cuh)
//   softmax.cuh   fp32 online softmax in base 2, sinks
//   skip.cuh      skip-softmax's vote (kernels compiled with kSkip)
//   epilogue.cuh  normalisation, LSE, output encodings
//
// Warp roles: warpgroup 0 is the producer (its first warp issues every TMA load; the warpgroup
// gives registers away with setmaxnreg), warpgroups 1 and 2 (and 3: traits.cuh kThreeConsumers)
// are consumers owning 64 rows each of the 128-row (192-row) M tile. Key tiles run from the last
// (the diagonal, masked) to the first, in a ring of two K and two V stages. Inside a consumer the
// softmax of tile n overlaps the tensor cores: S(n) = Q K(n)^T and O += P(n+1) V(n+1) are issued
// together, and the softmax of S(n) runs while the P V product drains; O is rescaled once that
// product has landed (in the split kernel at D = 128 on the static walk: inside the next turn,
// between its Q K^T and P V issues).
#pragma once

#include <cuda.h>
#include <float.h>
#include <math_constants.h>

#include <cutlass/arch/reg_reconfig.h>

#include "core/params.h"
#include "cuda/common/pdl.cuh"
#include "cuda/sm90/epilogue.cuh"
#include "cuda/sm90/launch.h"
#include "cuda/sm90/load.cuh"
#include "cuda/sm90/mask.cuh"
#include "cuda/sm90/mma.cuh"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/producer.cuh"
#include "cuda/sm90/q_item.cuh"
#include "cuda/sm90/scheduler.cuh"
#include "cuda/sm90/skip.cuh"
#include "cuda/sm90/softmax.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/walk.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

// The P V wait (wgmma.wait_group 0) made to depend on `after`, a value the softmax has just
// computed, so that ptxas keeps it where the source puts it instead of hoisting it to the Q K^T
// wait. Both arms wait, so the branch changes no result; the vote keeps it warp-uniform (a
// predicated wait makes ptxas serialise every WGMMA of the kernel), and the arm no real value
// takes (one NaN payload) naps.
__device__ __forceinline__ void wait_pv_after(float after) {
  if (__any_sync(0xffffffffu, __float_as_uint(after) == 0x7fc00123u)) {
    cute::warpgroup_wait<0>();
    __nanosleep(1);
  } else {
    cute::warpgroup_wait<0>();
  }
}

// Packed rows of a consumer thread's two row halves (in row block `block` of the M tile) and
// their sinks (scaled to base 2).
__device__ __forceinline__ void thread_rows(const Params& p, const Work& w, int block, int t, int (&rows)[2],
                                            float (&sink_log2)[2]) {
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    rows[h] = w.m0 + block * kRowsPerWarpgroup + (t / 32) * 16 + ((t % 32) >> 2) + 8 * h;
    sink_log2[h] = p.sinks != nullptr ? p.sinks[w.kv_head * p.group_size + p.group_div.mod(rows[h])] * kLog2e
                                      : -CUDART_INF_F;
  }
}

// Multiplies an accumulator (S or O) by a factor of each of the thread's two rows: for each
// 8-column block, x[4j], x[4j + 1] lie in the first row, x[4j + 2], x[4j + 3] in the second.
template <int kRegs>
__device__ __forceinline__ void scale_rows(float (&x)[kRegs], const float (&factor)[2]) {
#pragma unroll
  for (int j = 0; j < kRegs / 4; ++j) {
    x[4 * j] *= factor[0];
    x[4 * j + 1] *= factor[0];
    x[4 * j + 2] *= factor[1];
    x[4 * j + 3] *= factor[1];
  }
}

// Traits::kColSplit: adds the other consumer warpgroup's half of S to this one's. Both warpgroups'
// accumulators cover the same 64 rows and keys, thread for thread, so thread t of each holds the
// same elements: it writes its kSRegs floats to its side of buffer `parity` (float4s, thread-
// major: conflict-free), warp w of each warpgroup meet on a named barrier of their own, and each
// thread adds the other side's floats. Both sums are bit-identical (one addition, commutative), so
// both warpgroups compute the same softmax. Buffers alternate by tile: a thread writes buffer b
// again only after the next exchange's barrier, which its partner reaches after reading b.
// kScaled (bf16 queries over an e4m3 cache): each warpgroup's half of Q was stored times a power of
// two of each row's own (load.cuh finish_q_bf16_as_f16), so each half is first multiplied by the
// thread's two rows' factors (exactly).
template <class Tr, bool kScaled = false, int kSRegs>
__device__ __forceinline__ void exchange_s(float (&s)[kSRegs], char* smem, int consumer, int t, uint32_t& parity,
                                           const float (&factor)[2]) {
  if constexpr (kScaled) scale_rows(s, factor);
  constexpr int kVecs = kSRegs / 4;
  static_assert(Tr::kXchgBytes == 2 * 2 * kVecs * kWarpgroupThreads * 16, "traits.cuh kSmemXchg");
  float4* buf = reinterpret_cast<float4*>(smem + Tr::kSmemXchg) + parity * (2 * kVecs * kWarpgroupThreads);
  float4* mine = buf + consumer * (kVecs * kWarpgroupThreads) + t;
  const float4* other = buf + (consumer ^ 1) * (kVecs * kWarpgroupThreads) + t;
#pragma unroll
  for (int j = 0; j < kVecs; ++j) mine[j * kWarpgroupThreads] = make_float4(s[4 * j], s[4 * j + 1], s[4 * j + 2], s[4 * j + 3]);
  exchange_sync(t / 32);
#pragma unroll
  for (int j = 0; j < kVecs; ++j) {
    const float4 x = other[j * kWarpgroupThreads];
    s[4 * j] += x.x;
    s[4 * j + 1] += x.y;
    s[4 * j + 2] += x.z;
    s[4 * j + 3] += x.w;
  }
  parity ^= 1u;
}

// One consumer warpgroup over the work item w (non-empty). With Q ahead, it starts the copy of
// the CTA's next item's Q under its last P V: the item after `tile` in the static walk, or item
// `next_item` of the scheduler's ring. k_state / v_state carry across work items.
template <typename T, class Tr, bool kSplit, bool kDynamic, bool kSkip>
__device__ __forceinline__ void consume_tile(const Params& p, const TmaMaps& maps, const SplitPlan& plan,
                                             const Work& w, char* smem,
                                             uint32_t smem_base, const BarriersOf<Tr>& bars, int* last_flag,
                                             int consumer_index, int t, PipeState& k_state, PipeState& v_state,
                                             int tile, const ItemRing<Tr>& ring, int next_item, int num_tiles,
                                             int buf, uint32_t& q_phase, uint32_t& xchg_parity) {
  using Mma = WarpgroupMma<T, Tr>;
  // Where O is rescaled by the last tile's correction: inside the turn, between the Q K^T and P V
  // issues, where the tensor cores are busy with S (kRescaleInTurn), or after the P V wait, before
  // the next turn. Inside the turn only in the 16-bit split kernel at D = 128 on the static walk:
  // chunk_long_tp8 419 -> 404 us at page 64 on the H200 (413 -> 417 at page 16),
  // chunk_long_tp8_batch 1060 -> 1027; every other kernel measured slower with it (d64 +6.5%,
  // long_8k on the scheduler +0.8%, batch_1k +1.8%; docs/perf.md, v15).
  constexpr bool kRescaleInTurn =
      kSplit && !kDynamic && Tr::kHeadDim == 128 && !Tr::kKvFp8 && !Tr::kQkvFp8 && !Tr::kLazySchedule;
  // Where the P V wait goes: ptxas puts it right after the Q K^T wait, so the whole softmax runs
  // after P V has finished. The nvfp4-output kernel, whose two-term P V takes twice as long, waits
  // after the row maxima instead, which then run under it: nvfp4.long_8k 1126 -> 1113 us at page
  // 64 and 1180 -> 1155 at page 16 on the H200. Elsewhere that place measured -1% to +5% (d64
  // +4.6%), and after the whole softmax 7-14% slower everywhere (docs/perf.md, v16).
  constexpr bool kWaitAfterMaxima = Tr::kTwoTermP;
  constexpr bool kQTma = Tr::kQByTma && !kSplit && !kDynamic;
  constexpr bool kTurns = kPingPong && !Tr::kColSplit;
  constexpr int kSRegs = Mma::kSRegs;
  constexpr int kORegs = Mma::kORegs;
  constexpr int kPRegs = Mma::kPRegs;
  const int lane = t % 32;
  const KeyBand band = w.band<Tr::kBlockM>(p);

  // NVFP4 K and V are decoded times 2^-14 (fp8_stage.cuh e2m1x8_scaled_2m14): both scales undo it.
  constexpr float kKvUnscale = Tr::kKvFp4 ? 16384.0f : 1.0f;
  const float bmm1 = (p.bmm1_scale_ptr != nullptr ? *p.bmm1_scale_ptr : p.bmm1_scale) * kKvUnscale;
  // Scores are scaled by |bmm1_scale| * log2(e); a negative bmm1_scale negates Q instead. A zero
  // scale becomes the smallest normal float: every exp2 is exactly 1, masked scores stay -inf.
  // Over an e4m3 cache with bf16 queries, times a power of two of each row (load_q: Q stored scaled).
  const bool negate_q = bmm1 < 0.0f;
  const float scale_log2 = fmaxf(fabsf(bmm1) * kLog2e, FLT_MIN);
  float row_scale[2] = {scale_log2, scale_log2};
  // The column-split kernel over an e4m3 cache with bf16 queries: each warpgroup's half of S is
  // scaled by its own rows' factors before the exchange (exchange_s), the softmax by scale_log2.
  constexpr bool kScaledHalves = Tr::kColSplit && Tr::kKvFp8 && !std::is_same<T, __half>::value;
  float half_factor[2] = {1.0f, 1.0f};

  // This thread's rows, their query rows and sinks. A split piece leaves the sink to the merge,
  // which adds it once.
  int rows[2], tokens[2];
  float sink_log2[2];
  thread_rows(p, w, row_block_of<Tr>(consumer_index), t, rows, sink_log2);
  tokens[0] = p.group_div.div(rows[0]);
  tokens[1] = p.group_div.div(rows[1]);

  char* q_ptr = smem + Tr::kSmemQ + q_region<Tr>(buf, consumer_index);
  const uint32_t q_tile = smem_base + Tr::kSmemQ + q_region<Tr>(buf, consumer_index);
  int64_t* row_table = row_table_of<Tr>(smem, buf, consumer_index);
  // Q ahead: the next work item's Q is copied into the other buffer while this item finishes.
  auto fetch_next = [&] {
    if constexpr (Tr::kQAhead && kDynamic) {
      ring.wait(next_item);
      const ScheduledItem& next = ring.read(next_item);
      if (next.tile < num_tiles) {
        issue_item_q<Tr, kQTma>(p, maps, bars, next.w, smem, smem_base, buf ^ 1, consumer_index, t);
      }
    } else if constexpr (Tr::kQAhead) {
      const FoundWork f =
          find_work<Tr::kBlockM, kSplit, Tr::kTake>(p, plan, tile + static_cast<int>(gridDim.x), num_tiles);
      if (f.tile < num_tiles) issue_item_q<Tr, kQTma>(p, maps, bars, f.w, smem, smem_base, buf ^ 1, consumer_index, t);
    }
  };
  if constexpr (Tr::kQAhead) {
    // issued by the caller or the previous item
    finish_item_q<Tr, kQTma>(maps, bars, q_ptr, buf, consumer_index, t, negate_q, q_phase);
  } else if (q_by_tma<kQTma>(maps)) {
    issue_item_q<Tr, kQTma>(p, maps, bars, w, smem, smem_base, buf, consumer_index, t);
    finish_item_q<Tr, kQTma>(maps, bars, q_ptr, buf, consumer_index, t, negate_q, q_phase);
  } else {
    release_staging(t);  // the region's last output stores have read it (epilogue.cuh)
    const int q_rows = fill_row_table(p, w, row_table, p.q_stride_token, p.q_stride_head, consumer_index,
                                      row_block_of<Tr>(consumer_index), t);
    float factor[2] = {1.0f, 1.0f};
    load_q<T, Tr>(p, row_table, q_rows, q_tile, q_ptr, consumer_index, t, negate_q, factor);
    if constexpr (kScaledHalves) {
      half_factor[0] = factor[0];
      half_factor[1] = factor[1];
    } else if constexpr (Tr::kKvFp8 && !std::is_same<T, __half>::value) {
      row_scale[0] = fmaxf(fabsf(bmm1) * kLog2e * factor[0], FLT_MIN);
      row_scale[1] = fmaxf(fabsf(bmm1) * kLog2e * factor[1], FLT_MIN);
    }
  }

  // kColSplit without the vote: Q as registers (mma.cuh kQRegs), read from the tile load_q stored.
  // (The vote kernel's loop spills with them: skip0.d512 +16%.)
  constexpr bool kQInRegs = Mma::kQRegs > 0 && !kSkip;
  uint32_t q_regs[Mma::kQRegs > 0 ? Mma::kQRegs : 1];
  if constexpr (kQInRegs) Mma::load_q_operand(q_regs, q_ptr, t);
  // kColSplit: the warpgroup's own column chunks of K and V (e4m3 Q/K/V: its rows of V^T, kBlockN
  // bytes each).
  const uint32_t kv_cols = (first_col_of<Tr>(consumer_index) / Tr::kChunkElems) * Tr::kKvChunkStride;
  const uint32_t v_cols = Tr::kQkvFp8 ? first_col_of<Tr>(consumer_index) * Tr::kBlockN : kv_cols;
  auto k_tile = [&](int stage) { return smem_base + Tr::kSmemK + stage * Tr::kKvTileBytes + kv_cols; };
  auto v_tile = [&](int stage) { return smem_base + Tr::kSmemV + stage * Tr::kKvTileBytes + v_cols; };
  // One arrival per consumer warp releases a stage.
  auto release = [&](uint64_t* bar) {
    if (lane == 0) arrive_barrier(bar);
  };

  const float start[2] = {w.split() ? -CUDART_INF_F : sink_log2[0], w.split() ? -CUDART_INF_F : sink_log2[1]};
  RowSoftmax<kSRegs, Tr::kLazySchedule, Mma::kPLog2> softmax(start);
  float o[kORegs];
#pragma unroll
  for (int i = 0; i < kORegs; ++i) o[i] = 0.0f;
  float s[kSRegs];
  uint32_t prob[kPRegs];
  auto issue_s = [&](int stage) {
    if constexpr (kQInRegs) {
      Mma::qk(s, q_regs, q_tile, k_tile(stage));
    } else {
      Mma::qk(s, q_tile, k_tile(stage));
    }
  };
  float correction[2];
  // Whether O is rescaled only where a row's correction is not 1: with lazy rescaling (most tiles
  // move no maximum), and in the e4m3 column-split kernel, whose O (128 registers) dwarfs its
  // 32-key tile's softmax and whose exact maxima move on few tiles.
  constexpr bool kRescaleWhenMoved = Tr::kLazySchedule || (Tr::kColSplit && Tr::kQkvFp8);

  int n_min, n_max;
  w.key_tiles<Tr::kBlockN>(band, &n_min, &n_max);
  if (n_max >= n_min) {
    // Ping-pong (pipeline.cuh): warpgroup 0 issues first; each issue point ends by handing the
    // turn to the next warpgroup, except the last warpgroup's last, which would hand it to nobody.
    // Every warpgroup visits the same key tiles, so the turns balance.
    // The column-split kernel has no turns: its warpgroups meet at every tile's S exchange.
    constexpr int kLast = Tr::kConsumerWarpgroups - 1;
    const int issues = n_max - n_min + 2;  // first QK, the loop's steps, the last P V
    int issued = 0;
    auto my_turn = [&] {
      if constexpr (kTurns) wait_turn(consumer_index);
    };
    auto next_turn = [&] {
      if constexpr (kTurns) {
        if (consumer_index != kLast || ++issued < issues) pass_turn<Tr::kConsumerWarpgroups>(consumer_index);
      }
    };
    if constexpr (kTurns) {
      if (consumer_index == kLast) pass_turn<Tr::kConsumerWarpgroups>(consumer_index);
    }
    // First tile: S alone, then its softmax.
    wait_barrier(bars.full_k(k_state.stage), k_state.phase);
    my_turn();
    issue_s(k_state.stage);
    next_turn();
    cute::warpgroup_wait<0>();
    release(bars.empty_k(k_state.stage));
    k_state.advance(Tr::kStages);
    if constexpr (Tr::kColSplit) exchange_s<Tr, kScaledHalves>(s, smem, consumer_index, t, xchg_parity, half_factor);
    if (band.needs_mask<Tr::kBlockN>(n_max)) apply_mask<Tr::kBlockN>(s, band, n_max, lane, tokens);
    SkipVote vote;
    bool skipped_last = false;  // the tile whose P V is the next to issue was skipped
    if constexpr (kSkip) {
      vote.begin(p, w);
      float tile_max[2];
      softmax.tile_maxima(s, row_scale, tile_max);
      vote.decide(tile_max, rows, w.packed_rows, true, t);
      softmax.update_from(tile_max, s, row_scale, correction);
    } else {
      softmax.update(s, row_scale, correction);
    }
    Mma::to_operand(s, prob);

    auto rescale_o = [&] { scale_rows(o, correction); };
    for (int n = n_max - 1; n >= n_min; --n) {
      wait_barrier(bars.full_k(k_state.stage), k_state.phase);
      if constexpr (!Tr::kLazySchedule || kTurns) wait_barrier(bars.full_v(v_state.stage), v_state.phase);
      my_turn();
      issue_s(k_state.stage);
      if constexpr (Tr::kLazySchedule && !kTurns) wait_barrier(bars.full_v(v_state.stage), v_state.phase);
      if constexpr (kRescaleInTurn) {
        fence_operands(o);  // after the Q K^T issue
        rescale_o();
      }
      // (The vote makes the branch warp-uniform to ptxas, which otherwise serialises every WGMMA
      // of the kernel around a fence in a possibly divergent path.)
      if (!kSkip || __all_sync(0xffffffffu, !skipped_last)) {
        Mma::pv(o, prob, v_tile(v_state.stage));
      } else {
        cute::warpgroup_commit_batch();  // an empty group in its place: the waits stay as they are
      }
      next_turn();
      cute::warpgroup_wait<1>();  // S(n) has landed; P(n+1) V(n+1) may still run
      release(bars.empty_k(k_state.stage));
      k_state.advance(Tr::kStages);
      if constexpr (Tr::kColSplit) exchange_s<Tr, kScaledHalves>(s, smem, consumer_index, t, xchg_parity, half_factor);
      if (band.needs_mask<Tr::kBlockN>(n)) apply_mask<Tr::kBlockN>(s, band, n, lane, tokens);
      if constexpr (kSkip) {
        // The vote, then the softmax of a kept tile; a skipped one changes nothing (correction 1,
        // no P: the next issue point runs its Q K^T alone).
        // P V is waited for after the maxima and the vote, before the exponentials: where ptxas puts
        // the dense kernels' wait. After the whole softmax (as the source of dense reads) long_32k
        // took 1.14x dense time with nothing skipped, here 1.06x (H100; docs/perf.md, v36).
        float tile_max[2];
        softmax.tile_maxima(s, row_scale, tile_max);
        const bool skip = vote.decide(tile_max, rows, w.packed_rows, false, t);
        cute::warpgroup_wait<0>();
        release(bars.empty_v(v_state.stage));
        v_state.advance(Tr::kVStages);
        if (skip) {
          correction[0] = correction[1] = 1.0f;
        } else {
          softmax.update_from(tile_max, s, row_scale, correction);
          if constexpr (!kRescaleInTurn) {
            if (!kRescaleWhenMoved || correction[0] != 1.0f || correction[1] != 1.0f) rescale_o();
          }
          Mma::to_operand(s, prob);
        }
        skipped_last = skip;
        continue;
      }
      if constexpr (kWaitAfterMaxima) {
        float base[2];
        softmax.prepare(s, row_scale, correction, base);
        wait_pv_after(base[0] + base[1]);
        softmax.exponentiate(s, row_scale, base, correction);
      } else {
        softmax.update(s, row_scale, correction);
        cute::warpgroup_wait<0>();
      }
      release(bars.empty_v(v_state.stage));
      v_state.advance(Tr::kVStages);
      // With lazy rescaling (softmax.cuh) most tiles leave both rows' maxima, and O, as they were
      // (kRescaleWhenMoved).
      if constexpr (!kRescaleInTurn) {
        if (!kRescaleWhenMoved || correction[0] != 1.0f || correction[1] != 1.0f) rescale_o();
      }
      Mma::to_operand(s, prob);
    }
    // The last P V.
    wait_barrier(bars.full_v(v_state.stage), v_state.phase);
    if constexpr (kRescaleInTurn) rescale_o();
    my_turn();
    if (!kSkip || __all_sync(0xffffffffu, !skipped_last)) Mma::pv(o, prob, v_tile(v_state.stage));
    next_turn();
    // (Both column-split warpgroups vote on the same S, so they count the same tiles: one reports.)
    if constexpr (kSkip) {
      if (!Tr::kColSplit || consumer_index == 0) vote.publish(p, t);
    }
    fetch_next();  // under the last P V (S and P are dead here)
    cute::warpgroup_wait<0>();
    release(bars.empty_v(v_state.stage));
    v_state.advance(Tr::kVStages);
  } else {
    fetch_next();
  }
  if constexpr (Mma::kOScale != 1.0f) {  // e4m3 P was quantised scaled (mma.cuh)
#pragma unroll
    for (int i = 0; i < kORegs; ++i) o[i] *= Mma::kOScale;
  }

  const Work& we = w;  // (kept in registers: re-deriving it costs the epilogue a metadata round trip)
  const float bmm2 = (p.bmm2_scale_ptr != nullptr ? *p.bmm2_scale_ptr : p.bmm2_scale) * kKvUnscale;
  float l[2], lse[2];
  // A split piece writes the output only when it is the last of its tile. No early return: the
  // pipeline states carry into the next work item and must stay warp-uniform values (they index
  // the shared-memory stages of every WGMMA descriptor).
  bool writes_output = true;
  if (!we.split()) {
    softmax.finish(sink_log2, l, lse);
  } else {
    // Store this piece, count it; the last piece of the tile merges them all.
    using Partial = SplitPartial<kORegs, 2, kWarpgroupThreads>;
    static_assert(Partial::kFloats == Tr::kSplitGroupFloats, "the host sizes the workspace from the traits");
    auto reg = [&](int i) -> float& { return o[i]; };
    const float no_sink[2] = {-CUDART_INF_F, -CUDART_INF_F};
    softmax.finish(no_sink, l, lse);
    const int group = consumer_index;
    Partial::store(Partial::group_slot(plan, we, we.item, group), t, reg, softmax.row_max, l);
    Partial::publish();
    warpgroup_sync(consumer_index);
    if (t == 0) last_flag[consumer_index] = Partial::arrive(Partial::counter(plan, we, group), we.pieces);
    warpgroup_sync(consumer_index);
    // Every thread of a warp reads the same flag; the vote tells the compiler so, which keeps
    // the branch below (and the state after it) warp-uniform.
    writes_output = __all_sync(0xffffffffu, last_flag[consumer_index] != 0);
    if (writes_output) {
      // Piece k of this tile is item kv_head + Hkv * (k + pieces * rank) = item + Hkv * (k - piece).
      auto slot = [&](int k) {
        return Partial::group_slot(plan, we, we.item + p.num_kv_heads * (k - we.piece), group);
      };
      Partial::merge(we.pieces, slot, t, reg, [](int i) { return (i / 2) % 2; }, sink_log2, l, lse);
    }
  }
  // Every WGMMA of this warpgroup has completed: its Q region now stages the output.
  if (writes_output) Epilogue<T, Tr>::run(p, maps, we, o, l, lse, rows, row_table, bmm2, q_ptr, consumer_index, t);
}

// kDynamic: the scheduler's walk (scheduler.cuh); otherwise the static one (walk.cuh for_each_item).
// kSkip: skip-softmax's vote (SkipVote) compiled in, for calls with a non-zero factor.
template <typename T, class Tr, bool kSplit, bool kDynamic, bool kSkip>
__global__ void __launch_bounds__(Tr::kThreads, 1)
    attention_kernel(const __grid_constant__ Params p, const __grid_constant__ TmaMaps maps,
                     const __grid_constant__ SplitPlan plan, int num_tiles) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  // The swizzle pattern repeats every 1024 bytes; TMA and WGMMA address it from 1024-aligned tiles.
  const uint32_t raw_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = (1024u - (raw_base & 1023u)) & 1023u;
  char* smem = reinterpret_cast<char*>(smem_raw) + pad;
  const uint32_t smem_base = raw_base + pad;
  const BarriersOf<Tr> bars{reinterpret_cast<uint64_t*>(smem + Tr::kSmemBarriers)};
  __shared__ int last_flag[kMaxConsumerWarpgroups];  // a split piece's warpgroup arrived last

  const int tid = static_cast<int>(threadIdx.x);
  const int warpgroup = tid / kWarpgroupThreads;
  if (tid == 0) {
    if constexpr (kDynamic) ItemRing<Tr>{smem}.init();  // fenced by bars.init
    const bool gathered = gathers_pages(p.log2_page_size);  // no K / V maps (hopper.cpp)
    bars.init(gathered);
    if (!gathered) {
      cute::prefetch_tma_descriptor(&maps.k);
      cute::prefetch_tma_descriptor(&maps.v);
    }
  }
  __syncthreads();

  pdl_wait_for_inputs();
  // The static walk: work tile i of num_tiles (Work::make's order) goes to CTA i % gridDim.x (one
  // CTA a tile, or one an SM over short keys: run.cuh). The scheduler's walk (kDynamic):
  // persistent CTAs whose producer warp draws their items and publishes each
  // in the item ring (scheduler.cuh); every other role walks the items it reads there. Either
  // way the pipelines' barrier phases carry from one item to the next, and the producer runs
  // ahead into the CTA's next item while the consumers finish the last.
  const ItemRing<Tr> ring{smem};
  if (warpgroup == 0) {
    cutlass::arch::warpgroup_reg_dealloc<Tr::kProducerRegs>();
    if (tid / 32 == 0) {
      const int lane = tid % 32;
      const KvProducer<Tr> kv(p, maps, lane);
      PipeState state, raw;
      uint32_t tail_phase = 0;
      if constexpr (kDynamic) {
        using Source = ItemSource<Tr::kBlockM, kSplit, Tr::kTake>;
        // Item j + 1 is decoded and published once item j's loads are issued, from a ticket taken
        // an item earlier: under the consumers' last tiles and epilogue of item j, when the producer
        // has nothing to issue (decoding it inside the load loop, under an earlier tile, measured
        // no faster: docs/perf.md, v8). The producer reads item j back from its slot,
        // which stays unchanged until item j + 2 is published.
        ring.publish(Source::find(p, plan, static_cast<int>(blockIdx.x), num_tiles, lane), 0, lane);
        unsigned int ticket = Source::take(p, lane);
        int j = 0;
        for (; ring.read(j).tile < num_tiles; ++j) {
          const Work& w = ring.read(j).w;
          produce_tile<T, Tr>(p, w, w.band<Tr::kBlockM>(p), smem, bars, kv, state, raw, tail_phase, lane);
          ring.acquire(j + 1);
          ring.publish(Source::find(p, plan, Source::index_of(ticket, num_tiles), num_tiles, lane), j + 1, lane);
          if (ring.read(j + 1).tile < num_tiles) ticket = Source::take(p, lane);
        }
        Source::retire(p, lane);
      } else {
        for_each_item<Tr, kSplit>(p, plan, num_tiles, [&](const Work& w, int) {
          produce_tile<T, Tr>(p, w, w.band<Tr::kBlockM>(p), smem, bars, kv, state, raw, tail_phase, lane);
        });
      }
    } else if constexpr (Tr::kKvFp8) {
      const int u = tid - 32;  // widener thread index
      PipeState state, v_state, raw;
      if constexpr (kDynamic) {
        walk_items(ring, num_tiles, [&](const Work& w) {
          widen_tile<Tr>(w, w.band<Tr::kBlockM>(p), smem, bars, state, v_state, raw, u);
        });
      } else {
        for_each_item<Tr, kSplit>(p, plan, num_tiles, [&](const Work& w, int) {
          widen_tile<Tr>(w, w.band<Tr::kBlockM>(p), smem, bars, state, v_state, raw, u);
        });
      }
    } else if constexpr (Tr::kQkvFp8) {
      const int u = tid - 32;  // transposing thread index
      PipeState state, raw;
      if constexpr (kDynamic) {
        walk_items(ring, num_tiles,
                   [&](const Work& w) { transpose_tile<Tr>(w, w.band<Tr::kBlockM>(p), smem, bars, state, raw, u); });
      } else {
        for_each_item<Tr, kSplit>(p, plan, num_tiles, [&](const Work& w, int) {
          transpose_tile<Tr>(w, w.band<Tr::kBlockM>(p), smem, bars, state, raw, u);
        });
      }
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<Tr::kConsumerRegs>();
    // (traits.cuh uniform_consumer_index: where a warp-uniform index measured faster)
    constexpr bool kUniformIndex = Tr::uniform_consumer_index(kDynamic);
    const int consumer_index = kUniformIndex ? __shfl_sync(0xffffffffu, warpgroup - 1, 0) : warpgroup - 1;
    const int t = tid % kWarpgroupThreads;
    PipeState k_state, v_state;
    int buf = 0;  // Q ahead: the Q buffer of the current item
    uint32_t q_phase = 0;  // Q by TMA: the parity of each buffer's barrier
    uint32_t xchg_parity = 0;  // kColSplit: the S exchange buffer of the next tile (exchange_s)
    if constexpr (kDynamic) {
      ring.wait(0);
      ScheduledItem it = ring.read(0);
      if (it.tile < num_tiles) ring.release(0);  // the end of the walk is not released (scheduler.cuh)
      if constexpr (Tr::kQAhead) {
        if (it.tile < num_tiles) issue_item_q<Tr, false>(p, maps, bars, it.w, smem, smem_base, 0, consumer_index, t);
      }
      for (int j = 1; it.tile < num_tiles; ++j) {
        // Item j: with Q ahead, consume_tile has waited for it already (to start its Q copy).
        consume_tile<T, Tr, kSplit, kDynamic, kSkip>(p, maps, plan, it.w, smem, smem_base, bars, last_flag, consumer_index, t,
                                              k_state, v_state, it.tile, ring, j, num_tiles, buf, q_phase,
                                              xchg_parity);
        if constexpr (!Tr::kQAhead) ring.wait(j);
        it = ring.read(j);
        if (it.tile < num_tiles) ring.release(j);
        if constexpr (Tr::kQAhead) buf ^= 1;
      }
    } else {
      if constexpr (Tr::kQAhead) {
        const FoundWork f = find_work<Tr::kBlockM, kSplit, Tr::kTake>(p, plan, static_cast<int>(blockIdx.x), num_tiles);
        if (f.tile < num_tiles) {
          issue_item_q<Tr, Tr::kQByTma && !kSplit>(p, maps, bars, f.w, smem, smem_base, 0, consumer_index, t);
        }
      }
      for_each_item<Tr, kSplit>(p, plan, num_tiles, [&](const Work& w, int tile) {
        consume_tile<T, Tr, kSplit, kDynamic, kSkip>(p, maps, plan, w, smem, smem_base, bars, last_flag, consumer_index, t,
                                              k_state, v_state, tile, ring, 0, num_tiles, buf, q_phase,
                                              xchg_parity);
        if constexpr (Tr::kQAhead) buf ^= 1;
      });
    }
    finish_stores(t);
    pdl_allow_dependents();
  }
#endif
}

}  // namespace sm90
}  // namespace ctxattn
