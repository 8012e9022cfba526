// The portable kernel's instantiations as seen from the host dispatcher (portable.cpp), which
// includes no device code: one function per (matrix type, head dim, KV storage), each defined
// in its own translation unit under inst/, so changing dispatch recompiles no kernel.
#pragma once

#include <cuda_runtime.h>

#include "core/params.h"
#include "core/status.h"
#include "cuda/sm80/traits.cuh"

namespace ctxattn {
namespace sm80 {

struct LaunchEnv {
  cudaStream_t stream;
  int device;
  bool pdl;
  int sm_count;  // the split-KV target is sm_count * the kernel's CTAs an SM (cuda/common/split_policy.h)
};

// Launches the attention kernel for the validated call; returns the launch error, if any.
template <MmaType kType, int kHeadDim, KvStore kStore>
Status run_attention(const Params& p, const LaunchEnv& env);

}  // namespace sm80
}  // namespace ctxattn
