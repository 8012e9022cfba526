// The Hopper kernel's instantiations as seen from the host dispatcher (hopper.cpp), which
// includes no device code: one function per (element type, head dim), each defined in its own
// translation unit under inst/, so changing dispatch recompiles no kernel.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "core/params.h"
#include "core/status.h"
#include "cuda/sm90/traits.cuh"

namespace ctxattn {
namespace sm90 {

// The query's element type (kE4m3: e4m3 Q, K and V on FP8 WGMMA).
enum class Elem { kFloat16, kBFloat16, kE4m3 };

struct TmaMaps;

struct LaunchEnv {
  cudaStream_t stream;
  int device;
  bool pdl;
  int sm_count;             // the split-KV target (cuda/common/split_policy.h)
  const TmaMaps* long_maps;  // the maps of a two-form kernel's long form (run.cuh run_attention)
};

// The K and V pools as the kernel's TMA loads see them (hopper.cpp make_pool_map).
//   16-bit KV (Traits::kKvGroupMajor): 5-D maps (d % 64, slot % 8, d / 64, slot / 8, unit) whose
//   last coordinate is the (page, KV head) unit page * page_units + head, boxes of 64 x 8 x D / 64
//   x min(page_size, kBoxRows) / 8 x 1, 128-byte swizzle: one box brings a page piece, all its
//   column chunks.
//   e4m3 KV under a 16-bit query: 4-D maps (d, slot, KV head, page), boxes of D bytes x
//   min(page_size, kBoxRows) x 1 x 1 without swizzle; e4m3 Q/K/V: boxes of 128 (64 at D = 64)
//   bytes, 128-byte (64-byte) swizzle. page_units is unused there.
// out (out_tma != 0): fp16 / bf16 output as (d, head, token), boxes of 64 columns x G heads x
// 64 / G tokens (G dividing 64), 128-byte swizzle: the 64 packed rows of a consumer warpgroup,
// one box a 64-column chunk, stored from its staging tile (sm90/epilogue.cuh).
// q (q_tma != 0): fp16 / bf16 queries over a cache of their own type at D = 128 as (d, head,
// token), the boxes of out: a consumer warpgroup's 64 packed rows, one box a 64-column chunk,
// loaded into its Q region (sm90/load.cuh issue_q_tma).
// 64-byte aligned: each map is read in place as a kernel parameter.
struct TmaMaps {
  CUtensorMap k;
  CUtensorMap v;
  CUtensorMap out;
  CUtensorMap q;
  // NVFP4 KV: the block-scale pools as (16-byte unit, unit of the page x head tile, KV head, page),
  // boxes of 16 bytes x (page piece x D / 16 / 16) units: a page piece's scales (hopper.cpp
  // make_scale_map), which are contiguous in the pool for K and V alike.
  CUtensorMap k_sf;
  CUtensorMap v_sf;
  int32_t k_page_units;
  int32_t v_page_units;
  int32_t out_tma;    // 1: out is described (else the epilogue stores rows itself)
  int32_t q_tma;      // 1: q is described (else the consumers copy Q rows by cp.async)
};

// Launches the kernel for a validated call (kKv: the cache's KvForm, traits.cuh; an e4m3 or
// NVFP4 cache under a 16-bit query of type kElem, or e4m3 queries on the fp16 kernel).
template <Elem kElem, int kHeadDim, int kKv>
Status run_attention(const Params& p, const LaunchEnv& env, const TmaMaps& maps);

}  // namespace sm90
}  // namespace ctxattn
