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

struct LaunchEnv {
  cudaStream_t stream;
  int device;
  bool pdl;
  int sm_count;  // the split-KV target (cuda/common/split_policy.h)
};

// Launches the kernel for a validated call; map_k / map_v: tensor maps over the K and V pools
// (d, slot, KV head, page) with boxes of 64 x min(page_size, kBlockN) x 1 x 1, 128-byte swizzle
// (16-bit KV), or D x min(page_size, kBlockN) x 1 x 1 bytes without swizzle (kKvFp8: e4m3 KV
// under a 16-bit query of type kElem).
template <Elem kElem, int kHeadDim, bool kKvFp8>
Status run_attention(const Params& p, const LaunchEnv& env, const CUtensorMap& map_k, const CUtensorMap& map_v);

}  // namespace sm90
}  // namespace ctxattn
