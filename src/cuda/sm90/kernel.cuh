// The Hopper (sm90a) attention kernel: orchestration only. The pieces:
//   work.cuh      which (request, KV head, packed rows) a CTA owns, lengths made safe
//   load.cuh      K/V by TMA from the paged pool (producer), Q by cp.async (consumers)
//   pipeline.cuh  mbarrier stages between producer and consumers, named barriers
//   mma.cuh       S = Q K^T and O += P V on WGMMA
//   mask.cuh      masking of boundary tiles (the rule: cuda/common/band.cuh)
//   softmax.cuh   fp32 online softmax in base 2, sinks
//   epilogue.cuh  normalisation, LSE, output encodings
//
// Warp roles: warpgroup 0 is the producer (its first warp issues every TMA load; the warpgroup
// gives registers away with setmaxnreg), warpgroups 1 and 2 are consumers owning 64 rows each of
// the 128-row M tile. Key tiles run from the last (the diagonal, masked) to the first, in a ring
// of two K and two V stages. Inside a consumer the softmax of tile n overlaps the tensor cores:
// S(n) = Q K(n)^T and O += P(n+1) V(n+1) are issued together, and the softmax of S(n) runs while
// the P V product drains; O is rescaled once that product has landed.
#pragma once

#include <cuda.h>
#include <float.h>
#include <math_constants.h>

#include <cutlass/arch/reg_reconfig.h>

#include "core/params.h"
#include "cuda/common/pdl.cuh"
#include "cuda/sm90/epilogue.cuh"
#include "cuda/sm90/load.cuh"
#include "cuda/sm90/mask.cuh"
#include "cuda/sm90/mma.cuh"
#include "cuda/sm90/pipeline.cuh"
#include "cuda/sm90/softmax.cuh"
#include "cuda/sm90/traits.cuh"
#include "cuda/sm90/work.cuh"

namespace ctxattn {
namespace sm90 {

// The producer warp over one work tile: K then V of each key tile, a tile's page ids read one
// tile ahead. `state` and `tail_phase` carry across the CTA's work tiles.
template <typename T, class Tr>
__device__ __forceinline__ void produce_tile(const Params& p, const Work& w, const KeyBand& band, char* smem,
                                             const Barriers<Tr::kStages>& bars, const KvProducer<Tr>& kv, PipeState& state,
                                             uint32_t& tail_phase, int lane) {
  const int n_min = band.n_min<Tr::kBlockN>();
  int n = band.n_max<Tr::kBlockN>();
  if (n < n_min) return;
  int32_t page = kv.page_of(p, w, n);
  for (; n >= n_min; --n) {
    const int32_t next_page = n > n_min ? kv.page_of(p, w, n - 1) : 0;
    // A fresh barrier completes its phase "before 0", so the first wait on parity 1 passes.
    wait_barrier(bars.empty_k(state.stage), state.phase ^ 1u);
    kv.load_k(p, w, smem + Tr::kSmemK + state.stage * Tr::kKvTileBytes, bars.full_k(state.stage), n, page, lane);
    wait_barrier(bars.empty_v(state.stage), state.phase ^ 1u);
    kv.load_v(p, w, smem + Tr::kSmemV + state.stage * Tr::kKvTileBytes, bars.full_v(state.stage), bars.v_tail(),
              tail_phase, n, page, lane);
    state.advance(Tr::kStages);
    page = next_page;
  }
}

// One consumer warpgroup over one work tile. k_state / v_state carry across work tiles.
template <typename T, class Tr>
__device__ __forceinline__ void consume_tile(const Params& p, const Work& w, const KeyBand& band, char* smem,
                                             uint32_t smem_base, const Barriers<Tr::kStages>& bars, int consumer_index, int t,
                                             PipeState& k_state, PipeState& v_state) {
  using Mma = WarpgroupMma<T, Tr>;
  constexpr int kSRegs = Mma::kSRegs;
  constexpr int kORegs = Mma::kORegs;
  constexpr int kPRegs = Mma::kPRegs;
  const int lane = t % 32;
  const int warp_in_group = t / 32;
  const int group = p.group_size;

  const float bmm1 = p.bmm1_scale_ptr != nullptr ? *p.bmm1_scale_ptr : p.bmm1_scale;
  // Scores are scaled by |bmm1_scale| * log2(e); a negative bmm1_scale negates Q instead. A zero
  // scale becomes the smallest normal float: every exp2 is exactly 1, masked scores stay -inf.
  const bool negate_q = bmm1 < 0.0f;
  const float scale_log2 = fmaxf(fabsf(bmm1) * kLog2e, FLT_MIN);

  // Packed rows of this thread's two row halves, their query rows and sinks.
  int rows[2], tokens[2];
  float sink_log2[2];
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    rows[h] = w.m0 + consumer_index * kRowsPerWarpgroup + warp_in_group * 16 + (lane >> 2) + 8 * h;
    tokens[h] = rows[h] / group;
    sink_log2[h] = p.sinks != nullptr ? p.sinks[w.kv_head * group + rows[h] % group] * kLog2e : -CUDART_INF_F;
  }

  char* q_ptr = smem + Tr::kSmemQ + consumer_index * Tr::kQWarpgroupBytes;
  const uint32_t q_tile = smem_base + Tr::kSmemQ + consumer_index * Tr::kQWarpgroupBytes;
  load_q<Tr>(p, w, q_tile, q_ptr, consumer_index, t, negate_q);

  auto k_tile = [&](int stage) { return smem_base + Tr::kSmemK + stage * Tr::kKvTileBytes; };
  auto v_tile = [&](int stage) { return smem_base + Tr::kSmemV + stage * Tr::kKvTileBytes; };
  // One arrival per consumer warp releases a stage.
  auto release = [&](uint64_t* bar) {
    if (lane == 0) arrive_barrier(bar);
  };

  RowSoftmax<kSRegs, Tr::kLazySchedule> softmax(sink_log2);
  float o[kORegs];
#pragma unroll
  for (int i = 0; i < kORegs; ++i) o[i] = 0.0f;
  float s[kSRegs];
  uint32_t prob[kPRegs];
  float correction[2];

  const int n_min = band.n_min<Tr::kBlockN>();
  const int n_max = band.n_max<Tr::kBlockN>();
  if (n_max >= n_min) {
    // First tile: S alone, then its softmax.
    wait_barrier(bars.full_k(k_state.stage), k_state.phase);
    Mma::qk(s, q_tile, k_tile(k_state.stage));
    cute::warpgroup_wait<0>();
    release(bars.empty_k(k_state.stage));
    k_state.advance(Tr::kStages);
    if (band.needs_mask<Tr::kBlockN>(n_max)) apply_mask<Tr::kBlockN>(s, band, n_max, lane, tokens);
    softmax.update(s, scale_log2, correction);
    Mma::to_operand(s, prob);

    for (int n = n_max - 1; n >= n_min; --n) {
      wait_barrier(bars.full_k(k_state.stage), k_state.phase);
      if constexpr (!Tr::kLazySchedule) wait_barrier(bars.full_v(v_state.stage), v_state.phase);
      Mma::qk(s, q_tile, k_tile(k_state.stage));
      if constexpr (Tr::kLazySchedule) wait_barrier(bars.full_v(v_state.stage), v_state.phase);
      Mma::pv(o, prob, v_tile(v_state.stage));
      cute::warpgroup_wait<1>();  // S(n) has landed; P(n+1) V(n+1) may still run
      release(bars.empty_k(k_state.stage));
      k_state.advance(Tr::kStages);
      if (band.needs_mask<Tr::kBlockN>(n)) apply_mask<Tr::kBlockN>(s, band, n, lane, tokens);
      softmax.update(s, scale_log2, correction);
      cute::warpgroup_wait<0>();
      release(bars.empty_v(v_state.stage));
      v_state.advance(Tr::kStages);
      // With lazy rescaling (softmax.cuh) most tiles leave both rows' maxima, and O, as they were.
      if (!Tr::kLazySchedule || correction[0] != 1.0f || correction[1] != 1.0f) {
#pragma unroll
        for (int j = 0; j < kORegs / 4; ++j) {
          o[4 * j] *= correction[0];
          o[4 * j + 1] *= correction[0];
          o[4 * j + 2] *= correction[1];
          o[4 * j + 3] *= correction[1];
        }
      }
      Mma::to_operand(s, prob);
    }
    // The last P V.
    wait_barrier(bars.full_v(v_state.stage), v_state.phase);
    Mma::pv(o, prob, v_tile(v_state.stage));
    cute::warpgroup_wait<0>();
    release(bars.empty_v(v_state.stage));
    v_state.advance(Tr::kStages);
  }

  const float bmm2 = p.bmm2_scale_ptr != nullptr ? *p.bmm2_scale_ptr : p.bmm2_scale;
  float l[2], lse[2];
  softmax.finish(sink_log2, l, lse);
  // Every WGMMA of this warpgroup has completed: its Q region now stages the output.
  Epilogue<T, Tr>::run(p, w, o, l, lse, rows, bmm2, q_ptr, consumer_index, t);
}

template <typename T, class Tr>
__global__ void __launch_bounds__(kThreads, 1)
    attention_kernel(const __grid_constant__ Params p, const __grid_constant__ CUtensorMap map_k,
                     const __grid_constant__ CUtensorMap map_v, int m_blocks, int num_tiles) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
  extern __shared__ unsigned char smem_raw[];
  // The swizzle pattern repeats every 1024 bytes; TMA and WGMMA address it from 1024-aligned tiles.
  const uint32_t raw_base = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  const uint32_t pad = (1024u - (raw_base & 1023u)) & 1023u;
  char* smem = reinterpret_cast<char*>(smem_raw) + pad;
  const uint32_t smem_base = raw_base + pad;
  const Barriers<Tr::kStages> bars{reinterpret_cast<uint64_t*>(smem + Tr::kSmemBarriers)};

  const int tid = static_cast<int>(threadIdx.x);
  const int warpgroup = tid / kWarpgroupThreads;
  if (tid == 0) {
    bars.init();
    cute::prefetch_tma_descriptor(&map_k);
    cute::prefetch_tma_descriptor(&map_v);
  }
  __syncthreads();

  pdl_wait_for_inputs();
  // Work tile i of num_tiles (Work::make's order) goes to CTA i % gridDim.x; the barrier phases
  // carry from one tile to the next, and the producer runs ahead into a CTA's next tile while
  // the consumers finish the last. (The launch gives one CTA a tile today: see run.cuh.)
  if (warpgroup == 0) {
    cutlass::arch::warpgroup_reg_dealloc<kProducerRegisters>();
    if (tid / 32 == 0) {
      const int lane = tid % 32;
      const KvProducer<Tr> kv(p, &map_k, &map_v, lane);
      PipeState state;
      uint32_t tail_phase = 0;
      for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
        const Work w = Work::make<Tr::kBlockM>(p, m_blocks, tile);
        if (w.empty()) continue;
        produce_tile<T, Tr>(p, w, w.band<Tr::kBlockM>(p), smem, bars, kv, state, tail_phase, lane);
      }
    }
  } else {
    cutlass::arch::warpgroup_reg_alloc<kConsumerRegisters>();
    const int consumer_index = warpgroup - 1;
    const int t = tid % kWarpgroupThreads;
    PipeState k_state, v_state;
    for (int tile = blockIdx.x; tile < num_tiles; tile += gridDim.x) {
      const Work w = Work::make<Tr::kBlockM>(p, m_blocks, tile);
      if (w.empty()) continue;
      consume_tile<T, Tr>(p, w, w.band<Tr::kBlockM>(p), smem, smem_base, bars, consumer_index, t, k_state, v_state);
    }
    pdl_allow_dependents();
  }
#endif
}

}  // namespace sm90
}  // namespace ctxattn
