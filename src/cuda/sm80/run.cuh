// Host side of one instantiation: grid from host integers only (max_q_len, batch_size, heads),
// the shared-memory opt-in, and the launch. Included by the files under inst/ alone.
#pragma once

#include "cuda/common/launch.cuh"
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

template <MmaType kType, int kHeadDim, bool kKvFp8>
Status run_attention(const Params& p, const LaunchEnv& env) {
  using Tr = Traits<kHeadDim, kKvFp8>;
  using T = typename MmaCType<kType>::type;
  static unsigned long long smem_ready = 0;  // devices whose smem limit was raised
  auto* kernel = attention_kernel<T, Tr>;
  CTXATTN_RETURN_IF_ERROR(allow_dynamic_smem(kernel, Tr::kSmemBytes, env.device, &smem_ready));
  const int64_t packed = static_cast<int64_t>(p.max_q_len) * p.group_size;
  const int64_t m_blocks = (packed + Tr::kBlockM - 1) / Tr::kBlockM;
  const GridOrder order{static_cast<int>(m_blocks)};
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(m_blocks * p.batch_size * p.num_kv_heads), 1, 1);
  shape.block = dim3(Tr::kThreads, 1, 1);
  shape.smem_bytes = Tr::kSmemBytes;
  shape.stream = env.stream;
  shape.pdl = env.pdl;
  return launch_kernel(kernel, shape, "attention kernel launch", p, order);
}

}  // namespace sm80
}  // namespace ctxattn

// One explicit instantiation; the files under inst/ hold nothing else.
#define CTXATTN_SM80_INSTANTIATE(type, head_dim, kv_fp8)                                          \
  namespace ctxattn {                                                                             \
  namespace sm80 {                                                                                \
  template Status run_attention<MmaType::type, head_dim, kv_fp8>(const Params&, const LaunchEnv&); \
  }                                                                                               \
  }
