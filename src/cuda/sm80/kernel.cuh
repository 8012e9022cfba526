// The portable flash-attention kernel (sm80 and newer): orchestration only. The pieces:
//   work.cuh      which (request, KV head, packed rows) a CTA owns, lengths clamped
//   load.cuh      Q tile and the paged K/V gather (cp.async, never outside the pool)
//   mma.cuh       S = Q K^T and O += P V on m16n8k16 tensor cores
//   mask.cuh      tiles visited, which need masking, and the masking
//   softmax.cuh   fp32 online softmax in base 2, sinks
//   epilogue.cuh  normalisation, LSE, output encodings
//
// Pipeline (one barrier an iteration for 16-bit KV): tile n is waited for and made visible at the
// top of iteration n; tile n-1 is then issued into the other stage and lands while tile n is
// computed; the block-table entries of tile n-2 are read at the same time, one iteration ahead
// of their use. Tiles go from the last (diagonal, masked) to the first; a tile whose upper half
// lies past every row's band runs half its MMAs.
#pragma once

#include <float.h>
#include <math_constants.h>

#include "core/params.h"
#include "cuda/common/pdl.cuh"
#include "cuda/sm80/epilogue.cuh"
#include "cuda/sm80/load.cuh"
#include "cuda/sm80/mask.cuh"
#include "cuda/sm80/mma.cuh"
#include "cuda/sm80/softmax.cuh"
#include "cuda/sm80/traits.cuh"
#include "cuda/sm80/work.cuh"

namespace ctxattn {
namespace sm80 {

constexpr float kLog2e = 1.4426950408889634f;

template <typename T, class Tr, bool kSplit>
__global__ void __launch_bounds__(Tr::kThreads, Tr::kMinBlocksPerSm)
    attention_kernel(const Params p, const SplitPlan plan) {
  extern __shared__ __align__(128) unsigned char smem[];
  constexpr int kAtoms = Tr::kMAtoms;
  constexpr int kRows = Tr::kThreadRows;
  constexpr int kSBlocks = Tr::kBlockN / 8;
  constexpr int kOBlocks = Tr::kHeadDimV / 8;
  // D = 512: this CTA's half of V's columns (traits.cuh kVSplit), as a byte offset into the V tile.
  const int col0 = Tr::kVSplit > 1 ? static_cast<int>(blockIdx.y) * Tr::kHeadDimV : 0;
  const uint32_t v_col = static_cast<uint32_t>(col0) * 2;

  pdl_wait_for_inputs();
  const CtaWork w = CtaWork::make<Tr::kBlockM, kSplit>(p, plan, static_cast<int>(blockIdx.x));
  if (w.empty()) return;

  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32;
  const int lane = tid % 32;
  const uint32_t smem_base = smem_addr(smem);
  const uint32_t q_tile = smem_base + Tr::kSmemQ;
  const uint32_t raw_k = smem_base + Tr::kSmemRawK;
  const uint32_t raw_v = smem_base + Tr::kSmemRawV;
  auto k_tile = [&](int n) { return smem_base + Tr::kSmemK + (n & (Tr::kStages - 1)) * Tr::kKvTileBytes; };
  auto v_tile = [&](int n) { return smem_base + Tr::kSmemV + (n & (Tr::kStages - 1)) * Tr::kKvTileBytes; };
  // Where tile n is issued: the raw e4m3 / NVFP4 tile, or its 16-bit stage.
  auto k_dst = [&](int n) { return Tr::kKvRaw ? raw_k : k_tile(n); };
  auto v_dst = [&](int n) { return Tr::kKvRaw ? raw_v : v_tile(n); };

  const int group = p.group_size;
  // Query row (inside the request) and head of each accumulator row of this thread.
  auto row_token = [&](const CtaWork& cw, int r) { return packed_row<Tr::kWarpRows>(cw, warp, lane, r) / group; };
  auto row_head = [&](const CtaWork& cw, int r) {
    return cw.kv_head * group + packed_row<Tr::kWarpRows>(cw, warp, lane, r) % group;
  };
  const Mask<Tr::kBlockN, kAtoms> mask(p, w, group, Tr::kBlockM);

  const float bmm1 = p.bmm1_scale_ptr != nullptr ? *p.bmm1_scale_ptr : p.bmm1_scale;
  // Scores are scaled by |bmm1_scale| * log2(e); a negative bmm1_scale negates Q instead, so the
  // softmax can take maxima of raw scores. A zero scale becomes the smallest normal float, which
  // leaves every exp2 at exactly 1 but keeps masked scores at -inf rather than NaN.
  const bool negate_q = bmm1 < 0.0f;
  const float scale_log2 = fmaxf(fabsf(bmm1) * kLog2e, FLT_MIN);
  auto sink_logits = [&](const CtaWork& cw, float (&sink_log2)[kRows]) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      sink_log2[r] = p.sinks != nullptr ? p.sinks[row_head(cw, r)] * kLog2e : -CUDART_INF_F;
    }
  };
  float sink_log2[kRows];
  sink_logits(w, sink_log2);
  // A split piece leaves the sink to the merge, which adds it once.
  float start[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) start[r] = w.split() ? -CUDART_INF_F : sink_log2[r];
  OnlineSoftmax<kAtoms, kSBlocks, kOBlocks> softmax(start);

  float o[kAtoms][kOBlocks][4];
#pragma unroll
  for (int at = 0; at < kAtoms; ++at)
#pragma unroll
    for (int ob = 0; ob < kOBlocks; ++ob) o[at][ob][0] = o[at][ob][1] = o[at][ob][2] = o[at][ob][3] = 0.0f;

  const WarpMma<T, Tr> mma(warp, lane);
  KvGather<T, Tr> gather(p, w, tid);

  load_q<T, Tr>(p, w, q_tile, tid, negate_q);
  const int n_min = mask.n_min;
  int n = mask.n_max;
  if (n >= n_min) {
    gather.fetch_pages(p, n);
    gather.issue(p, n, k_dst(n), v_dst(n));
    if (n - 1 >= n_min) gather.fetch_pages(p, n - 1);
  }
  cp_async_wait_all();
  if (negate_q) negate_q_chunks<Tr>(p, q_tile, tid);
  __syncthreads();

  for (; n >= n_min; --n) {
    if (n != mask.n_max) {
      cp_async_wait_all();
      // The single 16-bit tile is free again (and NVFP4's scales, copied by other threads, landed).
      if constexpr (Tr::kKvRaw) __syncthreads();
    }
    if constexpr (Tr::kKvRaw) gather.widen(n, raw_k, raw_v, k_tile(n), v_tile(n));
    // Tile n visible to all warps; every warp is done with the stage tile n-1 is issued into.
    __syncthreads();
    if (n - 1 >= n_min) {
      gather.issue(p, n - 1, k_dst(n - 1), v_dst(n - 1));
      if (n - 2 >= n_min) gather.fetch_pages(p, n - 2);
    }

    float s[kAtoms][kSBlocks][4];
    const bool half = mask.upper_half_empty(n);
    if (half) {
      mma.template qk<kSBlocks / 2>(s, q_tile, k_tile(n));
    } else {
      mma.qk(s, q_tile, k_tile(n));
    }
    if (mask.needs_mask(n)) {
      int tokens[kRows];
#pragma unroll
      for (int r = 0; r < kRows; ++r) tokens[r] = row_token(w, r);
      mask.apply(s, n, lane, tokens);
    }
    softmax.update(s, o, scale_log2);
    if (half) {
      mma.template pv<kSBlocks / 2>(o, s, v_tile(n) + v_col);
    } else {
      mma.pv(o, s, v_tile(n) + v_col);
    }
  }

  pdl_allow_dependents();
  // The epilogue re-derives the CTA's work and bmm2_scale rather than keeping them in registers
  // through the main loop, where the accumulators need every register.
  const CtaWork we = CtaWork::make<Tr::kBlockM, kSplit>(p, plan, static_cast<int>(blockIdx.x));
  const float bmm2 = p.bmm2_scale_ptr != nullptr ? *p.bmm2_scale_ptr : p.bmm2_scale;
  float l[kRows];
  float lse[kRows];
  sink_logits(we, sink_log2);
  if (!we.split()) {
    softmax.finish(sink_log2, l, lse);
  } else {
    // Store this piece, count it; the last piece of the tile merges them all.
    using Partial = SplitPartial<kAtoms * kOBlocks * 4, kRows, Tr::kThreads>;
    static_assert(Partial::kFloats == Tr::kSplitGroupFloats, "the host sizes the workspace from the traits");
    auto reg = [&](int i) -> float& { return o[i / (4 * kOBlocks)][(i / 4) % kOBlocks][i % 4]; };
    float no_sink[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) no_sink[r] = -CUDART_INF_F;
    softmax.finish(no_sink, l, lse);
    Partial::store(Partial::group_slot(plan, we, we.item, 0), tid, reg, softmax.row_max, l);
    Partial::publish();
    const bool last = __syncthreads_or(tid == 0 && Partial::arrive(Partial::counter(plan, we, 0), we.pieces));
    if (!last) return;
    // Piece k of this tile is item kv_head + Hkv * (k + pieces * rank) = item + Hkv * (k - piece).
    auto slot = [&](int k) { return Partial::group_slot(plan, we, we.item + p.num_kv_heads * (k - we.piece), 0); };
    // Register i: atom i / (4 * kOBlocks), rows lane / 4 (i % 4 < 2) and lane / 4 + 8.
    Partial::merge(we.pieces, slot, tid, reg, [](int i) { return 2 * (i / (4 * kOBlocks)) + (i % 4) / 2; }, sink_log2,
                   l, lse);
  }
  ThreadRows<kRows> rows;
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int packed = packed_row<Tr::kWarpRows>(we, warp, lane, r);
    rows.token[r] = packed / group;
    rows.head[r] = we.kv_head * group + packed % group;
    rows.valid[r] = packed < we.packed_rows;
  }
  __syncthreads();  // every warp is done with the Q tile, which now stages the output
  Epilogue<T, Tr>::run(p, we, o, l, lse, rows, bmm2, q_tile, warp, lane, tid, col0);
}

}  // namespace sm80
}  // namespace ctxattn
