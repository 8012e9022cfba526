// Host side of one instantiation: grid from host integers only (max_q_len, batch_size, heads),
// the shared-memory opt-in, and the launch. Included by the files under inst/ alone.
#pragma once

#include "cuda/common/launch.cuh"
#include "cuda/sm90/kernel.cuh"
#include "cuda/sm90/launch.h"

namespace ctxattn {
namespace sm90 {

template <Elem kElem>
struct ElemType;
template <>
struct ElemType<Elem::kFloat16> {
  using type = __half;
};
template <>
struct ElemType<Elem::kBFloat16> {
  using type = __nv_bfloat16;
};

template <Elem kElem, int kHeadDim>
Status run_attention(const Params& p, const LaunchEnv& env, const CUtensorMap& map_k, const CUtensorMap& map_v) {
  using Tr = Traits<kHeadDim>;
  using T = typename ElemType<kElem>::type;
  static unsigned long long smem_ready = 0;  // devices whose smem limit was raised
  auto* kernel = attention_kernel<T, Tr>;
  CTXATTN_RETURN_IF_ERROR(allow_dynamic_smem(kernel, Tr::kSmemBytes, env.device, &smem_ready));
  const int64_t packed = static_cast<int64_t>(p.max_q_len) * p.group_size;
  const int64_t m_blocks = (packed + Tr::kBlockM - 1) / Tr::kBlockM;
  // One CTA a work tile: the hardware hands tiles to SMs as they free up. A persistent grid of one
  // CTA an SM with tiles striped over it measured 5% slower on long_8k (static striping balances
  // the causal tiles worse; docs/perf-notes.md, sm90 v2).
  const int64_t num_tiles = m_blocks * p.batch_size * p.num_kv_heads;
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(num_tiles), 1, 1);
  shape.block = dim3(kThreads, 1, 1);
  shape.smem_bytes = Tr::kSmemBytes;
  shape.stream = env.stream;
  shape.pdl = env.pdl;
  return launch_kernel(kernel, shape, "sm90 attention kernel launch", p, map_k, map_v, static_cast<int>(m_blocks),
                       static_cast<int>(num_tiles));
}

}  // namespace sm90
}  // namespace ctxattn

// One explicit instantiation; the files under inst/ hold nothing else.
#define CTXATTN_SM90_INSTANTIATE(elem, head_dim)                                                        \
  namespace ctxattn {                                                                                   \
  namespace sm90 {                                                                                      \
  template Status run_attention<Elem::elem, head_dim>(const Params&, const LaunchEnv&, const CUtensorMap&, \
                                                      const CUtensorMap&);                               \
  }                                                                                                     \
  }
