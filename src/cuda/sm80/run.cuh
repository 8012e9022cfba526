// Host side of one instantiation: grid from host integers only (max_q_len, batch_size, heads),
// the shared-memory opt-in, and the launch. Included by the files under inst/ alone.
#pragma once

#include "core/backends.h"
#include "cuda/common/launch.cuh"
#include "cuda/common/split_policy.h"
#include "cuda/sm80/kernel.cuh"
#include "cuda/sm80/launch.h"

namespace ctxattn {
namespace sm80 {

template <MmaType kType>
struct MmaCType;
template <>
struct MmaCType<MmaType::kFloat16> {
  using type = __half;
};
template <>
struct MmaCType<MmaType::kBFloat16> {
  using type = __nv_bfloat16;
};

template <MmaType kType, int kHeadDim, KvStore kStore>
Status run_attention(const Params& p, const LaunchEnv& env) {
  using Tr = Traits<kHeadDim, kStore>;
  using T = typename MmaCType<kType>::type;
  // A wave is kMinBlocksPerSm CTAs an SM: the split-KV target.
  // (Traits without split-KV, D = 512, plan with a target of 0: no request splits.)
  const SplitPlan plan = make_split_plan(p, Tr::kSplits ? env.sm_count * Tr::kMinBlocksPerSm : 0, Tr::kBlockM, 1,
                                         Tr::kSplitGroupFloats, kWorkspaceHeaderBytes);
  // Calls where no request can split run a kernel compiled without the split code (measured 2-5%
  // faster on short requests on the H200: a shorter prologue and epilogue).
  static unsigned long long smem_ready[2] = {0, 0};  // devices whose smem limit was raised, per kernel
  const bool split = Tr::kSplits && plan.shape.target != 0;
  auto* kernel = split ? attention_kernel<T, Tr, Tr::kSplits> : attention_kernel<T, Tr, false>;
  CTXATTN_RETURN_IF_ERROR(allow_dynamic_smem(kernel, Tr::kSmemBytes, env.device, &smem_ready[split]));
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(static_cast<int64_t>(plan.slots) * p.batch_size), Tr::kVSplit, 1);
  shape.block = dim3(Tr::kThreads, 1, 1);
  shape.smem_bytes = Tr::kSmemBytes;
  shape.stream = env.stream;
  shape.pdl = env.pdl;
  return launch_kernel(kernel, shape, "attention kernel launch", p, plan);
}

}  // namespace sm80
}  // namespace ctxattn

// One explicit instantiation; the files under inst/ hold nothing else.
#define CTXATTN_SM80_INSTANTIATE(type, head_dim, kv_store)                                                \
  namespace ctxattn {                                                                                     \
  namespace sm80 {                                                                                        \
  template Status run_attention<MmaType::type, head_dim, KvStore::kv_store>(const Params&, const LaunchEnv&); \
  }                                                                                                       \
  }
