// Host side of one instantiation: grid from host integers only (max_q_len, batch_size, heads),
// the shared-memory opt-in, and the launch. Included by the files under inst/ alone.
#pragma once

#include <cstdlib>

#include "core/backends.h"
#include "cuda/common/launch.cuh"
#include "cuda/common/split_policy.h"
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
template <>
struct ElemType<Elem::kE4m3> {
  using type = __nv_fp8_e4m3;
};

template <typename T, class Tr>
Status launch_attention(const Params& p, const LaunchEnv& env, const TmaMaps& maps) {
  const SplitPlan plan = make_split_plan(p, env.sm_count, Tr::kBlockM, kConsumerWarpgroups, Tr::kSplitGroupFloats,
                                         kWorkspaceHeaderBytes);
  // Three kernels: calls where no request can split run one compiled without the split code
  // (measured 2-4% faster on short requests on the H200: a shorter prologue and epilogue), on the
  // scheduler's walk (scheduler.cuh) over keys longer than kPersistentMaxKv where the traits take
  // it, on the static walk otherwise; split calls walk statically (one item a CTA: the scheduler
  // measured chunk_long_tp8 409 -> 436 us at page 16, docs/perf-notes.md "sm90 v13"). The walk
  // gives each item the same arithmetic: the choice moves no result. max_kv_len is the caller's
  // bound (host integers only: graph-safe).
  static unsigned long long smem_ready[3] = {0, 0, 0};  // devices whose smem limit was raised, per kernel
  const bool split = plan.shape.target != 0;
  const bool dynamic = !split && Tr::kSchedulerWalk && p.max_kv_len > kPersistentMaxKv;
  // <..., Tr::kSchedulerWalk>: traits without the scheduler never take that arm, and name the
  // static kernel there, so their scheduler form is not compiled.
  auto* kernel = split     ? attention_kernel<T, Tr, true, false>
                 : dynamic ? attention_kernel<T, Tr, false, Tr::kSchedulerWalk>
                           : attention_kernel<T, Tr, false, false>;
  const int which = split ? 2 : dynamic ? 1 : 0;
  CTXATTN_RETURN_IF_ERROR(allow_dynamic_smem(kernel, Tr::kSmemBytes, env.device, &smem_ready[which]));
  const int64_t num_tiles = static_cast<int64_t>(plan.slots) * p.batch_size;
  // The scheduler's CTAs are persistent, one an SM (one fits: shared memory), drawing items from
  // its counter. The static walk runs one CTA a work item, the hardware handing items to SMs as
  // they free up, except over keys of at most kPersistentMaxKv: there one CTA an SM walks its
  // items striped, with the next item's Q (and K/V, from the producer) loading under the current
  // one (short_256 -10%, batch_1k -6% on the H200, docs/perf-notes.md "sm90 v5").
  int64_t ctas = num_tiles;
  if ((dynamic || p.max_kv_len <= kPersistentMaxKv) && env.sm_count > 0 && ctas > env.sm_count) ctas = env.sm_count;
  // CTXATTN_SM90_GRID_CTAS=N caps the grid at N CTAs (tests and tuning).
  if (const char* cap = std::getenv("CTXATTN_SM90_GRID_CTAS")) {
    const long n = std::strtol(cap, nullptr, 10);
    if (n > 0 && n < ctas) ctas = n;
  }
  LaunchShape shape;
  shape.grid = dim3(static_cast<unsigned>(ctas), 1, 1);
  shape.block = dim3(kThreads, 1, 1);
  shape.smem_bytes = Tr::kSmemBytes;
  shape.stream = env.stream;
  shape.pdl = env.pdl;
  return launch_kernel(kernel, shape, "sm90 attention kernel launch", p, maps, plan,
                       static_cast<int>(num_tiles));
}

// e4m3 Q/K/V: the kernel with a two-term P for nvfp4 output, one term otherwise (mma.cuh).
template <Elem kElem, int kHeadDim, bool kKvFp8>
Status run_attention(const Params& p, const LaunchEnv& env, const TmaMaps& maps) {
  using T = typename ElemType<kElem>::type;
  if constexpr (kElem == Elem::kE4m3) {
    if (p.out_dtype == CTXATTN_DTYPE_NVFP4) {
      return launch_attention<T, Traits<kHeadDim, kKvFp8, true, true>>(p, env, maps);
    }
    return launch_attention<T, Traits<kHeadDim, kKvFp8, true, false>>(p, env, maps);
  } else {
    return launch_attention<T, Traits<kHeadDim, kKvFp8>>(p, env, maps);
  }
}

}  // namespace sm90
}  // namespace ctxattn

// One explicit instantiation; the files under inst/ hold nothing else.
#define CTXATTN_SM90_INSTANTIATE(elem, head_dim, kv_fp8)                                               \
  namespace ctxattn {                                                                                   \
  namespace sm90 {                                                                                      \
  template Status run_attention<Elem::elem, head_dim, kv_fp8>(const Params&, const LaunchEnv&,          \
                                                              const TmaMaps&);                         \
  }                                                                                                     \
  }
